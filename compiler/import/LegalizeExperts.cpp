//===- LegalizeExperts.cpp - com.microsoft MoE as standard ONNX -----------===//
//
// Part of meshc. onnxruntime's mixture-of-experts op (onnxruntime-genai's
// builder writes it for gpt-oss) decomposed into the standard ONNX ops it
// computes, which the importer then imports as it imports any graph:
//
//   p = softmax(router_probs) over the experts; the top k of them, divided
//       by their sum with normalize_routing_weights; g[t, e] their weight,
//       0 for an expert token t did not choose
//   h = x fc1[e]^T + b1[e] for every expert e ([experts, tokens, f1])
//   a = activation(h): swiglu of the gate and linear features (interleaved
//       in fc1, as onnxruntime's CPU kernel takes them), relu or silu
//   y = sum over e of g[:, e] * (a fc2[e]^T + b2[e])
//
// Each expert runs on every token, weighted by zero where it was not
// chosen: exact, and as costly as a dense mixture. Under tp the experts'
// inner features split as any MLP's do (the graph's own matmuls), and the
// sum over fc2's contraction is the one all_reduce.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// Builds the nodes of the decomposition, each named after the MoE node.
class GraphWriter {
public:
  /// `element`: the ONNX type of the floats computed (real() casts to it).
  GraphWriter(std::string prefix, int element)
      : prefix_(std::move(prefix)), element_(element) {}

