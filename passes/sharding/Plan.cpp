//===- Plan.cpp - Choose a sharding for every tensor ----------------------===//
//
// Part of meshc.
//
// Algorithm:
//   1. Resolve the mesh into the module's shard.grid (axes named dp, pp, tp).
//      Where attentions have fewer KV heads than tp (and their count divides
//      tp), split tp into the sub-axes tp.kv x tp.rep: the KV heads shard
//      over tp.kv and are replicated over tp.rep, as vLLM does.
//   2. On every mesh, a gather_nd at index tuples whose first component is
//      the tuple's own batch position (the dynamo exporter's padding mask)
//      gathers per batch row (BatchGathers.cpp), so dp splits it.
//      With a tp axis (splitPackedProjections), normalise what exporters
//      write around projections (linears, and matmuls by a weight matrix)
//      and heads: ops on a merge of leading dimensions ([B*H, S, D]) up to
//      its split back are rebuilt on the unmerged tensor (the dynamo
//      exporter's Kᵀ, BLOOM's 3-D scores; UnmergeLeading.cpp); a row
//      reshape after a projection moves before it (TorchScript's Gemm on
//      [batch * seq, k]); a selection of a block of heads from a
//      [..., heads, d] view of a projection (a Slice, a Gather at constant
//      indices, a GatherND after a Transpose: Falcon's fused multi-query
//      QKV) becomes a slice of its features (HeadSlices.cpp); and a
//      projection read only as parts of its features (a Split, or slices
//      of its last axis, directly or after its bias add: packed QKV,
//      gate_up, a packed GroupQueryAttention input; an expert's fused
//      gate_up; parts cut after elementwise ops or row concats that join
//      several projections, which move before the join) becomes one
//      projection per part, each on a slice of the weight, so that every
//      part can be column-parallel. Every mean becomes
//      a sum over its count (a sum splits; SplitNorms.cpp).
//   3. Seed shardings, Megatron style:
//      - dp: dimension 0 (the batch) of every function argument;
//      - tp: the heads of every attention (so the KV heads when there are
//        several: each rank keeps the KV heads of its queries, shared with
//        the other ranks of its tp.kv group when there are fewer); the
//        hidden features of every MLP (the linears whose outputs reach
//        one other linear through elementwise ops only, and nothing else);
//        then, once those have propagated, the vocabulary of the lm_head (a
//        returned linear whose input is whole) and of the embeddings, padded
//        with zeros where tp does not divide it.
//      Then, from the graph alone, every projection still whole: its output
//      features are split over tp on trial and propagated (step 4); the
//      split is kept where it ends in contractions that sum it (partial
//      sums, one all_reduce), in one projection at most (not every reader of
//      a residual stream split by features), and needs no all_gather on the
//      way, so an attention that raising did not recognise is still split
//      by heads, and a mixture of experts' per-token expert products (a
//      matrix gathered from a stacked weight per token) by their hidden
//      features.
//      Otherwise it is undone, and the reason kept for the report (step 6).
//      An RMS norm whose features the plan splits (BitNet's sub-norm over
//      the merged heads), or that stops a trial split by needing its input
//      whole (OLMo-2's q/k norms over all heads, BitNet's over the MLP's
//      hidden features), becomes a sum of squares and elementwise ops
//      (SplitNorms.cpp), and the trial is made again: each rank sums its
//      squares and one all_reduce of [..., 1] completes the statistic.
//   4. Propagate through the ops' factor rules (ShardingRules.h) until
//      nothing changes: a sharded dimension shards its outermost factor,
//      which shards every other dimension that factor leads. Pinned factors
//      stop propagation; reduction factors reach the other operands but no
//      result. A split that reaches an operand from its reader leaves the
//      operand's features whole where a projection also reads them (WavLM's
//      per-head gate on the hidden state that Q, K and V read whole): that
//      reader slices its part, and the projection splits its output. Weights
//      and constants neither receive nor give shardings: each use slices
//      them as it needs (partition).
//   5. Record the shardings as `meshc.sharding` on ops, arguments and
//      results.
//   6. Report, in one warning, the ops that carry compute or weights and
//      stay whole on every tp rank, with the reason for the first.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/sharding/Normalize.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"
#include "dialects/dfg/Sharding/ShardingRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>

namespace meshc {
#define GEN_PASS_DEF_SHARDPLANPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {

/// The first location of a fused one; a NameLoc's name; else as MLIR prints it.
std::string describeLocation(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc);
      fused && !fused.getLocations().empty())
    return describeLocation(fused.getLocations().front());
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

bool isSource(Value v) {
  Operation *def = v.getDefiningOp();
  if (def && isa<dfg::SliceOp, dfg::ReshapeOp, dfg::TransposeOp>(def))
    return isSource(def->getOperand(0));
  // A weight padded with zeros (PadHeads.cpp).
  if (def && isa<dfg::ConcatOp>(def))
    return llvm::all_of(def->getOperands(), isSource);
  return def && isa<dfg::WeightOp, dfg::ConstantOp>(def);
}

namespace {

/// The block [start, end) of axis `axis` (of an operand of rank `rank`;
/// negative counts from the end) that `op` reads, when it is a unit-step
/// dfg.slice of that axis alone with static bounds.
std::optional<std::pair<int64_t, int64_t>>
blockAlong(Operation *op, int64_t rank, int64_t axis) {
  auto slice = dyn_cast<dfg::SliceOp>(op);
  if (axis < 0)
    axis += rank;
  if (!slice || slice.getAxes().size() != 1 || slice.getSteps().front() != 1)
    return std::nullopt;
  int64_t sliced = slice.getAxes().front();
  if ((sliced < 0 ? sliced + rank : sliced) != axis)
    return std::nullopt;
  int64_t width =
      cast<RankedTensorType>(slice.getInput().getType()).getDimSize(axis);
  int64_t size = slice.getType().getDimSize(axis);
  int64_t start = slice.getStarts().front();
  if (start < 0)
    start += width;
  if (ShapedType::isDynamic(width) || ShapedType::isDynamic(size) ||
      start < 0 || start + size > width)
    return std::nullopt;
  return std::make_pair(start, start + size);
}

/// The column block [start, end) of the last axis that `op` reads of its
/// operand of rank `rank`, when it is a unit-step dfg.slice of that axis
/// alone.
std::optional<std::pair<int64_t, int64_t>> columnBlock(Operation *op,
                                                       int64_t rank) {
  return blockAlong(op, rank, rank - 1);
}

/// A projection: a linear, or a matmul by a weight matrix (an exporter's
/// MatMul or Gemm that raising left as it was).
bool isProjection(Operation *op) {
  auto matmul = dyn_cast_or_null<dfg::MatMulOp>(op);
  return isa_and_nonnull<dfg::LinearOp>(op) ||
         (matmul && isSource(matmul.getRhs()) &&
          cast<RankedTensorType>(matmul.getRhs().getType()).getRank() == 2);
}

/// The stacked weight [experts, n, k] that `v` gathers one matrix of per
/// token (gather_nd with one index per tuple, or gather along axis 0), else
/// null.
Value stackedWeightOf(Value v) {
  Operation *def = v.getDefiningOp();
  Value data;
  if (auto g = dyn_cast_or_null<dfg::GatherNDOp>(def);
      g && g.getBatchDims() == 0 &&
      cast<RankedTensorType>(g.getIndices().getType()).getShape().back() == 1)
    data = g.getData();
  if (auto g = dyn_cast_or_null<dfg::GatherOp>(def);
      g && (static_cast<int64_t>(g.getAxis()) == 0 ||
            static_cast<int64_t>(g.getAxis()) ==
                -cast<RankedTensorType>(g.getData().getType()).getRank()))
    data = g.getData();
  return data && isSource(data) &&
                 cast<RankedTensorType>(data.getType()).getRank() == 3 &&
                 cast<RankedTensorType>(v.getType()).getRank() == 3
             ? data
             : Value();
}

/// An expert's projection, as a mixture of experts exports with per-token
/// weights (transformers' batched_mm experts): matmul(G, x) or matmul(x, G)
/// of a per-token matrix G gathered from a stacked weight, each token's x
/// [tokens, k, 1] (or [tokens, 1, k]). Its output features are those of G
/// that the product keeps: dimension 1 of the result for G on the left, 2
/// for G on the right; -1 for anything else. So is a product of the
/// tokens by a whole stacked weight [experts, k, n] (every expert on every
/// token: onnxruntime's MoE, LegalizeExperts.cpp), whose features are
/// dimension 2.
int64_t expertFeatureDim(Operation *op) {
  auto matmul = dyn_cast_or_null<dfg::MatMulOp>(op);
  if (!matmul || matmul.getType().getRank() != 3)
    return -1;
  if (isSource(matmul.getRhs()) && !isSource(matmul.getLhs()) &&
      cast<RankedTensorType>(matmul.getRhs().getType()).getRank() == 3)
    return 2;
  if (stackedWeightOf(matmul.getLhs()) && !stackedWeightOf(matmul.getRhs()))
    return 1;
  if (stackedWeightOf(matmul.getRhs()) && !stackedWeightOf(matmul.getLhs()))
    return 2;
  return -1;
}

/// An expert projection e read only as blocks of its features, after
/// squeezes of its unit dimensions (a fused gate_up: a split, or slices of
/// the features) ==> one expert projection per block, each on its block of
/// the stacked weight, gathered by the same indices, so that every block's
/// features can be split over tp.
void splitPackedExperts(func::FuncOp func) {
  SmallVector<dfg::MatMulOp> products;
  func.walk([&](dfg::MatMulOp op) {
    if (expertFeatureDim(op) >= 0)
      products.push_back(op);
  });
  for (dfg::MatMulOp matmul : products) {
    int64_t features = expertFeatureDim(matmul);
    // Forward through single-use squeezes, following the features.
    SmallVector<dfg::SqueezeOp> squeezes;
    Value v = matmul.getResult();
    int64_t dim = features;
    while (v.hasOneUse()) {
      auto squeeze = dyn_cast<dfg::SqueezeOp>(*v.getUsers().begin());
      if (!squeeze)
        break;
      int64_t rank = cast<RankedTensorType>(v.getType()).getRank(), after = dim;
      for (int64_t a : squeeze.getAxes()) {
        a = a < 0 ? a + rank : a;
        if (a == dim)
          after = -1;
        else if (a < dim && after >= 0)
          --after;
      }
      if (after < 0)
        break;
      dim = after;
      squeezes.push_back(squeeze);
      v = squeeze.getResult();
    }
    // The blocks: [start, end) of the features per reader.
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    int64_t width = cast<RankedTensorType>(v.getType()).getDimSize(dim);
    SmallVector<std::pair<Value, std::pair<int64_t, int64_t>>> blocks;
    SmallVector<Operation *> readers;
    bool packed = !v.use_empty() && !ShapedType::isDynamic(width);
    for (Operation *user : v.getUsers()) {
      if (!packed)
        break;
      readers.push_back(user);
      if (auto split = dyn_cast<dfg::SplitOp>(user)) {
        int64_t axis = static_cast<int64_t>(split.getAxis());
        packed = (axis < 0 ? axis + rank : axis) == dim;
        int64_t start = 0;
        for (auto [size, part] :
             llvm::zip_equal(split.getSizes(), split.getResults())) {
          blocks.push_back({part, {start, start + size}});
          start += size;
        }
        continue;
      }
      auto slice = dyn_cast<dfg::SliceOp>(user);
      std::optional<std::pair<int64_t, int64_t>> block;
      if (slice && slice.getAxes().size() == 1) {
        int64_t axis = slice.getAxes().front();
        if ((axis < 0 ? axis + rank : axis) == dim &&
            slice.getSteps().front() == 1) {
          int64_t start = slice.getStarts().front();
          int64_t size = slice.getType().getDimSize(dim);
          start = start < 0 ? start + width : start;
          if (!ShapedType::isDynamic(size) && start >= 0 &&
              start + size <= width)
            block = std::make_pair(start, start + size);
        }
      }
      packed = block.has_value();
      if (packed)
        blocks.push_back({slice.getResult(), *block});
    }
    if (!packed || blocks.size() < 2)
      continue;
    bool weightLeft = features == 1;
    Value gathered = weightLeft ? matmul.getLhs() : matmul.getRhs();
    Value x = weightLeft ? matmul.getRhs() : matmul.getLhs();
    Operation *gather = gathered.getDefiningOp();
    // The stacked weight's axis holding the features: 1 ([e, n, k] read as
    // G [t, n, k] on the left), 2 on the right.
    Value stacked = stackedWeightOf(gathered);
    for (auto [part, block] : blocks) {
      auto [start, end] = block;
      OpBuilder b(part.getParentBlock(),
                  std::next(Block::iterator(part.getDefiningOp())));
      Location loc = part.getLoc();
      auto resize = [&](Type t, int64_t d) {
        auto type = cast<RankedTensorType>(t);
        SmallVector<int64_t> shape(type.getShape());
        shape[d] = end - start;
        return RankedTensorType::get(shape, type.getElementType());
      };
      Value weight = dfg::SliceOp::create(b, loc, stacked, {start}, {end},
                                          {features}, {1});
      Operation *g = b.clone(*gather);
      g->setOperand(0, weight);
      g->getResult(0).setType(resize(gathered.getType(), features));
      Value piece = dfg::MatMulOp::create(
          b, matmul.getLoc(), resize(matmul.getType(), features),
          weightLeft ? g->getResult(0) : x, weightLeft ? x : g->getResult(0));
      int64_t d = features;
      for (dfg::SqueezeOp squeeze : squeezes) {
        int64_t inRank =
            cast<RankedTensorType>(squeeze.getInput().getType()).getRank();
        for (int64_t a : squeeze.getAxes())
          if ((a < 0 ? a + inRank : a) < d)
            --d;
        Operation *sq = b.clone(*squeeze);
        sq->setOperand(0, piece);
        sq->getResult(0).setType(resize(squeeze.getType(), d));
        piece = sq->getResult(0);
      }
      part.replaceAllUsesWith(piece);
    }
    for (Operation *reader : readers)
      reader->erase();
    for (dfg::SqueezeOp squeeze : llvm::reverse(squeezes))
      squeeze.erase();
    matmul.erase();
    if (gather->use_empty())
      gather->erase();
  }
}

/// The weight whose column blocks `weight` is (through slices, the parts
/// of a packed projection that splitSlicedProjections cuts), else itself.
Value packedWeightOf(Value weight) {
  while (auto slice = weight.getDefiningOp<dfg::SliceOp>())
    weight = slice.getInput();
  return weight;
}

/// The bias a projection's bias add adds.
Value biasOf(dfg::AddOp add, Operation *projection) {
  return add.getLhs() == projection->getResult(0) ? add.getRhs() : add.getLhs();
}

/// The bias `add` reads after `projection` when the projection's only user
/// adds a 1-D weight to it (an unraised Gemm or MatMul + Add), else null.
dfg::AddOp biasAddOf(Operation *projection) {
  if (!isa<dfg::MatMulOp>(projection) || !projection->hasOneUse())
    return nullptr;
  auto add = dyn_cast<dfg::AddOp>(*projection->getUsers().begin());
  if (!add)
    return nullptr;
  auto type = cast<RankedTensorType>(biasOf(add, projection).getType());
  return isSource(biasOf(add, projection)) && type.getRank() == 1 &&
                 add.getType() == projection->getResult(0).getType()
             ? add
             : nullptr;
}

/// The projection that defines `v`, directly or through its bias add; null
/// for anything else.
Operation *projectionBehind(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto add = dyn_cast_or_null<dfg::AddOp>(def))
    for (Value operand : add->getOperands())
      if (isProjection(operand.getDefiningOp()) &&
          biasAddOf(operand.getDefiningOp()) == add)
        return operand.getDefiningOp();
  return isProjection(def) ? def : nullptr;
}

