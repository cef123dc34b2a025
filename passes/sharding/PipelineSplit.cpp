//===- PipelineSplit.cpp - Pipeline stages joined by send/recv ------------===//
//
// Part of meshc.
//
// Runs on the partitioned (SPMD) program, when the grid has a pp axis.
// Algorithm, per function:
//   1. Light ops whose operands come only from the arguments, weights and
//      constants (masks, rotary tables, the rank's weight slices) are
//      *free*: each stage that needs one computes its own copy. The others
//      (from the embedding lookup on: every linear, matmul, attention and
//      norm, and what depends on them) are *chain* ops, kept in program
//      order.
//   2. A cut between two chain ops carries the chain values defined before
//      it and used after it. Between consecutive layers, the candidate cut
//      is the position that carries the fewest bytes (the residual stream),
//      the latest on ties. A layer is where tokens mix: a dfg.attention,
//      the products of two activations (an attention raising left as
//      MatMul/Softmax/MatMul), or any op that combines positions (see
//      tokenMixingOps: a convolution over the sequence, a cache's concat,
//      a time shift joining a zero step before the sequence cut by one),
//      with no place between them where the residual stream alone is live.
//   3. Dynamic programming picks pp - 1 candidates minimising the slowest
//      stage under the cost model (CostModel.h).
//   4. Each stage becomes a private function `<name>_stage<k>` with
//      `meshc.stage = k`: its arguments are the function arguments it reads
//      and the values it receives; its results the values later stages or
//      the caller need.
//   5. The function itself now runs the schedule: per microbatch, each
//      stage's call (`meshc.stage = k`: run by the ranks whose pp
//      coordinate is k), then each value a later stage needs sent
//      (shard.send, on the sender's stage) and received (shard.recv of the
//      send's result, on the receiver's stage) right after. Every rank runs
//      the ops of its stage in this one order, so the sends and receives
//      pair up without deadlock.
//   6. With microbatches (the planning axis `mb` of meshc-shard-plan), the
//      stages take one microbatch; the function slices its arguments along
//      the dimension mb split, calls the stages once per microbatch and
//      concatenates the results. The mb axis then leaves the grid. A weight
//      or constant sliced over mb (a batch-shaped constant) is sliced per
//      microbatch in the schedule as well, and is an input of the stages;
//      so is a value an op computes from nothing (a Range).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/CostModel.h"
#include "dialects/dfg/Sharding/Sharding.h"
#include "dialects/dfg/Sharding/ShardingRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace meshc {
#define GEN_PASS_DEF_PIPELINESPLITPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

/// The dimension of a sharding split over `axis`, if any.
std::optional<int64_t> dimSplitOver(const TensorSharding &s,
                                    shard::GridAxis axis) {
  for (auto [d, axes] : llvm::enumerate(s))
    if (llvm::is_contained(axes, axis))
      return d;
  return std::nullopt;
}

