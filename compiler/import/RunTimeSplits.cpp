//===- RunTimeSplits.cpp - Splits whose sizes the graph computes --------===//
//
// Part of meshc. See RunTimeSplits.h.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/RunTimeSplits.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"
#include "dialects/dfg/IR/ShardingRule.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace meshc::onnximport {

namespace {

std::string nodeName(NodeContext &ctx) {
  const onnx::NodeProto &node = ctx.node();
  return "'" + (node.name().empty() ? std::string("<unnamed>") : node.name()) +
         "'";
}

/// The op's factor rule (elementwise ops take theirs from broadcasting).
std::optional<dfg::ShardingRule> ruleOf(Operation *op) {
  if (isa<dfg::ElementwiseOpInterface>(op))
    return dfg::elementwiseRule(op);
  if (auto ruled = dyn_cast<dfg::ShardingRuleOpInterface>(op))
    return ruled.getShardingRule();
  return std::nullopt;
}

std::string opName(Operation *op) { return op->getName().getStringRef().str(); }

} // namespace

std::string RunTimeSplits::describe(const Split &split, unsigned index) const {
  if (split.mask)
    return "the coordinates NonZero " + split.node +
           " gives, whose count the data decides";
  return "part #" + std::to_string(index) + " of Split " + split.node +
         ", whose sizes the graph computes at run time";
}

void RunTimeSplits::addSelection(NodeContext &ctx, Value mask) {
  Split selection;
  selection.node = nodeName(ctx);
  selection.parts = 1;
  selection.mask = mask;
  unsigned id = splits_.size();
  splits_.push_back(selection);
  // NonZero's [rank, count]: the columns are the selected elements.
  if (ctx.numOutputs() > 0 && !ctx.node().output(0).empty())
    parts_[ctx.node().output(0)] = Part{id, 0, 1};
}

bool RunTimeSplits::joinsSplitParts(const onnx::NodeProto &node) const {
  if (node.op_type() != "Concat" || !node.domain().empty())
    return false;
  return llvm::any_of(node.input(), [&](const std::string &name) {
    auto it = parts_.find(name);
    return it != parts_.end() && !splits_[it->second.split].mask;
  });
}

LogicalResult RunTimeSplits::addSelected(NodeContext &ctx, Operation *op,
                                         const Split &selection, int64_t axis) {
  auto scatter = cast<dfg::ScatterNDOp>(op);
  // Overwriting zeros at distinct tuples is adding into them (torch's
  // index_add_, which TorchScript writes as a ScatterElements into zeros
  // then an Add, means the sum at a repeated one too).
  if (!scatter.getAccumulate() && !dfg::isZeroFill(scatter.getData()))
    return ctx.error("reads " + describe(selection, 0) + ", and " + opName(op) +
                     " overwrites a tensor that is not zeros with their "
                     "rows: meshc scatters such rows only by adding them "
                     "(reduction 'add', or into zeros)");
  OpBuilder &b = ctx.builder();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  Value updates = scatter.getUpdates();
  auto type = cast<RankedTensorType>(updates.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> laid(rank, 1), shape(rank, 1);
  laid[axis] = -1;
  shape[axis] = type.getDimSize(axis);
  Value mask = ctx.refineType(dfg::ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, b.getI1Type()), selection.mask,
      b.getDenseI64ArrayAttr(laid)));
  Value kept = dfg::WhereOp::create(b, loc, type, mask, updates,
                                    ctx.scalar(0, type.getElementType()));
  scatter.getUpdatesMutable().assign(kept);
  scatter.setAccumulate(true);
  return success();
}

bool RunTimeSplits::isRunTimeSplit(NodeContext &ctx) {
  if (ctx.node().op_type() != "Split" || !ctx.node().domain().empty() ||
      ctx.numInputs() < 2 || !ctx.input(1))
    return false;
  Operation *def = ctx.input(1).getDefiningOp();
  return !isa_and_nonnull<dfg::ConstantOp, dfg::WeightOp, dfg::SizesOp>(def);
}

