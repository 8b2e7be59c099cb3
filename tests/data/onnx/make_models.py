#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Regenerates the ONNX test models in this folder (the outputs are committed; this script is not run by tests).

Needs Debian's python3-torch (1.13) and python3-onnx (1.12): run it with /usr/bin/python3.

  gpt_tiny.onnx              GPT-2 style: learned positions, LayerNorm, GELU, fused c_attn, tied LM head.
                             Weights inline; torch's constant folding stores the tied head as a transposed copy.
  llama_tiny.onnx            Llama style: RMSNorm, SwiGLU, rotary, grouped-query attention (4 heads, 2 KV
                             heads), untied head. Weights inline.
  llama_tiny_generic.onnx    The same Llama with generic node names ("MatMul_12") and no constant folding, so
                             modules must come from the weight names; weights in external data whose file is
                             deliberately not committed (the importer reads only shapes).
  control_flow.onnx          An If node named "route_if" (control flow is rejected, naming the node).
  external_absolute.onnx     An initializer whose external-data location is absolute (must be rejected).
  external_dotdot.onnx       An initializer whose external-data location climbs out with ".." (must be rejected).
  fused_ops.onnx             com.microsoft Attention (with its q/k/v weight) and SkipLayerNormalization as ONNX
                             Runtime's optimizer writes them, and a custom com.example:FancyOp (kept as unknown).
  gpt_6block.onnx            The GPT-2 style model with 6 identical blocks, exported as users do: opset 14 (no
                             LayerNormalization op, so norms are decomposed), dynamic batch and sequence axes.
  llama_5block.onnx          The Llama style model (GQA) with 5 blocks, opset 14, dynamic axes.

