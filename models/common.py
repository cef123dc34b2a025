"""What every model generator of models/ shares.

dims(dynamic, batch, seq, past) gives the sizes of the graph's input and
output dimensions: the numbers themselves, or with dynamic=True the symbolic
names Hugging Face's exports use (batch_size, sequence_length,
past_sequence_length, total_sequence_length), which `meshc --dim` binds.

save_with_reference(model, out, feeds, label) checks the model (onnx.checker,
unless check=False), writes
out/model.onnx, the inputs as out/inputs/NAME.npy, and onnxruntime's outputs
for them as out/reference/NAME.npy (the numerical reference meshc is compared
with; reference=False leaves that to another onnxruntime), then prints one
line saying so.
"""
import os
from types import SimpleNamespace

import numpy as np
import onnx


def dims(dynamic, batch, seq, past=0):
    """batch, seq, past and total (= past + seq) as ints or dim_param names."""
    if dynamic:
        return SimpleNamespace(batch="batch_size", seq="sequence_length",
                               past="past_sequence_length", total="total_sequence_length")
    return SimpleNamespace(batch=batch, seq=seq, past=past, total=past + seq)


def save_with_reference(model, out, feeds, label, check=True, reference=True):
    import onnxruntime as ort

    if check:
        onnx.checker.check_model(model)
    for sub in ("inputs", "reference"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    path = os.path.join(out, "model.onnx")
    onnx.save_model(model, path)
    for name, value in feeds.items():
        np.save(os.path.join(out, "inputs", f"{name}.npy"), value)
    if reference:  # else another onnxruntime takes it (ort_reference.py)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        for name, value in zip(names, session.run(names, feeds)):
            np.save(os.path.join(out, "reference", f"{name}.npy"), value)
    # One attention per layer: a Softmax, or an attention operator.
    layers = sum(1 for n in model.graph.node
                 if n.op_type in ("Softmax", "Attention", "MultiHeadAttention",
                                  "GroupQueryAttention"))
    print(f"{label}: wrote {path} ({len(model.graph.node)} nodes, {layers} layers) "
          f"with onnxruntime reference outputs")