/// The ops that combine the positions of a sequence: those whose factor rule
/// sums over, or needs whole, a dimension indexed by tokens. Such dimensions
/// start at the integer arguments (input_ids, position ids, the mask: their
/// batch and sequence), or, in a model that reads no integers, at its
/// floating-point arguments' positions (a speech encoder's samples [batch,
/// samples]; an image encoder's pixels [batch, channels, height, width],
/// channels first as torch's convolutions read them), and follow each op's
/// rule to its results; a shard collective keeps its operand's. Selections
/// (slices, gathers) only pick
/// positions and are not counted: a causal convolution's taps are slices,
/// but the padding before them (a concat along the sequence) is.
llvm::DenseSet<Operation *> tokenMixingOps(Block &body) {
  // Bit d: dimension d of the value is indexed by tokens.
  llvm::DenseMap<Value, uint64_t> tokens;
  auto allBits = [](int64_t rank) {
    return rank >= 64 ? ~uint64_t(0) : (uint64_t(1) << rank) - 1;
  };
  for (BlockArgument arg : body.getArguments())
    if (auto type = dyn_cast<RankedTensorType>(arg.getType());
        type && isa<IntegerType>(type.getElementType()))
      tokens[arg] = allBits(type.getRank());
  if (tokens.empty())
    for (BlockArgument arg : body.getArguments())
      if (auto type = dyn_cast<RankedTensorType>(arg.getType());
          type && isa<FloatType>(type.getElementType()) && type.getRank() >= 2)
        tokens[arg] = allBits(type.getRank()) & ~(type.getRank() > 2 ? 2 : 0);
  llvm::DenseSet<Operation *> mixing;
  for (Operation &op : body.without_terminator()) {
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return tokens.lookup(v) != 0; }))
      continue;
    bool ruled =
        isa<dfg::DfgDialect>(op.getDialect()) &&
        (isa<dfg::ElementwiseOpInterface, dfg::ShardingRuleOpInterface>(op)) &&
        llvm::all_of(op.getOperandTypes(), llvm::IsaPred<RankedTensorType>) &&
        llvm::all_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>);
    if (!ruled) {
      auto in = dyn_cast<RankedTensorType>(op.getOperand(0).getType());
      for (Value r : op.getResults())
        if (auto type = dyn_cast<RankedTensorType>(r.getType());
            in && type && type.getRank() == in.getRank())
          tokens[r] = tokens.lookup(op.getOperand(0));
      continue;
    }
    FailureOr<dfg::ShardingRule> rule = dfg::getShardingRule(&op);
    if (failed(rule))
      continue;
    llvm::BitVector factors(rule->factors.size());
    for (auto [v, tf] : llvm::zip(op.getOperands(), rule->operands)) {
      uint64_t bits = tokens.lookup(v);
      for (auto [d, dims] : llvm::enumerate(tf))
        if (d < 64 && (bits >> d & 1))
          for (int f : dims)
            factors.set(f);
    }
    // Slices and concats keep each dimension's meaning, the one they cut or
    // join included (its factor is the op's own): a time shift, x[:, :-1]
    // joined after a zero step, still has positions along the sequence.
    uint64_t kept = 0;
    if (isa<dfg::SliceOp, dfg::SymbolicSliceOp, dfg::ConcatOp>(op))
      for (Value v : op.getOperands())
        kept |= tokens.lookup(v);
    // A reshape whose rule pairs no factor with a dimension it splits or
    // merges (an image's flattened positions back to its height and width,
    // sizes that are symbolic): the result's dimensions that share no
    // factor with the input hold positions where the token dimensions they
    // come from did.
    bool unpaired = false;
    llvm::BitVector inFactors(rule->factors.size());
    if (isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp>(op)) {
      llvm::BitVector inResult(rule->factors.size());
      for (const dfg::TensorFactors &tf : rule->results)
        for (const dfg::DimFactors &dims : tf)
          for (int f : dims)
            inResult.set(f);
      uint64_t bits = tokens.lookup(op.getOperand(0));
      for (auto [d, dims] : llvm::enumerate(rule->operands.front())) {
        for (int f : dims)
          inFactors.set(f);
        if (d < 64 && (bits >> d & 1) &&
            (dims.empty() ||
             llvm::any_of(dims, [&](int f) { return !inResult[f]; })))
          unpaired = true;
      }
    }
    for (auto [r, tf] : llvm::zip(op.getResults(), rule->results)) {
      uint64_t bits = kept;
      ArrayRef<int64_t> shape = cast<RankedTensorType>(r.getType()).getShape();
      for (auto [d, dims] : llvm::enumerate(tf))
        if (d < 64 && (llvm::any_of(dims, [&](int f) { return factors[f]; }) ||
                       (unpaired && shape[d] != 1 &&
                        llvm::none_of(dims, [&](int f) {
                          return inFactors[f];
                        }))))
          bits |= uint64_t(1) << d;
      if (bits)
        tokens[r] = bits;
    }
    if (!isa<dfg::SliceOp, dfg::SymbolicSliceOp, dfg::GatherOp,
             dfg::GatherNDOp>(op) &&
        llvm::any_of(factors.set_bits(), [&](unsigned f) {
          return rule->factors[f].kind != dfg::FactorKind::Parallel;
        }))
      mixing.insert(&op);
  }
  return mixing;
}