LogicalResult RunTimeSplits::importSplit(NodeContext &ctx) {
  Value in = ctx.input(0), sizes = ctx.input(1);
  RankedTensorType inType = ctx.inputType(0), sizesType = ctx.inputType(1);
  auto axes = dfg::normalizeAxes({ctx.attrInt("axis", 0)}, inType.getRank());
  if (!axes)
    return ctx.error(llvm::toString(axes.takeError()));
  int64_t axis = axes->front();
  unsigned outputs = ctx.numOutputs();
  if (sizesType.getRank() != 1 || sizesType.getDimSize(0) != outputs ||
      !(sizesType.getElementType().isInteger(64) ||
        sizesType.getElementType().isInteger(32)))
    return ctx.error("sizes computed at run time must be an int64 or int32 "
                     "vector of one size per output (" +
                     std::to_string(outputs) + "), got " +
                     dfg::formatShape(sizesType.getShape()));
  AffineExpr rows = ctx.inputDims(0)[axis];
  if (!rows)
    return ctx.error("the size of dimension " + std::to_string(axis) +
                     " of the split input follows from no input dimension");
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  Type i64 = b.getI64Type();
  if (!sizesType.getElementType().isInteger(64))
    sizes = dfg::CastOp::create(b, loc, sizesType.clone(i64), sizes, i64);
  Split split;
  split.node = nodeName(ctx);
  split.rows = rows;
  split.parts = outputs;
  split.ends =
      dfg::CumSumOp::create(b, loc, sizes, b.getI64IntegerAttr(0),
                            b.getBoolAttr(false), b.getBoolAttr(false));
  split.starts =
      dfg::CumSumOp::create(b, loc, sizes, b.getI64IntegerAttr(0),
                            b.getBoolAttr(true), b.getBoolAttr(false));
  unsigned id = splits_.size();
  splits_.push_back(split);
  SmallVector<Value> results;
  for (auto [index, name] : llvm::enumerate(ctx.node().output())) {
    results.push_back(in);
    if (!name.empty())
      parts_[name] = Part{id, static_cast<unsigned>(index), axis};
  }
  return ctx.setResults(results);
}

bool RunTimeSplits::readsPart(const onnx::NodeProto &node) const {
  return llvm::any_of(node.input(), [&](const std::string &name) {
    return parts_.contains(name);
  });
}

