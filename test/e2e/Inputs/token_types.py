"""A tiny decoder-shaped model that reads `token_type_ids` beside its tokens
(as BERT-style segment embeddings would): logits [batch, sequence, 16] from
the token's and the segment's embeddings. Generation cannot supply the
segment ids, which grow with the tokens, so `meshc generate` must refuse it
by name.

Usage: token_types.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCAB = 16
rng = np.random.default_rng(0)
graph = helper.make_graph(
    [helper.make_node("Gather", ["tokens_table", "input_ids"], ["t"]),
     helper.make_node("Gather", ["types_table", "token_type_ids"], ["u"]),
     helper.make_node("Add", ["t", "u"], ["h"]),
     helper.make_node("MatMul", ["h", "head"], ["logits"])],
    "token_types",
    [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
     helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "sequence"])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "sequence", VOCAB])],
    [numpy_helper.from_array(rng.standard_normal((VOCAB, 8)).astype(np.float32), "tokens_table"),
     numpy_helper.from_array(rng.standard_normal((2, 8)).astype(np.float32), "types_table"),
     numpy_helper.from_array(rng.standard_normal((8, VOCAB)).astype(np.float32), "head")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