*.config.json describe the same architectures as Hugging Face configs, so the HF builder can build them too.
Every model takes input_ids and labels [batch, sequence] (symbolic) and returns the mean cross-entropy loss.
"""
import json
import math
import os

import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17  # LayerNormalization is an ONNX op from opset 17; torch 1.13 exports up to 17
SEQ = 32
VOCAB = 1000

GPT = dict(hidden=64, layers=2, heads=4, positions=SEQ, vocab=VOCAB)
LLAMA = dict(hidden=64, layers=2, heads=4, kv_heads=2, ffn=176, positions=SEQ, vocab=VOCAB)


# --- GPT-2 style -------------------------------------------------------------------------------------------------

class GptAttention(nn.Module):
    def __init__(self, h, heads, positions):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(h, 3 * h)
        self.c_proj = nn.Linear(h, h)
        mask = torch.tril(torch.ones(positions, positions, dtype=torch.bool))
        self.register_buffer("causal", mask, persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.c_attn(x).split(h, dim=2)
        d = h // self.heads
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.heads, d).transpose(1, 2)
        v = v.view(b, s, self.heads, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        scores = scores.masked_fill(~self.causal[:s, :s], float("-inf"))
        context = F.softmax(scores, dim=-1) @ v
        return self.c_proj(context.transpose(1, 2).reshape(b, s, h))


class GptMlp(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.c_fc = nn.Linear(h, 4 * h)
        self.c_proj = nn.Linear(4 * h, h)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class GptBlock(nn.Module):
    def __init__(self, h, heads, positions):
        super().__init__()
        self.ln_1 = nn.LayerNorm(h)
        self.attn = GptAttention(h, heads, positions)
        self.ln_2 = nn.LayerNorm(h)
        self.mlp = GptMlp(h)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GptTransformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab"], c["hidden"])
        self.wpe = nn.Embedding(c["positions"], c["hidden"])
        self.h = nn.ModuleList([GptBlock(c["hidden"], c["heads"], c["positions"]) for _ in range(c["layers"])])
        self.ln_f = nn.LayerNorm(c["hidden"])

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], dtype=torch.long)
        x = self.wte(ids) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GptLMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = GptTransformer(c)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, input_ids, labels):
        logits = self.lm_head(self.transformer(input_ids))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


# --- Llama style -------------------------------------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, s):
        t = torch.arange(s, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden"]
        self.heads, self.kv_heads = c["heads"], c["kv_heads"]
        self.head_dim = h // self.heads
        self.q_proj = nn.Linear(h, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, h, bias=False)
        self.rotary_emb = RotaryEmbedding(self.head_dim)

    def forward(self, x, mask):
        b, s, _ = x.shape
        d = self.head_dim
        q = self.q_proj(x).view(b, s, self.heads, d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, d).transpose(1, 2)
        cos, sin = self.rotary_emb(s)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        k = k[:, :, None, :, :].expand(b, self.kv_heads, rep, s, d).reshape(b, self.heads, s, d)
        v = v[:, :, None, :, :].expand(b, self.kv_heads, rep, s, d).reshape(b, self.heads, s, d)
        scores = q @ k.transpose(2, 3) / math.sqrt(d) + mask
        probs = F.softmax(scores.float(), dim=-1).to(q.dtype)
        context = (probs @ v).transpose(1, 2).reshape(b, s, self.heads * d)
        return self.o_proj(context)


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, f = c["hidden"], c["ffn"]
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden"])
        self.self_attn = LlamaAttention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden"])
        self.mlp = LlamaMLP(c)

    def forward(self, x, mask):
        x = x + self.self_attn(self.input_layernorm(x), mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c["layers"])])
        self.norm = RMSNorm(c["hidden"])

    def forward(self, ids):
        s = ids.shape[1]
        mask = torch.full((s, s), float("-inf")).triu(1)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, input_ids, labels):
        logits = self.lm_head(self.model(input_ids))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


# --- export ------------------------------------------------------------------------------------------------------

def randomize(model):
    """Trained-looking weights: torch.onnx merges parameters with equal values (fresh norms are all ones)."""
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)


def export(model, path, constant_folding=True, opset=OPSET):
    model.eval()
    ids = torch.randint(0, VOCAB, (2, SEQ))
    torch.onnx.export(model, (ids, ids), path, opset_version=opset, input_names=["input_ids", "labels"],
                      output_names=["loss"], do_constant_folding=constant_folding,
                      dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}, "labels": {0: "batch", 1: "sequence"}})


def genericize(path, out, data_file):
    """Renames nodes and values as older exporters do ("MatMul_12", "145") and moves weights to an external file."""
    m = onnx.load(path)
    keep = {t.name for t in m.graph.initializer} | {v.name for v in m.graph.input} | {v.name for v in m.graph.output}
    renamed = {}

    def rename(value):
        if not value or value in keep:
            return value
        return renamed.setdefault(value, str(len(renamed) + 100))

    for i, node in enumerate(m.graph.node):
        node.name = f"{node.op_type}_{i}"
        node.input[:] = [rename(v) for v in node.input]
        node.output[:] = [rename(v) for v in node.output]
    del m.graph.value_info[:]
    onnx.save_model(m, out, save_as_external_data=True, all_tensors_to_one_file=True, location=data_file,
                    size_threshold=64)
    os.remove(os.path.join(HERE, data_file))  # only shapes are needed: the importer must not read it


def write_config(name, config):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def small_models():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    then_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then", [],
                                   [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 8])])
    else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")], "else", [],
                                   [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["batch", 8])])
    nodes = [helper.make_node("If", ["cond"], ["y"], name="route_if", then_branch=then_graph,
                              else_branch=else_graph)]
    graph = helper.make_graph(nodes, "control_flow", [x, cond], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]),
              os.path.join(HERE, "control_flow.onnx"))

    for name, location in (("external_absolute", "/etc/passwd"), ("external_dotdot", "weights/../../secret.bin")):
        w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[8, 8])
        w.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", "0"), ("length", "256")):
            entry = w.external_data.add()
            entry.key, entry.value = key, value
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")], name, [x], [y],
                                  initializer=[w])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]),
                  os.path.join(HERE, f"{name}.onnx"))


def fused_model():
    """Fused attention and norm nodes as ONNX Runtime's transformer optimizer writes them, plus a custom op."""
    h, heads = 64, 4
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", h])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", h])
    rng = torch.Generator().manual_seed(1)

    def weight(name, *dims):
        return onnx.numpy_helper.from_array(torch.randn(*dims, generator=rng).numpy(), name)

    inits = [weight("layer.attention.qkv.weight", h, 3 * h), weight("layer.attention.qkv.bias", 3 * h),
             weight("layer.norm.weight", h), weight("layer.norm.bias", h), weight("layer.out.weight", h, h)]
    nodes = [
        helper.make_node("Attention", ["x", "layer.attention.qkv.weight", "layer.attention.qkv.bias"], ["ctx"],
                         name="/layer/attention/Attention", domain="com.microsoft", num_heads=heads),
        helper.make_node("SkipLayerNormalization", ["ctx", "x", "layer.norm.weight", "layer.norm.bias"], ["normed"],
                         name="/layer/norm/SkipLayerNormalization", domain="com.microsoft"),
        helper.make_node("FancyOp", ["normed"], ["fancy"], name="/layer/fancy/FancyOp", domain="com.example"),
        helper.make_node("MatMul", ["fancy", "layer.out.weight"], ["y"], name="/layer/out/MatMul"),
    ]
    graph = helper.make_graph(nodes, "fused", [x], [y], initializer=inits)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1),
              helper.make_opsetid("com.example", 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets), os.path.join(HERE, "fused_ops.onnx"))