LogicalResult RunTimeSplits::checkSplitOfRows(NodeContext &ctx) const {
  const onnx::NodeProto &node = ctx.node();
  if (node.op_type() != "Split" || !node.domain().empty() ||
      node.input_size() == 0)
    return success();
  auto it = parts_.find(node.input(0));
  if (it == parts_.end())
    return success();
  int64_t rank = ctx.inputType(0).getRank(), axis = ctx.attrInt("axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis != it->second.axis)
    return success();
  return ctx.error(
      "cuts " + describe(splits_[it->second.split], it->second.index) +
      ", into " + std::to_string(node.output_size()) +
      " parts of sizes fixed in the graph: the exporter unrolled a loop over "
      "them at the count it traced, which other data changes (meshc "
      "follows such rows only through ops that treat them independently)");
}

LogicalResult RunTimeSplits::importConcat(NodeContext &ctx) {
  const onnx::NodeProto &node = ctx.node();
  auto first = parts_.find(node.input(0));
  std::string why;
  if (first == parts_.end()) {
    why = "its first input is not one";
  } else {
    const Split &split = splits_[first->second.split];
    int64_t rank = ctx.inputType(0).getRank();
    auto axes = dfg::normalizeAxes({ctx.attrInt("axis", 0)}, rank);
    if (!axes)
      return ctx.error(llvm::toString(axes.takeError()));
    if (static_cast<unsigned>(node.input_size()) != split.parts)
      why = "it joins " + std::to_string(node.input_size()) + " inputs, not " +
            std::to_string(split.parts);
    for (auto [i, name] : llvm::enumerate(node.input())) {
      if (!why.empty())
        break;
      auto it = parts_.find(name);
      if (it == parts_.end() || it->second.split != first->second.split ||
          it->second.index != i)
        why = "input #" + std::to_string(i) + " is not part #" +
              std::to_string(i) + " of that split";
      else if (it->second.axis != axes->front())
        why = "it joins along dimension " + std::to_string(axes->front()) +
              ", while the parts' rows lie along dimension " +
              std::to_string(it->second.axis);
    }
    if (why.empty()) {
      // Row r belongs to the part whose [start, end) holds it; the last part
      // takes every row the others do not.
      OpBuilder &b = ctx.builder();
      Location loc = ctx.loc();
      Type i64 = b.getI64Type(), i1 = b.getI1Type();
      int64_t axis = axes->front();
      SmallVector<int64_t> along(rank, 1);
      along[axis] = -1;
      FailureOr<Value> position = ctx.iota(split.rows, along);
      if (failed(position))
        return failure();
      auto bound = [&](Value bounds, unsigned i) -> FailureOr<Value> {
        FailureOr<Value> one = sliceAxis(ctx, bounds, 0, i, i + 1);
        if (failed(one))
          return failure();
        SmallVector<int64_t> ones(rank, 1);
        return ctx.create<dfg::ReshapeOp>(dfg::reshapeShape({1}, ones), i64,
                                          *one, b.getDenseI64ArrayAttr(ones));
      };
      Value joined = ctx.input(split.parts - 1);
      auto type = cast<RankedTensorType>(joined.getType());
      auto maskType = RankedTensorType::get(shapeOf(*position), i1);
      for (int i = static_cast<int>(split.parts) - 2; i >= 0; --i) {
        FailureOr<Value> start = bound(split.starts, i),
                         end = bound(split.ends, i);
        if (failed(start) || failed(end))
          return failure();
        Value after =
            dfg::GreaterOrEqualOp::create(b, loc, maskType, *position, *start);
        Value before = dfg::LessOp::create(b, loc, maskType, *position, *end);
        Value mask = dfg::AndOp::create(b, loc, maskType, after, before);
        joined = dfg::WhereOp::create(b, loc, type, mask, ctx.input(i), joined);
      }
      return ctx.setResults(joined);
    }
  }
  std::string owner = first != parts_.end() ? splits_[first->second.split].node
                                            : std::string("a Split");
  return ctx.error("joins parts of Split " + owner +
                   ", whose sizes the graph computes at run time, but " + why +
                   ": meshc joins such parts only all together, in order, "
                   "along their rows");
}

LogicalResult RunTimeSplits::follow(NodeContext &ctx,
                                    ArrayRef<Operation *> created,
                                    ArrayRef<Value> results) {
  const onnx::NodeProto &node = ctx.node();
  // The part the node reads (one part of one split, however many times).
  const Part *part = nullptr;
  llvm::DenseMap<Value, int64_t> rowsOf; // value -> its rows' dimension
  for (auto [i, name] : llvm::enumerate(node.input())) {
    auto it = parts_.find(name);
    if (it == parts_.end())
      continue;
    if (part &&
        (it->second.split != part->split || it->second.index != part->index))
      return ctx.error("reads both " +
                       describe(splits_[part->split], part->index) + ", and " +
                       describe(splits_[it->second.split], it->second.index) +
                       ": meshc follows each such value alone");
    part = &it->second;
    rowsOf[ctx.input(i)] = it->second.axis;
  }
  if (!part)
    return success();
  const Split &split = splits_[part->split];
  auto refuse = [&](Operation *op, const Twine &why) {
    return ctx.error(
        "reads " + describe(split, part->index) + ", and " + opName(op) + " " +
        why +
        (split.mask ? ": meshc follows such coordinates only through ops "
                      "that treat them independently, to a scatter that "
                      "adds up their rows (ScatterElements, ScatterND)"
                    : ": meshc follows such a part only through ops that "
                      "treat its rows independently, to a Concat of every "
                      "part"));
  };
  for (Operation *op : created) {
    SmallVector<unsigned> reading;
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (rowsOf.contains(operand))
        reading.push_back(i);
    if (reading.empty())
      continue;
    if (auto scatter = dyn_cast<dfg::ScatterNDOp>(op); scatter && split.mask) {
      // The sink: each selected row's update added at its index tuple.
      Value indices = scatter.getIndices(), updates = scatter.getUpdates();
      if (rowsOf.contains(scatter.getData()))
        return refuse(op, "scatters into them");
      if (!rowsOf.contains(indices) || !rowsOf.contains(updates))
        return refuse(op, "does not take both its indices and its updates "
                          "from them");
      int64_t axis = rowsOf[indices];
      if (axis + 1 >= cast<RankedTensorType>(indices.getType()).getRank() ||
          rowsOf[updates] != axis)
        return refuse(op, "does not pair each index tuple with the update of "
                          "its row");
      if (failed(addSelected(ctx, op, split, axis)))
        return failure();
      continue;
    }
    std::optional<dfg::ShardingRule> rule = ruleOf(op);
    if (!rule)
      return refuse(op, "has no sharding rule");
    const dfg::DimFactors &dims =
        rule->operands[reading.front()]
                      [rowsOf[op->getOperand(reading.front())]];
    if (dims.size() != 1 ||
        rule->factors[dims.front()].kind != dfg::FactorKind::Parallel) {
      StringRef how =
          dims.empty()      ? "broadcast"
          : dims.size() > 1 ? "merged with another"
          : rule->factors[dims.front()].kind == dfg::FactorKind::Reduction
              ? "summed over"
              : "needed whole";
      return refuse(op, "does not keep the rows apart (their dimension is " +
                            how + ")");
    }
    int factor = dims.front();
    for (auto [i, operand] : llvm::enumerate(rule->operands)) {
      bool isPart = llvm::is_contained(reading, i);
      for (auto [d, fs] : llvm::enumerate(operand)) {
        bool here = llvm::is_contained(fs, factor);
        bool expected =
            isPart && static_cast<int64_t>(d) == rowsOf[op->getOperand(i)];
        if (here != expected)
          return refuse(op, "pairs the part's rows with operand #" + Twine(i) +
                                ", which is not that part");
      }
    }
    for (auto [r, result] : llvm::enumerate(rule->results)) {
      std::optional<int64_t> at;
      for (auto [d, fs] : llvm::enumerate(result))
        if (llvm::is_contained(fs, factor)) {
          if (fs.size() != 1 || at)
            return refuse(op, "merges the part's rows with another "
                              "dimension");
          at = d;
        }
      if (!at)
        return refuse(op, "drops the part's rows from its result");
      rowsOf[op->getResult(r)] = *at;
    }
  }
  for (auto [i, name] : llvm::enumerate(node.output())) {
    if (name.empty() || i >= results.size() || !results[i])
      continue;
    auto it = rowsOf.find(results[i]);
    if (it != rowsOf.end())
      parts_[name] = Part{part->split, part->index, it->second};
  }
  return success();
}

std::string RunTimeSplits::outputError(llvm::StringRef name) const {
  auto it = parts_.find(name);
  if (it == parts_.end())
    return std::string();
  const Split &split = splits_[it->second.split];
  return "graph output '" + name.str() + "' is " +
         describe(split, it->second.index) +
         (split.mask ? ": meshc computes such coordinates only into a "
                       "scatter that adds up their rows"
                     : ": meshc returns such parts only joined by a Concat");
}

} // namespace meshc::onnximport
