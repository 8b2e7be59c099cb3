// SPDX-License-Identifier: MIT
#include "shardscape/model/native_json.h"

#include "shardscape/model/hf_config.h"
#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/strings.h"

#include <nlohmann/json.hpp>

namespace shardscape {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t {1} << 40;
constexpr std::int64_t kMaxCount = 100'000'000;
constexpr double kMaxCost = 1e30;

nlohmann::json namesOf(const ModelGraph& graph, const std::vector<TensorId>& ids)
{
    auto out = nlohmann::json::array();
    for (const auto id : ids)
        out.push_back(graph.tensor(id).name);
    return out;
}

nlohmann::json transformerCoreToJson(const TransformerShape& t)
{
    return {{"family", t.family},
            {"hidden", t.hidden},
            {"num_layers", t.num_layers},
            {"num_heads", t.num_heads},
            {"num_kv_heads", t.num_kv_heads},
            {"head_dim", t.head_dim},
            {"ffn_hidden", t.ffn_hidden},
            {"vocab", t.vocab},
            {"max_positions", t.max_positions},
            {"num_experts", t.num_experts},
            {"top_k", t.top_k},
            {"gated_mlp", t.gated_mlp},
            {"tied_embeddings", t.tied_embeddings},
            {"learned_positions", t.learned_positions},
            {"flash_attention", t.flash_attention},
            {"dropout", t.dropout},
            {"norm", t.norm}};
}

nlohmann::json transformerToJson(const TransformerShape& t)
{
    nlohmann::json doc = transformerCoreToJson(t);
    // The MoE layout and attention variants, written only when a model has them (older files stay as they were).
    const TransformerShape plain;
    const auto put = [&](const char* key, auto value, auto fallback) {
        if (value != fallback)
            doc[key] = value;
    };
    put("hf_eager_attention", t.hf_eager_attention, plain.hf_eager_attention);
    put("masked_softmax_fusion", t.masked_softmax_fusion, plain.masked_softmax_fusion);
    put("dense_ffn_hidden", t.dense_ffn_hidden, plain.dense_ffn_hidden);
    put("first_dense_layers", t.first_dense_layers, plain.first_dense_layers);
    put("moe_layer_step", t.moe_layer_step, plain.moe_layer_step);
    put("shared_expert_ffn", t.shared_expert_ffn, plain.shared_expert_ffn);
    put("shared_expert_gate", t.shared_expert_gate, plain.shared_expert_gate);
    put("qk_norm", t.qk_norm, plain.qk_norm);
    put("embedding_norm", t.embedding_norm, plain.embedding_norm);
    put("sandwich_norms", t.sandwich_norms, plain.sandwich_norms);
    put("q_lora_rank", t.q_lora_rank, plain.q_lora_rank);
    put("kv_lora_rank", t.kv_lora_rank, plain.kv_lora_rank);
    put("qk_rope_head_dim", t.qk_rope_head_dim, plain.qk_rope_head_dim);
    put("qk_nope_head_dim", t.qk_nope_head_dim, plain.qk_nope_head_dim);
    put("v_head_dim", t.v_head_dim, plain.v_head_dim);
    put("attention_window", t.attention_window, plain.attention_window);
    put("global_layer_every", t.global_layer_every, plain.global_layer_every);
    put("rope_theta", t.rope_theta, plain.rope_theta);
    return doc;
}

TransformerShape transformerFromJson(const nlohmann::json& doc, const std::string& origin)
{
    JsonFields f(doc, origin, "transformer");
    TransformerShape t;
    t.family = f.string("family");
    t.hidden = f.integer("hidden", 1, 1'000'000);
    t.num_layers = f.integer("num_layers", 1, kMaxTransformerLayers);
    t.num_heads = f.integer("num_heads", 1, 1'000'000);
    t.num_kv_heads = f.integer("num_kv_heads", 1, 1'000'000);
    t.head_dim = f.integer("head_dim", 1, 1'000'000);
    t.ffn_hidden = f.integer("ffn_hidden", 1, 100'000'000);
    t.vocab = f.integer("vocab", 1, 100'000'000);
    t.max_positions = f.integer("max_positions", 1, 1'000'000'000);
    t.num_experts = f.integer("num_experts", 0, 4096);
    t.top_k = f.integer("top_k", 0, 4096);
    t.gated_mlp = f.boolean("gated_mlp", false);
    t.tied_embeddings = f.boolean("tied_embeddings", false);
    t.learned_positions = f.boolean("learned_positions", false);
    t.flash_attention = f.boolean("flash_attention", true);
    t.hf_eager_attention = f.boolean("hf_eager_attention", false);
    t.masked_softmax_fusion = f.boolean("masked_softmax_fusion", true);
    t.dropout = f.number("dropout", 0.0, 1.0);
    t.norm = f.string("norm");
    t.dense_ffn_hidden = f.optInteger("dense_ffn_hidden", 0, 100'000'000).value_or(0);
    t.first_dense_layers = f.optInteger("first_dense_layers", 0, kMaxTransformerLayers).value_or(0);
    t.moe_layer_step = f.optInteger("moe_layer_step", 1, kMaxTransformerLayers).value_or(1);
    t.shared_expert_ffn = f.optInteger("shared_expert_ffn", 0, 100'000'000).value_or(0);
    t.shared_expert_gate = f.boolean("shared_expert_gate", false);
    t.qk_norm = f.boolean("qk_norm", false);
    t.embedding_norm = f.boolean("embedding_norm", false);
    t.sandwich_norms = f.boolean("sandwich_norms", false);
    t.q_lora_rank = f.optInteger("q_lora_rank", 0, 1'000'000).value_or(0);
    t.kv_lora_rank = f.optInteger("kv_lora_rank", 0, 1'000'000).value_or(0);
    t.qk_rope_head_dim = f.optInteger("qk_rope_head_dim", 0, 1'000'000).value_or(0);
    t.qk_nope_head_dim = f.optInteger("qk_nope_head_dim", 0, 1'000'000).value_or(0);
    t.v_head_dim = f.optInteger("v_head_dim", 0, 1'000'000).value_or(0);
    t.attention_window = f.optInteger("attention_window", 0, 1'000'000'000).value_or(0);
    t.global_layer_every = f.optInteger("global_layer_every", 0, kMaxTransformerLayers).value_or(0);
    t.rope_theta = f.optNumber("rope_theta", 0, 1e12).value_or(0);
    f.checkNoUnknownKeys();
    return t;
}

std::vector<TensorId> tensorRefs(const ModelGraph& graph, JsonFields& f, std::string_view key)
{
    const auto& list = f.array(key, false);
    std::vector<TensorId> ids;
    ids.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_string())
            f.fail(key, cat("entry ", i, " should be a tensor name, got ", describeJson(list[i])));
        const auto id = graph.findTensor(list[i].get_ref<const std::string&>());
        if (!id)
            f.fail(key, cat("refers to an undefined tensor '", list[i].get_ref<const std::string&>(), "'"),
                   "declare it under \"tensors\"");
        ids.push_back(*id);
    }
    return ids;
}

DType dtypeField(JsonFields& f, std::string_view key, DType fallback)
{
    const auto name = f.optString(key);
    if (!name)
        return fallback;
    const auto dtype = parseDType(*name);
    if (!dtype)
        f.fail(key, cat("unknown dtype '", *name, "'"), "use one of f32, tf32, f16, bf16, fp8, i64, i32, i8, u8, bool");
    return *dtype;
}

} // namespace

