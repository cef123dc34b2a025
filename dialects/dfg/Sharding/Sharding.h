//===- Sharding.h - Shardings of tensors on a named grid --------*- C++ -*-===//
//
// Part of meshc. What the sharding passes share: the module's grid (a
// shard.grid whose axes carry the user's names), the sharding of a tensor
// (per dimension, the grid axes it is split over, major to minor: the
// split_axes of shard.sharding) and its attribute form, and the local type a
// sharding gives each rank.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_SHARDING_SHARDING_H
#define MESHC_DIALECTS_DFG_SHARDING_SHARDING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace meshc {

/// Discardable attributes of the sharding passes.
/// On the module: the mesh as text ("dp=2,tp=2"), an alternative to
/// shard.grid for hand-written tests.
inline constexpr llvm::StringLiteral kMeshAttr = "meshc.mesh";
/// On the shard.grid: the axis names, in grid-axis order.
inline constexpr llvm::StringLiteral kAxisNamesAttr = "meshc.axes";
/// On ops (one entry per result), function arguments and results: the
/// planned sharding, a #shard.axisarray per tensor.
inline constexpr llvm::StringLiteral kShardingAttr = "meshc.sharding";
/// On function arguments and results whose attention heads tp padded
/// (PadHeads.cpp): [axis, size], the model's size along that axis, where
/// the function's type holds more; the runtime pads such an input with
/// zeros after the model's part and drops the rest of such an output.
inline constexpr llvm::StringLiteral kPaddedAttr = "meshc.padded";
/// On a dfg.embedding, between meshc-shard-plan and partition: the grid
/// axes its vocabulary (the table's rows) splits over.
inline constexpr llvm::StringLiteral kVocabAxesAttr = "meshc.vocab_axes";
/// The symbol of the grid the passes create.
inline constexpr llvm::StringLiteral kGridName = "mesh";
/// Between meshc-shard-plan and meshc-shard-pipeline-split only: the last grid
/// axis, of one entry per microbatch, splits the batch inside each dp block.
inline constexpr llvm::StringLiteral kMicrobatchAxis = "mb";
/// On pipeline stage functions, on the calls, sends and receives of the
/// function that runs them, and on its results: the pipeline stage (the pp
/// coordinate) whose ranks run the op or hold the result.
inline constexpr llvm::StringLiteral kStageAttr = "meshc.stage";

/// On a dfg.symbolic_slice that meshc-shard-specialize-rank made of a
/// shard.all_slice: the number of ranks the symbolic dimension splits over
/// (it must divide the size when the program runs).
inline constexpr llvm::StringLiteral kSplitOverAttr = "meshc.split_over";

using DimAxes = llvm::SmallVector<mlir::shard::GridAxis, 2>;
/// Per dimension, the grid axes it is split over (empty: whole).
using TensorSharding = llvm::SmallVector<DimAxes, 4>;

/// The module's grid: the existing shard.grid (there must be at most one),
/// or one built from `mesh` (text, "dp=2,tp=2") or from the module's
/// `meshc.mesh` attribute. Reports a missing, malformed or contradictory
/// mesh at the module and fails.
mlir::FailureOr<mlir::shard::GridOp> resolveGrid(mlir::ModuleOp module,
                                                 llvm::StringRef mesh);

/// The module's existing grid, or failure with an error at the module.
mlir::FailureOr<mlir::shard::GridOp> lookupGrid(mlir::ModuleOp module);

/// Runs `fn` on every function with a body in `module`, with the module's
/// grid; stops at the first failure (also when there is no grid).
mlir::LogicalResult forEachFunctionOnGrid(
    mlir::ModuleOp module,
    llvm::function_ref<mlir::LogicalResult(mlir::func::FuncOp,
                                           mlir::shard::GridOp)>
        fn);

/// The grid axis named `name`, if the grid has one of size > 1.
std::optional<mlir::shard::GridAxis> findAxis(mlir::shard::GridOp grid,
                                              llvm::StringRef name);
/// The grid axes of size > 1 that make up the mesh axis `name`, major to
/// minor: the axis itself, or the sub-axes `name.<part>` it was split into
/// (meshc-shard-plan splits tp into tp.kv x tp.rep when KV heads are fewer
/// than tp and replicate in groups). Row-major rank numbering is the same
/// either way.
DimAxes findAxes(mlir::shard::GridOp grid, llvm::StringRef name);
/// The name of grid axis `axis` ("axis 1" when the grid carries no names).
std::string axisName(mlir::shard::GridOp grid, mlir::shard::GridAxis axis);
/// The mesh axis a grid axis belongs to: "tp" for tp and for tp.kv.
std::string meshAxisName(mlir::shard::GridOp grid, mlir::shard::GridAxis axis);
/// "tp=2" or "dp=2xtp=2" for the axes of one dimension; all the sub-axes of
/// a mesh axis, in order, read as that axis ("tp=4", not "tp.kv=2xtp.rep=2").
std::string describeAxes(mlir::shard::GridOp grid, llvm::ArrayRef<int16_t> a);
/// The number of ranks in a group spanning `axes`.
int64_t groupSize(mlir::shard::GridOp grid,
                  llvm::ArrayRef<mlir::shard::GridAxis> axes);

/// Rank `rank`'s coordinate along grid axis `axis` (ranks are numbered row
/// major over the grid's shape).
int64_t gridCoordinate(llvm::ArrayRef<int64_t> gridShape, int64_t rank,
                       int64_t axis);
/// Rank `rank`'s index within its group over `axes` (major to minor): the
/// block of a dimension split over `axes` that the rank holds.
int64_t groupIndex(llvm::ArrayRef<int64_t> gridShape, int64_t rank,
                   llvm::ArrayRef<int16_t> axes);

/// The grid axes a shard collective (all_reduce, all_gather, all_slice,
/// reduce_scatter, all_to_all, send, recv) runs over; empty for other ops.
llvm::ArrayRef<int16_t> collectiveGridAxes(mlir::Operation *op);

bool isReplicated(const TensorSharding &sharding);

/// The activations of a function body: its floating-point arguments, the
/// rows looked up in a table (a dfg.embedding, or a gather from a
/// floating-point tensor of rank 2 or more that no activation reaches: an
/// embedding left unraised),
/// and whatever they flow into. Tables computed from positions alone (a
/// rotary angle's outer product of inv_freq and the position ids) are not.
llvm::DenseSet<mlir::Value> activationValues(mlir::Block &body);
mlir::Attribute toAttr(mlir::MLIRContext *context,
                       const TensorSharding &sharding);
/// The sharding an attribute holds; a null attribute is `rank` whole dims.
TensorSharding fromAttr(mlir::Attribute attr, int64_t rank);

/// The per-rank type of a tensor of type `global` sharded as `sharding`:
/// split dimensions divided by their group size (dynamic ones stay
/// dynamic). Fails where a static dimension does not divide.
mlir::FailureOr<mlir::RankedTensorType>
localType(mlir::shard::GridOp grid, mlir::RankedTensorType global,
          const TensorSharding &sharding);

} // namespace meshc

#endif // MESHC_DIALECTS_DFG_SHARDING_SHARDING_H