class PipelineSplitter {
public:
  PipelineSplitter(shard::GridOp grid, func::FuncOp func)
      : grid_(grid), func_(func), b_(func.getContext()) {}

  LogicalResult run() {
    std::optional<shard::GridAxis> pp = findAxis(grid_, "pp");
    mb_ = findAxis(grid_, kMicrobatchAxis);
    if (!pp)
      return success();
    pp_ = *pp;
    stages_ = grid_.getShape()[pp_];
    microbatches_ = mb_ ? grid_.getShape()[*mb_] : 1;
    Block &body = func_.getBody().front();
    if (mb_)
      for (BlockArgument arg : body.getArguments()) {
        auto type = cast<RankedTensorType>(arg.getType());
        TensorSharding s =
            fromAttr(func_.getArgAttr(arg.getArgNumber(), kShardingAttr),
                     type.getRank());
        std::optional<int64_t> d = dimSplitOver(s, *mb_);
        if (d && type.isDynamicDim(*d))
          return func_.emitOpError("splits argument ")
                 << arg.getArgNumber() << " into " << microbatches_
                 << " microbatches along dimension " << *d
                 << ", whose size is symbolic; microbatches need a static "
                    "batch (give it with --dim)";
      }
    for (Operation &op : body.without_terminator()) {
      if (!mb_ || !llvm::is_contained(collectiveGridAxes(&op), *mb_))
        continue;
      // A batch-shaped weight or constant sliced per microbatch (BERT's
      // token_type_ids), or a value computed from nothing (a Range over the
      // batch, GPT-J's row index): an input of the stages, like an
      // argument.
      auto slice = dyn_cast<shard::AllSliceOp>(op);
      Operation *source = slice ? slice.getInput().getDefiningOp() : nullptr;
      if (source &&
          (isa<dfg::WeightOp, dfg::ConstantOp>(source) ||
           (source->getNumOperands() == 0 && source->getNumResults() == 1 &&
            isa<dfg::DfgDialect>(source->getDialect()) &&
            isMemoryEffectFree(source))) &&
          slice.getGridAxes().back() == *mb_) {
        microbatchInputs_.insert(slice.getResult());
        continue;
      }
      return op.emitOpError("needs the whole batch, so the batch cannot "
                            "be split into ")
             << microbatches_ << " microbatches";
    }

    classify(body);
    if (failed(chooseCuts(body)))
      return failure();
    buildStages(body);
    buildSchedule(body);
    return success();
  }

private:
  /// Step 1: free ops and chain ops.
  void classify(Block &body) {
    for (Operation &op : body.without_terminator()) {
      if (op.getNumResults() == 1 && isInput(op.getResult(0)))
        continue;
      bool heavy = isa<dfg::EmbeddingOp, dfg::LinearOp, dfg::MatMulOp,
                       dfg::AttentionOp, dfg::LayerNormOp, dfg::RmsNormOp>(op);
      bool free = !heavy && llvm::all_of(op.getOperands(), [&](Value v) {
        return isInput(v) || free_.contains(v.getDefiningOp());
      });
      if (free)
        free_.insert(&op);
      else {
        index_[&op] = chain_.size();
        chain_.push_back(&op);
      }
    }
  }

  /// liveOps[p]: how many ops produced the floating-point chain values live
  /// across a cut before chain_[p] (1: the residual stream alone).
  /// Only activations count (activationValues): a rotary table computed
  /// from the positions by a matmul is a chain value too, live through
  /// every layer, but not the residual stream.
  std::vector<int> countLiveProducers() {
    llvm::DenseSet<Value> activations =
        activationValues(func_.getBody().front());
    size_t n = chain_.size();
    std::vector<int> delta(n + 1, 0);
    for (auto [i, op] : llvm::enumerate(chain_)) {
      size_t last = i;
      for (Value v : op->getResults()) {
        if (!isa<FloatType>(getElementTypeOrSelf(v.getType())) ||
            !activations.contains(v))
          continue;
        for (Operation *user : v.getUsers())
          if (auto it = index_.find(user); it != index_.end())
            last = std::max(last, it->second);
      }
      if (last > i) {
        ++delta[i + 1];
        --delta[last + 1];
      }
    }
    std::vector<int> live(n + 1, 0);
    for (size_t p = 1; p <= n; ++p)
      live[p] = live[p - 1] + delta[p];
    return live;
  }

