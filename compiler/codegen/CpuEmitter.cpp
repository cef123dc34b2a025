//===- CpuEmitter.cpp - C++ for one rank program (cpu and cuda targets) ---===//
//
// Part of meshc.
//
// 1. Weights: every value that folds to a box of a weight or constant
//    (WeightShards::fold) emits nothing; where a computing op reads it, it
//    becomes a tensor of the rank's weight file.
// 2. Liveness, per function: ops are numbered in order; a reshape-like view
//    (and a send's result, and a dfg.wait's) shares its operand's buffer and
//    extends its life. Every other result gets a buffer from the arena, live
//    from its op to its last use (through views), placed by planBuffers. A
//    collective completed by a dfg.wait keeps its operand live up to the
//    wait: the communication may read it until then. `@main`'s frame starts
//    at offset 0, the stage functions' frames (never live at the same time)
//    after it.
// 3. Emission: one statement per op, a comment with the ONNX node it came
//    from; stage functions take their arguments and the caller's result
//    buffers; `@main` reads the rank's input pieces and records its outputs.
// 4. The collective sequence (ops, groups, shapes, in execution order with
//    stage calls expanded) is hashed for the manifest's start-up check.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/CpuEmitter.h"

#include "compiler/codegen/BufferPlan.h"
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"
#include "dialects/dfg/IR/SymbolicDims.h"
#include "dialects/dfg/Sharding/Sharding.h"
#include "meshc/runtime/safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

using namespace mlir;

