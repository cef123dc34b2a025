//===- EmitTransformer.cpp - C++ for transformer ops ----------------------===//
//
// Part of meshc. The computing ops of transformer models: contractions
// (matmul, linear), attention, rotary embeddings, norms, embedding lookups,
// softmax, reductions, cumsum, top_k, trilu and scatter_nd.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/RankEmitterImpl.h"

using namespace mlir;

namespace meshc::codegen {

template <typename ReduceOp>
LogicalResult FunctionEmitter::emitReduce(ReduceOp r, llvm::raw_ostream &os) {
  Operation *op = r;
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
  std::string i = operand(r.getInput(), os), o = declare(r.getResult(), os);
  os << "  {\n    const std::int64_t axes[] = " << list(axes)
     << ";\n    k::reduce(k::ReduceOp::" << kind << ", " << i << ", axes, "
     << axes.size() << ", " << o << ");\n  }\n";
  return success();
}

template LogicalResult FunctionEmitter::emitReduce(dfg::ReduceMeanOp,
                                                   llvm::raw_ostream &);
template LogicalResult FunctionEmitter::emitReduce(dfg::ReduceSumOp,
                                                   llvm::raw_ostream &);
template LogicalResult FunctionEmitter::emitReduce(dfg::ReduceMaxOp,
                                                   llvm::raw_ostream &);

LogicalResult FunctionEmitter::emitCumSum(dfg::CumSumOp c,
                                          llvm::raw_ostream &os) {
  std::string i = operand(c.getInput(), os), o = declare(c.getResult(), os);
  os << "  k::cumSum(" << i << ", " << c.getNormalizedAxis() << ", "
     << (c.getExclusive() ? "true" : "false") << ", "
     << (c.getReverse() ? "true" : "false") << ", " << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitTopK(dfg::TopKOp t, llvm::raw_ostream &os) {
  std::string i = operand(t.getInput(), os), v = declare(t.getValues(), os),
              p = declare(t.getIndices(), os);
  os << "  k::topK(" << i << ", " << t.getNormalizedAxis() << ", "
     << (t.getLargest() ? "true" : "false") << ", " << v << ", " << p << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitTrilu(dfg::TriluOp t,
                                         llvm::raw_ostream &os) {
  std::string i = operand(t.getInput(), os), o = declare(t.getResult(), os);
  os << "  k::trilu(" << i << ", " << (t.getUpper() ? "true" : "false") << ", "
     << t.getDiagonal() << ", " << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitScatterND(dfg::ScatterNDOp s,
                                             llvm::raw_ostream &os) {
  std::string d = operand(s.getData(), os), i = operand(s.getIndices(), os),
              u = operand(s.getUpdates(), os), o = declare(s.getResult(), os);
  os << "  k::scatterND(" << d << ", " << i << ", " << u << ", "
     << (s.getAccumulate() ? "true" : "false") << ", " << s.getBatchDims()
     << ", " << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitEmbedding(dfg::EmbeddingOp e,
                                             llvm::raw_ostream &os) {
  std::string t = operand(e.getTable(), os, /*product=*/true),
              i = operand(e.getIds(), os),
              o = declare(e.getResult(), os);
  os << "  k::embedding(" << t << ", " << i << ", " << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitMatMul(dfg::MatMulOp m,
                                          llvm::raw_ostream &os) {
  std::string l = operand(m.getLhs(), os),
              r = operand(m.getRhs(), os, /*product=*/true),
              o = declare(m.getResult(), os);
  os << "  k::matmul(" << l << ", " << r << ", " << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitLinear(dfg::LinearOp l,
                                          llvm::raw_ostream &os) {
  std::string i = operand(l.getInput(), os),
              w = operand(l.getWeight(), os, /*product=*/true),
              b = optionalOperand(l.getBias(), os),
              o = declare(l.getResult(), os);
  os << "  k::linear(" << i << ", " << w << ", " << b << ", "
     << (l.getTransposeWeight() ? "true" : "false") << ", "
     << (target_ == Target::Cpu ? linearOptions(l, nullptr, os) + ", " : "")
     << o << ");\n";
  return success();
}

std::string FunctionEmitter::linearOptions(dfg::LinearOp l,
                                           const LinearEpilogue *e,
                                           llvm::raw_ostream &os) {
  // A weight of the rank's file stays at its address while the program
  // runs, so the kernel may keep a repacked copy of it.
  std::string options = "k::LinearOptions{";
  options += weights_.fold(l.getWeight()) ? "true" : "false";
  if (e && !e->unary.empty())
    options += ", true, k::UnaryOp::" + e->unary;
  else if (e)
    options += ", false, k::UnaryOp::Neg";
  if (e && e->other)
    options += ", &" + operand(e->other, os) + ", k::BinaryOp::" + e->binary;
  return options + "}";
}

namespace {

/// The k::UnaryOp of an activation a linear's epilogue applies, or empty.
StringRef epilogueUnary(Operation *op) {
  auto e = dyn_cast_or_null<dfg::ElementwiseOpInterface>(op);
  if (!e || op->getNumOperands() != 1 || op->getNumResults() != 1)
    return {};
  StringRef kind = e.getKernelName();
  return llvm::is_contained(
             {"Silu", "Sigmoid", "Tanh", "Erf", "Gelu", "GeluTanh"}, kind)
             ? kind
             : StringRef();
}

/// The k::BinaryOp of the add or multiply a linear's epilogue ends with, or
/// empty.
StringRef epilogueBinary(Operation *op) {
  auto e = dyn_cast_or_null<dfg::ElementwiseOpInterface>(op);
  if (!e || op->getNumOperands() != 2 || op->getNumResults() != 1)
    return {};
  StringRef kind = e.getKernelName();
  return kind == "Add" || kind == "Mul" ? kind : StringRef();
}

bool isF32(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType().isF32();
}

} // namespace

void FunctionEmitter::findLinearEpilogues() {
  if (target_ != Target::Cpu)
    return;
  // Shapes of its own: the emitter's table numbers symbols in the order
  // code generation first meets them, which the generated code shows.
  dfg::DimTable table(fn_.getContext());
  dfg::SymbolicShapes shapes(table);
  // `a` and `b` hold the same number of elements in the same order.
  auto sameShape = [&](Value a, Value b) {
    auto ta = cast<RankedTensorType>(a.getType()),
         tb = cast<RankedTensorType>(b.getType());
    if (ta.hasStaticShape() && tb.hasStaticShape())
      return ta.getShape() == tb.getShape();
    if (ta.getRank() != tb.getRank())
      return false;
    // Copied: the second lookup may grow the table the first points into.
    SmallVector<AffineExpr> da(shapes.dims(a)), db(shapes.dims(b));
    return !llvm::is_contained(da, AffineExpr()) && da == db;
  };
  auto sole = [](Value v) -> Operation * {
    return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
  };
  for (Operation &op : fn_.getBody().front()) {
    auto linear = dyn_cast<dfg::LinearOp>(&op);
    if (!linear || !isF32(linear.getResult()) ||
        weights_.fold(linear.getResult()))
      continue;
    Value value = linear.getResult();
    LinearEpilogue e{linear, "", "", Value()};
    Operation *final = nullptr, *activation = nullptr;
    Operation *user = sole(value);
    if (StringRef unary = epilogueUnary(user);
        !unary.empty() && isF32(user->getResult(0)) &&
        sameShape(user->getResult(0), value)) {
      e.unary = unary.str();
      activation = final = user;
      value = user->getResult(0);
      user = sole(value);
    }
    if (StringRef binary = epilogueBinary(user); !binary.empty()) {
      // value + other, or value * other (both commute).
      Value other = user->getOperand(user->getOperand(0) == value ? 1 : 0);
      if (other != value && isF32(other) && isF32(user->getResult(0)) &&
          sameShape(other, value) && sameShape(user->getResult(0), value)) {
        e.binary = binary.str();
        e.other = other;
        final = user;
      }
    } else if (auto fused = dyn_cast_or_null<dfg::FusedElementwiseOp>(user);
               fused && !activation && fused.getInputs().size() == 2 &&
               fused->getNumResults() == 1) {
      // A chain of two: activation(value) op other (SwiGLU's
      // silu(gate) * up), the value its input `slot`.
      Block &body = fused.getBody().front();
      auto ops = body.without_terminator();
      unsigned slot = fused.getInputs()[0] == value ? 0 : 1;
      Value other = fused.getInputs()[1 - slot];
      if (std::distance(ops.begin(), ops.end()) == 2) {
        Operation &first = *ops.begin(), &second = *std::next(ops.begin());
        StringRef unary = epilogueUnary(&first),
                  binary = epilogueBinary(&second);
        if (!unary.empty() && !binary.empty() &&
            first.getOperand(0) == body.getArgument(slot) &&
            llvm::is_contained(second.getOperands(), first.getResult(0)) &&
            llvm::is_contained(second.getOperands(),
                               body.getArgument(1 - slot)) &&
            body.getTerminator()->getOperand(0) == second.getResult(0) &&
            isF32(other) && isF32(fused.getResult(0)) &&
            sameShape(other, value) && sameShape(fused.getResult(0), value)) {
          e.unary = unary.str();
          e.binary = binary.str();
          e.other = other;
          final = fused;
        }
      }
    }
    // Two linears may end in one op (SwiGLU's gate and up): the first
    // takes it, and the other's result stays a buffer the epilogue reads.
    if (!final || epilogues_.count(final))
      continue;
    absorbed_.insert(linear);
    if (activation && activation != final)
      absorbed_.insert(activation);
    epilogues_[final] = e;
  }
}

LogicalResult FunctionEmitter::emitLinearEpilogue(const LinearEpilogue &e,
                                                  Operation *final,
                                                  llvm::raw_ostream &os) {
  dfg::LinearOp l = e.linear;
  std::string i = operand(l.getInput(), os),
              w = operand(l.getWeight(), os, /*product=*/true),
              b = optionalOperand(l.getBias(), os),
              options = linearOptions(l, &e, os),
              o = declare(final->getResult(0), os);
  os << "  k::linear(" << i << ", " << w << ", " << b << ", "
     << (l.getTransposeWeight() ? "true" : "false") << ", " << options << ", "
     << o << "); // with its epilogue\n";
  return success();
}

/// The one call of stage function `fn` in @main, if it has exactly one
/// (microbatches call a stage once per microbatch, on slices).
static func::CallOp soleCall(func::FuncOp fn) {
  auto module = fn->getParentOfType<ModuleOp>();
  auto main = module ? module.lookupSymbol<func::FuncOp>("main") : nullptr;
  if (!main)
    return nullptr;
  func::CallOp sole;
  int calls = 0;
  main.walk([&](func::CallOp call) {
    if (call.getCallee() == fn.getSymName()) {
      sole = call;
      ++calls;
    }
  });
  return calls == 1 ? sole : nullptr;
}

std::optional<unsigned> FunctionEmitter::mainInput(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner()->getParentOp() != fn_)
    return std::nullopt;
  if (fn_.getSymName() == "main")
    return arg.getArgNumber();
  func::CallOp call = soleCall(fn_);
  if (!call)
    return std::nullopt;
  auto outer = dyn_cast<BlockArgument>(call.getOperand(arg.getArgNumber()));
  if (!outer || outer.getOwner()->getParentOp() != call->getParentOp())
    return std::nullopt;
  return outer.getArgNumber();
}

bool FunctionEmitter::onlyReturned(Value v) {
  bool isMain = fn_.getSymName() == "main";
  func::CallOp call = isMain ? nullptr : soleCall(fn_);
  if (!isMain && !call)
    return false;
  for (OpOperand &use : v.getUses()) {
    if (!isa<func::ReturnOp>(use.getOwner()))
      return false;
    if (isMain)
      continue;
    for (Operation *user :
         call->getResult(use.getOperandNumber()).getUsers())
      if (!isa<func::ReturnOp>(user))
        return false;
  }
  return true;
}

LogicalResult FunctionEmitter::emitAttention(dfg::AttentionOp a,
                                             llvm::raw_ostream &os) {
  std::string q = operand(a.getQuery(), os), kk = operand(a.getKey(), os),
              v = operand(a.getValue(), os),
              m = optionalOperand(a.getMask(), os),
              pk = optionalOperand(a.getPastKey(), os),
              pv = optionalOperand(a.getPastValue(), os),
              lengths = optionalOperand(a.getPastLengths(), os),
              sinks = optionalOperand(a.getSinks(), os);
  std::string o = declare(a->getResult(0), os), presentK = "nullptr",
              presentV = "nullptr";
  // The KV cache `meshc generate` can hold in place: past key and value
  // straight from @main's inputs, presents read by nothing but the return
  // (under past_lengths, causal too: the cache's positions past a row's
  // history hold what earlier steps left, which only the causal limit
  // keeps unread, where the present holds zeros).
  std::string capacity = "0";
  if (a.getPresent().size() == 2) {
    presentK = "&" + declare(a.getPresent()[0], os);
    presentV = "&" + declare(a.getPresent()[1], os);
    std::optional<unsigned> pastK = mainInput(a.getPastKey()),
                            pastV = mainInput(a.getPastValue());
    if (pastK && pastV && onlyReturned(a.getPresent()[0]) &&
        onlyReturned(a.getPresent()[1]) &&
        (!a.getPastLengths() || a.getCausal())) {
      capacity = "p.cacheCapacity(" + std::to_string(*pastK) + ", " +
                 std::to_string(*pastV) + ")";
      inPlaceInputs_.push_back(*pastK);
      inPlaceInputs_.push_back(*pastV);
    }
  }
  os << "  k::attention(" << q << ", " << kk << ", " << v << ", " << m << ", "
     << pk << ", " << pv << ", " << cppFloat(a.getScale().convertToDouble())
     << ", " << (a.getCausal() ? "true" : "false") << ", "
     << (a.getCausalFillAttr()
             ? cppFloat(a.getCausalFillAttr().getValueAsDouble())
             : std::string("-__builtin_inff()"))
     << ", " << cppFloat(a.getSoftcap().convertToDouble()) << ", "
     << (a.getSoftcapFirst() ? "true" : "false") << ", " << o << ", "
     << presentK << ", " << presentV << ", " << capacity << ", " << lengths
     << ", " << sinks << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitRotary(dfg::RotaryOp r,
                                          llvm::raw_ostream &os) {
  std::string i = operand(r.getInput(), os), c = operand(r.getCos(), os),
              s = operand(r.getSin(), os),
              pos = optionalOperand(r.getPositions(), os),
              o = declare(r.getResult(), os);
  os << "  k::rotary(" << i << ", " << c << ", " << s << ", " << pos << ", "
     << (r.getInterleaved() ? "true" : "false") << ", " << r.getRotaryDim()
     << ", " << o << ");\n";
  return success();
}

template <typename NormOp>
LogicalResult FunctionEmitter::emitNorm(NormOp n, llvm::raw_ostream &os) {
  Operation *op = n;
  std::string i = operand(n.getInput(), os), s = operand(n.getScale(), os),
              b = optionalOperand(n.getBias(), os),
              res = optionalOperand(n.getResidual(), os);
  std::string o = declare(op->getResult(0), os), sum = "nullptr";
  if (n.getSum().size() == 1)
    sum = "&" + declare(n.getSum()[0], os);
  os << "  k::" << (isa<dfg::LayerNormOp>(op) ? "layerNorm" : "rmsNorm") << "("
     << i << ", " << s << ", " << b << ", " << res << ", "
     << normalizeAxis(n.getAxis(), rankOf(n.getInput())) << ", "
     << cppFloat(n.getEpsilon().convertToDouble()) << ", " << o << ", " << sum
     << ");\n";
  return success();
}

template LogicalResult FunctionEmitter::emitNorm(dfg::LayerNormOp,
                                                 llvm::raw_ostream &);
template LogicalResult FunctionEmitter::emitNorm(dfg::RmsNormOp,
                                                 llvm::raw_ostream &);

LogicalResult FunctionEmitter::emitSoftmax(dfg::SoftmaxOp s,
                                           llvm::raw_ostream &os) {
  std::string i = operand(s.getInput(), os), o = declare(s.getResult(), os);
  os << "  k::softmax(" << i << ", " << s.getNormalizedAxis() << ", " << o
     << ");\n";
  return success();
}

} // namespace meshc::codegen