  /// Steps 2 and 3.
  LogicalResult chooseCuts(Block &body) {
    // The layers: where tokens mix. A dfg.attention is one layer; so are the
    // products of two activations (Q Kᵀ and P V of an attention left as
    // MatMul/Softmax/MatMul) and the other ops that combine positions,
    // grouped while no place between them has the residual stream alone
    // live (the floating-point values one op produced: a residual sum, or a
    // norm with its fused residual). An attention joins the group of ops
    // before it (a cache's concat), never a group that has one already.
    std::vector<int> liveOps = countLiveProducers();
    llvm::DenseSet<Operation *> combining = tokenMixingOps(body);
    enum class Group { None, Attention, Products, Other };
    auto kindOf = [&](Operation *op) {
      auto matmul = dyn_cast<dfg::MatMulOp>(op);
      bool products = matmul && !isInput(matmul.getLhs()) &&
                      !isInput(matmul.getRhs()) &&
                      !free_.contains(matmul.getLhs().getDefiningOp()) &&
                      !free_.contains(matmul.getRhs().getDefiningOp());
      return isa<dfg::AttentionOp>(op) ? Group::Attention
             : products                ? Group::Products
             : combining.contains(op)  ? Group::Other
                                       : Group::None;
    };
    // The fewest producers live anywhere between the first and the last
    // token-mixing op: 1, the residual stream, unless a value every layer
    // reads stays live from before the first layer to the last (CPM-Ant's
    // position bias, looked up once by the segments of the tokens): then a
    // place with only those and the residual stream live is a layer's end.
    std::optional<size_t> firstMixing, lastMixing;
    for (auto [i, op] : llvm::enumerate(chain_))
      if (kindOf(op) != Group::None) {
        firstMixing = firstMixing.value_or(i);
        lastMixing = i;
      }
    int residualAlone = 1;
    if (firstMixing && *lastMixing > *firstMixing)
      residualAlone =
          std::max(1, *std::min_element(liveOps.begin() + *firstMixing + 1,
                                        liveOps.begin() + *lastMixing + 1));
    SmallVector<size_t> layers; // each layer's last token-mixing chain op
    Group open = Group::None;   // the kind of the last group
    for (auto [i, op] : llvm::enumerate(chain_)) {
      Group kind = kindOf(op);
      if (kind == Group::None)
        continue;
      bool joins =
          open != Group::None &&
          (kind == Group::Other || open == Group::Other ||
           (kind == Group::Products && open == Group::Products)) &&
          llvm::none_of(llvm::seq<size_t>(layers.back() + 1, i + 1),
                        [&](size_t p) { return liveOps[p] <= residualAlone; });
      if (joins) {
        layers.back() = i;
        if (open == Group::Other)
          open = kind;
        continue;
      }
      layers.push_back(i);
      open = kind;
    }
    if (stages_ > static_cast<int64_t>(layers.size()))
      return func_.emitError("pp=")
             << stages_ << " exceeds the " << layers.size()
             << " layers of the model (where tokens mix: its attentions, "
                "raised or not, and other ops that combine positions); use "
                "pp <= "
             << std::max<size_t>(1, layers.size());

    // carried[p]: bytes of chain values live across a cut before chain_[p].
    size_t n = chain_.size();
    std::vector<double> delta(n + 1, 0.0);
    for (auto [i, op] : llvm::enumerate(chain_))
      for (Value v : op->getResults()) {
        size_t last = i;
        for (Operation *user : v.getUsers())
          if (auto it = index_.find(user); it != index_.end())
            last = std::max(last, it->second);
        if (last > i) {
          delta[i + 1] += tensorBytes(v.getType());
          delta[last + 1] -= tensorBytes(v.getType());
        }
      }
    std::vector<double> carried(n + 1, 0.0);
    for (size_t p = 1; p <= n; ++p)
      carried[p] = carried[p - 1] + delta[p];

    SmallVector<size_t> candidates;
    for (size_t l = 0; l + 1 < layers.size(); ++l) {
      size_t best = layers[l + 1];
      for (size_t p = layers[l] + 1; p <= layers[l + 1]; ++p)
        if (carried[p] <= carried[best])
          best = p;
      candidates.push_back(best);
    }

    DeviceModel device;
    LinkModel link;
    std::vector<double> prefix(n + 1, 0.0);
    for (auto [i, op] : llvm::enumerate(chain_))
      prefix[i + 1] =
          prefix[i] + estimateOpCost(op, grid_, device, link).seconds;
    // Bounds: 0, the candidates, n. best[k][j]: the slowest of k + 1
    // stages covering chain ops [0, bounds[j]).
    SmallVector<size_t> bounds = {0};
    bounds.append(candidates.begin(), candidates.end());
    bounds.push_back(n);
    size_t m = bounds.size();
    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> best(stages_,
                                          std::vector<double>(m, kInf));
    std::vector<std::vector<size_t>> from(stages_, std::vector<size_t>(m, 0));
    for (size_t j = 1; j < m; ++j)
      best[0][j] = prefix[bounds[j]];
    for (int64_t k = 1; k < stages_; ++k)
      for (size_t j = 1; j < m; ++j)
        for (size_t i = 1; i < j; ++i) {
          double t =
              std::max(best[k - 1][i], prefix[bounds[j]] - prefix[bounds[i]]);
          if (t < best[k][j]) {
            best[k][j] = t;
            from[k][j] = i;
          }
        }
    SmallVector<size_t> cuts(stages_ + 1, n);
    cuts[0] = 0;
    for (size_t k = stages_ - 1, j = m - 1; k > 0; --k) {
      j = from[k][j];
      cuts[k] = bounds[j];
    }
    for (int64_t k = 0; k < stages_; ++k)
      for (size_t i = cuts[k]; i < cuts[k + 1]; ++i)
        stageOf_[chain_[i]] = k;
    // An op that only feeds the results (the cast back to the model's type
    // of an output, which `--dtype` adds before the return) belongs with
    // what it reads: an earlier stage's present is then returned from there
    // rather than sent on to the last stage.
    for (Operation *op : llvm::reverse(chain_)) {
      if (op->getNumResults() == 0 ||
          !llvm::all_of(op->getUsers(), [](Operation *user) {
            return isa<func::ReturnOp>(user);
          }))
        continue;
      std::optional<int64_t> latest;
      for (Value operand : op->getOperands())
        if (std::optional<int64_t> s = stageOfValue(operand))
          latest = std::max(latest.value_or(0), *s);
      if (latest && *latest < stageOf_[op])
        stageOf_[op] = *latest;
    }
    return success();
  }

