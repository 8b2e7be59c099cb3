// SPDX-License-Identifier: MIT
// Exports checked against the frameworks' own schemas (tests/data/framework_schemas: each framework's argument parser
// and config classes at pinned commits, extracted by the scripts there) and against the start-up cross-checks of
// each framework that concern parallelism, batch arithmetic, FP8, FSDP and MoE (the README there cites them). Golden
// plans: dense, interleaved, ZeRO-3 with hybrid sharding, CP at 128k, MoE with EP, FP8 tensorwise and rowwise. Every
// plan is exported for every release each exporter names; a plan the framework cannot run must be refused.
#include "test_helpers.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/exporters.h"
#include "shardscape/plan/plan_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <QTest>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <toml++/toml.h>

using namespace shardscape;
using nlohmann::json;

namespace {

const std::filesystem::path kSchemas = std::filesystem::path(SHARDSCAPE_SOURCE_DIR) / "tests/data/framework_schemas";

json readSchema(const std::string& name)
{
    std::ifstream in(kSchemas / name);
    if (!in)
        throw std::runtime_error("missing schema " + name);
    return json::parse(in);
}

/** The schema of one release (cached). */
const json& schema(const std::string& name)
{
    static std::map<std::string, json> cache;
    auto it = cache.find(name);
    if (it == cache.end())
        it = cache.emplace(name, readSchema(name)).first;
    return it->second;
}

struct GoldenPlan
{
    std::string name;
    std::shared_ptr<const ModelGraph> graph;
    LoadedPlan plan;
    int world = 0;
};

GoldenPlan makePlan(const std::string& name, const std::string& preset, int nodes, const ParallelConfig& config,
                    std::int64_t seqLen)
{
    GoldenPlan g;
    g.name = name;
    BuildOptions build;
    build.batch = config.micro_batch;
    build.seq_len = seqLen;
    g.graph = std::make_shared<const ModelGraph>(loadModel(preset, build));
    const CostModel model(g.graph, loadCluster("h100-sxm", nodes, 8));
    Workload workload;
    workload.global_batch = config.globalBatch();
    workload.seq_len = seqLen;
    EvaluateOptions options;
    options.require_full_cluster = false;
    const Evaluation e = model.evaluate(config, workload, options);
    PlanFileContext context;
    context.global_batch = config.globalBatch();
    context.seq_len = seqLen;
    context.model_name = preset;
    context.model_spec = preset;
    context.created_by = "tst_plan_export_schema";
    g.plan = planFromJson(planToJson(e, model, context), name);
    g.world = config.worldSize();
    return g;
}

ParallelConfig base(int tp, int pp, int dp, int m)
{
    ParallelConfig c;
    c.tp = tp;
    c.pp = pp;
    c.dp = dp;
    c.micro_batch = 1;
    c.num_microbatches = m;
    c.zero_stage = 1;
    c.sequence_parallel = tp > 1;
    return c;
}

struct GoldenSpec
{
    std::string name;
    std::string preset;
    int nodes;
    ParallelConfig config;
    std::int64_t seq_len;
};

/** The golden plans' definitions. */
const std::vector<GoldenSpec>& goldenSpecs()
{
    static const std::vector<GoldenSpec> specs = [] {
        std::vector<GoldenSpec> out;
        const auto add = [&out](const std::string& name, const std::string& preset, int nodes,
                                const ParallelConfig& config, std::int64_t seqLen) {
            out.push_back({name, preset, nodes, config, seqLen});
        };
        ParallelConfig dense = base(2, 2, 2, 8);
        dense.recompute = RecomputeKind::Selective;
        add("dense", "llama3-8b", 1, dense, 8192);

        ParallelConfig interleaved = base(8, 4, 2, 8);
        interleaved.vpp = 2;
        interleaved.schedule = ScheduleKind::Interleaved1F1B;
        interleaved.recompute = RecomputeKind::Full;
        add("interleaved", "llama3-70b", 8, interleaved, 8192);

        ParallelConfig fsdp = base(1, 1, 64, 1);
        fsdp.zero_stage = 3;
        fsdp.zero_ngroups = 2;
        fsdp.recompute = RecomputeKind::Full;
        add("zero3-hsdp", "llama3-70b", 8, fsdp, 4096);

        ParallelConfig cp = base(8, 1, 2, 1);
        cp.cp = 4;
        cp.zero_stage = 3;
        cp.recompute = RecomputeKind::Full;
        add("cp-128k", "llama3-8b", 8, cp, 131072);

        ParallelConfig moe = base(2, 1, 8, 4);
        moe.ep = 8;
        moe.etp = 1;
        moe.recompute = RecomputeKind::Modules;
        moe.recompute_modules = {"mlp"};
        add("moe-ep", "qwen3-30b-a3b", 2, moe, 4096);

        ParallelConfig fp8 = base(8, 2, 4, 8);
        fp8.fp8_linears = true;
        fp8.recompute = RecomputeKind::Modules;
        fp8.recompute_modules = {"input_layernorm", "post_attention_layernorm"};
        add("fp8-tensorwise", "llama3-70b", 8, fp8, 8192);

        ParallelConfig rowwise = base(2, 1, 4, 2);
        rowwise.fp8_linears = true;
        rowwise.fp8_recipe = Float8Recipe::Rowwise;
        rowwise.zero_stage = 3;
        rowwise.tp_comm_overlap = true;
        add("fp8-rowwise-asynctp", "llama3-8b", 1, rowwise, 8192);
        return out;
    }();
    return specs;
}

/**
 * Golden plan `index` as a user would plan it for `framework`: torchtitan's data parallelism is FSDP2 (ZeRO-3), so
 * its ZeRO-1 plans are made with ZeRO-3 there; every other framework gets the plan as defined. Built once each.
 */
const GoldenPlan& goldenPlan(std::size_t index, Framework framework)
{
    static std::map<std::pair<std::size_t, bool>, GoldenPlan> cache;
    const GoldenSpec& spec = goldenSpecs()[index];
    const bool fsdp = framework == Framework::Torchtitan && spec.config.zero_stage < 2;
    auto it = cache.find({index, fsdp});
    if (it == cache.end()) {
        ParallelConfig config = spec.config;
        if (fsdp)
            config.zero_stage = 3;
        it = cache.emplace(std::pair {index, fsdp}, makePlan(spec.name, spec.preset, spec.nodes, config, spec.seq_len))
                 .first;
    }
    return it->second;
}

struct Release
{
    ExportTarget target;
    Framework framework;
    std::string version;
    std::string schemaFile;
};

std::vector<Release> releases()
{
    std::vector<Release> out;
    for (const auto& v : frameworkVersions(Framework::MegatronCore))
        out.push_back({ExportTarget::Megatron, Framework::MegatronCore, v, "megatron-" + v + ".0.json"});
    out.push_back({ExportTarget::Torchtitan, Framework::Torchtitan, "main", "torchtitan-main.json"});
    out.push_back({ExportTarget::Torchtitan, Framework::Torchtitan, "v0.2", "torchtitan-v0.2.2.json"});
    out.push_back({ExportTarget::DeepSpeed, Framework::DeepSpeed, "v0.19", "deepspeed-master.json"});
    return out;
}

// ---- shell words of a Megatron script ------------------------------------------------------------------------------

std::vector<std::string> shellWords(const std::string& line)
{
    std::vector<std::string> words;
    std::string word;
    bool quoted = false;
    bool any = false;
    for (const char ch : line) {
        if (ch == '\'') {
            quoted = !quoted;
            any = true;
        } else if (ch == ' ' && !quoted) {
            if (any)
                words.push_back(word);
            word.clear();
            any = false;
        } else {
            word += ch;
            any = true;
        }
    }
    if (any)
        words.push_back(word);
    return words;
}

/** pretrain_gpt.py's arguments as flag -> values, read with the schema's arity (argparse's own rules). */
std::map<std::string, std::vector<std::string>> megatronArgs(const std::string& script, const json& flags,
                                                             std::vector<std::string>& problems)
{
    std::vector<std::string> tokens;
    bool inArgs = false;
    std::istringstream in(script);
    for (std::string line; std::getline(in, line);) {
        if (line.find("pretrain_gpt.py\" \\") != std::string::npos) {
            inArgs = true;
            continue;
        }
        if (!inArgs)
            continue;
        if (line.find("\"$@\"") != std::string::npos)
            break;
        if (endsWith(line, " \\"))
            line.resize(line.size() - 2);
        for (auto& w : shellWords(line))
            tokens.push_back(std::move(w));
    }
    std::map<std::string, std::vector<std::string>> args;
    for (std::size_t i = 0; i < tokens.size();) {
        const std::string flag = tokens[i++];
        if (!startsWith(flag, "--")) {
            problems.push_back("stray argument '" + flag + "'");
            continue;
        }
        if (!flags.contains(flag)) {
            problems.push_back("unknown flag " + flag);
            continue;
        }
        const json& spec = flags.at(flag);
        const std::string action = spec.value("action", "");
        const std::string nargs = spec.contains("nargs") ? spec.at("nargs").dump() : "";
        std::vector<std::string> values;
        if (action == "store_true" || action == "store_false" || action == "store_const") {
        } else if (nargs == "\"*\"" || nargs == "\"+\"") {
            while (i < tokens.size() && !startsWith(tokens[i], "--"))
                values.push_back(tokens[i++]);
            if (nargs == "\"+\"" && values.empty())
                problems.push_back(flag + " needs at least one value");
        } else if (i < tokens.size()) {
            values.push_back(tokens[i++]);
        } else {
            problems.push_back(flag + " has no value");
        }
        const std::string type = spec.value("type", "");
        for (const auto& v : values) {
            if (type == "int" && !std::regex_match(v, std::regex("-?[0-9]+")))
                problems.push_back(flag + " takes an int, got '" + v + "'");
            if (type == "float" && !std::regex_match(v, std::regex("-?[0-9.]+(e-?[0-9]+)?")))
                problems.push_back(flag + " takes a float, got '" + v + "'");
            if (spec.contains("choices") && spec.at("choices").is_array()) {
                bool ok = false;
                for (const auto& choice : spec.at("choices"))
                    ok = ok || (choice.is_string() ? choice.get<std::string>() == v : choice.dump() == v);
                if (!ok)
                    problems.push_back(flag + " does not accept '" + v + "'");
            }
        }
        if (args.count(flag))
            problems.push_back(flag + " given twice");
        args[flag] = values;
    }
    return args;
}

long long intOf(const std::map<std::string, std::vector<std::string>>& args, const std::string& flag, long long dflt)
{
    const auto it = args.find(flag);
    return it == args.end() || it->second.empty() ? dflt : std::stoll(it->second.front());
}

int scriptDefault(const std::string& script, const std::string& variable)
{
    std::smatch m;
    if (!std::regex_search(script, m, std::regex(variable + R"(=\$\{)" + variable + R"(:-([0-9]+)\})")))
        return 0;
    return std::stoi(m[1]);
}

/** Megatron-LM's validate_args / TransformerConfig / parallel_state checks that a plan can fail. */
void checkMegatron(const GoldenPlan& g, const std::string& version, const std::string& script, const json& flags,
                   std::vector<std::string>& problems)
{
    const auto args = megatronArgs(script, flags, problems);
    const auto has = [&](const char* flag) { return args.count(flag) > 0; };
    const TransformerShape& t = *g.graph->transformer;
    const long long world
        = static_cast<long long>(scriptDefault(script, "NNODES")) * scriptDefault(script, "GPUS_PER_NODE");
    const long long tp = intOf(args, "--tensor-model-parallel-size", 1);
    const long long pp = intOf(args, "--pipeline-model-parallel-size", 1);
    const long long cp = intOf(args, "--context-parallel-size", 1);
    const long long ep = intOf(args, "--expert-model-parallel-size", 1);
    if (world != g.world)
        problems.push_back(cat("the launch runs ", world, " ranks, the plan ", g.world));
    if (world % (tp * pp * cp) != 0)
        problems.push_back("world size not divisible by tp x pp x cp");
    const long long dp = world / (tp * pp * cp);
    const long long mbs = intOf(args, "--micro-batch-size", 1);
    const long long gbs = intOf(args, "--global-batch-size", mbs * dp);
    if (gbs % (mbs * dp) != 0)
        problems.push_back("global batch not divisible by micro-batch x dp");
    if (gbs != g.plan.global_batch || dp != g.plan.config.dp)
        problems.push_back("batch or dp differ from the plan");
    const long long layers = intOf(args, "--num-layers", 0);
    const int vppFlags = (has("--num-layers-per-virtual-pipeline-stage") ? 1 : 0)
        + (has("--num-virtual-stages-per-pipeline-rank") ? 1 : 0) + (has("--pipeline-model-parallel-layout") ? 1 : 0);
    if (vppFlags > 1)
        problems.push_back("more than one virtual-pipeline flag");
    if (const long long n = intOf(args, "--num-layers-per-virtual-pipeline-stage", 0); n > 0)
        if (layers % pp != 0 || (layers / pp) % n != 0)
            problems.push_back("--num-layers-per-virtual-pipeline-stage does not divide the layers per rank");
    if (has("--decoder-first-pipeline-num-layers") || has("--decoder-last-pipeline-num-layers")) {
        const long long first = intOf(args, "--decoder-first-pipeline-num-layers", 0);
        const long long last = intOf(args, "--decoder-last-pipeline-num-layers", 0);
        const long long vpp = intOf(args, "--num-virtual-stages-per-pipeline-rank", 1);
        if (first <= 0 || last <= 0 || first % vpp || last % vpp)
            problems.push_back("first/last pipeline layers must be positive multiples of vpp");
        const long long middle = layers - first - last;
        if (pp > 2 ? middle % (pp - 2) || (middle / (pp - 2)) % vpp : middle != 0)
            problems.push_back("the middle pipeline ranks' layers do not divide");
    } else if (!has("--pipeline-model-parallel-layout") && layers % pp != 0) {
        problems.push_back("layers not divisible by pp");
    }
    if (cp > 1 && g.plan.seq_len % (2 * cp) != 0)
        problems.push_back("sequence not divisible by 2 x cp");
    if (t.num_experts > 0 && tp > 1 && !has("--sequence-parallel"))
        problems.push_back("MoE with TP needs --sequence-parallel");
    if (has("--tp-comm-overlap") && !has("--sequence-parallel"))
        problems.push_back("--tp-comm-overlap needs --sequence-parallel");
    // FP8: the recipe the plan costs (tensorwise); delayed scaling raises with layernorm / moe_act recompute.
    if (has("--fp8-format")) {
        const std::string recipe = args.count("--fp8-recipe") ? args.at("--fp8-recipe").front() : "delayed";
        if (recipe != "tensorwise")
            problems.push_back("FP8 without the tensorwise recipe the plan costs");
    }
    const auto modules
        = args.count("--recompute-modules") ? args.at("--recompute-modules") : std::vector<std::string> {};
    static const std::set<std::string> allowed {"core_attn", "moe_act", "layernorm",     "mla_up_proj",
                                                "mlp",       "moe",     "shared_experts"};
    for (const auto& m : modules)
        if (!allowed.count(m))
            problems.push_back("unknown recompute module " + m);
    if (!modules.empty() && intOf(args, "--num-experts", 0) > 0 && t.first_dense_layers == 0 && t.moe_layer_step == 1
        && std::find(modules.begin(), modules.end(), "moe") == modules.end()
        && std::find(modules.begin(), modules.end(), "mlp") != modules.end())
        problems.push_back("--recompute-modules mlp does nothing on an all-MoE model (it needs moe)");
    // Megatron-FSDP and the distributed optimizer.
    if (has("--use-megatron-fsdp")) {
        if (!has("--ckpt-format") || args.at("--ckpt-format").front() != "fsdp_dtensor")
            problems.push_back("Megatron-FSDP needs --ckpt-format fsdp_dtensor");
        if (!has("--init-model-with-meta-device"))
            problems.push_back("Megatron-FSDP without --init-model-with-meta-device builds the whole model per GPU");
        if (script.find("CUDA_DEVICE_MAX_CONNECTIONS=1") != std::string::npos)
            problems.push_back("Megatron-FSDP with CUDA_DEVICE_MAX_CONNECTIONS=1");
        if (g.plan.config.zero_ngroups > 1 && version != "core_v0.15"
            && intOf(args, "--num-distributed-optimizer-instances", 1) != g.plan.config.zero_ngroups)
            problems.push_back("zero_ngroups not written");
    } else if ((tp > 1 || cp > 1) && script.find("CUDA_DEVICE_MAX_CONNECTIONS=1") == std::string::npos) {
        problems.push_back("TP/CP without CUDA_DEVICE_MAX_CONNECTIONS=1");
    }
    if (const long long n = intOf(args, "--num-distributed-optimizer-instances", 1); (dp * cp) % n)
        problems.push_back("distributed-optimizer instances do not divide dp x cp");
    if (has("--overlap-param-gather") && !has("--overlap-grad-reduce"))
        problems.push_back("--overlap-param-gather without --overlap-grad-reduce");
    // MoE: the dispatcher the cost model prices, experts divisible by EP.
    if (const long long experts = intOf(args, "--num-experts", 0); experts > 0) {
        if (!has("--moe-token-dispatcher-type") || args.at("--moe-token-dispatcher-type").front() != "alltoall")
            problems.push_back("MoE without the all-to-all dispatcher the plan costs");
        if (!has("--moe-grouped-gemm"))
            problems.push_back("MoE without grouped GEMM");
        if (experts % ep)
            problems.push_back("EP does not divide the experts");
    }
    // The model: NullTokenizer's vocabulary rule of the release, and Llama 3's RoPE base.
    const long long vocabFlag = intOf(args, "--vocab-size", 0);
    const bool addsEod = version == "core_v0.15" || version == "core_v0.16" || version == "core_v0.17";
    if (vocabFlag + (addsEod ? 1 : 0) != t.vocab)
        problems.push_back(cat("--vocab-size ", vocabFlag, " gives another vocabulary than ", t.vocab));
    if (t.rope_theta > 0 && intOf(args, "--rotary-base", 10000) != static_cast<long long>(t.rope_theta))
        problems.push_back("--rotary-base differs from the model's rope_theta");
}

// ---- torchtitan v0.2 TOML -------------------------------------------------------------------------------------------

std::string tomlType(const toml::node& node)
{
    if (node.is_integer())
        return "int";
    if (node.is_floating_point())
        return "float";
    if (node.is_boolean())
        return "bool";
    if (node.is_string())
        return "str";
    if (const auto* array = node.as_array()) {
        if (array->empty())
            return "list";
        return (*array)[0].is_array() ? "list[list[str]]" : "list[" + tomlType((*array)[0]) + "]";
    }
    return "table";
}

void checkTorchtitanToml(const GoldenPlan& g, const std::string& text, const json& keys, const json& models,
                         std::vector<std::string>& problems)
{
    toml::table doc;
    try {
        doc = toml::parse(text);
    } catch (const toml::parse_error& e) {
        problems.push_back(std::string("TOML does not parse: ") + std::string(e.description()));
        return;
    }
    std::map<std::string, const toml::node*> values;
    const std::function<void(const toml::table&, const std::string&)> walk = [&](const toml::table& table,
                                                                                 const std::string& prefix) {
        for (const auto& [key, node] : table) {
            const std::string path = prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
            if (const auto* inner = node.as_table())
                walk(*inner, path);
            else
                values[path] = &node;
        }
    };
    walk(doc, "");
    for (const auto& [path, node] : values) {
        if (!keys.contains(path)) {
            problems.push_back("unknown key " + path);
            continue;
        }
        const json& spec = keys.at(path);
        const std::string want = spec.value("type", "");
        const std::string got = tomlType(*node);
        if (got != want && !(got == "list" && startsWith(want, "list")))
            problems.push_back(path + " is " + got + ", torchtitan wants " + want);
        if (spec.contains("choices") && node->is_string()) {
            bool ok = false;
            for (const auto& choice : spec.at("choices"))
                ok = ok || choice == node->value<std::string>().value_or("");
            if (!ok)
                problems.push_back(path + " does not accept '" + node->value<std::string>().value_or("") + "'");
        }
    }
    const auto integer = [&](const char* path, long long dflt) {
        return values.count(path) ? values.at(path)->value<long long>().value_or(dflt) : dflt;
    };
    const auto string = [&](const char* path, const std::string& dflt) {
        return values.count(path) ? values.at(path)->value<std::string>().value_or(dflt) : dflt;
    };
    const long long replicate = integer("parallelism.data_parallel_replicate_degree", 1);
    const long long shard = integer("parallelism.data_parallel_shard_degree", -1);
    const long long tp = integer("parallelism.tensor_parallel_degree", 1);
    const long long pp = integer("parallelism.pipeline_parallel_degree", 1);
    const long long cp = integer("parallelism.context_parallel_degree", 1);
    if (replicate * shard * cp * tp * pp != g.world)
        problems.push_back("parallel degrees do not multiply to the world size");
    const long long local = integer("training.local_batch_size", 8);
    const long long global = integer("training.global_batch_size", -1);
    const long long dp = replicate * shard;
    if (pp > 1) {
        const long long micro = integer("parallelism.pipeline_parallel_microbatch_size", 1);
        if (local % micro != 0)
            problems.push_back("local batch not divisible by the pipeline micro-batch");
        const long long microbatches = local / micro;
        if (string("parallelism.pipeline_parallel_schedule", "1F1B") == "1F1B" && microbatches < pp)
            problems.push_back("1F1B with fewer micro-batches than stages");
    }
    if (global % (local * dp) != 0 || global != g.plan.global_batch)
        problems.push_back("global batch not a multiple of local x dp, or not the plan's");
    const bool compiled = values.count("compile.enable") && values.at("compile.enable")->value<bool>().value_or(false);
    if (tp > 1 && values.count("parallelism.enable_async_tensor_parallel") && !compiled)
        problems.push_back("async TP without compile");
    if ((tp > 1 || pp > 1) && shard <= 1 && cp <= 1)
        problems.push_back("TP or PP without FSDP trains in float32 on v0.2");
    const std::string model = string("model.name", "llama3");
    const std::string flavor = string("model.flavor", "");
    const bool builtin = models.contains(model)
        && std::find(models.at(model).begin(), models.at(model).end(), flavor) != models.at(model).end();
    if (!builtin && text.find("register") == std::string::npos)
        problems.push_back("model " + model + "/" + flavor + " is not built in and no note says to register it");
}

// ---- torchtitan main Python config --------------------------------------------------------------------------------

void checkTorchtitanConfig(const GoldenPlan& g, const std::string& text, const json& schemaDoc,
                           std::vector<std::string>& problems)
{
    const json& keys = schemaDoc.at("keys");
    const json& sections = schemaDoc.at("sections");
    std::map<std::string, std::string> values;
    std::smatch m;
    std::istringstream in(text);
    std::string function;
    std::string module;
    for (std::string line; std::getline(in, line);) {
        if (std::regex_match(line, m, std::regex(R"(from torchtitan\.models\.(\w+)\.config_registry import (\w+))"))) {
            module = m[1];
            function = m[2];
        }
        if (!std::regex_match(line, m, std::regex(R"(    config\.([\w.]+) = (.*?)(  # .*)?)")))
            continue;
        const std::string path = m[1];
        std::string value = m[2];
        if (value == "[") { // a multi-line list: count its parts
            int parts = 0;
            for (std::string more; std::getline(in, more) && more != "    ]";)
                parts += startsWith(more, "        [") ? 1 : 0;
            value = cat("<", parts, " parts>");
        }
        values[path] = value;
        if (path == "model_spec" || path == "loss.loss_fn.global_vocab_size")
            continue;
        if (sections.contains(path)) { // a whole section: one of its variants
            const json& section = sections.at(path);
            bool ok = value == "None" && section.contains("variants");
            if (section.contains("variants"))
                for (const auto& [variant, cls] : section.at("variants").items())
                    ok = ok || (cls.is_string() && value == cls.get<std::string>() + "()");
            if (!ok)
                problems.push_back(path + " = " + value + " is not one of its variants");
            continue;
        }
        if (!keys.contains(path)) {
            problems.push_back("unknown field " + path);
            continue;
        }
        const json& spec = keys.at(path);
        const std::string type = spec.value("type", "");
        const bool okType = (type == "int" && std::regex_match(value, std::regex("-?[0-9]+")))
            || (type == "bool" && (value == "True" || value == "False"))
            || (type == "str" && value.size() >= 2 && value.front() == '"')
            || (startsWith(type, "list") && (value.front() == '[' || value.front() == '<'));
        if (!okType)
            problems.push_back(path + " = " + value + " is not a " + type);
        if (spec.contains("choices") && type == "str") {
            bool ok = false;
            for (const auto& choice : spec.at("choices"))
                ok = ok || "\"" + choice.get<std::string>() + "\"" == value;
            if (!ok)
                problems.push_back(path + " does not accept " + value);
        }
    }
    const std::string registry = "torchtitan.models." + module + ".config_registry";
    const json& functions = schemaDoc.at("config_functions");
    if (!functions.contains(registry)
        || std::find(functions.at(registry).begin(), functions.at(registry).end(), function)
            == functions.at(registry).end())
        problems.push_back("no config function " + registry + "." + function);
    const auto integer = [&](const std::string& path, long long dflt) {
        return values.count(path) ? std::stoll(values.at(path)) : dflt;
    };
    const long long replicate = integer("parallelism.data_parallel_replicate_degree", 1);
    const long long shard = integer("parallelism.data_parallel_shard_degree", -1);
    const long long tp = integer("parallelism.tensor_parallel_degree", 1);
    const long long pp = integer("parallelism.pipeline_parallel_degree", 1);
    const long long cp = integer("parallelism.context_parallel_degree", 1);
    const long long ep = integer("parallelism.expert_parallel_degree", 1);
    if (replicate * shard * cp * tp * pp != g.world)
        problems.push_back("parallel degrees do not multiply to the world size");
    if ((shard * cp * tp) % ep != 0)
        problems.push_back("ep does not divide dp_shard x cp x tp");
    const long long tokens = integer("training.num_tokens_per_microbatch_per_dp_rank", 16384);
    const long long step = integer("training.num_tokens_per_train_step", -1);
    const long long microbatches = pp > 1 ? integer("parallelism.num_pp_microbatches", 1) : 1;
    const bool sp = values.count("parallelism.enable_sequence_parallel") == 0
        || values.at("parallelism.enable_sequence_parallel") == "True";
    if (tokens % ((sp ? tp : 1) * (cp > 1 ? 2 * cp : 1)) != 0)
        problems.push_back("tokens per micro-batch not divisible by tp x 2cp");
    if (step % (tokens * microbatches * replicate * shard) != 0)
        problems.push_back("tokens per step not a multiple of tokens x micro-batches x dp");
    if (step != g.plan.global_batch * g.plan.seq_len)
        problems.push_back("tokens per step differ from the plan's global batch");
    if (values["compile.enable_async_tensor_parallel"] == "True" && values["compile.enable"] != "True")
        problems.push_back("async TP without compile");
    if (pp > 1 && values["training.disable_cuda_graphs"] != "True")
        problems.push_back("pipeline parallelism with CUDA graphs on");
    if (pp > 1 && values.count("parallelism.module_fqns_per_model_part")) {
        const long long parts = std::stoll(values.at("parallelism.module_fqns_per_model_part").substr(1));
        if (parts % pp != 0)
            problems.push_back("model parts not divisible by pp");
    }
    if (pp > 1 && values["parallelism.pipeline_parallel_schedule"] == "\"1F1B\"" && microbatches < pp)
        problems.push_back("1F1B with fewer micro-batches than stages");
    if (text.find("Float8LinearConverter.Config(recipe_name=\"rowwise\"") == std::string::npos
        && g.plan.config.fp8_linears)
        problems.push_back("float8 without the rowwise recipe main has");
}

// ---- DeepSpeed JSON ---------------------------------------------------------------------------------------------

void checkDeepSpeed(const GoldenPlan& g, const std::string& text, const json& schemaDoc,
                    std::vector<std::string>& problems)
{
    const json doc = json::parse(text);
    const json& keys = schemaDoc.at("keys");
    const json& unread = schemaDoc.at("read_by_nothing");
    const std::function<void(const json&, const std::string&)> walk = [&](const json& node, const std::string& prefix) {
        for (const auto& [key, value] : node.items()) {
            if (startsWith(key, "_"))
                continue; // "_comment", "_shardscape_layout": top-level keys DeepSpeed ignores
            const std::string path = prefix.empty() ? key : prefix + "." + key;
            if (value.is_object() && !keys.contains(path)) {
                walk(value, path);
                continue;
            }
            if (!keys.contains(path))
                problems.push_back("unknown key " + path);
            if (std::find(unread.begin(), unread.end(), path) != unread.end())
                problems.push_back(path + " is read by nothing");
            const json& spec = keys.contains(path) ? keys.at(path) : json::object();
            const std::string type = spec.value("type", "");
            if ((type == "int" && !value.is_number_integer()) || (type == "bool" && !value.is_boolean()))
                problems.push_back(path + " is not a " + type);
            if (spec.contains("choices")
                && std::find(spec.at("choices").begin(), spec.at("choices").end(), value) == spec.at("choices").end())
                problems.push_back(path + " does not accept " + value.dump());
        }
    };
    walk(doc, "");
    const ParallelConfig& c = g.plan.config;
    const long long micro = doc.value("train_micro_batch_size_per_gpu", 0);
    const long long gas = doc.value("gradient_accumulation_steps", 0);
    // runtime/config.py: the batch is asserted over DeepSpeed's data-parallel size, which is every rank but the
    // pipeline's (PipelineModule topology) unless the model code's mpu gives it the TP groups.
    if (doc.contains("train_batch_size")) {
        const long long deepspeedDp = g.world / c.pp;
        if (doc.at("train_batch_size").get<long long>() != micro * gas * deepspeedDp)
            problems.push_back("train_batch_size fails DeepSpeed's batch assertion");
    } else if (c.tp == 1) {
        problems.push_back("train_batch_size left out without tensor parallelism");
    }
    if (micro * gas * c.dp != g.plan.global_batch)
        problems.push_back("micro x accumulation x dp is not the plan's global batch");
    if (c.pp > 1 && doc.at("zero_optimization").value("stage", 0) >= 2)
        problems.push_back("ZeRO-2/3 under DeepSpeed's pipeline engine");
    if (c.pp > 1 && doc.contains("tensor_parallel"))
        problems.push_back("AutoTP under a pipeline");
}

} // namespace

