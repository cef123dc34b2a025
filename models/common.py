"""What every model generator of models/ does after building its graph.

save_with_reference(model, out, feeds, label) checks the model (onnx.checker,
unless check=False), writes
out/model.onnx, the inputs as out/inputs/NAME.npy, and onnxruntime's outputs
for them as out/reference/NAME.npy (the numerical reference meshc is compared
with), then prints one line saying so.
"""
import os

import numpy as np
import onnx


def save_with_reference(model, out, feeds, label, check=True):
    import onnxruntime as ort

    if check:
        onnx.checker.check_model(model)
    for sub in ("inputs", "reference"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    path = os.path.join(out, "model.onnx")
    onnx.save_model(model, path)
    for name, value in feeds.items():
        np.save(os.path.join(out, "inputs", f"{name}.npy"), value)
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
