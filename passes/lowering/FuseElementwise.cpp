//===- FuseElementwise.cpp - Chains of elementwise ops -> one kernel ------===//
//
// Part of meshc.
//
// Algorithm, for each function's body, in program order:
//   1. A fusible op (dfg::FusedElementwiseOp::isFusible) with a static
//      result shape joins the group of an operand's producer when the
//      producer is in a group of the same result shape and the group would
//      stay within the input and result limits, and when no value of the
//      group is used by an op outside it that comes before this op (the
//      fused op takes the place of the group's last op, so such a user would
//      precede its producer; this also rules out cycles through outside
//      ops). Otherwise it starts a group of its own.
//   2. Each group of two or more ops becomes one dfg.fused_elementwise at the
//      place of its last op: its inputs are the values the group reads from
//      outside, its results the group's values used outside it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace meshc {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

using dfg::FusedElementwiseOp;

struct Group {
  SmallVector<Operation *> ops; // in program order
  llvm::SmallPtrSet<Operation *, 8> members;
  ArrayRef<int64_t> shape;

  bool contains(Operation *op) const { return members.contains(op); }

  /// The values the group reads from outside, in first-use order.
  llvm::SetVector<Value> inputs() const {
    llvm::SetVector<Value> in;
    for (Operation *op : ops)
      for (Value v : op->getOperands())
        if (!contains(v.getDefiningOp()))
          in.insert(v);
    return in;
  }

  /// The group's values used outside it, in program order.
  SmallVector<Value> outputs() const {
    SmallVector<Value> out;
    for (Operation *op : ops)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(),
                         [&](Operation *u) { return !contains(u); }))
          out.push_back(r);
    return out;
  }
};

struct FuseElementwisePass
    : impl::FuseElementwisePassBase<FuseElementwisePass> {
  using FuseElementwisePassBase::FuseElementwisePassBase;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      if (!func.isDeclaration())
        fuse(func.getBody().front());
    });
  }

  static bool canStart(Operation *op) {
    if (!FusedElementwiseOp::isFusible(op))
      return false;
    return cast<RankedTensorType>(op->getResult(0).getType()).hasStaticShape();
  }

  /// Whether `op` may join `group` (step 1).
  static bool canJoin(Operation *op, const Group &group) {
    if (cast<RankedTensorType>(op->getResult(0).getType()).getShape() !=
        group.shape)
      return false;
    for (Operation *member : group.ops)
      for (Value r : member->getResults())
        for (Operation *user : r.getUsers())
          if (user != op && !group.contains(user) &&
              user->getBlock() == op->getBlock() && user->isBeforeInBlock(op))
            return false;
    Group grown = group;
    grown.ops.push_back(op);
    grown.members.insert(op);
    return grown.inputs().size() <= FusedElementwiseOp::kMaxInputs &&
           grown.outputs().size() <= FusedElementwiseOp::kMaxResults;
  }

  void fuse(Block &block) {
    std::vector<Group> groups;
    llvm::DenseMap<Operation *, size_t> groupOf;
    for (Operation &op : block) {
      if (!canStart(&op))
        continue;
      std::optional<size_t> joined;
      for (Value v : op.getOperands()) {
        auto it = groupOf.find(v.getDefiningOp());
        if (it != groupOf.end() && canJoin(&op, groups[it->second])) {
          joined = it->second;
          break;
        }
      }
      if (!joined) {
        joined = groups.size();
        groups.emplace_back();
        groups.back().shape =
            cast<RankedTensorType>(op.getResult(0).getType()).getShape();
      }
      groups[*joined].ops.push_back(&op);
      groups[*joined].members.insert(&op);
      groupOf[&op] = *joined;
    }
    for (const Group &group : groups)
      if (group.ops.size() >= 2)
        replace(group);
  }

  /// Step 2: one fused op in place of the group.
  void replace(const Group &group) {
    llvm::SetVector<Value> inputs = group.inputs();
    SmallVector<Value> outputs = group.outputs();
    Operation *last = group.ops.back();
    OpBuilder b(last);
    SmallVector<Type> resultTypes;
    for (Value v : outputs)
      resultTypes.push_back(v.getType());
    auto fused = FusedElementwiseOp::create(b, last->getLoc(), resultTypes,
                                            inputs.getArrayRef());
    Block *body = new Block();
    fused.getBody().push_back(body);
    IRMapping map;
    for (Value in : inputs)
      map.map(in, body->addArgument(in.getType(), in.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(body);
    for (Operation *op : group.ops)
      inner.clone(*op, map);
    SmallVector<Value> yielded;
    for (Value v : outputs)
      yielded.push_back(map.lookup(v));
    dfg::YieldOp::create(inner, last->getLoc(), yielded);
    for (auto [old, now] : llvm::zip_equal(outputs, fused.getResults()))
      old.replaceAllUsesWith(now);
    for (Operation *op : llvm::reverse(group.ops))
      op->erase();
  }
};

} // namespace
} // namespace meshc
