//===- OnnxMutatorTest.cpp - The fuzzer's structure-aware mutator ---------===//
//
// Part of meshc. The mutator of meshc-fuzz-frontend (test/fuzz) must keep a
// model a valid protobuf while changing what it means, every time, and give
// the same changes for the same seed (a reproducer is replayed from it).
//
//===----------------------------------------------------------------------===//
#include "test/fuzz/OnnxMutator.h"

#include <onnx/onnx_pb.h>

#include "gtest/gtest.h"

#include <set>

namespace {

/// y = Softmax(Reshape(x, shape) + b, axis=-1): attributes, an int64 and a
/// float initializer, a symbolic input dimension, an opset.
onnx::ModelProto smallModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto *opset = model.add_opset_import();
  opset->set_version(17);
  onnx::GraphProto &g = *model.mutable_graph();
  g.set_name("g");
  auto *x = g.add_input();
  x->set_name("x");
  auto *xt = x->mutable_type()->mutable_tensor_type();
  xt->set_elem_type(onnx::TensorProto::FLOAT);
  xt->mutable_shape()->add_dim()->set_dim_param("batch");
  xt->mutable_shape()->add_dim()->set_dim_value(8);
  auto *shape = g.add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(-1);
  shape->add_int64_data(4);
  auto *bias = g.add_initializer();
  bias->set_name("b");
  bias->set_data_type(onnx::TensorProto::FLOAT);
  bias->add_dims(4);
  for (int i = 0; i < 4; ++i)
    bias->add_float_data(0.5f * i);
  auto *reshape = g.add_node();
  reshape->set_name("r");
  reshape->set_op_type("Reshape");
  reshape->add_input("x");
  reshape->add_input("shape");
  reshape->add_output("xr");
  auto *add = g.add_node();
  add->set_name("a");
  add->set_op_type("Add");
  add->add_input("xr");
  add->add_input("b");
  add->add_output("s");
  auto *softmax = g.add_node();
  softmax->set_name("sm");
  softmax->set_op_type("Softmax");
  softmax->add_input("s");
  softmax->add_output("y");
  auto *axis = softmax->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(-1);
  auto *y = g.add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  return model;
}

TEST(OnnxMutatorTest, EveryMutationIsAValidModelThatDiffers) {
  const onnx::ModelProto original = smallModel();
  std::string before;
  ASSERT_TRUE(original.SerializeToString(&before));
  std::set<std::string> kinds;
  int unchanged = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    onnx::ModelProto model = original;
    std::vector<std::string> done =
        meshc::fuzz::OnnxMutator(seed).mutate(model);
    ASSERT_GE(done.size(), 1u) << "seed " << seed;
    ASSERT_LE(done.size(), 3u) << "seed " << seed;
    std::string after;
    ASSERT_TRUE(model.SerializeToString(&after)) << "seed " << seed;
    onnx::ModelProto reparsed;
    ASSERT_TRUE(reparsed.ParseFromString(after)) << "seed " << seed;
    // A change may draw the value it replaces (an edge int that was
    // already there, a swap of an input with itself): rarely.
    if (after == before)
      ++unchanged;
    for (const std::string &line : done)
      kinds.insert(line.substr(0, line.find(' ')));
  }
  EXPECT_LT(unchanged, 2000 / 20)
      << "more than 5% of mutations changed nothing";
  // Every part of a model is reached: nodes, attributes, values, tensors,
  // opsets, graph outputs.
  for (const char *kind :
       {"node", "value", "tensor", "opset", "graph", "nodes"})
    EXPECT_TRUE(kinds.count(kind))
        << "no mutation starts with '" << kind << "'";
}

TEST(OnnxMutatorTest, TheSameSeedGivesTheSameModel) {
  for (uint64_t seed : {1u, 17u, 4242u}) {
    onnx::ModelProto a = smallModel(), b = smallModel();
    EXPECT_EQ(meshc::fuzz::OnnxMutator(seed).mutate(a),
              meshc::fuzz::OnnxMutator(seed).mutate(b));
    std::string sa, sb;
    ASSERT_TRUE(a.SerializeToString(&sa));
    ASSERT_TRUE(b.SerializeToString(&sb));
    EXPECT_EQ(sa, sb) << "seed " << seed;
  }
}

TEST(OnnxMutatorTest, AModelWithoutAGraphIsLeftAlone) {
  onnx::ModelProto empty;
  EXPECT_TRUE(meshc::fuzz::OnnxMutator(3).mutate(empty).empty());
}

} // namespace