  /// The stage that computes `v` (chain values only).
  std::optional<int64_t> stageOfValue(Value v) {
    Operation *def = v.getDefiningOp();
    auto it = def ? stageOf_.find(def) : stageOf_.end();
    if (it == stageOf_.end())
      return std::nullopt;
    return it->second;
  }

  /// Step 4.
  void buildStages(Block &body) {
    Operation *ret = body.getTerminator();
    int64_t last = stages_ - 1;
    // Per stage: its ops (chain ops and the free ops they need), the
    // arguments it reads, the values it receives and those it yields.
    stageOps_.resize(stages_);
    stageArgs_.resize(stages_);
    received_.resize(stages_);
    yielded_.resize(stages_);
    SmallVector<llvm::SetVector<Operation *>> needed(stages_);
    std::function<void(Value, int64_t)> need = [&](Value v, int64_t s) {
      if (isInput(v)) {
        stageArgs_[s].insert(v);
        return;
      }
      Operation *def = v.getDefiningOp();
      if (free_.contains(def)) {
        if (needed[s].insert(def))
          for (Value operand : def->getOperands())
            need(operand, s);
        return;
      }
      int64_t from = stageOf_.lookup(def);
      if (from != s) {
        received_[s].insert(v);
        yielded_[from].insert(v);
      }
    };
    for (Operation *op : chain_)
      for (Value operand : op->getOperands())
        need(operand, stageOf_.lookup(op));
    for (Value v : ret->getOperands()) {
      std::optional<int64_t> s = stageOfValue(v);
      if (s)
        yielded_[*s].insert(v);
      else if (!isInput(v)) {
        need(v, last); // a free result: the last stage computes and yields it
        yielded_[last].insert(v);
      }
    }
    for (Operation &op : body.without_terminator()) {
      auto it = stageOf_.find(&op);
      for (int64_t s = 0; s < stages_; ++s)
        if ((it != stageOf_.end() && it->second == s) ||
            needed[s].contains(&op))
          stageOps_[s].push_back(&op);
    }
    OpBuilder mb(func_);
    for (int64_t s = 0; s < stages_; ++s) {
      SmallVector<Type> inputs, outputs;
      for (Value a : stageArgs_[s])
        inputs.push_back(a.getType());
      for (Value v : received_[s])
        inputs.push_back(v.getType());
      for (Value v : yielded_[s])
        outputs.push_back(v.getType());
      std::string name =
          (func_.getSymName() + "_stage" + std::to_string(s)).str();
      auto stage = func::FuncOp::create(
          mb, func_.getLoc(), name,
          FunctionType::get(func_.getContext(), inputs, outputs));
      stage.setPrivate();
      stage->setAttr(kStageAttr, mb.getI64IntegerAttr(s));
      Block *entry = stage.addEntryBlock();
      IRMapping mapping;
      unsigned i = 0;
      for (Value a : stageArgs_[s])
        mapping.map(a, entry->getArgument(i++));
      for (Value v : received_[s])
        mapping.map(v, entry->getArgument(i++));
      OpBuilder sb = OpBuilder::atBlockEnd(entry);
      for (Operation *op : stageOps_[s])
        sb.clone(*op, mapping);
      SmallVector<Value> results;
      for (Value v : yielded_[s])
        results.push_back(mapping.lookup(v));
      func::ReturnOp::create(sb, func_.getLoc(), results);
      stageFuncs_.push_back(stage);
    }
  }

