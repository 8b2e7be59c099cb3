#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes alpa_mlp.json: the Alpa tutorial's MLP (4 layers, hidden 2048, 4x expansion) as a native graph.

One sample per micro-batch unit (batch 1, seq_len 1): the planner scales every cost by the micro-batch.
Each layer is Dense(4h) -> ReLU -> Dense(h), annotated with Megatron's column/row roles; an MSE loss ends it.
"""
import json

HIDDEN, LAYERS, BYTES = 2048, 4, 2


def linear(name, module, x, y, w, fan_in, fan_out, role):
    flops = 2.0 * fan_in * fan_out
    return {"name": name, "module": module, "kind": "linear", "tp": role, "inputs": [x], "outputs": [y],
            "params": [w], "saved": [x], "flops_fwd": flops, "flops_bwd_input": flops, "flops_bwd_weight": flops,
            "bytes_read": BYTES * (fan_in + fan_in * fan_out), "bytes_written": BYTES * fan_out}


tensors = [{"name": "x", "shape": [1, HIDDEN]}, {"name": "target", "shape": [1, HIDDEN]}]
ops = []
x = "x"
for i in range(LAYERS):
    m = f"mlp.layers.{i}"
    tensors += [{"name": f"{m}.fc1.weight", "shape": [HIDDEN, 4 * HIDDEN], "param": True, "tp_sharded": True},
                {"name": f"{m}.fc2.weight", "shape": [4 * HIDDEN, HIDDEN], "param": True, "tp_sharded": True},
                {"name": f"{m}.h", "shape": [1, 4 * HIDDEN], "tp_sharded": True},
                {"name": f"{m}.a", "shape": [1, 4 * HIDDEN], "tp_sharded": True},
                {"name": f"{m}.out", "shape": [1, HIDDEN]}]
    ops.append(linear(f"{m}.fc1", f"{m}.fc1", x, f"{m}.h", f"{m}.fc1.weight", HIDDEN, 4 * HIDDEN, "column"))
    ops.append({"name": f"{m}.relu", "module": f"{m}.relu", "kind": "elementwise", "tp": "local",
                "inputs": [f"{m}.h"], "outputs": [f"{m}.a"], "saved": [f"{m}.h"], "flops_fwd": 4.0 * HIDDEN,
                "flops_bwd_input": 4.0 * HIDDEN, "bytes_read": BYTES * 4 * HIDDEN,
                "bytes_written": BYTES * 4 * HIDDEN})
    ops.append(linear(f"{m}.fc2", f"{m}.fc2", f"{m}.a", f"{m}.out", f"{m}.fc2.weight", 4 * HIDDEN, HIDDEN, "row"))
    x = f"{m}.out"
tensors.append({"name": "loss", "shape": [1], "dtype": "f32"})
ops.append({"name": "loss", "module": "loss", "kind": "loss", "inputs": [x, "target"], "outputs": ["loss"],
            "saved": [x, "target"], "flops_fwd": 3.0 * HIDDEN, "flops_bwd_input": 2.0 * HIDDEN,
            "bytes_read": 2 * BYTES * HIDDEN, "bytes_written": 4})

graph = {"schema": "shardscape.graph/1", "name": "alpa-mlp", "batch": 1, "seq_len": 1, "dtype": "bf16",
         "tensors": tensors, "ops": ops}
with open("alpa_mlp.json", "w") as f:
    json.dump(graph, f, indent=1)
    f.write("\n")