namespace meshc::codegen {

namespace {

std::string cppString(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char octal[8];
      std::snprintf(octal, sizeof(octal), "\\%03o", static_cast<unsigned>(c));
      out += octal;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string cppFloat(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.9g", v);
  std::string s = buffer;
  if (s.find_first_of(".enEN") == std::string::npos)
    s += ".0";
  return s + "f";
}

/// "{2, 8, 64}"; a dynamic dimension prints as -1 (signature specs).
std::string list(ArrayRef<int64_t> values) {
  std::string s = "{";
  for (auto [i, v] : llvm::enumerate(values))
    s += (i ? ", " : "") + std::to_string(ShapedType::isDynamic(v) ? -1 : v);
  return s + "}";
}

/// The runtime's enumerator for a dfg element type (which ODS restricts).
StringRef dtypeName(Type t) {
  switch (dfg::elementDType(t).value_or(rt::DType::F32)) {
  case rt::DType::F32:
    return "rt::DType::F32";
  case rt::DType::F16:
    return "rt::DType::F16";
  case rt::DType::BF16:
    return "rt::DType::BF16";
  case rt::DType::I64:
    return "rt::DType::I64";
  case rt::DType::I32:
    return "rt::DType::I32";
  case rt::DType::Bool:
    return "rt::DType::Bool";
  }
  return "";
}

uint64_t byteSize(RankedTensorType t) {
  return t.getNumElements() *
         rt::byteWidth(
             dfg::elementDType(t.getElementType()).value_or(rt::DType::F32));
}

/// "h.0/attn/MatMul" for the importer's name locations (fused ones joined).
void describeLoc(Location loc, SmallVectorImpl<std::string> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.push_back(name.getName().str());
    return;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      describeLoc(l, names);
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    describeLoc(callSite.getCallee(), names);
}

std::string identifier(StringRef s) {
  std::string out;
  for (char c : s)
    out += llvm::isAlnum(c) ? c : '_';
  return out;
}

bool isView(Operation *op) {
  return isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp, dfg::SqueezeOp,
             dfg::UnsqueezeOp, shard::SendOp, dfg::WaitOp>(op);
}

/// The dfg.wait that completes collective `op` (meshc-schedule-collectives),
/// or null when `op` blocks where it stands.
dfg::WaitOp waitOf(Operation *op) {
  if (op->getNumResults() != 1 || !op->getResult(0).hasOneUse())
    return nullptr;
  return dyn_cast<dfg::WaitOp>(*op->getResult(0).getUsers().begin());
}

/// A receive's buffer (tensor.empty, or dfg.symbolic_expand of zero where
/// dimensions are symbolic; see meshc-specialize-rank): the receive's result
/// is allocated and written by the receive, so nothing is computed for it.
bool isRecvBuffer(Operation *op) {
  if (isa<tensor::EmptyOp>(op))
    return true;
  return op->getNumResults() == 1 && !op->getResult(0).use_empty() &&
         llvm::all_of(op->getResult(0).getUses(), [](OpOperand &use) {
           return isa<shard::RecvOp>(use.getOwner()) &&
                  use.getOperandNumber() == 0;
         });
}

/// A symbolic dimension @main binds, and how (a C++ expression).
struct BoundSymbol {
  std::string name, init, comment;
};

/// The symbolic dimensions of a rank program, bound from @main's inputs: a
/// dimension whole on every rank gives its size; one split over the mesh
/// gives the rank's piece ("name@n", see meshc-specialize-rank), and the
/// whole is n times that.
std::vector<BoundSymbol> boundSymbols(func::FuncOp main) {
  std::vector<BoundSymbol> symbols;
  llvm::StringSet<> bound;
  llvm::MapVector<StringRef, std::string> wholeFromPiece;
  for (auto [i, arg] : llvm::enumerate(main.getArguments())) {
    auto names = main.getArgAttrOfType<ArrayAttr>(i, "dfg.dim_names");
    if (!names)
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    for (auto [d, n] : llvm::enumerate(names.getValue())) {
      StringRef name = cast<StringAttr>(n).getValue();
      if (name.empty() || !type.isDynamicDim(d) || !bound.insert(name).second)
        continue;
      symbols.push_back(
          {name.str(),
           "a" + std::to_string(i) + ".shape[" + std::to_string(d) + "]",
           name.str()});
      auto [whole, pieces] = name.rsplit('@');
      if (!pieces.empty())
        wholeFromPiece.try_emplace(whole, "d_" + identifier(name) + " * " +
                                              pieces.str());
    }
  }
  for (auto &[whole, expr] : wholeFromPiece)
    if (bound.insert(whole).second)
      symbols.push_back(
          {whole.str(), expr, whole.str() + ", split over the mesh"});
  return symbols;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

std::string groupKey(ArrayRef<int16_t> axes) {
  std::string s;
  for (int16_t a : axes)
    s += std::to_string(a) + ",";
  return s;
}

//===----------------------------------------------------------------------===//
// One function
//===----------------------------------------------------------------------===//

class FunctionEmitter {
public:
  FunctionEmitter(func::FuncOp fn, WeightShards &weights,
                  const llvm::StringMap<int> &groups, uint64_t frameOffset,
                  int &collectiveCount, const dfg::DimBindings *bounds,
                  ArrayRef<BoundSymbol> symbols, bool hasStages, Target target)
      : fn_(fn), weights_(weights), groups_(groups), frameOffset_(frameOffset),
        collectiveCount_(collectiveCount), bounds_(bounds), symbols_(symbols),
        hasStages_(hasStages), target_(target), table_(fn.getContext()),
        shapes_(table_) {}

  /// Plans the frame; returns its peak.
  uint64_t plan();
  LogicalResult emit(llvm::raw_ostream &os);

private:
  std::string operand(Value v, llvm::raw_ostream &os);
  std::string optionalOperand(Value v, llvm::raw_ostream &os) {
    return v ? "&" + operand(v, os) : "nullptr";
  }
  LogicalResult emitOp(Operation *op, llvm::raw_ostream &os);
  LogicalResult emitCollective(Operation *op, llvm::raw_ostream &os);
  LogicalResult emitFused(dfg::FusedElementwiseOp op, llvm::raw_ostream &os);
  std::string declare(Value v, llvm::raw_ostream &os);

  /// Symbolic dimensions (executables for a range of sizes): `e` as a C++
  /// expression over the symbols bound at the top of run().
  std::string dimExpr(AffineExpr e);
  /// The shape of `v`: its static dimensions, or expressions of symbols.
  std::string shapeOf(Value v);
  /// The bytes `v` takes at the compiled bounds (its size when static).
  uint64_t boundBytes(Value v);
  /// `map`'s results (symbols named by `names`) as C++ expressions.
  SmallVector<std::string> mapExprs(AffineMap map, ArrayAttr names);

  func::FuncOp fn_;
  WeightShards &weights_;
  const llvm::StringMap<int> &groups_;
  uint64_t frameOffset_;
  int &collectiveCount_;
  llvm::DenseMap<Value, uint64_t> offsets_;  // buffers, frame-relative
  llvm::DenseMap<Value, uint64_t> capacity_; // their planned bytes
  llvm::DenseMap<Value, std::string> names_;
  /// The ticket variable of each dfg.wait's collective, once it is issued.
  llvm::DenseMap<Operation *, std::string> tickets_;
  /// Sizes of the symbolic dimensions at the compiled bounds; null when the
  /// program has static shapes.
  const dfg::DimBindings *bounds_;
  /// The symbolic dimensions @main binds (none when shapes are static).
  ArrayRef<BoundSymbol> symbols_;
  bool hasStages_;
  Target target_;
  /// "the cpu target", for messages.
  std::string theTarget() const {
    return "the " + targetName(target_).str() + " target";
  }
  dfg::DimTable table_;
  dfg::SymbolicShapes shapes_;
  int next_ = 0;
};

uint64_t FunctionEmitter::plan() {
  Block &body = fn_.getBody().front();
  llvm::DenseMap<Operation *, int64_t> step;
  int64_t n = 0;
  for (Operation &op : body)
    step[&op] = n++;
  // The buffer each value lives in: its own, or (views) its operand's.
  llvm::DenseMap<Value, Value> root;
  llvm::MapVector<Value, std::pair<int64_t, int64_t>> live;
  for (Operation &op : body) {
    for (Value r : op.getResults()) {
      if (weights_.fold(r) || isRecvBuffer(&op))
        continue;
      if (isView(&op) && !weights_.fold(op.getOperand(0))) {
        Value in = op.getOperand(0);
        // Looked up before root[r] inserts: an insertion that grows the
        // map would leave a reference into it dangling.
        Value base = root.lookup(in);
        root[r] = base ? base : in;
        continue;
      }
      root[r] = r;
      live[r] = {step[&op], step[&op]};
    }
  }
  for (Operation &op : body) {
    // An asynchronous collective reads its operands up to its wait.
    dfg::WaitOp wait = waitOf(&op);
    int64_t until = wait ? step[wait] : step[&op];
    for (Value v : op.getOperands()) {
      auto it = root.find(v);
      if (it == root.end())
        continue;
      auto l = live.find(it->second);
      if (l != live.end())
        l->second.second = std::max(l->second.second, until);
    }
  }
  std::vector<BufferRequest> requests;
  std::vector<Value> values;
  for (auto &[v, range] : live) {
    requests.push_back({boundBytes(v), range.first, range.second});
    values.push_back(v);
  }
  BufferPlan plan = planBuffers(requests);
  for (auto [v, offset, request] :
       llvm::zip_equal(values, plan.offsets, requests)) {
    offsets_[v] = offset;
    capacity_[v] = request.bytes;
  }
  return plan.peak;
}

std::string FunctionEmitter::dimExpr(AffineExpr e) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return std::to_string(c.getValue());
  if (auto sym = dyn_cast<AffineSymbolExpr>(e))
    return "d_" + identifier(table_.name(sym.getPosition()));
  auto bin = cast<AffineBinaryOpExpr>(e);
  std::string l = dimExpr(bin.getLHS()), r = dimExpr(bin.getRHS());
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return "(" + l + " + " + r + ")";
  case AffineExprKind::Mul:
    return "(" + l + " * " + r + ")";
  case AffineExprKind::FloorDiv:
    return "rt::floorDiv(" + l + ", " + r + ")";
  case AffineExprKind::CeilDiv:
    return "rt::ceilDiv(" + l + ", " + r + ")";
  default:
    return "rt::mod(" + l + ", " + r + ")";
  }
}

std::string FunctionEmitter::shapeOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.hasStaticShape())
    return list(type.getShape());
  std::string s = "{";
  for (auto [i, d] : llvm::enumerate(shapes_.dims(v)))
    s += (i ? ", " : "") + dimExpr(d);
  return s + "}";
}

uint64_t FunctionEmitter::boundBytes(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.hasStaticShape() || !bounds_)
    return byteSize(type);
  if (llvm::is_contained(shapes_.dims(v), AffineExpr()))
    return 0; // reported when the op is emitted
  auto [map, names] = table_.write(shapes_.dims(v));
  auto sizes = dfg::evaluateDims(map, names, *bounds_);
  if (!sizes) {
    llvm::consumeError(sizes.takeError());
    return 0; // reported when the op is emitted
  }
  uint64_t n = rt::byteWidth(
      dfg::elementDType(type.getElementType()).value_or(rt::DType::F32));
  for (int64_t d : *sizes)
    n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return n;
}