  /// Step 5 (and 6).
  void buildSchedule(Block &body) {
    MLIRContext *context = func_.getContext();
    Operation *ret = body.getTerminator();
    SmallVector<Value> returned(ret->getOperands());
    ret->erase();
    // Everything below the arguments is rebuilt.
    SmallVector<Operation *> old;
    for (Operation &op : body)
      old.push_back(&op);

    // Arguments and results: the dimension mb splits, which grows back to
    // the rank's whole block; mb leaves the shardings.
    SmallVector<std::optional<int64_t>> argDim(body.getNumArguments());
    for (BlockArgument arg : body.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      TensorSharding s = fromAttr(
          func_.getArgAttr(arg.getArgNumber(), kShardingAttr), type.getRank());
      if (!mb_)
        continue;
      argDim[arg.getArgNumber()] = dimSplitOver(s, *mb_);
      if (argDim[arg.getArgNumber()])
        arg.setType(grow(type, *argDim[arg.getArgNumber()]));
      setSharding(arg.getArgNumber(), /*result=*/false, withoutMicrobatch(s));
    }
    SmallVector<std::optional<int64_t>> resultDim(returned.size());
    for (auto [i, v] : llvm::enumerate(returned)) {
      auto type = cast<RankedTensorType>(v.getType());
      TensorSharding s =
          fromAttr(func_.getResultAttr(i, kShardingAttr), type.getRank());
      if (!mb_)
        continue;
      resultDim[i] = dimSplitOver(s, *mb_);
      setSharding(i, /*result=*/true, withoutMicrobatch(s));
    }

    b_.setInsertionPointToEnd(&body);
    Location loc = func_.getLoc();
    auto stageAttr = [&](int64_t s) { return b_.getI64IntegerAttr(s); };
    SmallVector<SmallVector<Value>> perMicrobatch(returned.size());
    for (int64_t m = 0; m < microbatches_; ++m) {
      // This microbatch's slice of each argument, made once.
      llvm::DenseMap<Value, Value> argSlice;
      auto sliceOf = [&](Value input) -> Value {
        Value whole = input;
        std::optional<int64_t> d;
        if (auto arg = dyn_cast<BlockArgument>(input))
          d = argDim[arg.getArgNumber()];
        else
          std::tie(whole, d) = microbatchSource(input);
        if (!d)
          return whole;
        auto [it, inserted] = argSlice.try_emplace(input);
        if (inserted) {
          int64_t size =
              cast<RankedTensorType>(whole.getType()).getDimSize(*d) /
              microbatches_;
          it->second = dfg::SliceOp::create(b_, loc, whole, {m * size},
                                            {(m + 1) * size}, {*d}, {1});
        }
        return it->second;
      };
      llvm::DenseMap<std::pair<Value, int64_t>, Value> arrived;
      llvm::DenseMap<Value, Value> produced;
      for (int64_t s = 0; s < stages_; ++s) {
        SmallVector<Value> operands;
        for (Value a : stageArgs_[s])
          operands.push_back(sliceOf(a));
        for (Value v : received_[s])
          operands.push_back(arrived.lookup({v, s}));
        auto call = func::CallOp::create(b_, loc, stageFuncs_[s], operands);
        call->setAttr(kStageAttr, stageAttr(s));
        for (auto [v, r] : llvm::zip_equal(yielded_[s], call.getResults())) {
          produced[v] = r;
          for (int64_t t = s + 1; t < stages_; ++t) {
            if (!received_[t].contains(v))
              continue;
            auto send = shard::SendOp::create(
                b_, loc, r.getType(), grid_.getSymName(), {pp_}, r,
                ArrayRef<int64_t>{t}, ValueRange());
            send->setAttr(kStageAttr, stageAttr(s));
            auto recv = shard::RecvOp::create(
                b_, loc, r.getType(), grid_.getSymName(), {pp_},
                send.getResult(), b_.getDenseI64ArrayAttr({s}), ValueRange());
            recv->setAttr(kStageAttr, stageAttr(t));
            arrived[{v, t}] = recv.getResult();
          }
        }
      }
      for (auto [i, v] : llvm::enumerate(returned))
        perMicrobatch[i].push_back(isInput(v) ? sliceOf(v)
                                              : produced.lookup(v));
    }

    SmallVector<Value> results;
    for (auto [i, v] : llvm::enumerate(returned)) {
      int64_t owner =
          isInput(v) ? stages_ - 1 : stageOfValue(v).value_or(stages_ - 1);
      Value r = perMicrobatch[i].back();
      if (resultDim[i] && microbatches_ > 1) {
        auto concat =
            dfg::ConcatOp::create(b_, loc, perMicrobatch[i], *resultDim[i]);
        concat->setAttr(kStageAttr, stageAttr(owner));
        r = concat.getResult();
      }
      results.push_back(r);
      func_.setResultAttr(i, kStageAttr, stageAttr(owner));
    }
    func::ReturnOp::create(b_, loc, results);
    for (Operation *op : llvm::reverse(old)) {
      op->dropAllUses();
      op->erase();
    }
    func_.setFunctionType(FunctionType::get(context, body.getArgumentTypes(),
                                            ValueRange(results).getTypes()));
  }