  /// A fresh value name.
  std::string fresh(const std::string &what) {
    return prefix_ + what + "_" + std::to_string(count_++);
  }
  /// `op`(inputs) -> one new value (or `outputs` new values).
  std::vector<std::string> node(const std::string &op,
                                std::vector<std::string> inputs,
                                int outputs = 1,
                                std::vector<onnx::AttributeProto> attrs = {}) {
    onnx::NodeProto *n = graph_.add_node();
    n->set_op_type(op);
    n->set_name(prefix_ + op + "_" + std::to_string(count_));
    for (const std::string &in : inputs)
      n->add_input(in);
    std::vector<std::string> out;
    for (int i = 0; i < outputs; ++i) {
      out.push_back(fresh(op));
      n->add_output(out.back());
    }
    for (onnx::AttributeProto &a : attrs)
      *n->add_attribute() = std::move(a);
    return out;
  }
  std::string one(const std::string &op, std::vector<std::string> inputs,
                  std::vector<onnx::AttributeProto> attrs = {}) {
    return node(op, std::move(inputs), 1, std::move(attrs)).front();
  }
  /// A Constant of int64 values (a scalar when `scalar`) or of one float.
  std::string ints(const std::vector<int64_t> &values, bool scalar = false) {
    onnx::AttributeProto a = attr("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto *t = a.mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar)
      t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values)
      t->add_int64_data(v);
    return one("Constant", {}, {a});
  }
  /// A scalar of the computed float type.
  std::string real(float value) {
    onnx::AttributeProto a = attr("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto *t = a.mutable_t();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    std::string c = one("Constant", {}, {a});
    return element_ == onnx::TensorProto::FLOAT ? c : toElement(c);
  }
  /// `v` cast to the computed float type.
  std::string toElement(const std::string &v) {
    return one("Cast", {v}, {intAttr("to", element_)});
  }
  static onnx::AttributeProto attr(const std::string &name) {
    onnx::AttributeProto a;
    a.set_name(name);
    return a;
  }
  static onnx::AttributeProto intAttr(const std::string &name, int64_t v) {
    onnx::AttributeProto a = attr(name);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(v);
    return a;
  }
  static onnx::AttributeProto intsAttr(const std::string &name,
                                       const std::vector<int64_t> &vs) {
    onnx::AttributeProto a = attr(name);
    a.set_type(onnx::AttributeProto::INTS);
    for (int64_t v : vs)
      a.add_ints(v);
    return a;
  }
  /// Marks `name` the graph's output.
  void output(const std::string &name) { graph_.add_output()->set_name(name); }
  const onnx::GraphProto &graph() const { return graph_; }

private:
  std::string prefix_;
  int element_;
  int count_ = 0;
  onnx::GraphProto graph_;
};

/// com.microsoft MoE(input, router_probs, fc1_experts_weights,
///   fc1_experts_bias?, fc2_experts_weights, fc2_experts_bias?,
///   fc3_experts_weights?, fc3_experts_bias?): see the file comment. The
/// weights are onnxruntime's current layout, [experts, out, in].
LogicalResult legalizeMoE(NodeContext &ctx) {
  if (ctx.numInputs() < 5 || !ctx.input(0) || !ctx.input(1) || !ctx.input(2) ||
      !ctx.input(4))
    return ctx.error("MoE needs input, router_probs, fc1_experts_weights and "
                     "fc2_experts_weights");
  if (ctx.numInputs() > 8)
    return ctx.error("MoE with quantization inputs (beyond fc3_experts_bias) "
                     "is not supported");
  if (std::optional<int64_t> opset = ctx.defaultOpsetVersion();
      !opset || *opset < 13)
    return ctx.error("MoE is imported as standard ONNX ops of opset 13 or "
                     "later, and the model imports opset " +
                     (opset ? std::to_string(*opset) : std::string("none")) +
                     " of the default domain");
  if (ctx.attrInt("use_sparse_mixer", 0) != 0)
    return ctx.error("use_sparse_mixer is not supported");
  if (ctx.attrInt("swiglu_limit_after_activation", 0) != 0)
    return ctx.error("swiglu_limit_after_activation is not supported");
  std::string activation = ctx.attrString("activation_type", "relu");
  int64_t fusion = ctx.attrInt("swiglu_fusion", 0);
  if (activation != "swiglu" && activation != "relu" && activation != "silu")
    return ctx.error("activation_type '" + activation +
                     "' is not supported (meshc takes swiglu, relu and silu)");
  // SwiGLU as onnxruntime's CPU kernel computes it, the reference meshc is
  // checked against: gate and linear interleaved in fc1.
  if (activation == "swiglu" ? fusion != 1 : fusion != 0)
    return ctx.error("swiglu_fusion " + std::to_string(fusion) +
                     " with activation_type '" + activation +
                     "' is not supported (meshc takes swiglu with its gate "
                     "and linear features interleaved, swiglu_fusion 1, and "
                     "the other activations unfused)");
  if (ctx.numInputs() > 6 && (ctx.input(6) || ctx.input(7)))
    return ctx.error("fc3_experts_weights is not supported (swiglu's linear "
                     "features interleave with the gate's in fc1)");

  RankedTensorType x = ctx.inputType(0), router = ctx.inputType(1),
                   fc1 = ctx.inputType(2), fc2 = ctx.inputType(4);
  if ((x.getRank() != 2 && x.getRank() != 3) || router.getRank() != 2 ||
      fc1.getRank() != 3 || fc2.getRank() != 3)
    return ctx.error("MoE takes input [tokens, hidden] or [batch, seq, "
                     "hidden], router_probs [tokens, experts] and 3-D expert "
                     "weights, got " +
                     dfg::formatShape(x.getShape()) + ", " +
                     dfg::formatShape(router.getShape()) + ", " +
                     dfg::formatShape(fc1.getShape()) + " and " +
                     dfg::formatShape(fc2.getShape()));
  int64_t experts = fc1.getDimSize(0), f1 = fc1.getDimSize(1),
          hidden = fc1.getDimSize(2);
  if (ShapedType::isDynamic(experts) || ShapedType::isDynamic(f1) ||
      ShapedType::isDynamic(hidden) || fc2.getDimSize(0) != experts ||
      fc2.getDimSize(1) != hidden || x.getShape().back() != hidden ||
      router.getDimSize(1) != experts)
    return ctx.error("MoE weights disagree: fc1_experts_weights " +
                     dfg::formatShape(fc1.getShape()) +
                     " must be [experts, f1, hidden] and fc2_experts_weights " +
                     dfg::formatShape(fc2.getShape()) +
                     " [experts, hidden, inner], for input " +
                     dfg::formatShape(x.getShape()) + " and router_probs " +
                     dfg::formatShape(router.getShape()));
  if (activation == "swiglu" && f1 % 2 != 0)
    return ctx.error("fused swiglu needs an even fc1 width, got " +
                     std::to_string(f1));
  int64_t inner = activation == "swiglu" ? f1 / 2 : f1;
  if (fc2.getDimSize(2) != inner)
    return ctx.error("fc2_experts_weights " + dfg::formatShape(fc2.getShape()) +
                     " must take the " + std::to_string(inner) +
                     " inner features fc1_experts_weights " +
                     dfg::formatShape(fc1.getShape()) + " gives");
  int64_t k = ctx.attrInt("k", 1);
  if (k < 1 || k > experts)
    return ctx.error("k=" + std::to_string(k) + " must lie in [1, " +
                     std::to_string(experts) + "], the experts' number");

  const onnx::NodeProto &node = ctx.node();
  auto name = [&](int i) {
    return i < node.input_size() ? node.input(i) : std::string();
  };
  Type element = x.getElementType();
  int onnxElement = element.isF32()    ? onnx::TensorProto::FLOAT
                    : element.isF16()  ? onnx::TensorProto::FLOAT16
                    : element.isBF16() ? onnx::TensorProto::BFLOAT16
                                       : 0;
  if (!onnxElement || router.getElementType() != element)
    return ctx.error("MoE's input and router_probs must share a float type "
                     "(f32, f16 or bf16)");
  GraphWriter w((node.name().empty() ? node.output(0) : node.name()) +
                    "/meshc.moe/",
                onnxElement);
  using G = GraphWriter;

  // Tokens as rows; the router's weight of each expert for each token.
  std::string rows =
      w.one("Reshape", {name(0), w.ints({-1, hidden})}); // [T, H]
  std::string probs =
      w.one("Softmax", {name(1)}, {G::intAttr("axis", -1)}); // [T, E]
  std::vector<std::string> top = w.node("TopK", {probs, w.ints({k})}, 2,
                                        {G::intAttr("axis", -1)}); // [T, k]
  std::string chosen = top[0];
  if (ctx.attrInt("normalize_routing_weights", 0) != 0)
    chosen = w.one("Div", {chosen, w.one("ReduceSum", {chosen, w.ints({-1})},
                                         {G::intAttr("keepdims", 1)})});
  std::vector<int64_t> expertIds;
  for (int64_t e = 0; e < experts; ++e)
    expertIds.push_back(e);
  std::string oneHot =
      w.toElement(w.one("Equal", {w.one("Unsqueeze", {top[1], w.ints({-1})}),
                                  w.ints(expertIds)})); // [T, k, E]
  std::string gate =
      w.one("ReduceSum",
            {w.one("Mul", {w.one("Unsqueeze", {chosen, w.ints({-1})}), oneHot}),
             w.ints({1})},
            {G::intAttr("keepdims", 0)}); // [T, E]

  // Every expert on every token: x W^T + b, [E, T, out].
  auto project = [&](int weight, int bias, const std::string &in) {
    std::string y =
        w.one("MatMul", {in, w.one("Transpose", {name(weight)},
                                   {G::intsAttr("perm", {0, 2, 1})})});
    if (!name(bias).empty())
      y = w.one("Add", {y, w.one("Unsqueeze", {name(bias), w.ints({1})})});
    return y;
  };
  std::string h = project(2, 3, rows);
  std::string act;
  if (activation == "swiglu") {
    // [g0, l0, g1, l1, ...]
    std::string pairs = w.one("Reshape", {h, w.ints({0, 0, -1, 2})});
    std::vector<std::string> halves =
        w.node("Split", {pairs, w.ints({1, 1})}, 2, {G::intAttr("axis", -1)});
    std::string g = w.one("Squeeze", {halves[0], w.ints({-1})});
    std::string l = w.one("Squeeze", {halves[1], w.ints({-1})});
    if (const onnx::AttributeProto *limit = ctx.attr("swiglu_limit")) {
      float c = limit->f();
      g = w.one("Min", {g, w.real(c)});
      l = w.one("Max", {w.one("Min", {l, w.real(c)}), w.real(-c)});
    }
    std::string alpha = w.real(ctx.attrFloat("activation_alpha", 1.0f));
    std::string beta = w.real(ctx.attrFloat("activation_beta", 0.0f));
    act = w.one(
        "Mul", {w.one("Mul", {g, w.one("Sigmoid", {w.one("Mul", {g, alpha})})}),
                w.one("Add", {l, beta})});
  } else if (activation == "relu") {
    act = w.one("Relu", {h});
  } else { // silu
    act = w.one("Mul", {h, w.one("Sigmoid", {h})});
  }
  std::string out = project(4, 5, act); // [E, T, H]

  // Weighted by each expert's gate, summed over the experts.
  std::string weights = w.one(
      "Unsqueeze", {w.one("Transpose", {gate}, {G::intsAttr("perm", {1, 0})}),
                    w.ints({-1})}); // [E, T, 1]
  std::string sum =
      w.one("ReduceSum", {w.one("Mul", {out, weights}), w.ints({0})},
            {G::intAttr("keepdims", 0)}); // [T, H]
  std::string result = w.one("Reshape", {sum, w.one("Shape", {name(0)})});
  w.output(result);
  FailureOr<SmallVector<Value>> outputs = ctx.inlineGraph(w.graph());
  if (failed(outputs))
    return failure();
  return ctx.setResults(*outputs);
}

} // namespace

void populateExpertLegalizations(LegalizationTable &table) {
  table.add("com.microsoft", "MoE", 1, legalizeMoE);
}

} // namespace meshc::onnximport