SmallVector<std::string> FunctionEmitter::mapExprs(AffineMap map,
                                                   ArrayAttr names) {
  SmallVector<std::string> exprs;
  for (AffineExpr e : table_.read(map, names))
    exprs.push_back(dimExpr(e));
  return exprs;
}

std::string FunctionEmitter::operand(Value v, llvm::raw_ostream &os) {
  auto it = names_.find(v);
  if (it != names_.end())
    return it->second;
  // A weight or constant, declared where first read.
  int entry = weights_.entryFor(v);
  auto type = cast<RankedTensorType>(v.getType());
  std::string name = "w" + std::to_string(next_++);
  os << "  const rt::TensorRef " << name << " = ";
  if (ArrayRef<int64_t>(weights_.entries()[entry].box.shape) == type.getShape())
    os << "p.weight(" << entry << ");\n";
  else
    os << "rt::reshaped(p.weight(" << entry << "), " << list(type.getShape())
       << ");\n";
  names_[v] = name;
  return name;
}

/// Declares the result `v`: a view of its buffer, or of its operand's.
std::string FunctionEmitter::declare(Value v, llvm::raw_ostream &os) {
  auto type = cast<RankedTensorType>(v.getType());
  std::string name = "v" + std::to_string(next_++);
  Operation *op = v.getDefiningOp();
  if (isView(op)) {
    std::string in = operand(op->getOperand(0), os);
    os << "  const rt::TensorRef " << name << " = rt::reshaped(" << in << ", "
       << shapeOf(v) << ");\n";
  } else if (!type.hasStaticShape()) {
    os << "  const rt::TensorRef " << name << " = rt::boundedView(A + "
       << offsets_.lookup(v) << ", " << capacity_.lookup(v) << ", "
       << dtypeName(type.getElementType()) << ", " << shapeOf(v) << ", "
       << cppString(name) << ");\n";
  } else {
    os << "  const rt::TensorRef " << name << " = rt::view(A + "
       << offsets_.lookup(v) << ", " << dtypeName(type.getElementType()) << ", "
       << list(type.getShape()) << ");\n";
  }
  names_[v] = name;
  return name;
}

LogicalResult FunctionEmitter::emit(llvm::raw_ostream &os) {
  bool isMain = fn_.getSymName() == "main";
  if (isMain)
    os << "void run(rt::Program &p) {\n";
  else
    os << "void " << identifier(fn_.getSymName())
       << "(rt::Program &p, const rt::TensorRef *args, "
          "const rt::TensorRef *results"
       << (symbols_.empty() ? "" : ", const std::int64_t *dims") << ") {\n";
  os << "  std::uint8_t *const A = p.arena() + " << frameOffset_
     << "; // this function's frame\n";
  for (auto [i, arg] : llvm::enumerate(fn_.getArguments())) {
    std::string name = "a" + std::to_string(i);
    if (isMain) {
      auto onnx = fn_.getArgAttrOfType<StringAttr>(i, "onnx.name");
      os << "  const rt::TensorRef " << name << " = p.input(" << i << "); // "
         << (onnx ? onnx.getValue() : "") << "\n";
    } else {
      os << "  const rt::TensorRef &" << name << " = args[" << i << "];\n";
    }
    names_[arg] = name;
  }
  // The sizes of the symbolic dimensions: @main binds them from its inputs
  // and hands them to the stage functions.
  for (auto [k, sym] : llvm::enumerate(symbols_)) {
    std::string var = "d_" + identifier(sym.name);
    if (isMain)
      os << "  const std::int64_t " << var << " = " << sym.init << "; // "
         << sym.comment << "\n";
    else
      os << "  const std::int64_t " << var << " = dims[" << k << "]; // "
         << sym.name << "\n";
    os << "  (void)" << var << ";\n";
  }
  if (isMain && hasStages_ && !symbols_.empty()) {
    os << "  const std::int64_t dims[] = {";
    for (auto [k, sym] : llvm::enumerate(symbols_))
      os << (k ? ", " : "") << "d_" << identifier(sym.name);
    os << "};\n";
  }
  for (Operation &op : fn_.getBody().front())
    if (failed(emitOp(&op, os)))
      return failure();
  os << "}\n";
  return success();
}