  /// What the stages take as inputs: the arguments, and the per-microbatch
  /// slices of batch-shaped weights and constants.
  bool isInput(Value v) const {
    return isa<BlockArgument>(v) || microbatchInputs_.contains(v);
  }

  /// For a microbatch input (an all_slice over axes ending in mb), the
  /// schedule's value of the rank's block of every microbatch, built once
  /// from a copy of the weight or constant, and the dimension split.
  std::pair<Value, std::optional<int64_t>> microbatchSource(Value input) {
    auto slice = cast<shard::AllSliceOp>(input.getDefiningOp());
    int64_t d = slice.getSliceAxis().getSExtValue();
    Value &whole = microbatchWholes_[input];
    if (!whole) {
      OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPointToStart(b_.getInsertionBlock());
      whole = b_.clone(*slice.getInput().getDefiningOp())->getResult(0);
      SmallVector<int16_t> axes(slice.getGridAxes());
      axes.pop_back(); // mb
      if (!axes.empty()) {
        auto type = cast<RankedTensorType>(input.getType());
        SmallVector<int64_t> shape(type.getShape());
        shape[d] *= microbatches_;
        whole = shard::AllSliceOp::create(
            b_, slice.getLoc(),
            RankedTensorType::get(shape, type.getElementType()), whole,
            grid_.getSymName(), axes, d);
      }
    }
    return {whole, d};
  }