/// A split ==> one slice per part.
void splitToSlices(dfg::SplitOp split) {
  OpBuilder b(split);
  int64_t start = 0,
          rank = cast<RankedTensorType>(split.getInput().getType()).getRank();
  int64_t axis = split.getAxis();
  if (axis < 0)
    axis += rank;
  for (auto [size, part] :
       llvm::zip_equal(split.getSizes(), split.getResults())) {
    Value slice = dfg::SliceOp::create(b, split.getLoc(), split.getInput(),
                                       {start}, {start + size}, {axis}, {1});
    part.replaceAllUsesWith(slice);
    start += size;
  }
  split.erase();
}

/// split(p, axis=-1) of a projection p (or of its bias add), or a split of
/// any axis of a view of one (TorchScript's q, k, v of ModernBERT's packed
/// [..., 3, h, d]) ==> slices, one per part, for splitSlicedProjections
/// (after sliceHeadSelections has moved those of a view before it).
void splitsToSlices(func::FuncOp func) {
  SmallVector<dfg::SplitOp> splits;
  func.walk([&](dfg::SplitOp split) {
    int64_t rank = cast<RankedTensorType>(split.getInput().getType()).getRank();
    int64_t axis = split.getAxis();
    // The view [..., n] -> [..., a0, a1, ...] split along a0.
    auto view = split.getInput().getDefiningOp<dfg::ReshapeOp>();
    int64_t lead =
        view ? cast<RankedTensorType>(view.getInput().getType()).getRank() - 1
             : -1;
    if ((projectionBehind(split.getInput()) &&
         (axis == -1 || axis == rank - 1)) ||
        (view && projectionBehind(view.getInput()) && rank > lead + 1 &&
         (axis == lead || axis == lead - rank)))
      splits.push_back(split);
  });
  for (dfg::SplitOp split : splits)
    splitToSlices(split);
}

/// For an op whose one result takes each index along `axis` from the same
/// index along one axis of some of its operands: each operand's axis, or -1
/// for an operand broadcast along it (absent or of size 1 there). Such ops
/// are elementwise ops, concats and slices along other axes, transposes,
/// and unsqueezes (of an axis they did not insert). Null for any other op.
std::optional<SmallVector<int64_t>> channelAxes(Operation *op, int64_t axis) {
  if (!op || op->getNumResults() != 1)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || axis < 0 || axis >= type.getRank())
    return std::nullopt;
  int64_t rank = type.getRank(), width = type.getDimSize(axis);
  auto normal = [&](int64_t a) { return a < 0 ? a + rank : a; };
  if (auto concat = dyn_cast<dfg::ConcatOp>(op)) {
    if (normal(concat.getAxis()) == axis)
      return std::nullopt;
    return SmallVector<int64_t>(op->getNumOperands(), axis);
  }
  if (auto slice = dyn_cast<dfg::SliceOp>(op)) {
    if (llvm::any_of(slice.getAxes(),
                     [&](int64_t a) { return normal(a) == axis; }))
      return std::nullopt;
    return SmallVector<int64_t>{axis};
  }
  if (auto transpose = dyn_cast<dfg::TransposeOp>(op))
    return SmallVector<int64_t>{transpose.getPerm()[axis]};
  if (auto unsqueeze = dyn_cast<dfg::UnsqueezeOp>(op)) {
    // The input's axis among the result's that the unsqueeze did not
    // insert (GPT-BigCode's packed QKV given a unit axis before its split).
    SmallVector<bool> inserted(rank, false);
    for (int64_t a : unsqueeze.getAxes())
      inserted[normal(a)] = true;
    if (inserted[axis])
      return std::nullopt;
    return SmallVector<int64_t>{
        static_cast<int64_t>(llvm::count(ArrayRef(inserted).take_front(axis),
                                         false))};
  }
  if (!isa<dfg::ElementwiseOpInterface>(op))
    return std::nullopt;
  SmallVector<int64_t> axes;
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return std::nullopt;
    int64_t aligned = axis - (rank - t.getRank());
    if (aligned < 0 || (t.getDimSize(aligned) == 1 && width != 1))
      axes.push_back(-1);
    else if (t.getDimSize(aligned) == width)
      axes.push_back(aligned);
    else
      return std::nullopt;
  }
  return axes;
}

/// Whether `concat` joins its operands along `axis`, each of a static size
/// there.
bool joinsAlong(dfg::ConcatOp concat, int64_t axis) {
  int64_t rank = cast<RankedTensorType>(concat.getType()).getRank();
  int64_t joined = static_cast<int64_t>(concat.getAxis());
  if ((joined < 0 ? joined + rank : joined) != axis)
    return false;
  return llvm::all_of(concat->getOperands(), [&](Value v) {
    return !ShapedType::isDynamic(
        cast<RankedTensorType>(v.getType()).getDimSize(axis));
  });
}

/// The operand of a concat along `axis` (joinsAlong) that holds the block
/// [start, end) of its result, and that operand's offset; null where the
/// block spans two operands.
std::optional<std::pair<Value, int64_t>>
partHolding(dfg::ConcatOp concat, int64_t axis, int64_t start, int64_t end) {
  int64_t offset = 0;
  for (Value v : concat->getOperands()) {
    int64_t width = cast<RankedTensorType>(v.getType()).getDimSize(axis);
    if (start >= offset && end <= offset + width)
      return std::make_pair(v, offset);
    offset += width;
  }
  return std::nullopt;
}

/// Whether axis `axis` of `v` is a projection's output features (its last
/// axis) or a join of parts along it (joinsAlong), directly or through ops
/// that keep that axis's indices (channelAxes) and an operand that has it,
/// looking at 64 values at most.
bool reachesProjection(Value v, int64_t axis) {
  SmallVector<std::pair<Value, int64_t>> stack{{v, axis}};
  llvm::SmallPtrSet<void *, 16> seen;
  while (!stack.empty() && seen.size() < 64) {
    auto [top, a] = stack.pop_back_val();
    if (!seen.insert(top.getAsOpaquePointer()).second)
      continue;
    if (projectionBehind(top) &&
        a == cast<RankedTensorType>(top.getType()).getRank() - 1)
      return true;
    Operation *def = top.getDefiningOp();
    // Parts computed apart and joined along the axis: reading each block
    // from its part spares their join.
    if (auto concat = dyn_cast_or_null<dfg::ConcatOp>(def);
        concat && joinsAlong(concat, a))
      return true;
    // A block of the axis, or a split's part of it: part of what its
    // input's axis reaches.
    int64_t rank = cast<RankedTensorType>(top.getType()).getRank();
    auto split = dyn_cast_or_null<dfg::SplitOp>(def);
    if ((def && blockAlong(def, rank, a)) ||
        (split && (static_cast<int64_t>(split.getAxis()) + rank) % rank == a)) {
      stack.push_back({def->getOperand(0), a});
      continue;
    }
    std::optional<SmallVector<int64_t>> axes = channelAxes(def, a);
    if (!axes)
      continue;
    for (auto [operand, operandAxis] :
         llvm::zip_equal(def->getOperands(), *axes))
      if (operandAxis >= 0)
        stack.push_back({operand, operandAxis});
  }
  return false;
}

