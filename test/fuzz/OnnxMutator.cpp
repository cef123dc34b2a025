//===- OnnxMutator.cpp - Meaning-level mutations of ONNX models -----------===//
//
// Part of meshc. See OnnxMutator.h.
//
//===----------------------------------------------------------------------===//
#include "test/fuzz/OnnxMutator.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace meshc::fuzz {
namespace {

/// Attribute names the importer reads, for attributes added where they
/// do not belong (or belong but were left to their default).
constexpr const char *kAttributeNames[] = {"axis",
                                           "axes",
                                           "perm",
                                           "keepdims",
                                           "transA",
                                           "transB",
                                           "alpha",
                                           "beta",
                                           "epsilon",
                                           "num_heads",
                                           "scale",
                                           "split",
                                           "to",
                                           "exclusive",
                                           "reverse",
                                           "unidirectional",
                                           "interleaved",
                                           "rotary_embedding_dim",
                                           "num_outputs",
                                           "batch_dims",
                                           "upper",
                                           "allowzero",
                                           "kv_num_heads",
                                           "local_window_size",
                                           "softcap",
                                           "do_rotary",
                                           "is_causal",
                                           "q_num_heads",
                                           "stash_type",
                                           "mode",
                                           "value_int",
                                           "value_ints",
                                           "start",
                                           "end",
                                           "mask_filter_value",
                                           "qkv_hidden_sizes"};

/// Op types to swap in: what transformer exports are made of.
constexpr const char *kOpTypes[] = {"Add",
                                    "Mul",
                                    "MatMul",
                                    "Gemm",
                                    "Reshape",
                                    "Transpose",
                                    "Softmax",
                                    "Gather",
                                    "GatherND",
                                    "Slice",
                                    "Concat",
                                    "Split",
                                    "Expand",
                                    "Where",
                                    "Range",
                                    "Shape",
                                    "Unsqueeze",
                                    "Squeeze",
                                    "Cast",
                                    "CumSum",
                                    "Trilu",
                                    "ReduceMean",
                                    "LayerNormalization",
                                    "Sqrt",
                                    "Equal",
                                    "Less",
                                    "IsNaN",
                                    "Constant",
                                    "ConstantOfShape",
                                    "Tile",
                                    "ScatterND",
                                    "Einsum",
                                    "Pow",
                                    "Tanh",
                                    "Erf"};

constexpr const char *kDimParams[] = {"batch",
                                      "sequence_length",
                                      "past_sequence_length",
                                      "past_sequence_length + sequence_length",
                                      "2*seq",
                                      "n - 1",
                                      "",
                                      "total_sequence_length",
                                      "((("};

constexpr const char *kStrings[] = {"",     "NOTSET", "SAME_UPPER", "tanh",
                                    "none", "linear", "DCR",        "x"};

constexpr const char *kExternalLocations[] = {
    "model.onnx.data", "missing.bin", "../outside.bin", "/etc/passwd", "", "."};

template <typename T, size_t N> constexpr size_t countOf(T (&)[N]) { return N; }

std::string nodeName(const onnx::NodeProto &node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

} // namespace

int64_t OnnxMutator::edgeInt(int64_t around) {
  static constexpr int64_t kEdges[] = {0,
                                       1,
                                       -1,
                                       2,
                                       3,
                                       4,
                                       7,
                                       -7,
                                       64,
                                       -2,
                                       1 << 20,
                                       int64_t(1) << 31,
                                       -(int64_t(1) << 31),
                                       int64_t(1) << 40,
                                       std::numeric_limits<int64_t>::max(),
                                       std::numeric_limits<int64_t>::min()};
  // Wrapping arithmetic: INT64_MAX + 1 is an edge value too.
  uint64_t bits = static_cast<uint64_t>(around);
  switch (below(4)) {
  case 0:
    return static_cast<int64_t>(bits + 1);
  case 1:
    return static_cast<int64_t>(bits - 1);
  case 2:
    return static_cast<int64_t>(0 - bits);
  default:
    return kEdges[below(countOf(kEdges))];
  }
}

float OnnxMutator::edgeFloat(float around) {
  static constexpr float kEdges[] = {0.0f,
                                     -0.0f,
                                     1.0f,
                                     -1.0f,
                                     1e-30f,
                                     1e30f,
                                     std::numeric_limits<float>::quiet_NaN(),
                                     std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::lowest()};
  return below(3) == 0 ? around * 2 : kEdges[below(countOf(kEdges))];
}

std::string OnnxMutator::anyValue(const onnx::GraphProto &graph) {
  if (chance(5))
    return chance(50) ? "" : "undefined_value";
  size_t inputs = graph.input_size(), inits = graph.initializer_size();
  size_t outputs = 0;
  for (const onnx::NodeProto &node : graph.node())
    outputs += node.output_size();
  size_t pick = below(inputs + inits + outputs);
  if (pick < inputs)
    return graph.input(pick).name();
  pick -= inputs;
  if (pick < inits)
    return graph.initializer(pick).name();
  pick -= inits;
  for (const onnx::NodeProto &node : graph.node()) {
    if (pick < static_cast<size_t>(node.output_size()))
      return node.output(pick);
    pick -= node.output_size();
  }
  return "undefined_value";
}

void OnnxMutator::mutateTensor(onnx::TensorProto &t, std::string &what) {
  std::string name = "tensor '" + t.name() + "'";
  switch (below(6)) {
  case 0: { // a dimension changed, added or removed
    if (t.dims_size() && chance(70)) {
      size_t d = below(t.dims_size());
      int64_t old = t.dims(d);
      t.set_dims(d, edgeInt(old));
      what = name + ": dims[" + std::to_string(d) + "] " + std::to_string(old) +
             " -> " + std::to_string(t.dims(d));
    } else if (t.dims_size() && chance(50)) {
      t.mutable_dims()->RemoveLast();
      what = name + ": last dim removed";
    } else {
      t.add_dims(1 + below(4));
      what = name + ": a dim added";
    }
    return;
  }
  case 1: { // another element type over the same bytes
    static constexpr int kTypes[] = {0, 1, 2, 3, 5, 6, 7, 9, 10, 11, 16, 8, 99};
    int old = t.data_type();
    t.set_data_type(kTypes[below(countOf(kTypes))]);
    what = name + ": data_type " + std::to_string(old) + " -> " +
           std::to_string(t.data_type());
    return;
  }
  case 2: { // an element of the data
    if (t.int64_data_size()) {
      size_t k = below(t.int64_data_size());
      t.set_int64_data(k, edgeInt(t.int64_data(k)));
      what = name + ": int64_data[" + std::to_string(k) + "] changed";
    } else if (t.float_data_size()) {
      size_t k = below(t.float_data_size());
      t.set_float_data(k, edgeFloat(t.float_data(k)));
      what = name + ": float_data[" + std::to_string(k) + "] changed";
    } else if (t.int32_data_size()) {
      size_t k = below(t.int32_data_size());
      t.set_int32_data(k, static_cast<int32_t>(edgeInt(t.int32_data(k))));
      what = name + ": int32_data[" + std::to_string(k) + "] changed";
    } else if (!t.raw_data().empty()) {
      std::string &raw = *t.mutable_raw_data();
      // Little-endian int64 where the tensor holds them, else one byte.
      if (t.data_type() == onnx::TensorProto::INT64 && raw.size() >= 8) {
        size_t k = below(raw.size() / 8);
        int64_t v;
        std::memcpy(&v, raw.data() + 8 * k, 8);
        v = edgeInt(v);
        std::memcpy(raw.data() + 8 * k, &v, 8);
        what = name + ": int64 element " + std::to_string(k) + " -> " +
               std::to_string(v);
      } else {
        raw[below(raw.size())] = static_cast<char>(rng_());
        what = name + ": a raw byte changed";
      }
    } else {
      t.add_int64_data(edgeInt(0));
      what = name + ": an int64 element added";
    }
    return;
  }
  case 3: { // data cut short or emptied
    if (!t.raw_data().empty()) {
      t.mutable_raw_data()->resize(below(t.raw_data().size()));
      what = name + ": raw_data cut to " + std::to_string(t.raw_data().size());
    } else {
      t.clear_int64_data();
      t.clear_float_data();
      t.clear_int32_data();
      what = name + ": data cleared";
    }
    return;
  }
  case 4: { // the data moved to an external file, which may not be there
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    t.clear_external_data();
    auto *location = t.add_external_data();
    location->set_key("location");
    location->set_value(kExternalLocations[below(countOf(kExternalLocations))]);
    if (chance(50)) {
      auto *offset = t.add_external_data();
      offset->set_key("offset");
      offset->set_value(std::to_string(edgeInt(0)));
    }
    if (chance(50)) {
      auto *length = t.add_external_data();
      length->set_key("length");
      length->set_value(std::to_string(edgeInt(t.raw_data().size())));
    }
    what = name + ": external data at '" + location->value() + "'";
    return;
  }
  default: { // both raw and typed data, or a scalar made a vector
    if (chance(50)) {
      t.add_int64_data(edgeInt(0));
      t.add_float_data(edgeFloat(1));
      what = name + ": typed data added";
    } else {
      t.clear_dims();
      what = name + ": dims cleared (a scalar)";
    }
    return;
  }
  }
}

void OnnxMutator::mutateAttributeValue(onnx::AttributeProto &a,
                                       std::string &what) {
  std::string name = "attribute '" + a.name() + "'";
  switch (a.type()) {
  case onnx::AttributeProto::INT: {
    int64_t old = a.i();
    a.set_i(edgeInt(old));
    what = name + ": " + std::to_string(old) + " -> " + std::to_string(a.i());
    return;
  }
  case onnx::AttributeProto::FLOAT:
    a.set_f(edgeFloat(a.f()));
    what = name + ": float changed";
    return;
  case onnx::AttributeProto::INTS: {
    auto *ints = a.mutable_ints();
    size_t op = below(4);
    if (ints->empty() || op == 0) {
      ints->Add(edgeInt(ints->empty() ? 0 : ints->Get(ints->size() - 1)));
      what = name + ": an element appended";
    } else if (op == 1) {
      ints->RemoveLast();
      what = name + ": last element removed";
    } else if (op == 2) {
      size_t k = below(ints->size());
      ints->Set(k, edgeInt(ints->Get(k)));
      what = name + ": element " + std::to_string(k) + " -> " +
             std::to_string(ints->Get(k));
    } else {
      ints->Add(ints->Get(below(ints->size()))); // a repeated entry
      what = name + ": an element repeated";
    }
    return;
  }
  case onnx::AttributeProto::FLOATS:
    if (a.floats_size())
      a.set_floats(below(a.floats_size()), edgeFloat(a.floats(0)));
    else
      a.add_floats(edgeFloat(0));
    what = name + ": floats changed";
    return;
  case onnx::AttributeProto::STRING:
    a.set_s(kStrings[below(countOf(kStrings))]);
    what = name + ": string -> '" + a.s() + "'";
    return;
  case onnx::AttributeProto::TENSOR:
    mutateTensor(*a.mutable_t(), what);
    what = name + ", " + what;
    return;
  default: // a type the importer does not expect of it
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(edgeInt(0));
    what = name + ": retyped as INT";
    return;
  }
}

bool OnnxMutator::mutateAttribute(onnx::GraphProto &graph, std::string &what) {
  std::vector<onnx::NodeProto *> nodes;
  for (onnx::NodeProto &node : *graph.mutable_node())
    if (node.attribute_size())
      nodes.push_back(&node);
  if (nodes.empty())
    return false;
  onnx::NodeProto &node = *nodes[below(nodes.size())];
  size_t k = below(node.attribute_size());
  onnx::AttributeProto &attr = *node.mutable_attribute(k);
  if (chance(10)) {
    what = nodeName(node) + ": attribute '" + attr.name() + "' removed";
    node.mutable_attribute()->DeleteSubrange(k, 1);
    return true;
  }
  if (chance(10)) { // declared as one type, holding another
    attr.set_type(attr.type() == onnx::AttributeProto::INTS
                      ? onnx::AttributeProto::INT
                      : onnx::AttributeProto::INTS);
    what = nodeName(node) + ": attribute '" + attr.name() + "' retyped";
    return true;
  }
  mutateAttributeValue(attr, what);
  what = nodeName(node) + ", " + what;
  return true;
}

bool OnnxMutator::addAttribute(onnx::GraphProto &graph, std::string &what) {
  if (!graph.node_size())
    return false;
  onnx::NodeProto &node = *graph.mutable_node(below(graph.node_size()));
  onnx::AttributeProto *attr = node.add_attribute();
  attr->set_name(kAttributeNames[below(countOf(kAttributeNames))]);
  if (chance(60)) {
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(edgeInt(0));
  } else if (chance(50)) {
    attr->set_type(onnx::AttributeProto::INTS);
    for (size_t n = below(4); n > 0; --n)
      attr->add_ints(edgeInt(0));
  } else {
    attr->set_type(onnx::AttributeProto::FLOAT);
    attr->set_f(edgeFloat(1));
  }
  what = nodeName(node) + ": attribute '" + attr->name() + "' added";
  return true;
}

bool OnnxMutator::rewireInput(onnx::GraphProto &graph, std::string &what) {
  std::vector<onnx::NodeProto *> nodes;
  for (onnx::NodeProto &node : *graph.mutable_node())
    if (node.input_size())
      nodes.push_back(&node);
  if (nodes.empty())
    return false;
  onnx::NodeProto &node = *nodes[below(nodes.size())];
  size_t k = below(node.input_size());
  std::string value = anyValue(graph);
  what = nodeName(node) + ": input " + std::to_string(k) + " '" +
         node.input(k) + "' -> '" + value + "'";
  node.set_input(k, value);
  return true;
}

bool OnnxMutator::reshapeInputList(onnx::GraphProto &graph, std::string &what) {
  if (!graph.node_size())
    return false;
  onnx::NodeProto &node = *graph.mutable_node(below(graph.node_size()));
  size_t op = below(3);
  if (op == 0 && node.input_size() >= 2) {
    size_t a = below(node.input_size()), b = below(node.input_size());
    std::swap(*node.mutable_input(a), *node.mutable_input(b));
    what = nodeName(node) + ": inputs " + std::to_string(a) + " and " +
           std::to_string(b) + " swapped";
  } else if (op == 1 && node.input_size()) {
    node.mutable_input()->RemoveLast();
    what = nodeName(node) + ": last input removed";
  } else {
    node.add_input(anyValue(graph));
    what = nodeName(node) + ": input '" + node.input(node.input_size() - 1) +
           "' added";
  }
  return true;
}

bool OnnxMutator::editNodes(onnx::GraphProto &graph, std::string &what) {
  if (!graph.node_size())
    return false;
  auto *nodes = graph.mutable_node();
  size_t k = below(nodes->size());
  switch (below(4)) {
  case 0:
    what = nodeName(nodes->Get(k)) + " deleted";
    nodes->DeleteSubrange(k, 1);
    return true;
  case 1: { // a copy, defining its outputs twice
    onnx::NodeProto copy = nodes->Get(k);
    *nodes->Add() = copy;
    nodes->SwapElements(nodes->size() - 1, below(nodes->size()));
    what = nodeName(copy) + " duplicated";
    return true;
  }
  case 2: { // out of topological order
    size_t j = below(nodes->size());
    nodes->SwapElements(k, j);
    what =
        "nodes " + std::to_string(k) + " and " + std::to_string(j) + " swapped";
    return true;
  }
  default: // an output dropped or added
    if (nodes->Get(k).output_size() && chance(50)) {
      nodes->Mutable(k)->mutable_output()->RemoveLast();
      what = nodeName(nodes->Get(k)) + ": last output removed";
    } else {
      nodes->Mutable(k)->add_output(chance(50) ? "" : "extra_output");
      what = nodeName(nodes->Get(k)) + ": an output added";
    }
    return true;
  }
}

bool OnnxMutator::changeOpType(onnx::GraphProto &graph, std::string &what) {
  if (!graph.node_size())
    return false;
  onnx::NodeProto &node = *graph.mutable_node(below(graph.node_size()));
  std::string old = nodeName(node);
  if (chance(15)) {
    node.set_domain(chance(50) ? "com.microsoft" : "ai.onnx");
    what = old + ": domain -> '" + node.domain() + "'";
    return true;
  }
  node.set_op_type(chance(50) ? graph.node(below(graph.node_size())).op_type()
                              : kOpTypes[below(countOf(kOpTypes))]);
  what = old + ": op type -> " + node.op_type();
  return true;
}

bool OnnxMutator::renameValue(onnx::GraphProto &graph, std::string &what) {
  if (!graph.node_size())
    return false;
  onnx::NodeProto &node = *graph.mutable_node(below(graph.node_size()));
  if (!node.output_size())
    return false;
  size_t k = below(node.output_size());
  std::string value = anyValue(graph); // maybe one defined elsewhere
  what = nodeName(node) + ": output '" + node.output(k) + "' renamed '" +
         value + "'";
  node.set_output(k, value);
  return true;
}

bool OnnxMutator::mutateValueInfo(onnx::GraphProto &graph, std::string &what) {
  std::vector<onnx::ValueInfoProto *> infos;
  for (auto &v : *graph.mutable_input())
    infos.push_back(&v);
  for (auto &v : *graph.mutable_output())
    infos.push_back(&v);
  for (auto &v : *graph.mutable_value_info())
    infos.push_back(&v);
  if (infos.empty())
    return false;
  onnx::ValueInfoProto &info = *infos[below(infos.size())];
  std::string name = "value '" + info.name() + "'";
  auto *tensor = info.mutable_type()->mutable_tensor_type();
  if (chance(15)) {
    static constexpr int kTypes[] = {0, 1, 2, 6, 7, 9, 10, 11, 16, 8, 99};
    tensor->set_elem_type(kTypes[below(countOf(kTypes))]);
    what = name + ": elem_type -> " + std::to_string(tensor->elem_type());
    return true;
  }
  auto *shape = tensor->mutable_shape();
  if (!shape->dim_size() || chance(10)) {
    if (chance(50))
      shape->add_dim()->set_dim_value(1 + below(4));
    else
      tensor->clear_shape();
    what = name + ": rank changed";
    return true;
  }
  auto *dim = shape->mutable_dim(below(shape->dim_size()));
  if (chance(50)) {
    dim->set_dim_value(edgeInt(dim->has_dim_value() ? dim->dim_value() : 1));
    what = name + ": a dim -> " + std::to_string(dim->dim_value());
  } else if (chance(80)) {
    dim->set_dim_param(kDimParams[below(countOf(kDimParams))]);
    what = name + ": a dim -> '" + dim->dim_param() + "'";
  } else {
    dim->Clear(); // unknown
    what = name + ": a dim made unknown";
  }
  return true;
}

bool OnnxMutator::mutateInitializer(onnx::GraphProto &graph,
                                    std::string &what) {
  std::vector<onnx::TensorProto *> tensors;
  for (auto &t : *graph.mutable_initializer())
    tensors.push_back(&t);
  for (auto &node : *graph.mutable_node())
    for (auto &a : *node.mutable_attribute())
      if (a.type() == onnx::AttributeProto::TENSOR)
        tensors.push_back(a.mutable_t());
  if (tensors.empty())
    return false;
  // Small tensors are shapes, axes and indices: where meaning lives.
  onnx::TensorProto *pick = tensors[below(tensors.size())];
  for (int tries = 0; tries < 4; ++tries) {
    onnx::TensorProto *other = tensors[below(tensors.size())];
    bool small = true;
    int64_t count = 1;
    for (int64_t d : other->dims())
      small = small && d >= 0 && !__builtin_mul_overflow(count, d, &count);
    if (small && count <= 16) {
      pick = other;
      break;
    }
  }
  mutateTensor(*pick, what);
  return true;
}

bool OnnxMutator::mutateOpsets(onnx::ModelProto &model, std::string &what) {
  static constexpr int64_t kVersions[] = {1,  7,  12, 13, 14, 17, 18,
                                          19, 21, 23, 24, 25, 99};
  if (!model.opset_import_size() || chance(20)) {
    auto *opset = model.add_opset_import();
    opset->set_domain(chance(50) ? "com.microsoft" : "");
    opset->set_version(kVersions[below(countOf(kVersions))]);
    what = "opset '" + opset->domain() + "' " +
           std::to_string(opset->version()) + " added";
    return true;
  }
  size_t k = below(model.opset_import_size());
  if (chance(20)) {
    what = "opset '" + model.opset_import(k).domain() + "' removed";
    model.mutable_opset_import()->DeleteSubrange(k, 1);
    return true;
  }
  auto *opset = model.mutable_opset_import(k);
  opset->set_version(kVersions[below(countOf(kVersions))]);
  what =
      "opset '" + opset->domain() + "' -> " + std::to_string(opset->version());
  return true;
}

bool OnnxMutator::mutateOutputs(onnx::GraphProto &graph, std::string &what) {
  if (graph.output_size() && chance(40)) {
    size_t k = below(graph.output_size());
    what = "graph output '" + graph.output(k).name() + "' removed";
    graph.mutable_output()->DeleteSubrange(k, 1);
    return true;
  }
  onnx::ValueInfoProto *out = graph.add_output();
  out->set_name(anyValue(graph));
  if (chance(50))
    out->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  what = "graph output '" + out->name() + "' added";
  return true;
}

std::vector<std::string> OnnxMutator::mutate(onnx::ModelProto &model) {
  std::vector<std::string> done;
  if (!model.has_graph())
    return done;
  onnx::GraphProto &graph = *model.mutable_graph();
  size_t count = 1 + below(3);
  for (int tries = 0; done.size() < count && tries < 20; ++tries) {
    std::string what;
    bool applied = false;
    // Attributes and small tensors carry most of the meaning: weighted up.
    switch (below(16)) {
    case 0:
    case 1:
    case 2:
      applied = mutateAttribute(graph, what);
      break;
    case 3:
      applied = addAttribute(graph, what);
      break;
    case 4:
    case 5:
      applied = rewireInput(graph, what);
      break;
    case 6:
      applied = reshapeInputList(graph, what);
      break;
    case 7:
      applied = editNodes(graph, what);
      break;
    case 8:
      applied = changeOpType(graph, what);
      break;
    case 9:
      applied = renameValue(graph, what);
      break;
    case 10:
    case 11:
      applied = mutateValueInfo(graph, what);
      break;
    case 12:
    case 13:
      applied = mutateInitializer(graph, what);
      break;
    case 14:
      applied = mutateOpsets(model, what);
      break;
    default:
      applied = mutateOutputs(graph, what);
      break;
    }
    if (applied)
      done.push_back(what);
  }
  return done;
}

} // namespace meshc::fuzz
