//===- RankEmitter.cpp - C++ for one rank program (cpu and cuda) ---------===//
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
//    emitOp dispatches each op to its emission function, in the Emit*.cpp
//    file of its family (RankEmitterImpl.h).
// 4. The collective sequence (ops, groups, shapes, in execution order with
//    stage calls expanded) is hashed for the manifest's start-up check.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/RankEmitter.h"
#include "compiler/codegen/DTypes.h"
#include "compiler/codegen/RankEmitterImpl.h"

#include "compiler/codegen/BufferPlan.h"
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"
#include "dialects/dfg/Sharding/Sharding.h"
#include "meshc/runtime/safetensors.h"
#include "meshc/runtime/tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <functional>
#include <set>

using namespace mlir;

namespace meshc::codegen {

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

std::string groupKey(ArrayRef<int16_t> axes) {
  std::string s;
  for (int16_t a : axes)
    s += std::to_string(a) + ",";
  return s;
}

/// The dfg.wait that completes collective `op`
/// (meshc-lower-schedule-collectives), or null when `op` blocks where it
/// stands.
dfg::WaitOp waitOf(Operation *op) {
  if (op->getNumResults() != 1 || !op->getResult(0).hasOneUse())
    return nullptr;
  return dyn_cast<dfg::WaitOp>(*op->getResult(0).getUsers().begin());
}

namespace {

/// The runtime's enumerator for a dfg element type (which ODS restricts).
StringRef dtypeName(Type t) {
  switch (elementDType(t).value_or(rt::DType::F32)) {
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
             elementDType(t.getElementType()).value_or(rt::DType::F32));
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

bool isView(Operation *op) {
  return isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp, dfg::SqueezeOp,
             dfg::UnsqueezeOp, shard::SendOp, dfg::WaitOp>(op);
}

/// A receive's buffer (tensor.empty, or dfg.symbolic_expand of zero where
/// dimensions are symbolic; see meshc-shard-specialize-rank): the receive's
/// result is allocated and written by the receive, so nothing is computed for
/// it.
bool isRecvBuffer(Operation *op) {
  if (isa<tensor::EmptyOp>(op))
    return true;
  return op->getNumResults() == 1 && !op->getResult(0).use_empty() &&
         llvm::all_of(op->getResult(0).getUses(), [](OpOperand &use) {
           return isa<shard::RecvOp>(use.getOwner()) &&
                  use.getOperandNumber() == 0;
         });
}

/// The symbolic dimensions of a rank program, bound from @main's inputs: a
/// dimension whole on every rank gives its size; one split over the mesh
/// gives the rank's piece ("name@n", see meshc-shard-specialize-rank), and the
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
      // A derived name is checked, not bound (FunctionEmitter::emit).
      if (name.empty() || !type.isDynamicDim(d) ||
          dfg::isDerivedDimName(name) || !bound.insert(name).second)
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

} // namespace

std::string identifier(StringRef s) {
  std::string out;
  for (char c : s)
    out += llvm::isAlnum(c) ? c : '_';
  return out;
}

//===----------------------------------------------------------------------===//
// One function
//===----------------------------------------------------------------------===//

uint64_t FunctionEmitter::plan() {
  findLinearEpilogues();
  Block &body = fn_.getBody().front();
  llvm::DenseMap<Operation *, int64_t> step;
  int64_t n = 0;
  for (Operation &op : body)
    step[&op] = n++;
  // The buffer each value lives in: its own, or (views) its operand's.
  llvm::DenseMap<Value, Value> root;
  llvm::MapVector<Value, std::pair<int64_t, int64_t>> live;
  for (Operation &op : body) {
    // A fused linear and its activation write no buffer of their own.
    if (absorbed_.contains(&op))
      continue;
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
    SmallVector<Value> read(op.getOperands());
    // A fused linear reads its operands where its epilogue ends.
    if (auto e = epilogues_.find(&op); e != epilogues_.end())
      llvm::append_range(read, e->second.linear->getOperands());
    for (Value v : read) {
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
    // A size not known at the bounds is reported when the op is emitted.
    requests.push_back({boundBytes(v).value_or(0), range.first, range.second});
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

std::optional<uint64_t> FunctionEmitter::boundBytes(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.hasStaticShape() || !bounds_)
    return byteSize(type);
  if (llvm::is_contained(shapes_.dims(v), AffineExpr()))
    return std::nullopt;
  auto [map, names] = table_.write(shapes_.dims(v));
  auto sizes = dfg::evaluateDims(map, names, *bounds_);
  if (!sizes) {
    llvm::consumeError(sizes.takeError());
    return std::nullopt;
  }
  uint64_t n = rt::byteWidth(
      elementDType(type.getElementType()).value_or(rt::DType::F32));
  // A dimension that does not grow with its symbols (a remainder: a pad up
  // to a multiple of a chunk) may be largest below the bounds: its upper
  // bound over sizes from 1 to the bounds is taken where it is larger.
  auto symbolBounds = [&](unsigned position) -> dfg::DimBounds {
    auto found = bounds_->find(table_.name(position).str());
    if (found == bounds_->end())
      return {1, std::nullopt};
    return {1, found->second};
  };
  for (auto [d, e] : llvm::zip_equal(*sizes, shapes_.dims(v))) {
    std::optional<int64_t> most = dfg::boundsOf(e, symbolBounds).most;
    int64_t size = most ? std::max(d, *most) : d;
    n *= static_cast<uint64_t>(std::max<int64_t>(size, 0));
  }
  return n;
}

SmallVector<std::string> FunctionEmitter::mapExprs(AffineMap map,
                                                   ArrayAttr names) {
  SmallVector<std::string> exprs;
  for (AffineExpr e : table_.read(map, names))
    exprs.push_back(dimExpr(e));
  return exprs;
}

std::string FunctionEmitter::operand(Value v, llvm::raw_ostream &os,
                                     bool product) {
  // A weight or constant, declared where first read (a product's bf16
  // weight apart from the same weight in f32, which another op, such as the
  // gather of a tied embedding, may have declared first).
  bool bf16 = product && weights_.productReadsBf16(v);
  auto &names = bf16 ? bf16Names_ : names_;
  if (auto found = names.find(v); found != names.end())
    return found->second;
  int entry = weights_.entryFor(v, bf16);
  auto type = cast<RankedTensorType>(v.getType());
  std::string name = "w" + std::to_string(next_++);
  os << "  const rt::TensorRef " << name << " = ";
  if (ArrayRef<int64_t>(weights_.entries()[entry].box.shape) == type.getShape())
    os << "p.weight(" << entry << ");\n";
  else
    os << "rt::reshaped(p.weight(" << entry << "), " << list(type.getShape())
       << ");\n";
  names[v] = name;
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
  // Whether `expr` reads a name no input dimension of this function binds.
  auto unbound = [&](AffineExpr expr) {
    bool found = false;
    expr.walk([&](AffineExpr e) {
      if (auto sym = dyn_cast<AffineSymbolExpr>(e))
        found |= llvm::none_of(symbols_, [&](const BoundSymbol &b) {
          return b.name == table_.name(sym.getPosition());
        });
    });
    return found;
  };
  // An input dimension whose name is an expression over others
  // (`past_sequence_length + sequence_length`) must be that.
  for (auto [i, arg] : llvm::enumerate(fn_.getArguments())) {
    auto names = fn_.getArgAttrOfType<ArrayAttr>(i, "dfg.dim_names");
    auto type = cast<RankedTensorType>(arg.getType());
    if (!isMain || !names || symbols_.empty())
      continue;
    for (auto [d, n] : llvm::enumerate(names.getValue())) {
      StringRef name = cast<StringAttr>(n).getValue();
      if (!dfg::isDerivedDimName(name) || !type.isDynamicDim(d))
        continue;
      auto onnx = fn_.getArgAttrOfType<StringAttr>(i, "onnx.name");
      AffineExpr expr = table_.parseName(name);
      if (!expr)
        continue; // not affine: nothing derives from it
      if (unbound(expr))
        return fn_.emitError("input '")
               << (onnx ? onnx.getValue() : "") << "' has a dimension named '"
               << name
               << "', an expression over names that no input dimension "
                  "has on its own, so a run cannot size them";
      std::string expected = dimExpr(expr);
      os << "  if (a" << i << ".shape[" << d << "] != " << expected << ")\n"
         << "    rt::fatal(\"input '" << (onnx ? onnx.getValue() : "")
         << "' has \" + std::to_string(a" << i << ".shape[" << d
         << "]) + \" along dimension " << d << " ('" << name
         << "'), but its other inputs make that \" + std::to_string("
         << expected << "));\n";
    }
  }
  // Sizes the import assumed (dfg::sizeAssumptions): a run at other sizes
  // is refused by name.
  if (isMain)
    for (const dfg::SizeAssumption &assumed :
         dfg::sizeAssumptions(fn_->getParentOfType<ModuleOp>(), table_)) {
      if (unbound(assumed.expr) || (assumed.other && unbound(assumed.other)))
        continue; // not this rank's inputs: a rank that reads them checks
      std::string value = dimExpr(assumed.expr);
      std::string other = assumed.other ? dimExpr(assumed.other) : "";
      std::string holds = assumed.other ? value + " == " + other
                          : assumed.size
                              ? value + " == " + std::to_string(*assumed.size)
                              : value + " < 0";
      os << "  if (!(" << holds << "))\n"
         << "    rt::fatal(std::string("
         << cppString("the input sizes make " + table_.format(assumed.expr) +
                      " = ")
         << ") + std::to_string(" << value << ") + ";
      if (assumed.other)
        os << cppString(" and " + table_.format(assumed.other) + " = ")
           << " + std::to_string(" << other << ") + ";
      os << cppString(assumed.violation()) << ");\n";
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

LogicalResult FunctionEmitter::checkResults(Operation *op) {
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
          return op->emitOpError(
              "has a dynamic dimension that follows from no symbolic input "
              "dimension (a size meshc does not keep symbolic, such as "
              "min(seq, 4) of a slice of a symbolic dimension to a constant "
              "end); give the model's symbolic input dimensions sizes with "
              "--dim NAME=SIZE");
        // An empty tensor (the rest of a head that partial rotary leaves,
        // when it covers the whole head) is known: 0 bytes.
        if (!boundBytes(result) && !isView(op))
          return op->emitOpError("has a dimension whose size at the "
                                 "compiled bounds is unknown (every symbolic "
                                 "dimension needs --max-dim)");
      }
      // 16-bit floats may enter and leave a cpu program (a cast, or a fused
      // chain, converts them; a call to a pipeline stage passes the model's
      // inputs and outputs through), but the cpu kernels compute in f32; the
      // cuda kernels take f16 and bf16 (accumulating in f32).
      Type e = tt.getElementType();
      if (target_ == Target::Cpu && (e.isF16() || e.isBF16()) &&
          !isa<dfg::CastOp, dfg::FusedElementwiseOp, func::CallOp>(op))
        return op->emitOpError("computes in ")
               << e << "; " << theTarget()
               << " computes in f32 only (compile with --target cuda, or "
                  "--dtype f32 to convert the model)";
    }
  return success();
}

LogicalResult FunctionEmitter::emitReturn(func::ReturnOp ret,
                                          llvm::raw_ostream &os) {
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

LogicalResult FunctionEmitter::emitCall(func::CallOp call,
                                        llvm::raw_ostream &os) {
  SmallVector<std::string> args, results;
  for (Value v : call.getOperands())
    args.push_back(operand(v, os));
  for (Value r : call.getResults())
    results.push_back(declare(r, os));
  os << "  {\n    const rt::TensorRef args[] = {" << llvm::join(args, ", ")
     << "};\n    const rt::TensorRef results[] = {" << llvm::join(results, ", ")
     << "};\n    " << identifier(call.getCallee()) << "(p, args, results"
     << (symbols_.empty() ? "" : ", dims") << ");\n  }\n";
  return success();
}

/// One statement per op: a comment naming the ONNX nodes it came from, then
/// the op's emission function (the Emit*.cpp file of its family).
LogicalResult FunctionEmitter::emitOp(Operation *op, llvm::raw_ostream &os) {
  if (op->getNumResults() && llvm::all_of(op->getResults(), [&](Value r) {
        return weights_.fold(r).has_value();
      }))
    return success();
  if (isRecvBuffer(op))
    return success();
  if (failed(checkResults(op)))
    return failure();

  SmallVector<std::string> nodes;
  describeLoc(op->getLoc(), nodes);
  os << "  // " << op->getName().getStringRef();
  if (!nodes.empty())
    os << " <- " << llvm::join(nodes, ", ");
  os << "\n";

  if (absorbed_.contains(op)) {
    os << "  // (emitted with the epilogue it feeds)\n";
    return success();
  }
  if (auto e = epilogues_.find(op); e != epilogues_.end())
    return emitLinearEpilogue(e->second, op, os);
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    return emitReturn(ret, os);
  if (auto call = dyn_cast<func::CallOp>(op))
    return emitCall(call, os);
  if (isa<shard::ShardDialect>(op->getDialect()))
    return emitCollective(op, os);
  if (auto wait = dyn_cast<dfg::WaitOp>(op))
    return emitWait(wait, os);

  if (auto e = dyn_cast<dfg::ElementwiseOpInterface>(op)) {
    StringRef kernel = e.getKernelName();
    if (!kernel.empty() && op->getNumOperands() == 1)
      return emitUnary(op, kernel, os);
    if (!kernel.empty() && op->getNumOperands() == 2)
      return emitBinary(op, kernel, os);
  }

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // Elementwise (EmitElementwise.cpp).
      .Case([&](dfg::WhereOp w) { return emitWhere(w, os); })
      .Case([&](dfg::CastOp c) { return emitCast(c, os); })
      .Case([&](dfg::FusedElementwiseOp f) { return emitFused(f, os); })
      // Layout (EmitLayout.cpp).
      .Case<dfg::ReshapeOp, dfg::SqueezeOp, dfg::UnsqueezeOp,
            dfg::SymbolicReshapeOp>([&](auto) { return emitView(op, os); })
      .Case([&](dfg::TransposeOp t) { return emitTranspose(t, os); })
      .Case([&](dfg::ConcatOp c) { return emitConcat(c, os); })
      .Case([&](dfg::GatherOp g) { return emitGather(g, os); })
      .Case([&](dfg::GatherNDOp g) { return emitGatherND(g, os); })
      .Case([&](dfg::SliceOp s) { return emitSlice(s, os); })
      .Case([&](dfg::SymbolicSliceOp s) { return emitSymbolicSlice(s, os); })
      .Case([&](dfg::SymbolicExpandOp e) { return emitSymbolicExpand(e, os); })
      .Case([&](dfg::RangeOp r) { return emitRange(r, os); })
      .Case([&](dfg::SizesOp z) { return emitSizes(z, os); })
      .Case([&](dfg::SplitOp s) { return emitSplit(s, os); })
      .Case([&](dfg::ExpandOp e) { return emitExpand(e, os); })
      // Transformer (EmitTransformer.cpp).
      .Case<dfg::ReduceMeanOp, dfg::ReduceSumOp, dfg::ReduceMaxOp>(
          [&](auto r) { return emitReduce(r, os); })
      .Case([&](dfg::TriluOp t) { return emitTrilu(t, os); })
      .Case([&](dfg::CumSumOp c) { return emitCumSum(c, os); })
      .Case([&](dfg::TopKOp t) { return emitTopK(t, os); })
      .Case([&](dfg::ScatterNDOp s) { return emitScatterND(s, os); })
      .Case([&](dfg::EmbeddingOp e) { return emitEmbedding(e, os); })
      .Case([&](dfg::MatMulOp m) { return emitMatMul(m, os); })
      .Case([&](dfg::LinearOp l) { return emitLinear(l, os); })
      .Case([&](dfg::AttentionOp a) { return emitAttention(a, os); })
      .Case([&](dfg::RotaryOp r) { return emitRotary(r, os); })
      .Case<dfg::LayerNormOp, dfg::RmsNormOp>(
          [&](auto n) { return emitNorm(n, os); })
      .Case([&](dfg::SoftmaxOp s) { return emitSoftmax(s, os); })
      .Default([&](Operation *) {
        return op->emitOpError("has no kernel in ") << theTarget();
      });
}

namespace {

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

/// Fills `result`'s inputs and outputs from @main's signature, with what
/// each dynamic dimension is.
void describeSignature(func::FuncOp main, EmittedProgram &result) {
  // kPaddedAttr of an argument or result: {axis, size}, or none.
  auto padded = [](DenseI64ArrayAttr attr) {
    return attr ? std::vector<int64_t>(attr.asArrayRef().begin(),
                                       attr.asArrayRef().end())
                : std::vector<int64_t>();
  };
  dfg::DimTable table(main.getContext());
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
    auto names = main.getArgAttrOfType<ArrayAttr>(i, "dfg.dim_names");
    for (auto [d, dim] : llvm::enumerate(dims)) {
      // A derived name as the model writes it.
      if (names && d < names.size() && !dim.empty() &&
          dfg::isDerivedDimName(cast<StringAttr>(names[d]).getValue()))
        dim = cast<StringAttr>(names[d]).getValue().str();
      dim = StringRef(dim).rsplit('@').first; // the whole, not the piece
    }
    result.inputs.push_back(
        {name ? name.str() : "input" + std::to_string(i),
         cast<RankedTensorType>(main.getArgument(i).getType()),
         main.getArgAttr(i, kShardingAttr), dims,
         !main.getArgument(i).use_empty(),
         padded(main.getArgAttrOfType<DenseI64ArrayAttr>(i, kPaddedAttr))});
  }
  Operation *ret = main.getBody().front().getTerminator();
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    auto name = main.getResultAttrOfType<StringAttr>(i, "onnx.name");
    result.outputs.push_back(
        {name ? name.str() : "output" + std::to_string(i),
         cast<RankedTensorType>(main.getResultTypes()[i]),
         main.getResultAttr(i, kShardingAttr), describe(ret->getOperand(i)),
         true,
         padded(main.getResultAttrOfType<DenseI64ArrayAttr>(i, kPaddedAttr))});
  }
  // KV caches: an output shaped as an input but for one dimension, whose
  // size is the input's (a symbol: the past length) plus another symbol (the
  // step's new tokens), element type and sharding alike, and which is
  // computed from that input through values whose shapes carry the past
  // length (so layer 1's present is not taken for layer 0's past's, which
  // reaches it only through the new tokens' activations).
  // Pipeline stages are functions main calls: a call's result is followed
  // into the callee's return and back out through the arguments it reaches.
  auto module = main->getParentOfType<ModuleOp>();
  std::function<void(Value, unsigned, SmallVectorImpl<Value> &)> walk =
      [&](Value start, unsigned symbol, SmallVectorImpl<Value> &arguments) {
        SmallVector<Value> work = {start};
        llvm::DenseSet<Value> seen;
        auto carriesPast = [&](Value v) {
          if (!isa<RankedTensorType>(v.getType()))
            return false;
          SmallVector<AffineExpr> dims(shapes.dims(v));
          return llvm::any_of(dims, [&](AffineExpr e) {
            return !e || e.isFunctionOfSymbol(symbol);
          });
        };
        while (!work.empty()) {
          Value v = work.pop_back_val();
          if (!seen.insert(v).second)
            continue;
          Operation *def = v.getDefiningOp();
          if (!def) {
            arguments.push_back(v);
            continue;
          }
          // dfg.attention's presents extend its past key and past value.
          auto attention = dyn_cast<dfg::AttentionOp>(def);
          if (attention && attention.getPastKey() &&
              v != attention.getResult()) {
            work.push_back(v == attention.getPresent()[0]
                               ? attention.getPastKey()
                               : attention.getPastValue());
            continue;
          }
          if (auto call = dyn_cast<func::CallOp>(def)) {
            auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
            if (!callee)
              continue;
            Operation *calleeReturn = callee.getBody().front().getTerminator();
            SmallVector<Value> reached;
            walk(calleeReturn->getOperand(cast<OpResult>(v).getResultNumber()),
                 symbol, reached);
            for (Value arg : reached)
              if (auto blockArg = dyn_cast<BlockArgument>(arg))
                work.push_back(call.getOperand(blockArg.getArgNumber()));
            continue;
          }
          for (Value operand : def->getOperands())
            if (carriesPast(operand))
              work.push_back(operand);
        }
      };
  auto reaches = [&](Value out, Value past, unsigned symbol) {
    SmallVector<Value> arguments;
    walk(out, symbol, arguments);
    return llvm::is_contained(arguments, past);
  };
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    Value out = ret->getOperand(i);
    auto outType = cast<RankedTensorType>(out.getType());
    SmallVector<AffineExpr> outDims(shapes.dims(out));
    std::optional<CachePair> found;
    bool ambiguous = false;
    for (unsigned j = 0; j < main.getNumArguments(); ++j) {
      Value in = main.getArgument(j);
      auto inType = cast<RankedTensorType>(in.getType());
      if (inType.getElementType() != outType.getElementType() ||
          inType.getRank() != outType.getRank() ||
          main.getArgAttr(j, kShardingAttr) !=
              main.getResultAttr(i, kShardingAttr))
        continue;
      SmallVector<AffineExpr> inDims(shapes.dims(in));
      int64_t axis = -1;
      AffineExpr past, added;

      bool paired = true;
      for (int64_t d = 0; d < inType.getRank() && paired; ++d) {
        if (inType.getDimSize(d) == outType.getDimSize(d) &&
            !inType.isDynamicDim(d))
          continue;
        if (inDims[d] && inDims[d] == outDims[d])
          continue;
        AffineExpr difference =
            inDims[d] && outDims[d]
                ? simplifyAffineExpr(outDims[d] - inDims[d], 0, table.size())
                : AffineExpr();
        paired = axis < 0 && difference && isa<AffineSymbolExpr>(inDims[d]) &&
                 isa<AffineSymbolExpr>(difference);
        axis = d;
        past = inDims[d];
        added = difference;
      }
      if (!paired || axis < 0 ||
          !reaches(out, in, cast<AffineSymbolExpr>(past).getPosition()))
        continue;
      ambiguous |= found.has_value();
      found = CachePair{result.inputs[j].name, result.outputs[i].name, axis,
                        table.format(past), table.format(added)};
    }
    if (found && !ambiguous)
      result.cache.push_back(*found);
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
/// over the mesh is named "name@n" (meshc-shard-specialize-rank) and bounded by
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
emitRankProgram(ModuleOp role, StringRef roleName, ArrayRef<GroupAxes> groups,
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
  // The runtime's tensors hold at most rt::kMaxRank dimensions.
  Operation *tooHigh = nullptr;
  int64_t highest = 0;
  role.walk([&](Operation *op) {
    for (Type t : llvm::concat<const Type>(op->getOperandTypes(),
                                           op->getResultTypes()))
      if (auto ranked = dyn_cast<RankedTensorType>(t);
          ranked && ranked.getRank() > rt::kMaxRank && !tooHigh) {
        tooHigh = op;
        highest = ranked.getRank();
      }
  });
  if (tooHigh)
    return tooHigh->emitError("a tensor of rank ")
           << highest << ": the executables hold tensors of rank "
           << rt::kMaxRank << " at most";

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
  describeSignature(main, result);
  std::set<unsigned> inPlace(mainEmitter.inPlaceInputs().begin(),
                             mainEmitter.inPlaceInputs().end());
  for (const auto &emitter : stageEmitters)
    inPlace.insert(emitter->inPlaceInputs().begin(),
                   emitter->inPlaceInputs().end());
  for (unsigned i : inPlace)
    result.inPlaceInputs.push_back(result.inputs[i].name);

  std::string text;
  llvm::raw_string_ostream os(text);
  os << banner;
  // The one place the targets differ: whose kernels `k::` names. The cpu
  // list is precompiled by the build (codegen/RankPch.h.in): keep them alike.
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
  // The fused elementwise kernels first, compiled as the command line says
  // (-O3: their loops vectorised); then the functions that call the kernels
  // in order, glue that GCC compiles at -O1 without points-to analysis,
  // whose time grows with the square of a function's length: a Qwen3-Next
  // program of 12,000 lines took over 8 minutes at -O3 (2 at -O1, nearly
  // all of it points-to analysis) and takes 7 s so.
  os << "\n// Fused elementwise kernels.\n";
  for (const auto &emitter : stageEmitters)
    os << emitter->fusedKernels();
  os << mainEmitter.fusedKernels();
  os << "\n#if defined(__GNUC__) && !defined(__clang__) && "
        "!defined(__CUDACC__)\n#pragma GCC optimize(\"O1\", "
        "\"no-tree-pta\")\n#endif\n";
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