class TestPlanExportSchema : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void schemasNameTheirCommits()
    {
        for (const auto& r : releases()) {
            const json& s = schema(r.schemaFile);
            QVERIFY2(std::regex_match(s.value("commit", ""), std::regex("[0-9a-f]{40}")), r.schemaFile.c_str());
            QVERIFY2(!s.value("extracted_by", "").empty(), r.schemaFile.c_str());
        }
        // Megatron's schema holds every flag of its parser: spot checks against arguments.py.
        QVERIFY(schema("megatron-core_v0.19.0.json").at("flags").contains("--tensor-model-parallel-size"));
        QVERIFY(!schema("megatron-core_v0.15.0.json").at("flags").contains("--outer-dp-sharding-strategy"));
    }

    void exportsPassTheSchemas_data()
    {
        QTest::addColumn<int>("plan");
        QTest::addColumn<int>("release");
        const auto rs = releases();
        for (std::size_t p = 0; p < goldenSpecs().size(); ++p)
            for (std::size_t r = 0; r < rs.size(); ++r)
                QTest::newRow(
                    cat(goldenSpecs()[p].name, " ", exportTargetName(rs[r].target), " ", rs[r].version).c_str())
                    << static_cast<int>(p) << static_cast<int>(r);
    }
    void exportsPassTheSchemas()
    {
        QFETCH(int, plan);
        QFETCH(int, release);
        const Release r = releases()[static_cast<std::size_t>(release)];
        const GoldenPlan& g = goldenPlan(static_cast<std::size_t>(plan), r.framework);
        ExportOptions options;
        options.framework_version = r.version;
        ParallelConfig asWritten = g.plan.config;
        asWritten.framework_version = r.version;
        const std::string restriction = frameworkRestriction(frameworkProfile(r.framework), asWritten);
        if (!restriction.empty()) {
            // A plan the framework cannot run is refused with the reason, never written.
            const std::string error
                = test::inputErrorOf([&] { exportPlan(r.target, g.plan, *g.graph, g.plan.cluster, nullptr, options); });
            QVERIFY2(error.find("cannot export this plan for") != std::string::npos, error.c_str());
            QVERIFY2(error.find(restriction) != std::string::npos, error.c_str());
            return;
        }
        const ExportResult result = exportPlan(r.target, g.plan, *g.graph, g.plan.cluster, nullptr, options);
        QVERIFY2(result.text.find("Framework version: " + std::string(frameworkName(r.framework)) + " " + r.version)
                     != std::string::npos,
                 "the header names the release");
        std::vector<std::string> problems;
        const json& s = schema(r.schemaFile);
        if (r.target == ExportTarget::Megatron)
            checkMegatron(g, r.version, result.text, s.at("flags"), problems);
        else if (r.target == ExportTarget::DeepSpeed)
            checkDeepSpeed(g, result.text, s, problems);
        else if (r.version == "v0.2")
            checkTorchtitanToml(g, result.text, s.at("keys"), s.at("models"), problems);
        else
            checkTorchtitanConfig(g, result.text, s, problems);
        QVERIFY2(problems.empty(), (g.name + ": " + join(problems, "; ")).c_str());
    }

    void everyExporterRunsMostGoldenPlans()
    {
        // The golden set is not refused wholesale: each release writes the plans its framework runs.
        for (const auto& r : releases()) {
            int written = 0;
            for (std::size_t p = 0; p < goldenSpecs().size(); ++p) {
                ParallelConfig c = goldenPlan(p, r.framework).plan.config;
                c.framework_version = r.version;
                written += frameworkRestriction(frameworkProfile(r.framework), c).empty() ? 1 : 0;
            }
            const int expected = r.target == ExportTarget::DeepSpeed ? 3 : 6;
            QVERIFY2(written >= expected, cat(exportTargetName(r.target), " ", r.version, ": ", written).c_str());
        }
    }

    void refusalsAreTheFrameworksOwn()
    {
        // DeepSpeed's pipeline engine: interleaving and ZeRO-3 under PP are refused with the reason and a way out.
        const GoldenPlan& interleaved = goldenPlan(1, Framework::DeepSpeed);
        const std::string error = test::inputErrorOf([&] {
            exportPlan(ExportTarget::DeepSpeed, interleaved.plan, *interleaved.graph, interleaved.plan.cluster);
        });
        QVERIFY2(error.find("no interleaved pipeline schedule") != std::string::npos, error.c_str());
        QVERIFY2(error.find("--framework deepspeed") != std::string::npos, error.c_str());
        // torchtitan main has no tensorwise float8; v0.2 does.
        const GoldenPlan& fp8 = goldenPlan(5, Framework::Torchtitan);
        ParallelConfig c = fp8.plan.config;
        c.framework_version = "main";
        QVERIFY(frameworkRestriction(frameworkProfile(Framework::Torchtitan), c).find("rowwise") != std::string::npos);
        c.framework_version = "v0.2";
        QVERIFY(frameworkRestriction(frameworkProfile(Framework::Torchtitan), c).empty());
        // An unknown release names the ones there are.
        ExportOptions options;
        options.framework_version = "core_v0.9";
        const std::string version = test::inputErrorOf(
            [&] { exportPlan(ExportTarget::Megatron, fp8.plan, *fp8.graph, fp8.plan.cluster, nullptr, options); });
        QVERIFY2(version.find("core_v0.19, core_v0.18") != std::string::npos, version.c_str());
        QCOMPARE(resolveFrameworkVersion(Framework::MegatronCore, "core_v0.18.2").value_or(""),
                 std::string("core_v0.18"));
        QCOMPARE(resolveFrameworkVersion(Framework::Torchtitan, "v0.2.2").value_or(""), std::string("v0.2"));
        QVERIFY(!resolveFrameworkVersion(Framework::Torchtitan, "v0.2.").has_value());
    }
};

QTEST_GUILESS_MAIN(TestPlanExportSchema)
#include "tst_plan_export_schema.moc"