/// Blocks of one axis of the result of an op that keeps that axis's indices
/// (channelAxes), read as slices or a split, where the axis leads back to a
/// projection's output features ==> the op on the same blocks of its
/// operands, one per block (an operand broadcast along the axis read
/// whole); repeated up the operands. So packed projections whose parts are
/// taken after ops per feature are read as column blocks, which
/// splitSlicedProjections splits: joined by rows before the cut (JetMoE's
/// experts: each expert's gate_up, joined per row by wheres or by a concat
/// of the experts' rows, then cut into gate and up), or moved to another
/// axis and convolved per channel (LFM2's in_proj, read as [batch,
/// channels, length] and chunked into B, C and x; the delta rule's qkv of
/// Qwen3-Next and Qwen3.5 through their short convolution and silu, then
/// split into q, k and v).
void sliceThroughChannelOps(func::FuncOp func) {
  // The axis of `v` that every user reads blocks of, when it leads back to
  // a projection's features.
  auto blockedAxis = [](Value v) -> std::optional<int64_t> {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getRank() == 0 || v.use_empty())
      return std::nullopt;
    int64_t rank = type.getRank();
    std::optional<int64_t> axis;
    for (Operation *user : v.getUsers()) {
      int64_t a;
      if (auto split = dyn_cast<dfg::SplitOp>(user)) {
        a = static_cast<int64_t>(split.getAxis());
        a = a < 0 ? a + rank : a;
      } else if (auto slice = dyn_cast<dfg::SliceOp>(user);
                 slice && slice.getAxes().size() == 1) {
        a = slice.getAxes().front();
        a = a < 0 ? a + rank : a;
        if (!blockAlong(user, rank, a))
          return std::nullopt;
      } else {
        return std::nullopt;
      }
      if (axis && *axis != a)
        return std::nullopt;
      axis = a;
    }
    int64_t width = type.getDimSize(*axis);
    if (ShapedType::isDynamic(width) || width <= 1 ||
        !reachesProjection(v, *axis))
      return std::nullopt;
    return axis;
  };
  SmallVector<Operation *> worklist;
  int64_t rewrites = 0;
  // A block reader replaced by its piece (it may itself be queued).
  auto replaceReader = [&](Operation *user, Value piece) {
    ++rewrites;
    user->getResult(0).replaceAllUsesWith(piece);
    llvm::erase(worklist, user);
    user->erase();
  };
  // `op`, read by nothing now, erased; its operands' ops queued.
  auto eraseAndQueueOperands = [&](Operation *op) {
    SmallVector<Value> operands(op->getOperands());
    op->erase();
    for (Value v : operands)
      if (Operation *def = v.getDefiningOp();
          def && !isProjection(def) && !llvm::is_contained(worklist, def))
        worklist.push_back(def);
  };
  // Rounds until nothing changes: an op whose readers become blocks only
  // after it was looked at (blocks of a split's part, read through a chain
  // that reaches the split later) is found by the next walk.
  for (int round = 0; round < 8; ++round) {
    int64_t before = rewrites;
    func.walk([&](Operation *op) {
      if (op->getNumResults() == 1 && !isProjection(op) &&
          blockedAxis(op->getResult(0)))
        worklist.push_back(op);
    });
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      Value result = op->getResult(0);
      std::optional<int64_t> axis = blockedAxis(result);
      if (!axis)
        continue;
      int64_t rank = cast<RankedTensorType>(result.getType()).getRank();
      if (auto concat = dyn_cast<dfg::ConcatOp>(op);
          concat && joinsAlong(concat, *axis)) {
        // Each block read from the operand that holds it (projections joined
        // before a split: Qwen3-Next's q, k and v).
        for (Operation *user : llvm::make_early_inc_range(result.getUsers()))
          if (auto split = dyn_cast<dfg::SplitOp>(user))
            splitToSlices(split);
        bool held = llvm::all_of(result.getUsers(), [&](Operation *user) {
          auto [start, end] = *blockAlong(user, rank, *axis);
          return partHolding(concat, *axis, start, end).has_value();
        });
        if (!held)
          continue;
        OpBuilder b(op);
        for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
          auto [start, end] = *blockAlong(user, rank, *axis);
          auto [part, offset] = *partHolding(concat, *axis, start, end);
          int64_t width =
              cast<RankedTensorType>(part.getType()).getDimSize(*axis);
          replaceReader(user, start == offset && end == offset + width
                                  ? part
                                  : dfg::SliceOp::create(
                                        b, op->getLoc(), part, {start - offset},
                                        {end - offset}, {*axis}, {1})
                                        .getResult());
        }
        eraseAndQueueOperands(op);
        continue;
      }
      if (auto outer = blockAlong(op, rank, *axis)) {
        // Blocks of a block: blocks of its input (Mamba's in_proj, cut into
        // gate, xBC and dt, then xBC, after its convolution, into x, B and C).
        for (Operation *user : llvm::make_early_inc_range(result.getUsers()))
          if (auto split = dyn_cast<dfg::SplitOp>(user))
            splitToSlices(split);
        OpBuilder b(op);
        for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
          auto [start, end] = *blockAlong(user, rank, *axis);
          replaceReader(user,
                        dfg::SliceOp::create(b, op->getLoc(), op->getOperand(0),
                                             {outer->first + start},
                                             {outer->first + end}, {*axis}, {1})
                            .getResult());
        }
        eraseAndQueueOperands(op);
        continue;
      }
      std::optional<SmallVector<int64_t>> axes = channelAxes(op, *axis);
      if (!axes)
        continue;
      for (Operation *user : llvm::make_early_inc_range(result.getUsers()))
        if (auto split = dyn_cast<dfg::SplitOp>(user))
          splitToSlices(split);
      // One piece per block, however many users read it.
      std::map<std::pair<int64_t, int64_t>, Value> pieces;
      for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
        auto block = *blockAlong(user, rank, *axis);
        if (Value piece = pieces[block]) {
          replaceReader(user, piece);
          continue;
        }
        auto [start, end] = block;
        OpBuilder b(op);
        SmallVector<Value> operands;
        for (auto [v, a] : llvm::zip_equal(op->getOperands(), *axes))
          operands.push_back(a < 0 ? v
                                   : dfg::SliceOp::create(b, op->getLoc(), v,
                                                          {start}, {end}, {a},
                                                          {1})
                                         .getResult());
        Operation *piece = b.clone(*op);
        piece->setOperands(operands);
        piece->getResult(0).setType(user->getResult(0).getType());
        pieces[block] = piece->getResult(0);
        replaceReader(user, piece->getResult(0));
        // Its readers may be blocks in turn (Falcon-H1's in_proj, scaled
        // per feature, cut into gate, xBC and dt, xBC cut again later).
        worklist.push_back(piece);
      }
      eraseAndQueueOperands(op);
    }
    if (rewrites == before)
      break;
  }
}

/// `linear` computed on the columns [start, end) of its result alone (the
/// same rows of the weight's output axis, and of the bias), of type `type`.
Value linearColumns(OpBuilder &b, dfg::LinearOp linear, int64_t start,
                    int64_t end, Type type) {
  Location loc = linear.getLoc();
  auto cut = [&](Value v, int64_t axis) {
    return dfg::SliceOp::create(b, loc, v, {start}, {end}, {axis}, {1})
        .getResult();
  };
  int64_t weightAxis = linear.getTransposeWeight() ? 0 : 1;
  return dfg::LinearOp::create(
      b, loc, type, linear.getInput(), cut(linear.getWeight(), weightAxis),
      linear.getBias() ? cut(linear.getBias(), 0) : Value(),
      linear.getTransposeWeight());
}

/// A projection read only as column blocks (slices of its last axis: a
/// packed QKV or gate_up), directly or after its bias add ==> one projection
/// per block on the block of W (and of the bias), so that each block can be
/// column-parallel.
void splitSlicedProjections(func::FuncOp func) {
  SmallVector<Operation *> packed;
  func.walk([&](Operation *op) {
    if (!isProjection(op))
      return;
    Operation *reader = op;
    if (dfg::AddOp add = biasAddOf(op))
      reader = add;
    int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
    if (!reader->use_empty() &&
        llvm::all_of(reader->getUsers(), [&](Operation *user) {
          return columnBlock(user, rank).has_value();
        }))
      packed.push_back(op);
  });
  for (Operation *op : packed) {
    auto linear = dyn_cast<dfg::LinearOp>(op);
    dfg::AddOp add = biasAddOf(op);
    Operation *reader = add ? add.getOperation() : op;
    Value weight = op->getOperand(1);
    int64_t weightAxis = linear && linear.getTransposeWeight() ? 0 : 1;
    int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
    for (Operation *user : llvm::make_early_inc_range(reader->getUsers())) {
      auto [start, end] = *columnBlock(user, rank);
      OpBuilder b(user);
      Location loc = op->getLoc();
      auto cut = [&](Value v, int64_t axis) {
        return dfg::SliceOp::create(b, loc, v, {start}, {end}, {axis}, {1})
            .getResult();
      };
      Type type = user->getResult(0).getType();
      Value piece;
      if (linear)
        piece = linearColumns(b, linear, start, end, type);
      else
        piece = dfg::MatMulOp::create(b, loc, type, op->getOperand(0),
                                      cut(weight, weightAxis));
      if (add)
        piece = dfg::AddOp::create(b, add.getLoc(), type, piece,
                                   cut(biasOf(add, op), 0));
      user->getResult(0).replaceAllUsesWith(piece);
      user->erase();
    }
    if (add)
      add.erase();
    op->erase();
  }
}

/// True if `v` is returned, directly or through elementwise ops that keep
/// its shape and read nothing else along its last axis but weights (an
/// unraised lm_head's bias add; casts: bf16 logits
/// widened to f32; a final softcap: Gemma-2's logits / c, tanh, * c), or
/// through a concat or a slice along that axis (an lm_head padded by
/// padUnevenLmHeads).
bool returnedAlongLastAxis(Value v) {
  return llvm::any_of(v.getUsers(), [&](Operation *user) {
    if (isa<func::ReturnOp>(user))
      return true;
    auto type = cast<RankedTensorType>(v.getType());
    if (auto concat = dyn_cast<dfg::ConcatOp>(user)) {
      int64_t axis = concat.getAxis();
      return (axis == -1 || axis == type.getRank() - 1) &&
             returnedAlongLastAxis(concat.getResult());
    }
    // A slice of the last axis alone (padUnevenLmHeads's).
    if (auto slice = dyn_cast<dfg::SliceOp>(user)) {
      ArrayRef<int64_t> axes = slice.getAxes();
      return axes.size() == 1 &&
             (axes[0] == -1 || axes[0] == type.getRank() - 1) &&
             returnedAlongLastAxis(slice.getResult());
    }
    if (!isa<dfg::ElementwiseOpInterface>(user) || user->getNumResults() != 1 ||
        cast<RankedTensorType>(user->getResult(0).getType()).getShape() !=
            type.getShape())
      return false;
    // Another operand along the last axis: a weight (an unraised lm_head's
    // bias add) is sliced by each use as it needs; an activation is not.
    for (Value other : user->getOperands()) {
      ArrayRef<int64_t> shape =
          cast<RankedTensorType>(other.getType()).getShape();
      if (other != v && !shape.empty() && shape.back() != 1 && !isSource(other))
        return false;
    }
    return returnedAlongLastAxis(user->getResult(0));
  });
}

/// A projection's (isProjection) input and output features: the last
/// dimensions of its input and result.
int64_t projectionInFeatures(Operation *op) {
  return cast<RankedTensorType>(op->getOperand(0).getType()).getShape().back();
}
int64_t projectionOutFeatures(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType()).getShape().back();
}
/// A projection's weight matrix, the axis of it that holds the output
/// features (the other holds the input's), and its replacement.
Value projectionWeight(Operation *op) { return op->getOperand(1); }
int64_t projectionWeightOutAxis(Operation *op) {
  auto linear = dyn_cast<dfg::LinearOp>(op);
  return linear && linear.getTransposeWeight() ? 0 : 1;
}
void setProjectionWeight(Operation *op, Value w) { op->setOperand(1, w); }

/// An MLP: linears (the ups) whose outputs reach one other linear (the
/// down) through elementwise ops only, their features read by nothing else.
struct Mlp {
  SmallVector<Operation *> ups; // projections (isProjection)
  /// The elementwise ops between them.
  SmallVector<Operation *> between;
};

/// The MLP that `down` ends, if any. The features between are the MLP's
/// only if nothing else reads them: a linear read by several (ALBERT's
/// mapping of its embeddings, read by the first layer's Q, K and V) would
/// leave each reader with partial sums. With `norms`, an RMS norm over the
/// features (isDecomposableNorm: BitNet's sub-norm of its hidden features)
/// may lie between too. With `matmuls`, a projection left as a matmul by a
/// weight matrix (unraised: --no-raise) may be an up too.
std::optional<Mlp> mlpOf(Operation *down, bool norms = false,
                         bool matmuls = false) {
  Mlp mlp;
  int64_t inFeatures = projectionInFeatures(down);
  SmallVector<Value> stack = {down->getOperand(0)};
  llvm::SetVector<Value> seen;
  while (!stack.empty()) {
    Value v = stack.pop_back_val();
    if (!seen.insert(v) || isSource(v))
      continue;
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (isa<dfg::LinearOp>(def) || (matmuls && isProjection(def))) {
      if (projectionOutFeatures(def) != inFeatures)
        return std::nullopt;
      mlp.ups.push_back(def);
      continue;
    }
    // Elementwise only, in any element type (bf16 matmuls often have
    // their activation computed in f32 between casts).
    auto shape = [](Value x) {
      return cast<RankedTensorType>(x.getType()).getShape();
    };
    bool norm = norms && isDecomposableNorm(def) &&
                shape(def->getOperand(0)).back() == inFeatures;
    if ((!isa<dfg::ElementwiseOpInterface>(def) && !norm) ||
        def->getNumResults() != 1)
      return std::nullopt;
    mlp.between.push_back(def);
    if (norm) {
      stack.push_back(def->getOperand(0));
      continue;
    }
    for (Value operand : def->getOperands())
      if (shape(operand) == shape(v))
        stack.push_back(operand);
  }
  if (mlp.ups.empty())
    return std::nullopt;
  llvm::SmallPtrSet<Operation *, 8> chain(mlp.between.begin(),
                                          mlp.between.end());
  chain.insert(down);
  for (Value v : seen)
    if (!isSource(v) && llvm::any_of(v.getUsers(), [&](Operation *user) {
          return !chain.contains(user);
        }))
      return std::nullopt;
  return mlp;
}