LogicalResult FunctionEmitter::emitOp(Operation *op, llvm::raw_ostream &os) {
  if (op->getNumResults() && llvm::all_of(op->getResults(), [&](Value r) {
        return weights_.fold(r).has_value();
      }))
    return success();
  if (isRecvBuffer(op))
    return success();
  for (Value result : op->getResults())
    if (auto tt = dyn_cast<RankedTensorType>(result.getType())) {
      if (!tt.hasStaticShape() && !bounds_)
        return op->emitOpError("has a dynamic shape; ")
               << theTarget()
               << " needs "
                  "static shapes (give the model's symbolic "
                  "input dimensions sizes with --dim "
                  "NAME=SIZE)";
      if (!tt.hasStaticShape()) {
        ArrayRef<AffineExpr> dims = shapes_.dims(result);
        if (llvm::is_contained(dims, AffineExpr()))
          return op->emitOpError("has a dynamic dimension that follows from "
                                 "no symbolic input dimension");
        if (boundBytes(result) == 0 && !isView(op))
          return op->emitOpError("has a dimension whose size at the "
                                 "compiled bounds is unknown (every symbolic "
                                 "dimension needs --max-dim)");
      }
      // 16-bit floats may enter and leave a cpu program (a cast, or a fused
      // chain, converts them), but the cpu kernels compute in f32; the cuda
      // kernels take f16 and bf16 (accumulating in f32).
      Type e = tt.getElementType();
      if (target_ == Target::Cpu && (e.isF16() || e.isBF16()) &&
          !isa<dfg::CastOp, dfg::FusedElementwiseOp>(op))
        return op->emitOpError("computes in ")
               << e << "; " << theTarget()
               << " computes in f32 only (compile with --target cuda, or "
                  "--dtype f32 to convert the model)";
    }

  SmallVector<std::string> nodes;
  describeLoc(op->getLoc(), nodes);
  os << "  // " << op->getName().getStringRef();
  if (!nodes.empty())
    os << " <- " << llvm::join(nodes, ", ");
  os << "\n";

  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    bool isMain = fn_.getSymName() == "main";
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      std::string in = operand(v, os);
      if (isMain)
        os << "  p.output(" << i << ", " << in << ");\n";
      else
        os << "  k::copy(" << in << ", results[" << i << "]);\n";
    }
    return success();
  }
  if (auto call = dyn_cast<func::CallOp>(op)) {
    SmallVector<std::string> args, results;
    for (Value v : call.getOperands())
      args.push_back(operand(v, os));
    for (Value r : call.getResults())
      results.push_back(declare(r, os));
    os << "  {\n    const rt::TensorRef args[] = {" << llvm::join(args, ", ")
       << "};\n    const rt::TensorRef results[] = {"
       << llvm::join(results, ", ") << "};\n    "
       << identifier(call.getCallee()) << "(p, args, results"
       << (symbols_.empty() ? "" : ", dims") << ");\n  }\n";
    return success();
  }
  if (isa<shard::ShardDialect>(op->getDialect()))
    return emitCollective(op, os);
  if (auto wait = dyn_cast<dfg::WaitOp>(op)) {
    auto ticket = tickets_.find(wait);
    if (ticket == tickets_.end())
      return op->emitOpError("waits for a collective that was not issued");
    os << "  p.comm().wait(" << ticket->second << ");\n";
    declare(wait.getResult(), os);
    return success();
  }

  SmallVector<std::string> in;
  auto get = [&](Value v) { return operand(v, os); };
  auto opt = [&](Value v) { return optionalOperand(v, os); };
  auto out = [&](unsigned i = 0) { return declare(op->getResult(i), os); };
  auto rankOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  };

  auto binary = [&](StringRef kind) -> LogicalResult {
    std::string l = get(op->getOperand(0)), r = get(op->getOperand(1));
    std::string o = out();
    os << "  k::binary(k::BinaryOp::" << kind << ", " << l << ", " << r << ", "
       << o << ");\n";
    return success();
  };
  // A slice whose starts are computed when the program runs: `first[k]` is
  // the C++ start of axis k, clamped against the input's size there.
  auto runtimeSlice = [&](Value input, ArrayRef<std::string> first,
                          ArrayRef<int64_t> axes,
                          ArrayRef<int64_t> axisSteps) -> LogicalResult {
    int64_t rank = rankOf(input);
    std::string i = get(input), o = out();
    SmallVector<std::string> starts(rank, "0");
    SmallVector<int64_t> steps(rank, 1);
    for (auto [k, axis, step] : llvm::enumerate(axes, axisSteps)) {
      int64_t a = normalizeAxis(axis, rank);
      steps[a] = step;
      starts[a] = "rt::sliceStart(" + first[k] + ", " + i + ".shape[" +
                  std::to_string(a) + "], " + std::to_string(step) + ")";
    }
    os << "  {\n    const std::int64_t starts[] = {" << llvm::join(starts, ", ")
       << "}, steps[] = " << list(steps) << ";\n    k::slice(" << i
       << ", starts, steps, " << o << ");\n  }\n";
    return success();
  };
  auto unary = [&](StringRef kind) -> LogicalResult {
    std::string i = get(op->getOperand(0));
    std::string o = out();
    os << "  k::unary(k::UnaryOp::" << kind << ", " << i << ", " << o << ");\n";
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](dfg::AddOp) { return binary("Add"); })
      .Case([&](dfg::SubOp) { return binary("Sub"); })
      .Case([&](dfg::MulOp) { return binary("Mul"); })
      .Case([&](dfg::DivOp) { return binary("Div"); })
      .Case([&](dfg::PowOp) { return binary("Pow"); })
      .Case([&](dfg::MinOp) { return binary("Min"); })
      .Case([&](dfg::MaxOp) { return binary("Max"); })
      .Case([&](dfg::AndOp) { return binary("And"); })
      .Case([&](dfg::OrOp) { return binary("Or"); })
      .Case([&](dfg::EqualOp) { return binary("Equal"); })
      .Case([&](dfg::LessOp) { return binary("Less"); })
      .Case([&](dfg::GreaterOp) { return binary("Greater"); })
      .Case([&](dfg::LessOrEqualOp) { return binary("LessOrEqual"); })
      .Case([&](dfg::SqrtOp) { return unary("Sqrt"); })
      .Case([&](dfg::ReciprocalOp) { return unary("Reciprocal"); })
      .Case([&](dfg::NegOp) { return unary("Neg"); })
      .Case([&](dfg::SiluOp) { return unary("Silu"); })
      .Case([&](dfg::ErfOp) { return unary("Erf"); })
      .Case([&](dfg::TanhOp) { return unary("Tanh"); })
      .Case([&](dfg::SigmoidOp) { return unary("Sigmoid"); })
      .Case([&](dfg::ExpOp) { return unary("Exp"); })
      .Case([&](dfg::CosOp) { return unary("Cos"); })
      .Case([&](dfg::SinOp) { return unary("Sin"); })
      .Case([&](dfg::NotOp) { return unary("Not"); })
      .Case([&](dfg::GeluOp g) {
        return unary(g.getExact() ? "Gelu" : "GeluTanh");
      })
      .Case([&](dfg::WhereOp w) {
        std::string c = get(w.getCondition()), l = get(w.getLhs()),
                    r = get(w.getRhs()), o = out();
        os << "  k::where(" << c << ", " << l << ", " << r << ", " << o
           << ");\n";
        return success();
      })
      .Case([&](dfg::CastOp c) {
        std::string i = get(c.getInput()), o = out();
        os << "  k::cast(" << i << ", " << o << ");\n";
        return success();
      })
      .Case([&](dfg::FusedElementwiseOp f) { return emitFused(f, os); })
      .Case<dfg::ReshapeOp, dfg::SqueezeOp, dfg::UnsqueezeOp>([&](auto) {
        out();
        return success();
      })
      .Case([&](dfg::TransposeOp t) {
        std::string i = get(t.getInput()), o = out();
        os << "  {\n    const std::int64_t perm[] = " << list(t.getPerm())
           << ";\n    k::transpose(" << i << ", perm, " << o << ");\n  }\n";
        return success();
      })
      .Case([&](dfg::ConcatOp c) {
        SmallVector<std::string> ins;
        for (Value v : c.getInputs())
          ins.push_back(get(v));
        std::string o = out();
        os << "  {\n    const rt::TensorRef in[] = {" << llvm::join(ins, ", ")
           << "};\n    k::concat(in, " << ins.size() << ", "
           << normalizeAxis(c.getAxis(), rankOf(c.getResult())) << ", " << o
           << ");\n  }\n";
        return success();
      })
      .Case([&](dfg::GatherOp g) {
        std::string d = get(g.getData()), i = get(g.getIndices()), o = out();
        os << "  k::gather(" << d << ", " << i << ", "
           << normalizeAxis(g.getAxis(), rankOf(g.getData())) << ", " << o
           << ");\n";
        return success();
      })
      .Case([&](dfg::SliceOp s) -> LogicalResult {
        auto inType = cast<RankedTensorType>(s.getInput().getType());
        if (!inType.hasStaticShape()) {
          SmallVector<std::string> first;
          for (int64_t start : s.getStarts())
            first.push_back(std::to_string(start));
          return runtimeSlice(s.getInput(), first, s.getAxes(), s.getSteps());
        }
        dfg::Shape starts, steps;
        dfg::sliceOrigin(inType.getShape(), s.getStarts(), s.getAxes(),
                         s.getSteps(), starts, steps);
        std::string i = get(s.getInput()), o = out();
        os << "  {\n    const std::int64_t starts[] = " << list(starts)
           << ", steps[] = " << list(steps) << ";\n    k::slice(" << i
           << ", starts, steps, " << o << ");\n  }\n";
        return success();
      })
      .Case([&](dfg::SymbolicSliceOp s) {
        if (auto pieces = s->getAttrOfType<IntegerAttr>(kSplitOverAttr)) {
          AffineExpr whole = shapes_.dims(s.getInput())[normalizeAxis(
              s.getAxes()[0], rankOf(s.getInput()))];
          os << "  rt::requireSplit(" << dimExpr(whole) << ", "
             << pieces.getInt() << ", " << cppString(table_.format(whole))
             << ");\n";
        }
        return runtimeSlice(s.getInput(),
                            mapExprs(s.getStarts(), s.getSymbols()),
                            s.getAxes(), s.getSteps());
      })
      .Case([&](dfg::SymbolicExpandOp e) {
        std::string i = get(e.getInput()), o = out();
        os << "  k::expand(" << i << ", " << o << ");\n";
        return success();
      })
      .Case([&](dfg::SymbolicReshapeOp) {
        out();
        return success();
      })
      .Case([&](dfg::RangeOp r) {
        SmallVector<std::string> b = mapExprs(r.getBounds(), r.getSymbols());
        std::string o = out();
        os << "  k::iota(" << o << ", " << b[0] << ", " << r.getDelta()
           << ");\n";
        return success();
      })
      .Case([&](dfg::SizesOp z) {
        SmallVector<std::string> v = mapExprs(z.getMap(), z.getSymbols());
        std::string o = out();
        os << "  {\n    const std::int64_t values[] = {" << llvm::join(v, ", ")
           << "};\n    k::fillIntegers(" << o << ", values, " << v.size()
           << ");\n  }\n";
        return success();
      })
      .Case([&](dfg::SplitOp s) {
        std::string i = get(s.getInput());
        int64_t rank = rankOf(s.getInput());
        int64_t axis = normalizeAxis(s.getAxis(), rank);
        int64_t start = 0;
        for (unsigned r = 0; r < s.getNumResults(); ++r) {
          SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
          starts[axis] = start;
          start += s.getSizes()[r];
          std::string o = out(r);
          os << "  {\n    const std::int64_t starts[] = " << list(starts)
             << ", steps[] = " << list(steps) << ";\n    k::slice(" << i
             << ", starts, steps, " << o << ");\n  }\n";
        }
        return success();
      })
      .Case([&](dfg::ExpandOp e) {
        std::string i = get(e.getInput()), o = out();
        os << "  k::expand(" << i << ", " << o << ");\n";
        return success();
      })
      .Case<dfg::ReduceMeanOp, dfg::ReduceSumOp, dfg::ReduceMaxOp>([&](auto r) {
        StringRef kind = isa<dfg::ReduceMeanOp>(op)  ? "Mean"
                         : isa<dfg::ReduceSumOp>(op) ? "Sum"
                                                     : "Max";
        int64_t rank = rankOf(r.getInput());
        SmallVector<int64_t> axes;
        for (int64_t a : r.getAxes())
          axes.push_back(normalizeAxis(a, rank));
        if (axes.empty())
          for (int64_t a = 0; a < rank; ++a)
            axes.push_back(a);
        std::string i = get(r.getInput()), o = out();
        os << "  {\n    const std::int64_t axes[] = " << list(axes)
           << ";\n    k::reduce(k::ReduceOp::" << kind << ", " << i
           << ", axes, " << axes.size() << ", " << o << ");\n  }\n";
        return success();
      })
      .Case([&](dfg::TriluOp t) {
        std::string i = get(t.getInput()), o = out();
        os << "  k::trilu(" << i << ", " << (t.getUpper() ? "true" : "false")
           << ", " << t.getDiagonal() << ", " << o << ");\n";
        return success();
      })
      .Case([&](dfg::ScatterNDOp s) {
        std::string d = get(s.getData()), i = get(s.getIndices()),
                    u = get(s.getUpdates()), o = out();
        os << "  k::scatterND(" << d << ", " << i << ", " << u << ", " << o
           << ");\n";
        return success();
      })
      .Case([&](dfg::EmbeddingOp e) {
        std::string t = get(e.getTable()), i = get(e.getIds()), o = out();
        os << "  k::embedding(" << t << ", " << i << ", " << o << ");\n";
        return success();
      })
      .Case([&](dfg::MatMulOp m) {
        std::string l = get(m.getLhs()), r = get(m.getRhs()), o = out();
        os << "  k::matmul(" << l << ", " << r << ", " << o << ");\n";
        return success();
      })
      .Case([&](dfg::LinearOp l) {
        std::string i = get(l.getInput()), w = get(l.getWeight()),
                    b = opt(l.getBias()), o = out();
        os << "  k::linear(" << i << ", " << w << ", " << b << ", "
           << (l.getTransposeWeight() ? "true" : "false") << ", " << o
           << ");\n";
        return success();
      })
      .Case([&](dfg::AttentionOp a) {
        std::string q = get(a.getQuery()), kk = get(a.getKey()),
                    v = get(a.getValue()), m = opt(a.getMask()),
                    pk = opt(a.getPastKey()), pv = opt(a.getPastValue());
        std::string o = out(), presentK = "nullptr", presentV = "nullptr";
        if (a.getPresent().size() == 2) {
          presentK = "&" + declare(a.getPresent()[0], os);
          presentV = "&" + declare(a.getPresent()[1], os);
        }
        os << "  k::attention(" << q << ", " << kk << ", " << v << ", " << m
           << ", " << pk << ", " << pv << ", "
           << cppFloat(a.getScale().convertToDouble()) << ", "
           << (a.getCausal() ? "true" : "false") << ", "
           << cppFloat(a.getSoftcap().convertToDouble()) << ", " << o << ", "
           << presentK << ", " << presentV << ");\n";
        return success();
      })
      .Case([&](dfg::RotaryOp r) {
        std::string i = get(r.getInput()), c = get(r.getCos()),
                    s = get(r.getSin()), pos = opt(r.getPositions()), o = out();
        os << "  k::rotary(" << i << ", " << c << ", " << s << ", " << pos
           << ", " << (r.getInterleaved() ? "true" : "false") << ", "
           << r.getRotaryDim() << ", " << o << ");\n";
        return success();
      })
      .Case<dfg::LayerNormOp, dfg::RmsNormOp>([&](auto n) {
        std::string i = get(n.getInput()), s = get(n.getScale()),
                    b = opt(n.getBias()), res = opt(n.getResidual());
        std::string o = out(), sum = "nullptr";
        if (n.getSum().size() == 1)
          sum = "&" + declare(n.getSum()[0], os);
        os << "  k::" << (isa<dfg::LayerNormOp>(op) ? "layerNorm" : "rmsNorm")
           << "(" << i << ", " << s << ", " << b << ", " << res << ", "
           << normalizeAxis(n.getAxis(), rankOf(n.getInput())) << ", "
           << cppFloat(n.getEpsilon().convertToDouble()) << ", " << o << ", "
           << sum << ");\n";
        return success();
      })
      .Case([&](dfg::SoftmaxOp s) {
        std::string i = get(s.getInput()), o = out();
        os << "  k::softmax(" << i << ", " << s.getNormalizedAxis() << ", " << o
           << ");\n";
        return success();
      })
      .Default([&](Operation *) {
        return op->emitOpError("has no kernel in ") << theTarget();
      });
}