def block_stacks():
    """Deeper stacks exported at opset 14: every block must cost the same as the first."""
    torch.manual_seed(1)
    gpt = GptLMHeadModel(dict(GPT, layers=6))
    randomize(gpt)
    export(gpt, os.path.join(HERE, "gpt_6block.onnx"), opset=14)
    llama = LlamaForCausalLM(dict(LLAMA, layers=5))
    randomize(llama)
    export(llama, os.path.join(HERE, "llama_5block.onnx"), opset=14)


def main():
    torch.manual_seed(0)
    gpt = GptLMHeadModel(GPT)
    randomize(gpt)
    export(gpt, os.path.join(HERE, "gpt_tiny.onnx"))
    write_config("gpt_tiny.config.json", {
        "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": GPT["hidden"],
        "n_layer": GPT["layers"], "n_head": GPT["heads"], "n_positions": GPT["positions"], "n_inner": None,
        "vocab_size": GPT["vocab"], "activation_function": "gelu", "layer_norm_epsilon": 1e-5,
        "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0, "tie_word_embeddings": True,
        "_attn_implementation": "eager"})

    llama = LlamaForCausalLM(LLAMA)
    randomize(llama)
    export(llama, os.path.join(HERE, "llama_tiny.onnx"))
    unfolded = os.path.join(HERE, "llama_tiny_unfolded.tmp.onnx")
    export(llama, unfolded, constant_folding=False)
    genericize(unfolded, os.path.join(HERE, "llama_tiny_generic.onnx"), "llama_tiny_generic.onnx.data")
    os.remove(unfolded)
    write_config("llama_tiny.config.json", {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": LLAMA["hidden"],
        "intermediate_size": LLAMA["ffn"], "num_hidden_layers": LLAMA["layers"],
        "num_attention_heads": LLAMA["heads"], "num_key_value_heads": LLAMA["kv_heads"],
        "max_position_embeddings": LLAMA["positions"], "vocab_size": LLAMA["vocab"], "hidden_act": "silu",
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False, "attention_bias": False,
        "mlp_bias": False, "_attn_implementation": "eager"})

    small_models()
    fused_model()
    block_stacks()


if __name__ == "__main__":
    main()