/// `v` padded with `count` elements of `fill` along `axis` (a concat).
Value padAlong(OpBuilder &b, Location loc, Value v, int64_t axis, int64_t count,
               double fill) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = count;
  auto padType = RankedTensorType::get(shape, type.getElementType());
  Type element = type.getElementType();
  Attribute value = isa<FloatType>(element)
                        ? Attribute(b.getFloatAttr(element, fill))
                        : Attribute(b.getIntegerAttr(element, int64_t(fill)));
  Value pad = dfg::ConstantOp::create(b, loc, padType,
                                      DenseElementsAttr::get(padType, value));
  shape[axis] = type.getDimSize(axis) + count;
  return dfg::ConcatOp::create(b, loc, RankedTensorType::get(shape, element),
                               ValueRange{v, pad}, b.getI64IntegerAttr(axis))
      .getResult();
}

/// The value of a splat float constant.
std::optional<double> splatValue(Value v) {
  auto c = v.getDefiningOp<dfg::ConstantOp>();
  auto dense = c ? dyn_cast<DenseFPElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// Whether `v`, between an MLP's ups and its down, is zero at a feature
/// the padding adds (where the ups' zero columns give zeros): through
/// products by anything finite, sums with weights padded with zeros,
/// quotients by weights padded with ones, the maximum or minimum with a
/// constant that keeps 0 (relu), a positive constant power, and the
/// activations that map 0 to 0.
bool zeroAtPadding(Value v, const Mlp &mlp, int64_t features) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (llvm::is_contained(mlp.ups, def))
    return true;
  if (!llvm::is_contained(mlp.between, def))
    return false;
  auto zero = [&](Value x) { return zeroAtPadding(x, mlp, features); };
  auto paddedWeight = [&](Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    return isSource(x) && type.getRank() > 0 &&
           type.getShape().back() == features;
  };
  if (isa<dfg::MulOp>(def))
    return llvm::any_of(def->getOperands(), zero);
  if (isa<dfg::AddOp, dfg::SubOp>(def))
    return llvm::all_of(def->getOperands(), [&](Value x) {
      return zero(x) || paddedWeight(x);
    });
  if (isa<dfg::DivOp>(def))
    return zero(def->getOperand(0)) && isSource(def->getOperand(1));
  if (isa<dfg::MaxOp, dfg::MinOp>(def)) {
    for (auto [i, x] : llvm::enumerate(def->getOperands())) {
      std::optional<double> c = splatValue(def->getOperand(1 - i));
      if (zero(x) && c && (isa<dfg::MaxOp>(def) ? *c <= 0 : *c >= 0))
        return true;
    }
    return false;
  }
  if (isa<dfg::PowOp>(def)) {
    std::optional<double> c = splatValue(def->getOperand(1));
    return zero(def->getOperand(0)) && c && *c > 0;
  }
  if (isa<dfg::CastOp, dfg::NegOp, dfg::SiluOp, dfg::GeluOp, dfg::TanhOp,
          dfg::ErfOp, dfg::SqrtOp, dfg::SinOp, dfg::TanOp, dfg::SinhOp,
          dfg::AsinhOp, dfg::AtanhOp, dfg::AsinOp, dfg::AtanOp>(def))
    return zero(def->getOperand(0));
  return false;
}

/// MLP hidden features that tp (of size n) does not divide (Qwen2.5's 4864
/// on tp=3) ==> padded to the next multiple of n: zero columns of the ups'
/// weights and biases, zero rows of the down's, and the ops between taking
/// the padded features (a weight they read along the features padded with
/// zeros, with ones as a divisor or exponent). A padded feature computes
/// what the ops make of zeros, which the down's zero rows drop; so only ops
/// that keep zeros finite may lie between (not a reciprocal, a logarithm,
/// or a division by the features), else the MLP is left as it is and the
/// planner refuses it by name. An RMS norm over the features (BitNet's
/// sub-norm) may lie between where its input is zero at the padding
/// (zeroAtPadding): it becomes the sum of squares over the real count
/// (buildRmsNormSum, before the types grow), its scale padded with zeros.
void padUnevenMlps(func::FuncOp func, int64_t n) {
  SmallVector<std::pair<Operation *, Mlp>> uneven;
  func.walk([&](Operation *down) {
    if (!isProjection(down))
      return;
    int64_t features = projectionInFeatures(down);
    if (ShapedType::isDynamic(features) || features % n == 0)
      return;
    if (std::optional<Mlp> mlp =
            mlpOf(down, /*norms=*/true, /*matmuls=*/true))
      uneven.push_back({down, std::move(*mlp)});
  });
  for (auto &[down, mlp] : uneven) {
    int64_t features = projectionInFeatures(down);
    int64_t padded = (features + n - 1) / n * n, extra = padded - features;
    // What lies between must keep zeros finite.
    auto lastIsFeatures = [&](Value v) {
      auto type = cast<RankedTensorType>(v.getType());
      return type.getRank() > 0 && type.getShape().back() == features;
    };
    bool safe = llvm::all_of(mlp.between, [&](Operation *op) {
      if (isa<dfg::ReciprocalOp, dfg::LogOp>(op))
        return false;
      if (isa<dfg::DivOp, dfg::PowOp>(op))
        return isSource(op->getOperand(1));
      return true;
    });
    // A norm's statistic is over the real features alone: its input must
    // be zeros at the padding. And an MLP has an activation: a projection
    // to a low rank, normed and projected back (DeepSeek's q_a_proj, norm,
    // q_b_proj) is not one, and its rank stays whole.
    bool norms = llvm::any_of(mlp.between, llvm::IsaPred<dfg::RmsNormOp>);
    safe &= !norms ||
            (!llvm::all_of(mlp.between, llvm::IsaPred<dfg::RmsNormOp>) &&
             llvm::all_of(mlp.between, [&](Operation *op) {
               return !isa<dfg::RmsNormOp>(op) ||
                      zeroAtPadding(op->getOperand(0), mlp, features);
             }));
    if (!safe)
      continue;
    // Each norm as its sum of squares over the real features, the ops that
    // compute it between in its place.
    for (size_t i = 0, e = mlp.between.size(); i < e; ++i) {
      if (!isa<dfg::RmsNormOp>(mlp.between[i]))
        continue;
      Operation *norm = mlp.between[i], *before = norm->getPrevNode();
      Value scaled = buildRmsNormSum(norm);
      norm->getResult(0).replaceAllUsesWith(scaled);
      Block::iterator first = before ? std::next(before->getIterator())
                                     : norm->getBlock()->begin();
      SmallVector<Operation *> built;
      for (Operation &o : llvm::make_range(first, norm->getIterator()))
        if (!isa<dfg::ConstantOp>(o))
          built.push_back(&o);
      norm->erase();
      mlp.between[i] = built.back();
      llvm::append_range(mlp.between, ArrayRef(built).drop_back());
    }
    OpBuilder b(down);
    for (Operation *up : mlp.ups) {
      b.setInsertionPoint(up);
      Location loc = up->getLoc();
      setProjectionWeight(up, padAlong(b, loc, projectionWeight(up),
                                       projectionWeightOutAxis(up), extra, 0));
      if (auto linear = dyn_cast<dfg::LinearOp>(up))
        if (Value bias = linear.getBias())
          linear.getBiasMutable().assign(padAlong(b, loc, bias, 0, extra, 0));
    }
    for (Operation *op : mlp.between) {
      b.setInsertionPoint(op);
      for (OpOperand &operand : op->getOpOperands()) {
        Value v = operand.get();
        if (!isSource(v) || !lastIsFeatures(v))
          continue;
        // A divisor or exponent pads with ones, anything else with zeros.
        bool one =
            isa<dfg::DivOp, dfg::PowOp>(op) && operand.getOperandNumber() == 1;
        int64_t axis = cast<RankedTensorType>(v.getType()).getRank() - 1;
        operand.set(padAlong(b, op->getLoc(), v, axis, extra, one ? 1 : 0));
      }
    }
    auto widen = [&](Value v) {
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      if (shape.back() != features)
        return; // a norm's statistic, [..., 1]
      shape.back() = padded;
      v.setType(RankedTensorType::get(shape, type.getElementType()));
    };
    for (Operation *up : mlp.ups)
      widen(up->getResult(0));
    for (Operation *op : mlp.between)
      widen(op->getResult(0));
    b.setInsertionPoint(down);
    setProjectionWeight(
        down, padAlong(b, down->getLoc(), projectionWeight(down),
                       1 - projectionWeightOutAxis(down), extra, 0));
    mlp.ups.front()->emitRemark()
        << features << " MLP features, which tp=" << n
        << " does not divide, padded to " << padded
        << " with zero weights so that tp splits them evenly ("
        << mlp.ups.size() << " projection(s) in, 1 out)";
  }
}

/// The per-token matrix an expert product reads (one gathered from a
/// stacked weight, or the whole stacked weight [experts, r, c]: every
/// expert on every token), and whether it is the product's left operand:
/// M x has M's axis 1 as its features and contracts M's axis 2; x M
/// contracts axis 1 and has axis 2 as its features. Null for another op.
struct ExpertMatrix {
  Value matrix;  // [tokens or experts, r, c]
  Value stacked; // the stacked weight (the gather's data, or `matrix`)
  bool left = false;
  int64_t featureAxis() const { return left ? 1 : 2; }
  int64_t contractedAxis() const { return left ? 2 : 1; }
};
std::optional<ExpertMatrix> expertMatrixOf(dfg::MatMulOp m) {
  if (m.getType().getRank() != 3)
    return std::nullopt;
  Value lhs = m.getLhs(), rhs = m.getRhs();
  if (Value s = stackedWeightOf(lhs); s && !stackedWeightOf(rhs))
    return ExpertMatrix{lhs, s, true};
  if (Value s = stackedWeightOf(rhs); s && !stackedWeightOf(lhs))
    return ExpertMatrix{rhs, s, false};
  if (isSource(rhs) && !isSource(lhs) &&
      cast<RankedTensorType>(rhs.getType()).getRank() == 3)
    return ExpertMatrix{rhs, rhs, false};
  return std::nullopt;
}

/// `v`'s type with dimension `axis` of size `size`.
void resizeAxis(Value v, int64_t axis, int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = size;
  v.setType(RankedTensorType::get(shape, type.getElementType()));
}