/// One k::fusedElementwise call whose lambda computes the body for one
/// element (runtime/include/meshc/runtime/fused.h): x[k] is input k, y[k]
/// result k, every intermediate a float.
LogicalResult FunctionEmitter::emitFused(dfg::FusedElementwiseOp op,
                                         llvm::raw_ostream &os) {
  SmallVector<std::string> ins, outs;
  for (Value v : op.getInputs())
    ins.push_back(operand(v, os));
  for (Value r : op.getResults())
    outs.push_back(declare(r, os));
  Block &body = op.getBody().front();
  llvm::DenseMap<Value, std::string> name;
  for (BlockArgument arg : body.getArguments())
    name[arg] = "x[" + std::to_string(arg.getArgNumber()) + "]";
  std::string lambda;
  llvm::raw_string_ostream fn(lambda);
  int temp = 0;
  for (Operation &inner : body.without_terminator()) {
    auto in = [&](unsigned i) { return name.lookup(inner.getOperand(i)); };
    auto call = [&](StringRef f) { return (f + "(" + in(0) + ")").str(); };
    auto call2 = [&](StringRef f) {
      return (f + "(" + in(0) + ", " + in(1) + ")").str();
    };
    auto infix = [&](StringRef o) {
      return (in(0) + " " + o + " " + in(1)).str();
    };
    std::string expr =
        llvm::TypeSwitch<Operation *, std::string>(&inner)
            .Case([&](dfg::AddOp) { return infix("+"); })
            .Case([&](dfg::SubOp) { return infix("-"); })
            .Case([&](dfg::MulOp) { return infix("*"); })
            .Case([&](dfg::DivOp) { return infix("/"); })
            .Case([&](dfg::PowOp) { return call2("powf"); })
            .Case([&](dfg::MinOp) { return call2("rt::fused::minimum"); })
            .Case([&](dfg::MaxOp) { return call2("rt::fused::maximum"); })
            .Case([&](dfg::SqrtOp) { return call("sqrtf"); })
            .Case([&](dfg::ReciprocalOp) { return "1.0f / " + in(0); })
            .Case([&](dfg::NegOp) { return "-" + in(0); })
            .Case([&](dfg::SiluOp) { return call("rt::fused::silu"); })
            .Case([&](dfg::ErfOp) { return call("erff"); })
            .Case([&](dfg::TanhOp) { return call("tanhf"); })
            .Case([&](dfg::SigmoidOp) { return call("rt::fused::sigmoid"); })
            .Case([&](dfg::ExpOp) { return call("expf"); })
            .Case([&](dfg::CosOp) { return call("cosf"); })
            .Case([&](dfg::SinOp) { return call("sinf"); })
            .Case([&](dfg::GeluOp g) {
              return call(g.getExact() ? "rt::fused::gelu"
                                       : "rt::fused::geluTanh");
            })
            .Case([&](dfg::CastOp c) {
              Type to = c.getTo();
              return to.isF16()    ? call("rt::fused::roundToHalf")
                     : to.isBF16() ? call("rt::fused::roundToBfloat16")
                                   : in(0);
            })
            .Default([](Operation *) { return std::string(); });
    if (expr.empty())
      return inner.emitOpError("has no fused form in ") << theTarget();
    std::string t = "t" + std::to_string(temp++);
    fn << "        const float " << t << " = " << expr << "; // "
       << inner.getName().stripDialect() << "\n";
    name[inner.getResult(0)] = t;
  }
  for (auto [k, v] : llvm::enumerate(body.getTerminator()->getOperands()))
    fn << "        y[" << k << "] = " << name.lookup(v) << ";\n";
  os << "  {\n    const rt::TensorRef ins[] = {" << llvm::join(ins, ", ")
     << "};\n    const rt::TensorRef outs[] = {" << llvm::join(outs, ", ")
     << "};\n    k::fusedElementwise(ins, " << ins.size() << ", outs, "
     << outs.size()
     << ",\n      [] MESHC_FUSED_FN(const float *x, float *y) {\n"
     << lambda << "      });\n  }\n";
  return success();
}