nlohmann::json toNativeJson(const ModelGraph& graph)
{
    nlohmann::json doc;
    doc["schema"] = kGraphSchema;
    doc["name"] = graph.name;
    doc["batch"] = graph.batch;
    doc["seq_len"] = graph.seq_len;
    doc["dtype"] = dtypeName(graph.dtype);
    if (graph.transformer)
        doc["transformer"] = transformerToJson(*graph.transformer);
    auto& tensors = doc["tensors"] = nlohmann::json::array();
    for (const auto& t : graph.tensors()) {
        nlohmann::json j {{"name", t.name}, {"shape", t.shape}};
        if (t.dtype != graph.dtype)
            j["dtype"] = dtypeName(t.dtype);
        if (t.is_param)
            j["param"] = true;
        if (t.tp_sharded)
            j["tp_sharded"] = true;
        tensors.push_back(std::move(j));
    }
    auto& ops = doc["ops"] = nlohmann::json::array();
    for (const auto& op : graph.ops()) {
        nlohmann::json j {{"name", op.name}, {"module", op.module}, {"kind", opKindName(op.kind)}};
        if (op.tp_role != TpRole::Replicated)
            j["tp"] = tpRoleName(op.tp_role);
        j["inputs"] = namesOf(graph, op.inputs);
        j["outputs"] = namesOf(graph, op.outputs);
        if (!op.params.empty())
            j["params"] = namesOf(graph, op.params);
        if (!op.saved.empty())
            j["saved"] = namesOf(graph, op.saved);
        j["flops_fwd"] = op.flops_fwd;
        j["flops_bwd_input"] = op.flops_bwd_input;
        j["flops_bwd_weight"] = op.flops_bwd_weight;
        j["bytes_read"] = op.bytes_read;
        j["bytes_written"] = op.bytes_written;
        if (op.num_experts) {
            j["num_experts"] = op.num_experts;
            j["top_k"] = op.top_k;
        }
        if (!op.source_type.empty())
            j["source_type"] = op.source_type;
        ops.push_back(std::move(j));
    }
    return doc;
}