/// An expert MLP's inner features that tp (of size n) does not divide
/// (Mixtral's 14336 on tp=3, a tiny model's 128) ==> padded as dense MLPs
/// are (padUnevenMlps): the up (and gate) experts' stacked weights get zero
/// features, the down's stacked weight zero rows to contract them, and the
/// ops between (squeezes, unsqueezes, elementwise ops) take the padded
/// features, a weight they read along them padded with zeros (ones as a
/// divisor or exponent). A padded feature computes what the activation
/// makes of zeros, which the down's zero rows drop; an op that could make
/// zeros infinite (a reciprocal, a logarithm) leaves the experts as they
/// are, reported whole.
void padUnevenExperts(func::FuncOp func, int64_t n) {
  SmallVector<dfg::MatMulOp> downs;
  func.walk([&](dfg::MatMulOp m) {
    std::optional<ExpertMatrix> e = expertMatrixOf(m);
    if (!e)
      return;
    int64_t inner = cast<RankedTensorType>(e->matrix.getType())
                        .getDimSize(e->contractedAxis());
    if (!ShapedType::isDynamic(inner) && inner % n != 0)
      downs.push_back(m);
  });
  for (dfg::MatMulOp down : downs) {
    ExpertMatrix d = *expertMatrixOf(down);
    int64_t features = cast<RankedTensorType>(d.matrix.getType())
                           .getDimSize(d.contractedAxis());
    int64_t padded = (features + n - 1) / n * n;
    // Back from the activation the down contracts, following the axis
    // that holds the features.
    Value activation = down->getOperand(d.left ? 1 : 0);
    int64_t rank = cast<RankedTensorType>(activation.getType()).getRank();
    llvm::MapVector<Value, int64_t> axes; // value -> its features' axis
    SmallVector<std::pair<dfg::MatMulOp, ExpertMatrix>> ups;
    SmallVector<Operation *> between;
    SmallVector<std::pair<Value, int64_t>> stack{
        {activation, d.left ? rank - 2 : rank - 1}};
    bool ok = true;
    while (!stack.empty() && ok) {
      auto [v, axis] = stack.pop_back_val();
      if (auto [it, inserted] = axes.try_emplace(v, axis); !inserted) {
        ok = it->second == axis;
        continue;
      }
      auto type = cast<RankedTensorType>(v.getType());
      Operation *def = v.getDefiningOp();
      ok = def && axis >= 0 && axis < type.getRank() &&
           type.getDimSize(axis) == features;
      if (!ok)
        break;
      if (auto m = dyn_cast<dfg::MatMulOp>(def)) {
        std::optional<ExpertMatrix> e = expertMatrixOf(m);
        ok = e && e->featureAxis() == axis &&
             cast<RankedTensorType>(e->matrix.getType())
                     .getDimSize(e->featureAxis()) == features;
        if (ok)
          ups.push_back({m, *e});
        continue;
      }
      between.push_back(def);
      if (auto squeeze = dyn_cast<dfg::SqueezeOp>(def)) {
        int64_t inRank =
            cast<RankedTensorType>(squeeze.getInput().getType()).getRank();
        SmallVector<bool> removed(inRank, false);
        for (int64_t a : squeeze.getAxes())
          removed[a < 0 ? a + inRank : a] = true;
        int64_t at = -1, kept = -1;
        for (int64_t a = 0; a < inRank && at < 0; ++a)
          if (!removed[a] && ++kept == axis)
            at = a;
        stack.push_back({squeeze.getInput(), at});
        continue;
      }
      if (auto unsqueeze = dyn_cast<dfg::UnsqueezeOp>(def)) {
        SmallVector<bool> inserted(type.getRank(), false);
        for (int64_t a : unsqueeze.getAxes())
          inserted[a < 0 ? a + type.getRank() : a] = true;
        ok = !inserted[axis];
        stack.push_back(
            {unsqueeze.getInput(),
             static_cast<int64_t>(
                 llvm::count(ArrayRef(inserted).take_front(axis), false))});
        continue;
      }
      ok = isa<dfg::ElementwiseOpInterface>(def) && def->getNumResults() == 1 &&
           !isa<dfg::ReciprocalOp, dfg::LogOp>(def);
      for (OpOperand &operand : def->getOpOperands()) {
        if (!ok)
          break;
        auto t = cast<RankedTensorType>(operand.get().getType());
        int64_t at = axis - (type.getRank() - t.getRank());
        if (at < 0 || t.getDimSize(at) == 1)
          continue; // broadcast along the features
        if (isSource(operand.get()))
          ok = !isa<dfg::DivOp, dfg::PowOp>(def) ||
               operand.getOperandNumber() == 1;
        else
          stack.push_back({operand.get(), at});
      }
    }
    if (!ok || ups.empty())
      continue;
    // Nothing else reads the features (each reader would see the padding).
    llvm::SmallPtrSet<Operation *, 8> chain(between.begin(), between.end());
    chain.insert(down);
    if (llvm::any_of(axes, [&](auto &entry) {
          return llvm::any_of(entry.first.getUsers(), [&](Operation *user) {
            return !chain.contains(user);
          });
        }))
      continue;
    int64_t extra = padded - features;
    // The stacked weights, padded where each matrix is read (a gather's
    // data, or the matrix itself), and the gathered matrices' types.
    auto padMatrix = [&](ExpertMatrix e, Operation *user, int64_t axis) {
      OpBuilder b(user);
      Operation *gather = e.matrix == e.stacked ? nullptr
                                                : e.matrix.getDefiningOp();
      Value stacked = padAlong(b, user->getLoc(), e.stacked, axis, extra, 0);
      if (gather) {
        b.setInsertionPoint(gather);
        gather->setOperand(0, stacked);
        resizeAxis(gather->getResult(0), axis, padded);
      } else {
        user->setOperand(e.left ? 0 : 1, stacked);
      }
    };
    for (auto &[up, e] : ups) {
      padMatrix(e, e.matrix == e.stacked ? up.getOperation()
                                         : e.matrix.getDefiningOp(),
                e.featureAxis());
      resizeAxis(up.getResult(), e.featureAxis(), padded);
    }
    for (Operation *op : between) {
      OpBuilder b(op);
      int64_t axis = axes.lookup(op->getResult(0));
      int64_t r = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
      if (isa<dfg::ElementwiseOpInterface>(op))
        for (OpOperand &operand : op->getOpOperands()) {
          Value v = operand.get();
          auto t = cast<RankedTensorType>(v.getType());
          int64_t at = axis - (r - t.getRank());
          if (!isSource(v) || at < 0 || t.getDimSize(at) != features)
            continue;
          bool one = isa<dfg::DivOp, dfg::PowOp>(op) &&
                     operand.getOperandNumber() == 1;
          operand.set(padAlong(b, op->getLoc(), v, at, extra, one ? 1 : 0));
        }
      resizeAxis(op->getResult(0), axis, padded);
    }
    padMatrix(d, d.matrix == d.stacked ? down.getOperation()
                                       : d.matrix.getDefiningOp(),
              d.contractedAxis());
    ups.front().first->emitRemark()
        << features << " expert features, which tp=" << n
        << " does not divide, padded to " << padded
        << " with zero weights so that tp splits them evenly (" << ups.size()
        << " expert projection(s) in, 1 out)";
  }
}

/// A returned lm_head whose vocabulary V tp (of size n) does not divide
/// (GPT-2's 50257) ==> slice(lm_head on the weight padded with zero columns
/// to the next multiple of n, [0, V)), so that it can be vocabulary-parallel
/// like any other: the rank holding the last block computes its real columns
/// and the padding's zeros (meshc-shard-specialize-rank moves its slice of
/// the weight through the padding), and the padded logits are dropped after
/// the all_gather that returns them.
void padUnevenLmHeads(func::FuncOp func, int64_t n) {
  SmallVector<dfg::LinearOp> heads;
  func.walk([&](dfg::LinearOp linear) {
    auto type = linear.getType();
    int64_t vocab = type.getShape().back();
    if (!ShapedType::isDynamic(vocab) && vocab % n != 0 &&
        isSource(linear.getWeight()) && returnedAlongLastAxis(linear))
      heads.push_back(linear);
  });
  for (dfg::LinearOp linear : heads) {
    OpBuilder b(linear);
    Location loc = linear.getLoc();
    auto type = linear.getType();
    Type element = type.getElementType();
    int64_t rank = type.getRank(), vocab = type.getShape().back();
    int64_t padded = (vocab + n - 1) / n * n;
    auto pad = [&](Value v, int64_t axis) {
      return padAlong(b, loc, v, axis, padded - vocab, 0);
    };
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = padded;
    Value logits = dfg::LinearOp::create(
        b, loc, RankedTensorType::get(shape, element), linear.getInput(),
        pad(linear.getWeight(), linear.getTransposeWeight() ? 0 : 1),
        linear.getBias() ? pad(linear.getBias(), 0) : Value(),
        linear.getTransposeWeight());
    Value real =
        dfg::SliceOp::create(b, loc, logits, {0}, {vocab}, {rank - 1}, {1});
    linear.getResult().replaceAllUsesWith(real);
    linear.erase();
    real.getDefiningOp()->emitRemark()
        << "the lm_head's vocabulary of " << vocab << ", which tp=" << n
        << " does not divide, padded to " << padded
        << " with zero columns so that tp splits it evenly (the padded "
           "logits are dropped)";
  }
}

/// reshape(p(x) [+ b]) : [d..., n]  ==>  p(reshape(x) : [d..., k]) [+ b]
/// for a projection p : [..., k] -> [..., n] and a static reshape that keeps
/// the last dimension: a projection acts on each row alike, so the rows'
/// layout can change before it as well as after. TorchScript's Gemm on
/// [batch * seq, k] then reshaped to [batch, seq, n] becomes a projection of
/// [batch, seq, k] (the flattening reshape before it folds away), and a
/// split of its result is a split of the projection.
void sinkRowReshapes(func::FuncOp func) {
  SmallVector<dfg::ReshapeOp> reshapes;
  func.walk([&](dfg::ReshapeOp op) { reshapes.push_back(op); });
  for (dfg::ReshapeOp reshape : reshapes) {
    Operation *projection = projectionBehind(reshape.getInput());
    if (!projection || isa<dfg::LinearOp>(projection) ||
        !reshape.getInput().hasOneUse())
      continue;
    dfg::AddOp add = biasAddOf(projection);
    auto in = cast<RankedTensorType>(reshape.getInput().getType());
    auto out = reshape.getType();
    auto x = projection->getOperand(0);
    auto xType = cast<RankedTensorType>(x.getType());
    if (!in.hasStaticShape() || !out.hasStaticShape() ||
        !xType.hasStaticShape() || out.getRank() < 2 ||
        in.getShape().back() != out.getShape().back())
      continue;
    SmallVector<int64_t> rows(out.getShape().drop_back());
    rows.push_back(xType.getShape().back());
    OpBuilder b(reshape);
    Location loc = reshape.getLoc();
    auto rowsType = RankedTensorType::get(rows, xType.getElementType());
    auto flatten = x.getDefiningOp<dfg::ReshapeOp>();
    Value x2 = flatten && flatten.getInput().getType() == rowsType
                   ? flatten.getInput()
                   : dfg::ReshapeOp::create(b, loc, rowsType, x,
                                            b.getDenseI64ArrayAttr(rows))
                         .getResult();
    Value p2 = dfg::MatMulOp::create(b, projection->getLoc(), out, x2,
                                     projection->getOperand(1));
    if (add)
      p2 =
          dfg::AddOp::create(b, add.getLoc(), out, p2, biasOf(add, projection));
    reshape.getResult().replaceAllUsesWith(p2);
    reshape.erase();
    if (add)
      add.erase();
    projection->erase();
  }
}

/// With a tp axis, before planning: merged leading dimensions unmerged
/// (unmergeLeadingDims: batch and heads through dynamo's Kᵀ and BLOOM's
/// 3-D scores), row groups given a dimension of their own
/// (unmergeRowGroups), row reshapes moved before projections
/// (sinkRowReshapes), selections of heads made column blocks
/// (sliceHeadSelections), means as sums divided by their counts
/// (meansToSums), and packed projections split into one projection per
/// part, whether a split or slices of the last axis read them (splitsToSlices,
/// splitSlicedProjections; through ops per feature, sliceThroughChannelOps;
/// an expert's fused gate_up, splitPackedExperts).
void splitPackedProjections(func::FuncOp func) {
  unmergeLeadingDims(func);
  unmergeRowGroups(func);
  sinkRowReshapes(func);
  splitsToSlices(func);
  sliceThroughChannelOps(func);
  splitPackedExperts(func);
  sliceHeadSelections(func);
  splitSlicedProjections(func);
  meansToSums(func);
}

class Planner {
public:
  Planner(shard::GridOp grid, func::FuncOp func, bool sequenceParallel)
      : grid_(grid), func_(func), sequenceParallel_(sequenceParallel) {}

