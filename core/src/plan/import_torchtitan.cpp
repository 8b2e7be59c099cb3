// SPDX-License-Identifier: MIT
// torchtitan's job TOML (v0.2.x schema, parsed with toml++ after a depth check) read back into a ParallelConfig.
#include "import_torchtitan.h"

#include "import_helpers.h"
#include "toml_nesting.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <set>
#include <toml++/toml.h>

namespace shardscape::importing {

namespace {

constexpr int kMaxFqnLayer = 1'000'000; // layers.N past this is a typo (and next = N + 1 must not overflow)

/** Strict typed reads from one TOML table, with the line of the offending value in every message. */
class TomlTable
{
public:
    TomlTable(const toml::table* table, std::string origin, std::string name)
        : m_table(table)
        , m_origin(std::move(origin))
        , m_name(std::move(name))
    {
    }

    bool present() const { return m_table != nullptr; }
    bool has(std::string_view key) const { return m_table && m_table->contains(key); }

    std::optional<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max) const
    {
        const toml::node* n = find(key);
        if (!n)
            return std::nullopt;
        const auto* value = n->as_integer();
        if (!value)
            failAt(*n, key, cat("expected an integer, got ", typeName(*n)));
        const std::int64_t v = value->get();
        if (v < min || v > max)
            failAt(*n, key, cat("value ", v, " is outside [", min, ", ", max, "]"));
        return v;
    }

    std::optional<std::string> string(std::string_view key) const
    {
        const toml::node* n = find(key);
        if (!n)
            return std::nullopt;
        const auto* value = n->as_string();
        if (!value)
            failAt(*n, key, cat("expected a string, got ", typeName(*n)));
        return value->get();
    }

    /** A string or an integer written as text (selective_ac_option may be either in hand-written files). */
    std::optional<std::string> stringOrInteger(std::string_view key) const
    {
        const toml::node* n = find(key);
        if (n && n->as_integer())
            return cat(n->as_integer()->get());
        return string(key);
    }

    /** An array of arrays of strings (module_fqns_per_model_part); each inner list with its line. */
    std::optional<std::vector<std::pair<std::vector<std::string>, int>>> stringLists(std::string_view key) const
    {
        const toml::node* n = find(key);
        if (!n)
            return std::nullopt;
        const auto* outer = n->as_array();
        if (!outer)
            failAt(*n, key, cat("expected a list of lists of module names, got ", typeName(*n)));
        std::vector<std::pair<std::vector<std::string>, int>> lists;
        for (const toml::node& item : *outer) {
            const auto* inner = item.as_array();
            if (!inner)
                failAt(item, key, cat("expected a list of module names, got ", typeName(item)));
            std::vector<std::string> names;
            for (const toml::node& name : *inner) {
                if (!name.as_string())
                    failAt(name, key, cat("expected a module name (string), got ", typeName(name)));
                names.push_back(name.as_string()->get());
            }
            lists.emplace_back(std::move(names), lineOf(item));
        }
        return lists;
    }

    int line(std::string_view key) const
    {
        const toml::node* n = find(key);
        return n ? lineOf(*n) : 0;
    }

    /** Keys of the table, for warnings about settings that are not modelled. */
    std::vector<std::string> keys() const
    {
        std::vector<std::string> out;
        if (m_table)
            for (const auto& [key, value] : *m_table)
                out.emplace_back(key.str());
        return out;
    }

    [[noreturn]] void failKey(std::string_view key, const std::string& what, const std::string& hint = {}) const
    {
        fail(m_origin, line(key), cat(m_name, ".", key, ": ", what), hint);
    }

private:
    const toml::node* find(std::string_view key) const { return m_table ? m_table->get(key) : nullptr; }

