//===- OnnxMutator.h - Meaning-level mutations of ONNX models ---*- C++ -*-===//
//
// Part of meshc. The structure-aware half of the front end's fuzzer
// (FuzzFrontEnd.cpp): it parses a model, changes what it means and writes it
// back as a valid protobuf. Byte-level mutations mostly break the protobuf,
// which the parser rejects at once; these reach the importer, the shape
// rules, the constant folder and the passes behind them.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_TEST_FUZZ_ONNXMUTATOR_H
#define MESHC_TEST_FUZZ_ONNXMUTATOR_H

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace onnx {
class AttributeProto;
class GraphProto;
class ModelProto;
class NodeProto;
class TensorProto;
class ValueInfoProto;
} // namespace onnx

namespace meshc::fuzz {

/// Applies random meaning-level changes to a model: attributes set to edge
/// values, removed, retyped or added; node inputs rewired, swapped, dropped
/// or added; nodes deleted, duplicated, moved or given another op type;
/// value names renamed; graph input/output dimensions, dim_params and
/// element types changed; initializer and Constant tensors given other
/// dims, data types, data, or external-data fields; opset imports changed;
/// graph outputs removed or added. The same seed gives the same changes.
class OnnxMutator {
public:
  explicit OnnxMutator(uint64_t seed) : rng_(seed) {}

  /// Applies 1 to 3 changes to `model`; returns one line per change
  /// ("attribute 'axis' of node 'cut' (Split): 3 -> 7"). A model with
  /// nothing to change (no graph) is left as it is and gives none.
  std::vector<std::string> mutate(onnx::ModelProto &model);

private:
  bool mutateAttribute(onnx::GraphProto &graph, std::string &what);
  bool addAttribute(onnx::GraphProto &graph, std::string &what);
  bool rewireInput(onnx::GraphProto &graph, std::string &what);
  bool reshapeInputList(onnx::GraphProto &graph, std::string &what);
  bool editNodes(onnx::GraphProto &graph, std::string &what);
  bool changeOpType(onnx::GraphProto &graph, std::string &what);
  bool renameValue(onnx::GraphProto &graph, std::string &what);
  bool mutateValueInfo(onnx::GraphProto &graph, std::string &what);
  bool mutateInitializer(onnx::GraphProto &graph, std::string &what);
  bool mutateOpsets(onnx::ModelProto &model, std::string &what);
  bool mutateOutputs(onnx::GraphProto &graph, std::string &what);

  void mutateTensor(onnx::TensorProto &tensor, std::string &what);
  void mutateAttributeValue(onnx::AttributeProto &attr, std::string &what);

  /// A value name of the graph: an input, an initializer or a node's
  /// output, now and then the empty name or one nothing defines.
  std::string anyValue(const onnx::GraphProto &graph);
  int64_t edgeInt(int64_t around);
  float edgeFloat(float around);
  size_t below(size_t n) { return n ? rng_() % n : 0; }
  bool chance(unsigned percent) { return rng_() % 100 < percent; }

  std::mt19937_64 rng_;
};

} // namespace meshc::fuzz

#endif // MESHC_TEST_FUZZ_ONNXMUTATOR_H