  LogicalResult run() {
    if (failed(seed()) || failed(propagate()))
      return failure();
    DimAxes tp = findAxes(grid_, "tp");
    if (!tp.empty()) {
      if (failed(decomposeSplitNorms(tp)) || failed(seedProjections(tp)))
        return failure();
      seedLmHeads(tp);
      if (failed(propagate()))
        return failure();
    }
    if (sequenceParallel_ && !tp.empty()) {
      seedSequence(tp);
      // Only along the residual stream: norms and elementwise ops.
      if (failed(propagate([](Operation *op) {
            return isa<dfg::LayerNormOp, dfg::RmsNormOp, dfg::AddOp, dfg::SubOp,
                       dfg::MulOp, dfg::DivOp, dfg::CastOp>(op);
          })))
        return failure();
    }
    if (!tp.empty())
      reportReplicated(tp);
    annotate();
    return success();
  }

private:
  /// Where the user asked for tensor parallelism, every op that carries the
  /// model's compute or weights (linear, matmul, attention, embedding) and
  /// ends with nothing of its operands or results split over tp is
  /// computed whole on every tp rank: said in one warning, at the first
  /// such op, naming the others (an attention the exporter wrote as
  /// MatMul/Softmax that raising did not recognise; a vocabulary tp does
  /// not divide). Ops already reported (an attention whose heads tp does
  /// not divide) are not repeated.
  void reportReplicated(const DimAxes &tp) {
    auto onTp = [&](Value v) { return !isSource(v) && onAxes(v, tp); };
    // Only the model's compute: tables computed from positions alone are
    // not activations (activationValues).
    llvm::DenseSet<Value> activations =
        activationValues(func_.getBody().front());
    SmallVector<Operation *> whole;
    func_.walk([&](Operation *op) {
      if (!isa<dfg::LinearOp, dfg::MatMulOp, dfg::AttentionOp,
               dfg::EmbeddingOp>(op) ||
          (!isa<dfg::EmbeddingOp>(op) &&
           llvm::none_of(op->getOperands(),
                         [&](Value v) { return activations.contains(v); })) ||
          reported_.contains(op) ||
          op->hasAttr(kVocabAxesAttr)) // a vocabulary-parallel embedding
        return;
      if (llvm::none_of(op->getOperands(), onTp) &&
          llvm::none_of(op->getResults(), onTp))
        whole.push_back(op);
    });
    if (whole.empty())
      return;
    std::map<std::string, int> kinds;
    for (Operation *op : whole)
      ++kinds[op->getName().getStringRef().str()];
    std::string counts;
    for (auto &[name, count] : kinds)
      counts +=
          (counts.empty() ? "" : ", ") + name + " x" + std::to_string(count);
    std::string others;
    for (Operation *op : ArrayRef(whole).drop_front().take_front(4))
      others += (others.empty() ? "" : "; ") + describe(op->getLoc());
    InFlightDiagnostic diag = whole.front()->emitWarning();
    diag << whole.size() << " op(s) (" << counts
         << ") have nothing split over tp=" << groupSize(grid_, tp)
         << ": every tp rank computes them whole (this one first";
    if (!others.empty())
      diag << "; then " << others << (whole.size() > 5 ? "; ..." : "");
    diag << ")";
    for (Operation *op : whole)
      if (auto it = whyWhole_.find(op); it != whyWhole_.end()) {
        diag.attachNote(op->getLoc()) << "not split: " << it->second;
        break;
      }
  }

  static std::string describe(Location loc) { return describeLocation(loc); }

  TensorSharding &stateOf(Value v) {
    auto [it, inserted] = state_.try_emplace(v);
    if (inserted)
      it->second.resize(cast<RankedTensorType>(v.getType()).getRank());
    return it->second;
  }

  /// Shards dimension `dim` of `v` over `axes` if it is whole, divisible,
  /// and the axes shard no other dimension of `v`; queues its neighbours.
  void shard(Value v, int64_t dim, const DimAxes &axes) {
    if (isSource(v))
      return;
    TensorSharding &s = stateOf(v);
    if (!s[dim].empty())
      return;
    for (const DimAxes &other : s)
      for (shard::GridAxis a : axes)
        if (llvm::is_contained(other, a))
          return;
    int64_t size = cast<RankedTensorType>(v.getType()).getDimSize(dim);
    if (!ShapedType::isDynamic(size) && size % groupSize(grid_, axes) != 0)
      return;
    s[dim] = axes;
    if (Operation *def = v.getDefiningOp())
      worklist_.insert(def);
    for (Operation *user : v.getUsers())
      worklist_.insert(user);
  }

  LogicalResult seed() {
    // The batch splits over dp and, with microbatches, over the planning
    // axis mb inside each dp block (meshc-shard-pipeline-split turns it into a
    // loop over microbatches).
    DimAxes batchAxes;
    for (StringRef name : {StringRef("dp"), StringRef(kMicrobatchAxis)})
      if (std::optional<shard::GridAxis> a = findAxis(grid_, name))
        batchAxes.push_back(*a);
    if (!batchAxes.empty())
      for (BlockArgument arg : func_.getArguments()) {
        auto type = cast<RankedTensorType>(arg.getType());
        if (type.getRank() == 0)
          continue;
        int64_t batch = type.getDimSize(0), n = groupSize(grid_, batchAxes);
        if (!ShapedType::isDynamic(batch) && batch % n != 0)
          return func_.emitError("input '")
                 << inputName(arg) << "' has batch " << batch << ", which "
                 << describeBatchSplit(batchAxes) << " does not divide";
        shard(arg, 0, batchAxes);
      }
    if (DimAxes tp = findAxes(grid_, "tp"); !tp.empty()) {
      if (failed(seedTensorParallel(tp)))
        return failure();
      seedEmbeddings(tp);
    }
    return success();
  }

  /// "dp=2", "4 microbatches" or "dp=2 x 4 microbatches".
  std::string describeBatchSplit(ArrayRef<shard::GridAxis> axes) {
    std::string s;
    for (shard::GridAxis a : axes) {
      if (!s.empty())
        s += " x ";
      int64_t n = grid_.getShape()[a];
      s += axisName(grid_, a) == kMicrobatchAxis
               ? std::to_string(n) + " microbatches"
               : axisName(grid_, a) + "=" + std::to_string(n);
    }
    return s;
  }

