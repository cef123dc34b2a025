//===- Sharding.cpp - Shardings of tensors on a named grid ----------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/Sharding.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/MeshSpec.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace meshc {

FailureOr<shard::GridOp> lookupGrid(ModuleOp module) {
  auto grids = module.getOps<shard::GridOp>();
  if (grids.empty())
    return module.emitError("no device mesh: run meshc-shard-plan with "
                            "mesh=... (or give the module a shard.grid)");
  if (std::next(grids.begin()) != grids.end())
    return module.emitError("more than one shard.grid; meshc shards for one "
                            "mesh at a time");
  return *grids.begin();
}

LogicalResult forEachFunctionOnGrid(
    ModuleOp module,
    function_ref<LogicalResult(func::FuncOp, shard::GridOp)> fn) {
  FailureOr<shard::GridOp> grid = lookupGrid(module);
  if (failed(grid))
    return failure();
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && failed(fn(func, *grid)))
      return failure();
  return success();
}

FailureOr<shard::GridOp> resolveGrid(ModuleOp module, StringRef mesh) {
  std::string text = mesh.str();
  if (text.empty())
    if (auto attr = module->getAttrOfType<StringAttr>(kMeshAttr))
      text = attr.str();
  auto grids = module.getOps<shard::GridOp>();
  if (text.empty())
    return lookupGrid(module);

  llvm::Expected<MeshSpec> spec = MeshSpec::parse(text);
  if (!spec)
    return module.emitError(llvm::toString(spec.takeError()));
  SmallVector<int64_t> shape;
  SmallVector<StringRef> names;
  for (const MeshAxis &axis : spec->axes()) {
    shape.push_back(axis.size);
    names.push_back(axis.name);
  }
  Builder b(module.getContext());
  ArrayAttr nameAttr = b.getStrArrayAttr(names);
  if (!grids.empty()) {
    shard::GridOp grid = *grids.begin();
    if (std::next(grids.begin()) != grids.end() ||
        grid.getShape() != ArrayRef<int64_t>(shape) ||
        grid->getAttr(kAxisNamesAttr) != nameAttr)
      return module.emitError("the module's shard.grid differs from the mesh '")
             << spec->str() << "'";
    return grid;
  }
  OpBuilder builder(module.getBodyRegion());
  auto grid = shard::GridOp::create(builder, module.getLoc(), kGridName, shape);
  grid->setAttr(kAxisNamesAttr, nameAttr);
  return grid;
}

std::optional<shard::GridAxis> findAxis(shard::GridOp grid, StringRef name) {
  auto names = grid->getAttrOfType<ArrayAttr>(kAxisNamesAttr);
  if (!names)
    return std::nullopt;
  for (auto [i, n] : llvm::enumerate(names.getAsValueRange<StringAttr>()))
    if (n == name && grid.getShape()[i] > 1)
      return static_cast<shard::GridAxis>(i);
  return std::nullopt;
}

std::string axisName(shard::GridOp grid, shard::GridAxis axis) {
  auto names = grid->getAttrOfType<ArrayAttr>(kAxisNamesAttr);
  if (names && axis < static_cast<int64_t>(names.size()))
    if (auto s = dyn_cast<StringAttr>(names[axis]))
      return s.str();
  return "axis " + std::to_string(axis);
}

DimAxes findAxes(shard::GridOp grid, StringRef name) {
  DimAxes axes;
  for (int64_t a = 0, e = grid.getShape().size(); a < e; ++a)
    if (grid.getShape()[a] > 1 &&
        meshAxisName(grid, static_cast<shard::GridAxis>(a)) == name)
      axes.push_back(static_cast<shard::GridAxis>(a));
  return axes;
}

std::string meshAxisName(shard::GridOp grid, shard::GridAxis axis) {
  std::string name = axisName(grid, axis);
  return name.substr(0, name.find('.'));
}