ModelGraph loadNativeGraph(const nlohmann::json& doc, std::string_view originView)
{
    const std::string origin(originView);
    JsonFields top(doc, origin);
    const std::string schema = top.string("schema");
    if (schema != kGraphSchema)
        top.fail("schema", cat("unsupported schema '", schema, "'"), cat("this version reads \"", kGraphSchema, "\""));
    ModelGraph graph;
    graph.name = top.string("name");
    graph.batch = top.integer("batch", 1, kMaxCount);
    graph.seq_len = top.integer("seq_len", 1, kMaxCount);
    graph.dtype = dtypeField(top, "dtype", DType::BF16);
    if (const auto* t = top.find("transformer"))
        graph.transformer = transformerFromJson(*t, origin);

    const auto& tensors = top.array("tensors", true);
    graph.reserve(tensors.size(), top.has("ops") && doc["ops"].is_array() ? doc["ops"].size() : 0);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        JsonFields f(tensors[i], origin, cat("tensors[", i, "]"));
        Tensor t;
        t.name = f.string("name");
        const auto& shape = f.array("shape", true);
        for (std::size_t k = 0; k < shape.size(); ++k) {
            if (!shape[k].is_number_integer() || shape[k].get<std::int64_t>() < 1
                || shape[k].get<std::int64_t>() > kMaxDim)
                f.fail("shape", cat("dimension ", k, " must be an integer in [1, 2^40], got ", describeJson(shape[k])));
            t.shape.push_back(shape[k].get<std::int64_t>());
        }
        if (shape.size() > 16)
            f.fail("shape", "more than 16 dimensions");
        t.dtype = dtypeField(f, "dtype", graph.dtype);
        t.is_param = f.boolean("param", false);
        t.tp_sharded = f.boolean("tp_sharded", false);
        f.checkNoUnknownKeys();
        try {
            graph.addTensor(std::move(t));
        } catch (const InputError& e) {
            throw InputError(cat(origin, ": tensors[", i, "]: ", e.what()), e.hint());
        }
    }

    const auto& ops = top.array("ops", true);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        JsonFields f(ops[i], origin, cat("ops[", i, "]"));
        Op op;
        op.name = f.string("name");
        op.module = f.optString("module").value_or(std::string());
        const std::string kind = f.string("kind");
        const auto parsedKind = parseOpKind(kind);
        if (!parsedKind)
            f.fail("kind", cat("unknown op kind '", kind, "'"),
                   "see the README's list of op kinds, or use \"unknown\"");
        op.kind = *parsedKind;
        if (const auto role = f.optString("tp")) {
            const auto parsedRole = parseTpRole(*role);
            if (!parsedRole)
                f.fail("tp", cat("unknown tensor-parallel role '", *role, "'"),
                       "use replicated, column, row, heads, vocab, local or experts");
            op.tp_role = *parsedRole;
        }
        op.inputs = tensorRefs(graph, f, "inputs");
        op.outputs = tensorRefs(graph, f, "outputs");
        op.params = tensorRefs(graph, f, "params");
        op.saved = tensorRefs(graph, f, "saved");
        op.flops_fwd = f.optNumber("flops_fwd", 0, kMaxCost).value_or(0);
        op.flops_bwd_input = f.optNumber("flops_bwd_input", 0, kMaxCost).value_or(0);
        op.flops_bwd_weight = f.optNumber("flops_bwd_weight", 0, kMaxCost).value_or(0);
        op.bytes_read = f.optNumber("bytes_read", 0, kMaxCost).value_or(0);
        op.bytes_written = f.optNumber("bytes_written", 0, kMaxCost).value_or(0);
        op.num_experts = static_cast<std::int32_t>(f.optInteger("num_experts", 0, 1 << 20).value_or(0));
        op.top_k = static_cast<std::int32_t>(f.optInteger("top_k", 0, 1 << 20).value_or(0));
        if (op.top_k > op.num_experts)
            f.fail("top_k", cat("top_k ", op.top_k, " exceeds num_experts ", op.num_experts));
        op.source_type = f.optString("source_type").value_or(std::string());
        f.checkNoUnknownKeys();
        try {
            graph.addOp(std::move(op));
        } catch (const InputError& e) {
            throw InputError(cat(origin, ": ops[", i, "]: ", e.what()), e.hint());
        }
    }
    top.checkNoUnknownKeys();
    if (graph.ops().empty())
        throw InputError(cat(origin, ": the graph has no ops"), "a model needs at least one op");
    try {
        graph.topologicalOrder(); // rejects cycles and double producers up front
    } catch (const InputError& e) {
        throw InputError(cat(origin, ": ", e.what()), e.hint());
    }
    return graph;
}

void saveNativeGraph(const ModelGraph& graph, const std::filesystem::path& path)
{
    // Indented for people on small graphs; compact on big ones, where it parses about a third faster.
    const int indent = graph.ops().size() <= 5000 ? 1 : -1;
    writeFileAtomic(path, toNativeJson(graph).dump(indent) + "\n");
}

} // namespace shardscape