  std::string inputName(BlockArgument arg) {
    if (auto name =
            func_.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "onnx.name"))
      return name.str();
    return "#" + std::to_string(arg.getArgNumber());
  }

  LogicalResult seedTensorParallel(const DimAxes &tp) {
    int64_t n = groupSize(grid_, tp);
    WalkResult walk = func_.walk([&](Operation *op) {
      if (auto attention = dyn_cast<dfg::AttentionOp>(op)) {
        if (failed(seedHeads(attention, tp, n)))
          return WalkResult::interrupt();
      } else if (auto linear = dyn_cast<dfg::LinearOp>(op)) {
        if (failed(seedMlp(linear, tp, n)))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  LogicalResult seedHeads(dfg::AttentionOp op, const DimAxes &tp, int64_t n) {
    auto q = cast<RankedTensorType>(op.getQuery().getType());
    auto k = cast<RankedTensorType>(op.getKey().getType());
    int64_t heads = q.getDimSize(1), kvHeads = k.getDimSize(1);
    if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(kvHeads))
      return op.emitOpError("has a dynamic head count; tp=")
             << n << " needs it static";
    if (heads % n != 0) {
      // Reported, not silent: the user asked for a split that this op
      // cannot take (BERT-base's 12 heads on tp=8, a tiny model's 5 on
      // tp=2). The rest of the model is still split.
      op.emitWarning("dfg.attention has ")
          << heads << " heads, which tp=" << n
          << " does not divide: this attention is replicated on tp";
      reported_.insert(op);
      return success();
    }
    // Fewer KV heads than tp: splitTensorParallel made tp two sub-axes,
    // and propagation gives the KV heads the outer one.
    if (kvHeads > 1 && kvHeads % n != 0 &&
        (tp.size() != 2 || grid_.getShape()[tp[0]] != kvHeads))
      return op.emitOpError("has ")
             << kvHeads << " KV heads, which tp=" << n
             << " neither divides nor is a multiple of, and they could not be "
                "padded to "
             << paddedKvHeads(kvHeads, n)
             << " (padding needs projections that make the heads and one "
                "that reads them, with only ops that treat each head alike "
                "between)";
    shard(op.getResult(), 1, tp);
    return success();
  }

  /// A linear fed through elementwise ops by linears of its in_features:
  /// the features between them are the MLP's hidden features.
  LogicalResult seedMlp(dfg::LinearOp down, const DimAxes &tp, int64_t n) {
    std::optional<Mlp> mlp = mlpOf(down);
    if (!mlp)
      return success();
    for (Operation *op : mlp->ups) {
      auto up = cast<dfg::LinearOp>(op); // mlpOf without matmuls
      int64_t features = up.getOutFeatures();
      // padUnevenMlps padded what it could.
      if (features % n != 0)
        return up.emitOpError("has ")
               << features << " MLP features, which tp=" << n
               << " does not divide, and they could not be padded (an op "
                  "between the projections that zeros could make "
                  "infinite: a reciprocal, a logarithm, a division by "
                  "them)";
      shard(up.getResult(), up.getType().getRank() - 1, tp);
    }
    return success();
  }

  /// Vocabulary-parallel embeddings: each rank holds a block of the
  /// table's rows (partition builds the masked lookup and the all_reduce
  /// that sums the ranks' rows). A vocabulary tp does not divide (GPT-2's
  /// 50257, BERT's 30522 on tp=4, a table of 2 token types) is padded with
  /// zero rows to the next multiple of tp, which no id reaches (a rank may
  /// hold zeros only, and adds nothing): negative ids, which count from
  /// the end of the table, are made positive first. The rank holding the
  /// last block reads its real rows and the zeros, not the whole table
  /// (meshc-shard-specialize-rank moves its slice through the padding).
  void seedEmbeddings(const DimAxes &tp) {
    int64_t n = groupSize(grid_, tp);
    func_.walk([&](dfg::EmbeddingOp op) {
      auto tableType = cast<RankedTensorType>(op.getTable().getType());
      int64_t vocab = tableType.getDimSize(0);
      if (!isSource(op.getTable()) || !tableType.hasStaticShape() || vocab == 0)
        return;
      if (vocab % n != 0)
        padVocabulary(op, n);
      op->setAttr(kVocabAxesAttr, DenseI16ArrayAttr::get(op.getContext(), tp));
    });
  }

  /// `op`'s table padded with zero rows to a multiple of `n`.
  void padVocabulary(dfg::EmbeddingOp op, int64_t n) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto tableType = cast<RankedTensorType>(op.getTable().getType());
    int64_t vocab = tableType.getDimSize(0);
    int64_t padded = (vocab + n - 1) / n * n;
    Value table = padAlong(b, loc, op.getTable(), 0, padded - vocab, 0);
    // ONNX Gather's negative ids count from the end of the real table.
    Value ids = op.getIds();
    auto idType = cast<RankedTensorType>(ids.getType()).getElementType();
    auto scalar = [&](int64_t value) {
      auto type = RankedTensorType::get({1}, idType);
      return dfg::ConstantOp::create(
                 b, loc, type,
                 DenseElementsAttr::get(type, b.getIntegerAttr(idType, value)))
          .getResult();
    };
    Value negative = dfg::LessOp::create(b, loc, ids, scalar(0));
    Value up = dfg::AddOp::create(b, loc, ids, scalar(vocab));
    Value wrapped = dfg::WhereOp::create(b, loc, negative, up, ids);
    op.getTableMutable().assign(table);
    op.getIdsMutable().assign(wrapped);
    op->emitRemark() << "the embedding's vocabulary of " << vocab
                     << " rows, which tp=" << n
                     << " does not divide, padded to " << padded
                     << " with zero rows (no id reads them) so that "
                     << "tp splits it evenly";
  }

  /// True when `v` is split over one of the `tp` axes in `state`.
  static bool onAxes(const TensorSharding &state, const DimAxes &tp) {
    return llvm::any_of(state, [&](const DimAxes &axes) {
      return llvm::any_of(
          axes, [&](shard::GridAxis a) { return llvm::is_contained(tp, a); });
    });
  }
  bool onAxes(Value v, const DimAxes &tp) {
    return isa<RankedTensorType>(v.getType()) && onAxes(stateOf(v), tp);
  }

  /// What partition would do at `op` under the current plan: the first
  /// operand it would all_gather over a tp axis (-1 if none), and whether
  /// the op sums over a factor split on tp (partial sums).
  struct Realisation {
    int gathered = -1;
    bool sums = false;
  };
  FailureOr<Realisation> realise(Operation *op, const DimAxes &tp) {
    FailureOr<dfg::ShardingRule> rule = dfg::getShardingRule(op);
    if (failed(rule))
      return failure();
    SmallVector<TensorSharding> operands, results;
    for (Value v : op->getOperands())
      operands.push_back(isSource(v) ? TensorSharding(rankOf(v)) : stateOf(v));
    for (Value v : op->getResults())
      results.push_back(stateOf(v));
    ArrayRef<int64_t> gridShape = grid_.getShape();
    SmallVector<DimAxes> factors = dfg::assignFactors(
        *rule, operands, results, gridShape, dfg::presetFactors(op, *rule));
    Realisation out;
    for (auto [f, axes] : llvm::enumerate(factors))
      if (rule->factors[f].kind == dfg::FactorKind::Reduction &&
          onAxes(TensorSharding{axes}, tp))
        out.sums = true;
    for (auto [i, tf] : llvm::enumerate(rule->operands)) {
      TensorSharding want = dfg::tensorAxes(*rule, tf, factors, gridShape);
      for (auto [have, need] : llvm::zip_equal(operands[i], want))
        if (have != need && onAxes(TensorSharding{have}, tp)) {
          out.gathered = static_cast<int>(i);
          return out;
        }
    }
    return out;
  }

  static int64_t rankOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  }

  /// Norms whose features the plan splits over tp (an attention's heads
  /// merged before BitNet's sub-norm; OLMo-2's key norm, whose KV heads
  /// the attention splits over fewer ranks than tp) sum partial squares
  /// instead of gathering the features (SplitNorms.cpp).
  LogicalResult decomposeSplitNorms(const DimAxes &tp) {
    SmallVector<Operation *> norms;
    func_.walk([&](dfg::RmsNormOp norm) {
      if (isDecomposableNorm(norm) &&
          (onAxes(TensorSharding{stateOf(norm.getInput()).back()}, tp) ||
           onAxes(TensorSharding{stateOf(norm.getResult()).back()}, tp)))
        norms.push_back(norm);
    });
    for (Operation *norm : norms)
      decomposeNorm(norm);
    return propagate();
  }

  /// A norm rewritten as a sum of squares (SplitNorms.cpp) while a trial
  /// is judged: taken out of the function until the trial is kept (then
  /// erased) or undone (then put back).
  struct NormSum {
    Operation *norm;
    SmallVector<Value> operands;
    SmallVector<Operation *> ops;
    Value sum;
  };

  /// Rewrites `norm` as a sum of squares, keeping the plan: its result's
  /// sharding moves to the value that replaces it, and the new ops are
  /// queued for propagation.
  NormSum sumNorm(Operation *norm) {
    NormSum n{norm, SmallVector<Value>(norm->getOperands()), {}, {}};
    Operation *before = norm->getPrevNode();
    Block *block = norm->getBlock();
    n.sum = buildRmsNormSum(norm);
    for (Operation *op = before ? before->getNextNode() : &block->front();
         op != norm; op = op->getNextNode())
      n.ops.push_back(op);
    Value old = norm->getResult(0);
    old.replaceAllUsesWith(n.sum);
    if (auto it = state_.find(old); it != state_.end()) {
      TensorSharding sharding = it->second;
      state_.erase(old);
      state_[n.sum] = sharding;
    }
    worklist_.remove(norm);
    norm->remove();
    norm->dropAllReferences();
    for (Operation *op : n.ops)
      worklist_.insert(op);
    for (Operation *user : n.sum.getUsers())
      worklist_.insert(user);
    return n;
  }

  /// Puts the norm back in place of its sum of squares.
  static void undoNormSum(NormSum &n) {
    Operation *first = n.ops.front();
    first->getBlock()->getOperations().insert(Block::iterator(first), n.norm);
    n.norm->setOperands(n.operands);
    n.sum.replaceAllUsesWith(n.norm->getResult(0));
    for (Operation *op : llvm::reverse(n.ops))
      op->erase();
  }

  void decomposeNorm(Operation *norm) { sumNorm(norm).norm->erase(); }

  /// Splits, on trial, the output features of every projection still whole
  /// over tp (algorithm, step 3). Kept when the split ends in at least one
  /// contraction that sums it and adds no all_gather over tp; else undone,
  /// with the reason in whyWhole_.
  LogicalResult seedProjections(const DimAxes &tp) {
    int64_t n = groupSize(grid_, tp);
    // Projections (features last), and experts' projections (features
    // where expertFeatureDim says); the input by its operand number, since
    // a norm's sum of squares (sumNorm) may replace the value.
    struct Trial {
      Operation *op;
      unsigned in;
      int64_t dim;
    };
    SmallVector<Trial> trials;
    func_.walk([&](Operation *op) {
      if (isProjection(op))
        trials.push_back({op, 0, rankOf(op->getResult(0)) - 1});
      else if (int64_t dim = expertFeatureDim(op); dim >= 0)
        trials.push_back({op, dim == 1 ? 1u : 0u, dim});
    });
    for (auto [projection, inIndex, dim] : trials) {
      Value in = projection->getOperand(inIndex);
      Value out = projection->getResult(0);
      if (onAxes(out, tp) || onAxes(in, tp))
        continue;
      int64_t features = cast<RankedTensorType>(out.getType()).getDimSize(dim);
      if (ShapedType::isDynamic(features) || features % n != 0) {
        whyWhole_[projection] =
            "its " + std::to_string(features) +
            " output features are not divisible by tp=" + std::to_string(n);
        continue;
      }
      // A norm that would gather the split features sums partial squares
      // instead (sumNorm), and the trial is made again; undone with it.
      SmallVector<NormSum> sums;
      llvm::DenseMap<Value, TensorSharding> beforeSums;
      while (true) {
        llvm::DenseMap<Value, TensorSharding> saved = state_;
        shard(out, dim, tp);
        if (failed(propagate()))
          return failure();
        Operation *gatheredAt = nullptr;
        FailureOr<std::string> why = judgeTrial(saved, tp, gatheredAt);
        if (failed(why))
          return failure();
        if (why->empty()) {
          for (NormSum &n : sums)
            n.norm->erase();
          break;
        }
        state_ = std::move(saved);
        worklist_.clear();
        if (gatheredAt && isDecomposableNorm(gatheredAt)) {
          if (sums.empty())
            beforeSums = state_;
          // Its ops propagate with the next trial, which judges them too.
          sums.push_back(sumNorm(gatheredAt));
          continue;
        }
        for (NormSum &n : llvm::reverse(sums))
          undoNormSum(n);
        if (!sums.empty())
          state_ = std::move(beforeSums);
        whyWhole_[projection] = *why;
        break;
      }
    }
    return success();
  }

  /// The reason to undo a trial split (empty to keep it): the ops that
  /// define or read a value the trial changed, realised before and after.
  /// `gatheredAt` is the op whose operand #0 the trial would all_gather, if
  /// that is the reason.
  FailureOr<std::string>
  judgeTrial(const llvm::DenseMap<Value, TensorSharding> &before,
             const DimAxes &tp, Operation *&gatheredAt) {
    llvm::SetVector<Operation *> region;
    for (auto &[v, s] : state_) {
      auto it = before.find(v);
      if (it != before.end() ? it->second == s : isReplicated(s))
        continue;
      if (Operation *def = v.getDefiningOp())
        region.insert(def);
      for (Operation *user : v.getUsers())
        region.insert(user);
    }
    SmallVector<Operation *> ops;
    for (Operation *op : region)
      if (isa<dfg::DfgDialect>(op->getDialect()) &&
          !isa<dfg::WeightOp, dfg::ConstantOp>(op))
        ops.push_back(op);
    llvm::sort(
        ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    bool sums = false;
    // Projections left with partial sums (row-parallel), against those
    // whose output features the split reaches (column-parallel): Megatron's
    // split has one for several (the output projection of an attention
    // whose Q, K and V are split, an MLP's down projection after its gate
    // and up). A split with more of the first (the residual stream split by
    // features: every projection reading it sums, one all_reduce each)
    // costs more than it saves.
    SmallVector<Operation *> rowParallel;
    int64_t columnParallel = 0;
    for (Operation *op : ops) {
      FailureOr<Realisation> after = realise(op, tp);
      if (failed(after))
        return failure();
      sums |= after->sums;
      bool projection = isProjection(op) || expertFeatureDim(op) >= 0;
      bool splitOut = projection && onAxes(op->getResult(0), tp);
      // A projection whose output was split before the trial, left with
      // partial sums by it, reduces them straight into that split (a
      // reduce_scatter of all its features): the trial moves the split
      // across the projection at the price of its whole output. DeepSeek's
      // low-rank query and key/value down projections, split by their
      // rank, would reduce-scatter the heads of the up projections after
      // them; kept whole, the up projections split their heads alone. (A
      // split the trial itself brings to the output, as to Doge's dt_proj
      // from the value heads, is the trial's to judge as a whole.)
      auto wasSplit = [&] {
        auto it = before.find(op->getResult(0));
        return it != before.end() && onAxes(it->second, tp);
      };
      if (after->sums && splitOut && wasSplit()) {
        std::string why;
        llvm::raw_string_ostream os(why);
        os << "splitting its output features over tp would leave partial "
              "sums in "
           << op->getName() << " at " << describe(op->getLoc())
           << ", reduce-scattered into its split output";
        return why;
      }
      if (projection && after->sums)
        rowParallel.push_back(op);
      if (splitOut)
        ++columnParallel;
      if (after->gathered < 0)
        continue;
      // Was it gathered before the trial too?
      llvm::DenseMap<Value, TensorSharding> trial = std::move(state_);
      state_ = before;
      FailureOr<Realisation> old = realise(op, tp);
      state_ = std::move(trial);
      if (failed(old))
        return failure();
      if (old->gathered >= 0)
        continue;
      if (after->gathered == 0)
        gatheredAt = op;
      std::string where;
      llvm::raw_string_ostream os(where);
      os << "splitting its output features over tp would need an "
            "all_gather of operand #"
         << after->gathered << " of " << op->getName() << " (";
      llvm::interleave(op->getOperandTypes(), os, " and ");
      os << " to " << op->getResultTypes() << ") at " << describe(op->getLoc());
      return where;
    }
    if (!sums)
      return std::string("splitting its output features over tp reaches no "
                         "contraction that sums them");
    // The parts of one packed projection (its weight's column blocks, on
    // one input) reduce their partial sums with one all_reduce of their
    // joined outputs (the partition's mergeSiblingReductions): Mamba's
    // x_proj, cut into dt, B and C, sums once.
    llvm::DenseSet<std::pair<Value, Value>> packed;
    for (Operation *op : rowParallel)
      packed.insert({op->getOperand(0), packedWeightOf(op->getOperand(1))});
    int64_t allReduces = static_cast<int64_t>(packed.size());
    if (allReduces > columnParallel) {
      std::string why;
      llvm::raw_string_ostream os(why);
      os << "splitting its output features over tp would leave partial sums "
            "in "
         << rowParallel.size() << " projections, "
         << (allReduces == 1 ? std::string("one all_reduce")
                             : std::to_string(allReduces) + " all_reduces")
         << ", for " << columnParallel << " split by their output features (";
      for (auto [i, op] : llvm::enumerate(ArrayRef(rowParallel).take_front(3)))
        os << (i ? "; " : "") << op->getName() << " at "
           << describe(op->getLoc());
      os << (rowParallel.size() > 3 ? "; ...)" : ")");
      return why;
    }
    return std::string();
  }

  /// Vocabulary-parallel lm_head: a returned linear whose input is whole
  /// (not a row-parallel projection) computes its slice of the logits on
  /// each rank, when tp divides the vocabulary (else it is replicated).
  void seedLmHeads(const DimAxes &tp) {
    int64_t n = groupSize(grid_, tp);
    for (Operation *op : projections()) {
      Value out = op->getResult(0);
      int64_t vocab = cast<RankedTensorType>(out.getType()).getShape().back();
      const TensorSharding &in = stateOf(op->getOperand(0));
      if (returnedAlongLastAxis(out) && in.back().empty() &&
          !ShapedType::isDynamic(vocab) && vocab % n == 0)
        shard(out, rankOf(out) - 1, tp);
    }
  }

  /// Projections: linears, and matmuls by a weight matrix (an exporter's
  /// MatMul or Gemm that raising left as it was), in program order.
  SmallVector<Operation *> projections() {
    SmallVector<Operation *> found;
    func_.walk([&](Operation *op) {
      if (isProjection(op))
        found.push_back(op);
    });
    return found;
  }

  /// Sequence parallelism: the residual stream (every norm's input,
  /// residual and results) is split along the sequence over tp, so the
  /// row-parallel projections end in a reduce_scatter and the column-parallel
  /// ones start with an all_gather.
  void seedSequence(const DimAxes &tp) {
    func_.walk([&](Operation *op) {
      if (!isa<dfg::LayerNormOp, dfg::RmsNormOp>(op))
        return;
      auto seq = [&](Value v) {
        int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
        if (rank >= 3)
          shard(v, rank - 2, tp);
      };
      seq(op->getOperand(0));
      if (auto n = dyn_cast<dfg::LayerNormOp>(op); n && n.getResidual())
        seq(n.getResidual());
      if (auto n = dyn_cast<dfg::RmsNormOp>(op); n && n.getResidual())
        seq(n.getResidual());
      for (Value r : op->getResults())
        seq(r);
    });
  }

  LogicalResult propagate(llvm::function_ref<bool(Operation *)> allowed =
                              [](Operation *) { return true; }) {
    while (!worklist_.empty()) {
      Operation *op = worklist_.pop_back_val();
      if (!isa<dfg::DfgDialect>(op->getDialect()) ||
          isa<dfg::WeightOp, dfg::ConstantOp>(op) || !allowed(op))
        continue;
      FailureOr<dfg::ShardingRule> rule = dfg::getShardingRule(op);
      if (failed(rule))
        return failure();
      SmallVector<DimAxes> factors(rule->factors.size());
      ArrayRef<int64_t> gridShape = grid_.getShape();
      auto gather = [&](Value v, const dfg::TensorFactors &tf) {
        if (isSource(v))
          return;
        const TensorSharding &s = stateOf(v);
        for (auto [axes, dims] : llvm::zip_equal(s, tf)) {
          if (axes.empty() || dims.empty())
            continue;
          FailureOr<SmallVector<DimAxes>> split =
              dfg::distributeAxes(*rule, dims, axes, gridShape);
          if (failed(split) ||
              llvm::any_of(llvm::zip(dims, *split), [&](auto pair) {
                auto [f, mine] = pair;
                return !mine.empty() &&
                       (rule->factors[f].kind == dfg::FactorKind::Pinned ||
                        !factors[f].empty());
              }))
            continue;
          for (auto [f, mine] : llvm::zip(dims, *split))
            if (!mine.empty())
              factors[f] = mine;
        }
      };
      auto scatter = [&](Value v, const dfg::TensorFactors &tf,
                         int64_t keepWhole = -1) {
        for (auto [dim, dims] : llvm::enumerate(tf)) {
          DimAxes axes = dfg::dimensionAxes(*rule, dims, factors, gridShape);
          if (!axes.empty() && static_cast<int64_t>(dim) != keepWhole)
            shard(v, dim, axes);
        }
      };
      for (auto [v, tf] : llvm::zip_equal(op->getOperands(), rule->operands))
        gather(v, tf);
      for (auto [v, tf] : llvm::zip_equal(op->getResults(), rule->results))
        gather(v, tf);
      dfg::dropUnreachableFactors(*rule, factors, gridShape);
      // A split that reaches an operand from its reader (not from its
      // producer) leaves the operand's features whole where a projection
      // also reads them: that reader takes its part by a slice, and the
      // projection stays free to split its output features (WavLM's gate
      // reads each head's part of the hidden state that Q, K and V read
      // whole).
      for (auto [v, tf] : llvm::zip_equal(op->getOperands(), rule->operands))
        scatter(v, tf,
                projectedFeatures(v, op)
                    ? cast<RankedTensorType>(v.getType()).getRank() - 1
                    : -1);
      for (auto [v, tf] : llvm::zip_equal(op->getResults(), rule->results))
        scatter(v, tf);
    }
    return success();
  }

  /// Whether a projection other than `reader` contracts the last axis of
  /// `v`: reads it as its input, directly or through transposes and
  /// reshapes that keep the last axis.
  static bool projectedFeatures(Value v, Operation *reader) {
    if (isSource(v))
      return false;
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getRank() == 0)
      return false;
    int64_t features = type.getShape().back();
    SmallVector<Value> stack{v};
    llvm::SmallPtrSet<Operation *, 8> seen;
    while (!stack.empty()) {
      Value x = stack.pop_back_val();
      for (OpOperand &use : x.getUses()) {
        Operation *user = use.getOwner();
        if (user == reader || !seen.insert(user).second)
          continue;
        if (isProjection(user) && use.getOperandNumber() == 0)
          return true;
        if (user->getNumResults() != 1)
          continue;
        auto out = dyn_cast<RankedTensorType>(user->getResult(0).getType());
        bool keepsLast = false;
        if (auto t = dyn_cast<dfg::TransposeOp>(user))
          keepsLast = t.getPerm().back() ==
                      static_cast<int64_t>(t.getPerm().size()) - 1;
        else if (isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp>(user))
          keepsLast = out && out.getRank() > 0 &&
                      !ShapedType::isDynamic(features) &&
                      out.getShape().back() == features;
        if (keepsLast)
          stack.push_back(user->getResult(0));
      }
    }
    return false;
  }

  bool isSharded(Value v) const {
    auto it = state_.find(v);
    return it != state_.end() && !isReplicated(it->second);
  }

  void annotate() {
    MLIRContext *context = func_.getContext();
    for (BlockArgument arg : func_.getArguments())
      if (isSharded(arg))
        func_.setArgAttr(arg.getArgNumber(), kShardingAttr,
                         toAttr(context, state_[arg]));
    func_.walk([&](Operation *op) {
      if (isa<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(op->getOperands()))
          if (isSharded(v))
            func_.setResultAttr(i, kShardingAttr, toAttr(context, state_[v]));
        return;
      }
      if (llvm::none_of(op->getResults(),
                        [&](Value v) { return isSharded(v); }))
        return;
      SmallVector<Attribute> perResult;
      for (Value v : op->getResults())
        perResult.push_back(toAttr(context, stateOf(v)));
      op->setAttr(kShardingAttr, ArrayAttr::get(context, perResult));
    });
  }

  shard::GridOp grid_;
  func::FuncOp func_;
  bool sequenceParallel_;
  llvm::DenseMap<Value, TensorSharding> state_;
  /// Ops already warned about as replicated on tp.
  llvm::SmallPtrSet<Operation *, 8> reported_;
  /// Why a projection's output features could not be split over tp.
  llvm::DenseMap<Operation *, std::string> whyWhole_;
  llvm::SetVector<Operation *> worklist_;
};