    static int lineOf(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

    static std::string typeName(const toml::node& n)
    {
        switch (n.type()) {
        case toml::node_type::table:
            return "a table";
        case toml::node_type::array:
            return "a list";
        case toml::node_type::string:
            return "a string";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a number";
        case toml::node_type::boolean:
            return "a boolean";
        default:
            return "a date or time";
        }
    }

    [[noreturn]] void failAt(const toml::node& n, std::string_view key, const std::string& what) const
    {
        fail(m_origin, lineOf(n), cat(m_name, ".", key, ": ", what));
    }

    const toml::table* m_table;
    std::string m_origin;
    std::string m_name;
};

TomlTable tomlTable(const toml::table& root, const std::string& origin, std::string_view name)
{
    const toml::node* node = root.get(name);
    if (node && !node->as_table())
        fail(origin, static_cast<int>(node->source().begin.line), cat("[", name, "] should be a table"));
    return TomlTable(node ? node->as_table() : nullptr, origin, std::string(name));
}

struct TorchtitanSchedule
{
    ScheduleKind kind = ScheduleKind::OneFOneB;
    bool multiStage = false;
};

TorchtitanSchedule torchtitanSchedule(const std::string& name, const TomlTable& table, ImportedConfig& out)
{
    const std::string lower = toLower(name);
    if (lower == "1f1b")
        return {ScheduleKind::OneFOneB, false};
    if (lower == "gpipe")
        return {ScheduleKind::GPipe, false};
    if (lower == "interleaved1f1b")
        return {ScheduleKind::Interleaved1F1B, true};
    if (lower == "loopedbfs" || lower == "interleavedzerobubble") {
        out.warnings.push_back(cat("pipeline schedule ", name,
                                   " is simulated as interleaved 1F1B (the same looped "
                                   "placement; Shardscape's zero-bubble schedule, ZB-H1, runs one stage per rank)"));
        return {ScheduleKind::Interleaved1F1B, true};
    }
    if (lower == "zbvzerobubble")
        return {ScheduleKind::ZeroBubbleV, true};
    if (lower == "dualpipev")
        return {ScheduleKind::DualPipeV, true};
    if (lower == "pipelineschedulesingle") {
        out.warnings.push_back("a CSV pipeline schedule (PipelineScheduleSingle) is simulated as 1F1B");
        return {ScheduleKind::OneFOneB, false};
    }
    if (lower == "pipelineschedulemulti" || lower == "_pipelinescheduleruntime") {
        out.warnings.push_back(cat("a CSV pipeline schedule (", name, ") is simulated as interleaved 1F1B"));
        return {ScheduleKind::Interleaved1F1B, true};
    }
    table.failKey("pipeline_parallel_schedule", cat("unknown schedule '", name, "'"),
                  "use 1F1B, GPipe, Interleaved1F1B, LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble or DualPipeV");
}

/** torchtitan's generate_llm_fqn_per_model_part: blocks per stage with the embedding and head weighted. */
std::vector<int> torchtitanAutoSplit(int stages, int layers, int inputWeight, int outputWeight)
{
    if (stages == 1)
        return {layers};
    const int effective = layers + inputWeight + outputWeight;
    const int base = effective / stages;
    const int extra = effective % stages;
    std::vector<int> blocks;
    for (int s = 0; s < stages; ++s) {
        int n = base + (s < extra ? 1 : 0);
        if (s == 0)
            n -= inputWeight;
        if (s == stages - 1)
            n -= outputWeight;
        blocks.push_back(n);
    }
    return blocks;
}

/** Blocks per virtual stage from module_fqns_per_model_part (llama3 names: tok_embeddings, layers.N, norm, output). */
std::vector<int> blocksFromFqns(const std::vector<std::pair<std::vector<std::string>, int>>& parts,
                                const std::string& origin, ImportedConfig& out)
{
    std::vector<int> blocks;
    int next = 0;
    std::set<std::string> unknown;
    for (std::size_t s = 0; s < parts.size(); ++s) {
        const auto& [names, line] = parts[s];
        int count = 0;
        for (const auto& name : names) {
            if (startsWith(name, "layers.")) {
                const std::string digits = name.substr(7);
                if (digits.empty()
                    || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
                    fail(origin, line,
                         cat("parallelism.module_fqns_per_model_part: '", name, "' is not layers.<number>"));
                int index = 0;
                const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
                if (ec != std::errc() || end != digits.data() + digits.size() || index >= kMaxFqnLayer)
                    fail(origin, line,
                         cat("parallelism.module_fqns_per_model_part: '", name, "' is past layers.", kMaxFqnLayer - 1),
                         "no model has that many layers: check the name");
                if (index != next)
                    out.warnings.push_back(cat("module_fqns_per_model_part: ", name, " in stage ", s,
                                               " is out of order (expected layers.", next,
                                               "): simulated as consecutive layer counts"));
                next = std::max(next, index) + 1;
                ++count;
            } else if (name == "tok_embeddings") {
                if (s != 0)
                    out.warnings.push_back(cat("module_fqns_per_model_part: tok_embeddings is in stage ", s,
                                               ": Shardscape keeps the embedding on the first stage"));
            } else if (name == "norm" || name == "output") {
                if (s + 1 != parts.size())
                    out.warnings.push_back(cat("module_fqns_per_model_part: ", name, " is in stage ", s,
                                               ": Shardscape keeps the head on the last stage"));
            } else {
                unknown.insert(name);
            }
        }
        blocks.push_back(count);
    }
    if (!unknown.empty())
        out.warnings.push_back(cat("module_fqns_per_model_part: modules other than llama3's are not modelled: ",
                                   join(std::vector<std::string>(unknown.begin(), unknown.end()), ", ")));
    return blocks;
}

} // namespace

ImportedConfig importTorchtitan(std::string_view text, const std::string& origin, const ImportOptions& options)
{
    if (const auto deep = importing::findTomlNestingExcess(text))
        throw InputError(cat(origin, ":", deep->line, ":", deep->column, ": nested more than ",
                             importing::kMaxTomlNesting,
                             " levels deep (tables, dotted keys, arrays and inline tables together)"),
                         "torchtitan job configs nest two or three levels: is this the right file?");
    toml::table root;
    try {
        root = toml::parse(text, origin);
    } catch (const toml::parse_error& e) {
        const auto& where = e.source().begin;
        throw InputError(cat(origin, ":", where.line, ":", where.column, ": malformed TOML: ", e.description()),
                         "torchtitan job configs are TOML files (https://toml.io)");
    }
    ImportedConfig out;
    out.format = "torchtitan";
    ParallelConfig& c = out.config;
    c.framework = Framework::Torchtitan;

    const TomlTable model = tomlTable(root, origin, "model");
    const TomlTable training = tomlTable(root, origin, "training");
    const TomlTable parallelism = tomlTable(root, origin, "parallelism");
    const TomlTable checkpoint = tomlTable(root, origin, "activation_checkpoint");
    if (!parallelism.present() && !training.present())
        fail(origin, 0, "neither [parallelism] nor [training] is present: not a torchtitan job config");

    // [model]
    const auto modelName = model.string("name");
    const auto flavor = model.string("flavor");
    if (modelName || flavor)
        out.model_name
            = join(std::vector<std::string> {modelName.value_or("llama3"), flavor.value_or("debugmodel")}, " ");
    int numLayers = options.num_layers;
    if (numLayers == 0 && modelName.value_or("llama3") == "llama3" && flavor) {
        // torchtitan's built-in llama3 flavors.
        numLayers = *flavor == "8B" ? 32 : *flavor == "70B" ? 80 : *flavor == "405B" ? 126 : 0;
    }

    // [parallelism] degrees (torchtitan: world = dp_replicate x dp_shard x cp x tp x pp).
    const std::int64_t replicate = parallelism.integer("data_parallel_replicate_degree", 1, kMaxDegree).value_or(1);
    std::int64_t shard = parallelism.integer("data_parallel_shard_degree", -1, kMaxDegree).value_or(-1);
    if (shard == 0)
        parallelism.failKey("data_parallel_shard_degree", "value 0 is not a degree",
                            "use -1 (the leftover GPUs) or >= 1");
    c.tp = static_cast<int>(parallelism.integer("tensor_parallel_degree", 1, kMaxDegree).value_or(1));
    c.pp = static_cast<int>(parallelism.integer("pipeline_parallel_degree", 1, kMaxDegree).value_or(1));
    c.cp = static_cast<int>(parallelism.integer("context_parallel_degree", 1, kMaxDegree).value_or(1));
    c.ep = static_cast<int>(parallelism.integer("expert_parallel_degree", 1, kMaxDegree).value_or(1));
    if (shard == -1) {
        const std::int64_t others = replicate * c.cp * c.tp * c.pp;
        if (options.world_size <= 0)
            parallelism.failKey("data_parallel_shard_degree", "-1 (the leftover GPUs) needs the job's world size",
                                "give the cluster's size (--nodes, --gpus-per-node) or write the degree");
        if (options.world_size % others)
            parallelism.failKey(
                "data_parallel_shard_degree",
                cat("-1: the ", options.world_size, " GPUs do not divide by dp_replicate x cp x tp x pp = ", others));
        shard = options.world_size / others;
        out.warnings.push_back(
            cat("data_parallel_shard_degree = -1 resolved to ", shard, " on ", options.world_size, " GPUs"));
    }
    if (replicate * shard > kMaxDegree)
        parallelism.failKey("data_parallel_shard_degree", "dp_replicate x dp_shard is too large");
    c.dp = static_cast<int>(replicate * shard);

    // ZeRO: DDP (replicate only) is ZeRO-0; FSDP2 (shard, or any CP) is ZeRO-3, or ZeRO-2-like without resharding.
    const std::string reshard = parallelism.string("fsdp_reshard_after_forward").value_or("default");
    if (reshard != "default" && reshard != "always" && reshard != "never")
        parallelism.failKey("fsdp_reshard_after_forward", cat("unknown policy '", reshard, "'"),
                            "use \"default\", \"always\" or \"never\"");
    const bool fsdp = shard > 1 || c.cp > 1;
    if (fsdp) {
        c.zero_stage = reshard == "always" ? 3 : reshard == "never" ? 2 : c.pp > 1 ? 2 : 3;
        if (c.zero_stage == 2)
            out.warnings.push_back("FSDP2 without resharding after forward is simulated as ZeRO-2 (parameters stay "
                                   "gathered from forward to backward)");
        if (replicate > 1)
            c.zero_ngroups = static_cast<int>(replicate); // HSDP: shard within dp / replicate ranks
    }
    c.sequence_parallel = c.tp > 1; // torchtitan's TP always shards activations along the sequence
    // Async TP (v0.2.x [parallelism]; [experimental] before) and Float8 linears (v0.2.x converters; [float8] before).
    const bool asyncTp = root["parallelism"]["enable_async_tensor_parallel"].value_or(false)
        || root["experimental"]["enable_async_tensor_parallel"].value_or(false);
    c.tp_comm_overlap = asyncTp && c.sequence_parallel;
    if (const toml::array* converters = root["model"]["converters"].as_array())
        for (const auto& converter : *converters)
            if (converter.value_or(std::string_view {}).find("float8") != std::string_view::npos)
                c.fp8_linears = true;
    if (root["float8"]["enable_float8_linear"].value_or(false))
        c.fp8_linears = true;
    // recipe_name ([quantize.linear.float8] in v0.2.x, [float8] before): absent = tensorwise.
    auto recipeName = root["quantize"]["linear"]["float8"]["recipe_name"].value<std::string>();
    if (!recipeName)
        recipeName = root["float8"]["recipe_name"].value<std::string>();
    if (recipeName && *recipeName != "tensorwise") {
        if (*recipeName == "rowwise")
            c.fp8_recipe = Float8Recipe::Rowwise;
        else
            out.warnings.push_back(
                cat("float8 recipe_name \"", *recipeName, "\" is not modelled: simulated as tensorwise scaling"));
    }
    // Without [compile] enable (v0.2.x; [training] compile before) the job runs eager PyTorch.
    c.eager_kernels = !(root["compile"]["enable"].value_or(false) || root["training"]["compile"].value_or(false));
    // v0.2.x compiles the components listed in [compile] components (default ["model", "loss"]); the simulation
    // compiles both or neither, and the loss is the one that moves memory (framework_profile.cpp).
    if (const toml::array* components = root["compile"]["components"].as_array(); components && !c.eager_kernels) {
        const auto lists = [&](std::string_view name) {
            return std::any_of(components->begin(), components->end(),
                               [&](const toml::node& n) { return n.value_or(std::string_view {}) == name; });
        };
        if (!lists("loss"))
            out.warnings.push_back("compile components leave out \"loss\": torchtitan then runs the cross-entropy "
                                   "eagerly (an fp32 log-softmax saved, 8 B per logit at its backward), but it is "
                                   "simulated compiled (2 B saved, 2 B working), so peak memory is under-predicted by "
                                   "about 8 B per logit; add \"loss\" to [compile] components");
        if (!lists("model"))
            out.warnings.push_back("compile components leave out \"model\": the blocks run eagerly, but they are "
                                   "simulated compiled (fused elementwise kernels)");
    }
    const std::int64_t etp = parallelism.integer("expert_tensor_parallel_degree", 1, kMaxDegree).value_or(1);
    if (c.ep > 1 && etp != c.tp)
        c.etp = static_cast<int>(etp);

    // Pipeline schedule and stages.
    const std::string scheduleName = parallelism.string("pipeline_parallel_schedule").value_or("1F1B");
    const TorchtitanSchedule schedule = torchtitanSchedule(scheduleName, parallelism, out);
    if (!parallelism.string("pipeline_parallel_schedule_csv").value_or("").empty())
        out.warnings.push_back("pipeline_parallel_schedule_csv: a CSV schedule is not simulated as written");
    const auto fqns = parallelism.stringLists("module_fqns_per_model_part");
    const auto layersPerStage = parallelism.integer("pipeline_parallel_layers_per_stage", 1, kMaxDegree);
    const int firstLess
        = static_cast<int>(parallelism.integer("pipeline_parallel_first_stage_less_layers", 0, kMaxDegree).value_or(1));
    const int lastLess
        = static_cast<int>(parallelism.integer("pipeline_parallel_last_stage_less_layers", 0, kMaxDegree).value_or(1));
    std::vector<int> blocks;
    int stages = c.pp * (schedule.multiStage ? 2 : 1);
    if (c.pp > 1 && fqns) {
        stages = static_cast<int>(fqns->size());
        blocks = blocksFromFqns(*fqns, origin, out);
    } else if (c.pp > 1 && layersPerStage) {
        if (numLayers == 0)
            parallelism.failKey("pipeline_parallel_layers_per_stage",
                                "the stage count depends on the model's layer count, which this file does not give",
                                "pass the model (--model) so its layers are known");
        stages = static_cast<int>((numLayers + firstLess + lastLess + *layersPerStage - 1) / *layersPerStage);
    }
    if (c.pp > 1) {
        const std::string_view key = fqns ? "module_fqns_per_model_part" : "pipeline_parallel_schedule";
        if (stages % c.pp)
            parallelism.failKey(key,
                                cat(stages, " stages do not divide among pipeline_parallel_degree = ", c.pp, " ranks"));
        c.vpp = stages / c.pp;
        if (!schedule.multiStage && c.vpp != 1)
            parallelism.failKey(
                key,
                cat(scheduleName, " runs one stage per rank, but there are ", stages, " stages for ", c.pp, " ranks"));
        if (schedule.multiStage && c.vpp < 2)
            parallelism.failKey(key,
                                cat(scheduleName, " needs two or more stages per rank, but there are ", stages,
                                    " stages for ", c.pp, " ranks"));
        if (isVShaped(schedule.kind) && c.vpp != 2)
            parallelism.failKey(key,
                                cat(scheduleName, " places exactly two stages per rank in a V, but there are ", stages,
                                    " stages for ", c.pp, " ranks"));
        c.schedule = schedule.kind;
        if (blocks.empty() && numLayers > 0) {
            if (numLayers + firstLess + lastLess < stages)
                parallelism.failKey(key, cat(stages, " stages for ", numLayers, " layers"));
            blocks = torchtitanAutoSplit(stages, numLayers, firstLess, lastLess);
        }
        int listed = 0;
        for (const int n : blocks)
            listed += n;
        if (fqns && options.num_layers > 0 && listed != options.num_layers)
            out.warnings.push_back(cat("module_fqns_per_model_part lists ", listed,
                                       " transformer blocks, but the model has ", options.num_layers));
        if (blocks.empty())
            out.warnings.push_back("the stage split is torchtitan's automatic one, which depends on the model's layer "
                                   "count: simulated with Shardscape's default split");
        else
            c.stage_layers = importing::stageLayersFromBlocks(blocks);
    }

    // [training] batch: local_batch_size per DP rank per step (split into micro-batches of
    // pipeline_parallel_microbatch_size with PP), gradient accumulation = global / (local x dp).
    if (!training.has("local_batch_size"))
        out.warnings.push_back("training.local_batch_size not set: torchtitan's default 8");
    const std::int64_t local = training.integer("local_batch_size", 1, kMaxBatch).value_or(8);
    std::int64_t global = training.integer("global_batch_size", -1, kMaxBatch).value_or(-1);
    if (global == 0)
        training.failKey("global_batch_size", "value 0 is not a batch", "use -1 (local x dp) or a positive size");
    if (global == -1)
        global = local * c.dp;
    if (global % (local * c.dp))
        training.failKey("global_batch_size",
                         cat("value ", global, " is not a multiple of local_batch_size x dp = ", local, " x ", c.dp,
                             " (gradient accumulation must be whole)"));
    const std::int64_t accumulation = global / (local * c.dp);
    std::int64_t micro = local;
    std::int64_t perSchedule = 1;
    if (c.pp > 1) {
        micro = parallelism.integer("pipeline_parallel_microbatch_size", 1, kMaxBatch).value_or(1);
        if (local % micro)
            parallelism.failKey("pipeline_parallel_microbatch_size",
                                cat("value ", micro, " does not divide training.local_batch_size = ", local));
        perSchedule = local / micro;
        if (accumulation > 1)
            out.warnings.push_back(cat("torchtitan runs the pipeline schedule ", accumulation,
                                       " times per step (gradient accumulation), each with ", perSchedule,
                                       " micro-batches: simulated as one schedule of ", perSchedule * accumulation));
    }
    if (micro > std::numeric_limits<int>::max() || perSchedule * accumulation > std::numeric_limits<int>::max())
        training.failKey("local_batch_size", "too many sequences per step");
    c.micro_batch = static_cast<int>(micro);
    c.num_microbatches = static_cast<int>(perSchedule * accumulation);
    out.global_batch = global;
    if (training.has("seq_len")) {
        out.seq_len = *training.integer("seq_len", 1, kMaxSeqLen);
    } else {
        out.seq_len = 2048;
        out.warnings.push_back("training.seq_len not set: torchtitan's default 2048");
    }

    // [activation_checkpoint]
    const std::string mode = checkpoint.string("mode").value_or("selective");
    const std::string option = checkpoint.stringOrInteger("selective_ac_option").value_or("2");
    if (mode == "none") {
        c.recompute = RecomputeKind::None;
    } else if (mode == "full") {
        c.recompute = RecomputeKind::Full;
    } else if (mode == "selective") {
        if (option == "op") {
            // Selective recomputation under the torchtitan profile is its per-op policy (layer_cost.cpp).
            c.recompute = RecomputeKind::Selective;
        } else if (!option.empty()
                   && std::all_of(option.begin(), option.end(), [](unsigned char ch) { return std::isdigit(ch); })) {
            // Every k-th block of each pipeline rank, counted over its stages (importing::torchtitanLayerSac); a k
            // past any rank's block count checkpoints none.
            const std::string digits = option.substr(std::min(option.find_first_not_of('0'), option.size()));
            const int every = digits.size() > 9 ? std::numeric_limits<int>::max() : std::atoi(option.c_str());
            const std::vector<int> stageBlocks
                = c.pp > 1 ? blocks : (numLayers > 0 ? std::vector<int> {numLayers} : std::vector<int> {});
            const int total = std::accumulate(stageBlocks.begin(), stageBlocks.end(), 0);
            std::vector<std::string> checkpointed;
            if (!stageBlocks.empty())
                checkpointed = importing::torchtitanLayerSac(stageBlocks, c.pp, isVShaped(c.schedule), every);
            c.recompute = stageBlocks.empty() || static_cast<int>(checkpointed.size()) == total ? RecomputeKind::Full
                : checkpointed.empty()                                                          ? RecomputeKind::None
                                       : RecomputeKind::Modules;
            if (c.recompute == RecomputeKind::Modules)
                c.recompute_modules = std::move(checkpointed);
            if (stageBlocks.empty() && every > 1)
                out.warnings.push_back(cat("selective_ac_option = \"", option, "\" checkpoints every ", option,
                                           "th block, which needs the model's layer count: simulated as full "
                                           "recomputation of every block (pass --model)"));
        } else {
            checkpoint.failKey("selective_ac_option", cat("unknown option '", option, "'"),
                               "use \"op\" or a positive integer");
        }
    } else if (mode == "memory_budget") {
        c.recompute = RecomputeKind::Selective;
        out.warnings.push_back(
            "activation_checkpoint.mode = \"memory_budget\" is simulated as selective recomputation");
    } else {
        checkpoint.failKey("mode", cat("unknown mode '", mode, "'"),
                           "use \"none\", \"selective\", \"full\" or \"memory_budget\"");
    }

    static const std::set<std::string> kModelled {"data_parallel_replicate_degree",
                                                  "data_parallel_shard_degree",
                                                  "fsdp_reshard_after_forward",
                                                  "tensor_parallel_degree",
                                                  "pipeline_parallel_degree",
                                                  "context_parallel_degree",
                                                  "expert_parallel_degree",
                                                  "expert_tensor_parallel_degree",
                                                  "pipeline_parallel_schedule",
                                                  "pipeline_parallel_schedule_csv",
                                                  "pipeline_parallel_microbatch_size",
                                                  "pipeline_parallel_layers_per_stage",
                                                  "pipeline_parallel_first_stage_less_layers",
                                                  "pipeline_parallel_last_stage_less_layers",
                                                  "module_fqns_per_model_part"};
    for (const auto& key : parallelism.keys())
        if (!kModelled.count(key))
            out.warnings.push_back(cat("parallelism.", key, " is not modelled"));
    return out;
}

} // namespace shardscape::importing