  void setSharding(unsigned i, bool result, const TensorSharding &s) {
    if (isReplicated(s)) {
      if (result)
        func_.removeResultAttr(
            i, StringAttr::get(func_.getContext(), kShardingAttr));
      else
        func_.removeArgAttr(i,
                            StringAttr::get(func_.getContext(), kShardingAttr));
      return;
    }
    Attribute attr = toAttr(func_.getContext(), s);
    if (result)
      func_.setResultAttr(i, kShardingAttr, attr);
    else
      func_.setArgAttr(i, kShardingAttr, attr);
  }

  RankedTensorType grow(RankedTensorType type, int64_t dim) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] *= microbatches_;
    return RankedTensorType::get(shape, type.getElementType());
  }

  TensorSharding withoutMicrobatch(TensorSharding s) {
    for (DimAxes &axes : s)
      llvm::erase(axes, *mb_);
    return s;
  }

  shard::GridOp grid_;
  func::FuncOp func_;
  OpBuilder b_;
  shard::GridAxis pp_ = 0;
  std::optional<shard::GridAxis> mb_;
  int64_t stages_ = 1, microbatches_ = 1;
  llvm::SmallPtrSet<Operation *, 32> free_;
  SmallVector<Operation *> chain_;
  llvm::DenseMap<Operation *, size_t> index_;
  llvm::DenseMap<Operation *, int64_t> stageOf_;
  SmallVector<SmallVector<Operation *>> stageOps_;
  SmallVector<llvm::SetVector<Value>> stageArgs_;
  /// all_slice results of a weight or constant over axes ending in mb.
  llvm::SetVector<Value> microbatchInputs_;
  /// Per such input, the rank's block of all microbatches in the schedule.
  llvm::DenseMap<Value, Value> microbatchWholes_;
  SmallVector<llvm::SetVector<Value>> received_, yielded_;
  SmallVector<func::FuncOp> stageFuncs_;
};

/// Drops the planning axis mb (the grid's last) once no function uses it.
void removeMicrobatchAxis(shard::GridOp grid) {
  std::optional<shard::GridAxis> mb = findAxis(grid, kMicrobatchAxis);
  if (!mb)
    return;
  SmallVector<int64_t> shape(grid.getShape());
  shape.erase(shape.begin() + *mb);
  grid.setShape(shape);
  if (auto names = grid->getAttrOfType<ArrayAttr>(kAxisNamesAttr)) {
    SmallVector<Attribute> kept(names.begin(), names.end());
    kept.erase(kept.begin() + *mb);
    grid->setAttr(kAxisNamesAttr, ArrayAttr::get(grid.getContext(), kept));
  }
}

class PipelineSplitPass
    : public impl::PipelineSplitPassBase<PipelineSplitPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<shard::GridOp> grid = lookupGrid(module);
    if (failed(grid))
      return signalPassFailure();
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && !func->hasAttr(kStageAttr))
        funcs.push_back(func);
    for (func::FuncOp func : funcs)
      if (failed(PipelineSplitter(*grid, func).run()))
        return signalPassFailure();
    removeMicrobatchAxis(*grid);
  }
};

} // namespace
} // namespace meshc