/// Fewer KV heads than tp ranks (Hkv < tp, Hkv dividing tp): each KV head
/// is replicated on the tp/Hkv ranks whose query heads it serves, as vLLM
/// does. The grid's tp axis becomes two sub-axes, tp.kv (Hkv: which KV
/// head) and tp.rep (tp/Hkv: which of its query groups), so that the KV
/// heads shard over tp.kv while the query heads, the MLP and the vocabulary
/// shard over both. Rank numbering stays the same (row major).
LogicalResult splitTensorParallel(ModuleOp module, shard::GridOp grid) {
  std::optional<shard::GridAxis> tp = findAxis(grid, "tp");
  if (!tp)
    return success();
  int64_t n = grid.getShape()[*tp];
  int64_t kvSplit = 0;
  WalkResult walk = module.walk([&](Operation *op) {
    // The query and KV heads of an attention, or of a written-out repeat of
    // the KV heads (an unraised GQA).
    int64_t heads, kvHeads;
    if (auto attention = dyn_cast<dfg::AttentionOp>(op)) {
      heads =
          cast<RankedTensorType>(attention.getQuery().getType()).getDimSize(1);
      kvHeads =
          cast<RankedTensorType>(attention.getKey().getType()).getDimSize(1);
    } else if (std::optional<int64_t> a = repeatMergeAxis(op)) {
      heads = cast<RankedTensorType>(op->getResult(0).getType()).getDimSize(*a);
      kvHeads =
          cast<RankedTensorType>(op->getOperand(0).getType()).getDimSize(*a);
    } else {
      return WalkResult::advance();
    }
    // Dynamic or indivisible head counts are the planner's to report, but
    // for GQA, which padUnevenHeads pads: KV heads that tp neither divides
    // nor is a multiple of to a count that it is (paddedKvHeads), then each
    // KV head's group to a multiple of tp / Hkv when there are fewer.
    if (ShapedType::isDynamic(kvHeads) || ShapedType::isDynamic(heads))
      return WalkResult::advance();
    bool padded = kvHeads > 0 && kvHeads < heads && heads % kvHeads == 0 &&
                  (heads % n != 0 || (kvHeads % n != 0 && n % kvHeads != 0));
    if (padded)
      kvHeads = paddedKvHeads(kvHeads, n);
    if ((heads % n != 0 && !padded) || kvHeads <= 1 || kvHeads % n == 0)
      return WalkResult::advance();
    if (n % kvHeads != 0) {
      op->emitOpError("has ")
          << kvHeads << " KV heads, which tp=" << n
          << " neither divides nor is a multiple of (KV heads are split when "
             "tp divides them, replicated in groups when their count divides "
             "tp)";
      return WalkResult::interrupt();
    }
    if (kvSplit && kvSplit != kvHeads) {
      op->emitOpError("has ")
          << kvHeads << " KV heads, but an earlier attention has " << kvSplit
          << ": with tp=" << n
          << " both would replicate in groups, which needs one count";
      return WalkResult::interrupt();
    }
    kvSplit = kvHeads;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (!kvSplit)
    return success();
  SmallVector<int64_t> shape(grid.getShape());
  SmallVector<Attribute> names(
      grid->getAttrOfType<ArrayAttr>(kAxisNamesAttr).getValue());
  MLIRContext *context = grid.getContext();
  shape[*tp] = n / kvSplit;
  shape.insert(shape.begin() + *tp, kvSplit);
  names[*tp] = StringAttr::get(context, "tp.rep");
  names.insert(names.begin() + *tp, StringAttr::get(context, "tp.kv"));
  grid.setShape(shape);
  grid->setAttr(kAxisNamesAttr, ArrayAttr::get(context, names));
  return success();
}

/// Appends the planning axis `mb` of `n` microbatches to the grid. Being
/// last, it leaves the other axes' indices as they are when
/// meshc-shard-pipeline-split removes it again.
void addMicrobatchAxis(shard::GridOp grid, int64_t n) {
  SmallVector<int64_t> shape(grid.getShape());
  SmallVector<Attribute> names;
  if (auto attr = grid->getAttrOfType<ArrayAttr>(kAxisNamesAttr))
    names.assign(attr.begin(), attr.end());
  while (names.size() < shape.size())
    names.push_back(StringAttr::get(grid.getContext(), ""));
  shape.push_back(n);
  names.push_back(StringAttr::get(grid.getContext(), kMicrobatchAxis));
  grid.setShape(shape);
  grid->setAttr(kAxisNamesAttr, ArrayAttr::get(grid.getContext(), names));
}

class ShardPlanPass : public impl::ShardPlanPassBase<ShardPlanPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<shard::GridOp> grid = resolveGrid(module, mesh);
    if (failed(grid))
      return signalPassFailure();
    if (microbatches < 1) {
      module.emitError("microbatches must be at least 1, not ") << microbatches;
      return signalPassFailure();
    }
    if (failed(splitTensorParallel(module, *grid)))
      return signalPassFailure();
    if (microbatches > 1) {
      if (!findAxis(*grid, "pp")) {
        module.emitError("microbatches=")
            << microbatches
            << " needs a pp axis: microbatches keep pipeline stages busy";
        return signalPassFailure();
      }
      addMicrobatchAxis(*grid, microbatches);
    }
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      batchPositionalGathers(func);
      if (DimAxes tp = findAxes(*grid, "tp"); !tp.empty()) {
        splitPackedProjections(func);
        padUnevenHeads(func, groupSize(*grid, tp));
        padUnevenMlps(func, groupSize(*grid, tp));
        padUnevenExperts(func, groupSize(*grid, tp));
        padUnevenLmHeads(func, groupSize(*grid, tp));
      }
      if (failed(Planner(*grid, func, sequenceParallel).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace meshc