std::string describeAxes(shard::GridOp grid, ArrayRef<int16_t> axes) {
  std::string s;
  for (size_t i = 0; i < axes.size();) {
    // A run of sub-axes that is the whole of its mesh axis reads as it.
    std::string base = meshAxisName(grid, axes[i]);
    DimAxes whole = findAxes(grid, base);
    bool run = whole.size() > 1 && i + whole.size() <= axes.size() &&
               llvm::equal(whole, axes.slice(i, whole.size()));
    ArrayRef<int16_t> part = axes.slice(i, run ? whole.size() : 1);
    s += (i ? "x" : "") + (run ? base : axisName(grid, axes[i])) + "=" +
         std::to_string(groupSize(grid, part));
    i += part.size();
  }
  return s;
}

int64_t groupSize(shard::GridOp grid, ArrayRef<shard::GridAxis> axes) {
  int64_t n = 1;
  for (shard::GridAxis a : axes)
    n *= grid.getShape()[a];
  return n;
}

int64_t gridCoordinate(ArrayRef<int64_t> gridShape, int64_t rank,
                       int64_t axis) {
  for (int64_t a = gridShape.size() - 1; a > axis; --a)
    rank /= gridShape[a];
  return rank % gridShape[axis];
}

int64_t groupIndex(ArrayRef<int64_t> gridShape, int64_t rank,
                   ArrayRef<int16_t> axes) {
  int64_t index = 0;
  for (int16_t a : axes)
    index = index * gridShape[a] + gridCoordinate(gridShape, rank, a);
  return index;
}

ArrayRef<int16_t> collectiveGridAxes(Operation *op) {
  return TypeSwitch<Operation *, ArrayRef<int16_t>>(op)
      .Case<shard::AllReduceOp, shard::AllGatherOp, shard::AllSliceOp,
            shard::ReduceScatterOp, shard::AllToAllOp, shard::SendOp,
            shard::RecvOp>([](auto o) { return o.getGridAxes(); })
      .Default([](Operation *) { return ArrayRef<int16_t>(); });
}

bool isReplicated(const TensorSharding &sharding) {
  return llvm::all_of(sharding, [](const DimAxes &d) { return d.empty(); });
}

Attribute toAttr(MLIRContext *context, const TensorSharding &sharding) {
  SmallVector<shard::GridAxesAttr> dims;
  for (const DimAxes &d : sharding)
    dims.push_back(DenseI16ArrayAttr::get(context, d));
  return shard::GridAxesArrayAttr::get(context, dims);
}

TensorSharding fromAttr(Attribute attr, int64_t rank) {
  TensorSharding sharding(rank);
  if (auto array = dyn_cast_or_null<shard::GridAxesArrayAttr>(attr))
    for (auto [i, axes] : llvm::enumerate(array.getAxes()))
      if (static_cast<int64_t>(i) < rank)
        sharding[i].assign(axes.asArrayRef().begin(), axes.asArrayRef().end());
  return sharding;
}

FailureOr<RankedTensorType> localType(shard::GridOp grid,
                                      RankedTensorType global,
                                      const TensorSharding &sharding) {
  SmallVector<int64_t> shape(global.getShape());
  for (auto [dim, axes] : llvm::zip(shape, sharding)) {
    int64_t n = groupSize(grid, axes);
    if (ShapedType::isDynamic(dim) || n == 1)
      continue;
    if (dim % n != 0)
      return failure();
    dim /= n;
  }
  return RankedTensorType::get(shape, global.getElementType(),
                               global.getEncoding());
}

llvm::DenseSet<Value> activationValues(Block &body) {
  llvm::DenseSet<Value> activations;
  auto isActivation = [&](Value v) {
    return activations.contains(v) ||
           (isa<BlockArgument>(v) &&
            isa<FloatType>(getElementTypeOrSelf(v.getType())));
  };
  for (Operation &op : body.without_terminator()) {
    bool reached = llvm::any_of(op.getOperands(), isActivation);
    bool lookup =
        isa<dfg::EmbeddingOp>(op) ||
        (isa<dfg::GatherOp, dfg::GatherNDOp>(op) && !reached &&
         cast<RankedTensorType>(op.getOperand(0).getType()).getRank() >= 2 &&
         isa<FloatType>(getElementTypeOrSelf(op.getOperand(0).getType())));
    if (lookup || reached)
      activations.insert(op.result_begin(), op.result_end());
  }
  for (BlockArgument arg : body.getArguments())
    if (isActivation(arg))
      activations.insert(arg);
  return activations;
}

} // namespace meshc