LogicalResult FunctionEmitter::emitCollective(Operation *op,
                                              llvm::raw_ostream &os) {
  ArrayRef<int16_t> axes = collectiveGridAxes(op);
  std::string what = cppString(
      (op->getName().getStringRef() + " #" + Twine(++collectiveCount_)).str());
  SmallVector<int64_t> axes64(axes.begin(), axes.end());
  auto group = [&]() {
    return "p.group(" + std::to_string(groups_.lookup(groupKey(axes))) + ")";
  };
  // "  p.comm().allReduceSum(", or, for a collective a dfg.wait completes,
  // "  const int t4 = p.comm().startAllReduceSum(" (the wait's ticket).
  auto call = [&](StringRef method) {
    dfg::WaitOp wait = waitOf(op);
    if (!wait)
      return ("  p.comm()." + method + "(").str();
    std::string ticket = "t" + std::to_string(next_++);
    tickets_[wait] = ticket;
    std::string start = method.str();
    start[0] = llvm::toUpper(start[0]);
    return "  const int " + ticket + " = p.comm().start" + start + "(";
  };
  if (auto send = dyn_cast<shard::SendOp>(op)) {
    std::string in = operand(send.getInput(), os);
    os << call("send") << "p.comm().peer(" << list(axes64) << ", "
       << list(send.getDestination()) << "), " << in << ", " << what << ");\n";
    declare(send.getResult(), os);
    return success();
  }
  if (auto recv = dyn_cast<shard::RecvOp>(op)) {
    std::optional<ArrayRef<int64_t>> source = recv.getSource();
    if (!source)
      return op->emitOpError("needs a static source for ") << theTarget();
    std::string o = declare(recv.getResult(), os);
    os << call("recv") << "p.comm().peer(" << list(axes64) << ", "
       << list(*source) << "), " << o << ", " << what << ");\n";
    return success();
  }
  std::string in = operand(op->getOperand(0), os);
  auto checkSum = [&](shard::ReductionKind kind) -> LogicalResult {
    if (kind != shard::ReductionKind::Sum)
      return op->emitOpError("reduction ")
             << shard::stringifyReductionKind(kind) << " is not supported by "
             << theTarget() << " (sum only)";
    return success();
  };
  if (auto ar = dyn_cast<shard::AllReduceOp>(op)) {
    if (failed(checkSum(ar.getReduction())))
      return failure();
    std::string o = declare(ar.getResult(), os);
    os << call("allReduceSum") << group() << ", " << in << ", " << o << ", "
       << what << ");\n";
    return success();
  }
  if (auto ag = dyn_cast<shard::AllGatherOp>(op)) {
    std::string o = declare(ag.getResult(), os);
    os << call("allGather") << group() << ", " << in << ", " << o << ", "
       << ag.getGatherAxis().getSExtValue() << ", " << what << ");\n";
    return success();
  }
  if (auto rs = dyn_cast<shard::ReduceScatterOp>(op)) {
    if (failed(checkSum(rs.getReduction())))
      return failure();
    std::string o = declare(rs.getResult(), os);
    os << call("reduceScatterSum") << group() << ", " << in << ", " << o << ", "
       << rs.getScatterAxis().getSExtValue() << ", " << what << ");\n";
    return success();
  }
  if (auto a2a = dyn_cast<shard::AllToAllOp>(op)) {
    std::string o = declare(a2a.getResult(), os);
    os << call("allToAll") << group() << ", " << in << ", " << o << ", "
       << a2a.getSplitAxis().getSExtValue() << ", "
       << a2a.getConcatAxis().getSExtValue() << ", " << what << ");\n";
    return success();
  }
  return op->emitOpError("is not supported by ")
         << theTarget()
         << " (rank programs hold only all_reduce, all_gather, reduce_scatter, "
            "all_to_all, send and recv)";
}

/// The collective sequence in execution order, stage calls expanded.
void describeCollectives(func::FuncOp fn, ModuleOp module, std::string &out) {
  for (Operation &op : fn.getBody().front()) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
        describeCollectives(callee, module, out);
      continue;
    }
    if (!isa<shard::ShardDialect>(op.getDialect()))
      continue;
    llvm::raw_string_ostream os(out);
    os << op.getName().getStringRef() << " axes ";
    for (int16_t a : collectiveGridAxes(&op))
      os << a << ",";
    for (NamedAttribute attr : op.getAttrs())
      if (attr.getName() != kStageAttr)
        os << " " << attr.getName().getValue() << "=" << attr.getValue();
    for (Type t : op.getOperandTypes())
      os << " " << t;
    os << ";";
  }
}

} // namespace

std::vector<GroupAxes> collectGroups(ModuleOp ranksModule) {
  std::vector<GroupAxes> groups;
  llvm::StringSet<> seen;
  ranksModule.walk([&](Operation *op) {
    if (!isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
             shard::AllToAllOp>(op))
      return;
    ArrayRef<int16_t> axes = collectiveGridAxes(op);
    if (seen.insert(groupKey(axes)).second)
      groups.emplace_back(axes.begin(), axes.end());
  });
  llvm::sort(groups);
  return groups;
}

/// The bounds of the rank program's own dimension names: a dimension split
/// over the mesh is named "name@n" (meshc-specialize-rank) and bounded by
/// the whole's bound divided by n, rounded up.
dfg::DimBindings localBounds(func::FuncOp main, const dfg::DimBindings &whole) {
  dfg::DimBindings local = whole;
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    if (auto names = main.getArgAttrOfType<ArrayAttr>(i, "dfg.dim_names"))
      for (Attribute n : names) {
        StringRef name = cast<StringAttr>(n).getValue();
        auto [base, count] = name.rsplit('@');
        int64_t pieces = 0;
        if (!count.empty() && !count.getAsInteger(10, pieces) && pieces > 0 &&
            whole.count(base))
          local[name] = (whole.lookup(base) + pieces - 1) / pieces;
      }
  return local;
}

StringRef targetName(Target target) {
  return target == Target::Cuda ? "cuda" : "cpu";
}

FailureOr<EmittedProgram>
emitCpuProgram(ModuleOp role, StringRef roleName, ArrayRef<GroupAxes> groups,
               StringRef banner, WeightShards &weights,
               const dfg::DimBindings *bounds, Target target) {
  EmittedProgram result;
  auto main = role.lookupSymbol<func::FuncOp>("main");
  auto grid = role.lookupSymbol<shard::GridOp>(kGridName);
  if (!main || main.isExternal() || !grid)
    return role.emitError("a rank program needs a grid and a @main function");
  SmallVector<int64_t> gridShape(grid.getShape());
  for (int64_t d : gridShape)
    if (d <= 0)
      return role.emitError("the ")
             << targetName(target) << " target needs a static grid";

  llvm::StringMap<int> groupIndex;
  for (auto [i, g] : llvm::enumerate(groups))
    groupIndex[groupKey(g)] = static_cast<int>(i);

  // Frames: @main first, the stage functions after it.
  SmallVector<func::FuncOp> stages;
  for (auto fn : role.getOps<func::FuncOp>())
    if (fn != main && !fn.isExternal())
      stages.push_back(fn);
  int collectives = 0;
  dfg::DimBindings rankBounds;
  if (bounds) {
    rankBounds = localBounds(main, *bounds);
    bounds = &rankBounds;
  }
  std::vector<BoundSymbol> symbols;
  if (bounds)
    symbols = boundSymbols(main);
  FunctionEmitter mainEmitter(main, weights, groupIndex, 0, collectives, bounds,
                              symbols, !stages.empty(), target);
  uint64_t mainPeak = mainEmitter.plan();
  uint64_t stagesPeak = 0;
  std::vector<std::unique_ptr<FunctionEmitter>> stageEmitters;
  for (func::FuncOp fn : stages) {
    stageEmitters.push_back(std::make_unique<FunctionEmitter>(
        fn, weights, groupIndex, mainPeak, collectives, bounds, symbols, false,
        target));
    stagesPeak = std::max(stagesPeak, stageEmitters.back()->plan());
  }
  result.arenaBytes = mainPeak + stagesPeak;

  std::string body;
  llvm::raw_string_ostream bos(body);
  for (auto [fn, emitter] : llvm::zip_equal(stages, stageEmitters)) {
    bos << "\n/// Pipeline stage function @" << fn.getSymName() << ".\n";
    if (failed(emitter->emit(bos)))
      return failure();
  }
  bos << "\n/// @main: the rank's schedule (its stages, sends and receives) "
         "over its piece of the inputs.\n";
  if (failed(mainEmitter.emit(bos)))
    return failure();

  std::string collectiveText;
  describeCollectives(main, role, collectiveText);
  result.collectiveHash =
      rt::xxh64(collectiveText.data(), collectiveText.size());

  // Signature, with what each dynamic dimension is.
  dfg::DimTable table(role.getContext());
  dfg::SymbolicShapes shapes(table);
  auto describe = [&](Value v) {
    std::vector<std::string> dims;
    auto type = cast<RankedTensorType>(v.getType());
    for (auto [d, e] : llvm::enumerate(shapes.dims(v)))
      dims.push_back(type.isDynamicDim(d) ? table.format(e) : "");
    return dims;
  };
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto name = main.getArgAttrOfType<StringAttr>(i, "onnx.name");
    std::vector<std::string> dims = describe(main.getArgument(i));
    for (std::string &dim : dims)
      dim = StringRef(dim).rsplit('@').first; // the whole, not the piece
    result.inputs.push_back(
        {name ? name.str() : "input" + std::to_string(i),
         cast<RankedTensorType>(main.getArgument(i).getType()),
         main.getArgAttr(i, kShardingAttr), dims});
  }
  Operation *ret = main.getBody().front().getTerminator();
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    auto name = main.getResultAttrOfType<StringAttr>(i, "onnx.name");
    result.outputs.push_back({name ? name.str() : "output" + std::to_string(i),
                              cast<RankedTensorType>(main.getResultTypes()[i]),
                              main.getResultAttr(i, kShardingAttr),
                              describe(ret->getOperand(i))});
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  os << banner;
  // The one place the targets differ: whose kernels `k::` names.
  bool cuda = target == Target::Cuda;
  os << "#include \"meshc/runtime/" << (cuda ? "cuda_kernels.h" : "kernels.h")
     << "\"\n"
        "#include \"meshc/runtime/dims.h\"\n"
        "#include \"meshc/runtime/fused.h\"\n"
        "#include \"meshc/runtime/program.h\"\n\n"
        "#include <cstdint>\n\n"
        "namespace rt = meshc::rt;\nnamespace k = meshc::rt::"
     << targetName(target)
     << ";\n\n"
     // A named namespace: nvcc's extended __device__ lambdas (the fused
     // kernels) may not live in functions with internal linkage.
     << "namespace program {\n\n";
  os << "const std::int64_t kGrid[] = " << list(gridShape) << ";\n";
  auto specs = [&](StringRef name, auto &&entries, auto nameOf, auto typeOf) {
    os << "const rt::TensorSpec " << name << "[] = {\n";
    size_t n = 0;
    for (auto &e : entries) {
      RankedTensorType t = typeOf(e);
      os << "    {" << cppString(nameOf(e)) << ", "
         << dtypeName(t.getElementType()) << ", " << t.getRank() << ", "
         << list(t.getShape()) << "},\n";
      ++n;
    }
    if (n == 0)
      os << "    {\"\", rt::DType::F32, 0, {}},\n";
    os << "};\n";
    return n;
  };
  size_t numWeights = specs(
      "kWeights", weights.entries(),
      [](const WeightShards::Entry &e) { return e.name; },
      [](const WeightShards::Entry &e) { return e.type; });
  size_t numInputs = specs(
      "kInputs", result.inputs, [](const SignatureEntry &e) { return e.name; },
      [](const SignatureEntry &e) { return e.localType; });
  size_t numOutputs = specs(
      "kOutputs", result.outputs,
      [](const SignatureEntry &e) { return e.name; },
      [](const SignatureEntry &e) { return e.localType; });
  os << "// Communication groups (grid axes), opened by every rank in the "
        "same order.\n";
  os << "const rt::GroupSpec kGroups[] = {\n";
  for (const GroupAxes &g : groups)
    os << "    {" << g.size() << ", "
       << list(SmallVector<int64_t>(g.begin(), g.end())) << "},\n";
  if (groups.empty())
    os << "    {0, {}},\n";
  os << "};\n";
  os << "const rt::ProgramInfo kInfo = {" << cppString(roleName) << ", 0x"
     << rt::hex64(result.collectiveHash) << "ull, " << result.arenaBytes << ", "
     << gridShape.size() << ", kGrid, " << numWeights << ", kWeights, "
     << numInputs << ", kInputs, " << numOutputs << ", kOutputs, "
     << groups.size() << ", kGroups};\n";
  os << body;
  os << "\n} // namespace program\n\n"
        "using namespace program;\n\n"
        "int main(int argc, char **argv) {\n"
        "  rt::Program p(argc, argv, kInfo);\n"
        "  p.execute(run);\n"
        "  return p.finish();\n"
        "}\n";
  result.source = std::move(text);
  return result;
}

} // namespace meshc::codegen
