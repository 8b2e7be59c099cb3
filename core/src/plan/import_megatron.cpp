// SPDX-License-Identifier: MIT
// Megatron-LM launch scripts read back: the torchrun line's --nnodes/--nproc-per-node and the arguments after
// pretrain_gpt.py (the script's bash is read by bash_script.cpp), mapped with the rules of
// megatron/training/arguments.py (validate_args). A value that needs command substitution or arithmetic is
// reported, not guessed.
#include "import_megatron.h"
#include "bash_script.h"
#include "import_helpers.h"
#include "megatron_args.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace shardscape::importing {

namespace {

using Token = ScriptToken;

constexpr std::int64_t kMaxLayers = 1'000'000;
constexpr int kMaxLayoutDepth = 16;
constexpr std::int64_t kMaxSize = std::int64_t {1} << 40;

// ---- Megatron arguments --------------------------------------------------------------------------------------

/** The layout's virtual stages as strings of E, t, m and L (repetitions expanded, commas and spaces dropped). */
std::vector<std::string> parseLayout(const std::string& layout, const MegatronArgs& args)
{
    const std::string flag = "--pipeline-model-parallel-layout";
    std::size_t i = 0;
    int depth = 0;
    std::function<std::string()> sequence = [&]() -> std::string {
        std::string out;
        while (i < layout.size() && layout[i] != ')') {
            std::string unit;
            const char ch = layout[i];
            if (ch == '(') {
                // Bounded so that a file of '(' cannot exhaust the stack; real layouts nest once or twice.
                if (++depth > kMaxLayoutDepth)
                    args.failFlag(flag, cat("the layout nests parentheses more than ", kMaxLayoutDepth, " deep"));
                ++i;
                unit = sequence();
                --depth;
                if (i >= layout.size() || layout[i] != ')')
                    args.failFlag(flag, "unbalanced '(' in the layout");
                ++i;
            } else if (std::string_view("EtmL|").find(ch) != std::string_view::npos) {
                unit = std::string(1, ch);
                ++i;
            } else if (ch == ',' || ch == ' ' || ch == '"' || ch == '\'') {
                ++i;
                continue;
            } else {
                args.failFlag(flag, cat("unexpected '", ch, "' in the layout"),
                              "use E (embedding), t (decoder layer), m (MTP layer), L (loss), | between stages, "
                              "(...)*n to repeat");
            }
            if (i < layout.size() && layout[i] == '*') {
                ++i;
                std::size_t end = i;
                while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end])))
                    ++end;
                if (end == i || end - i > 6)
                    args.failFlag(flag, "'*' must be followed by a repeat count");
                const int count = std::stoi(layout.substr(i, end - i)); // at most 6 digits: fits
                // Checked before expanding: (t*999999)*999999 would otherwise build a 1e12-character string.
                if (static_cast<double>(count) * static_cast<double>(unit.size()) + static_cast<double>(out.size())
                    > static_cast<double>(kMaxLayers))
                    args.failFlag(flag, cat("the layout is too long (over ", kMaxLayers, " entries once expanded)"));
                std::string repeated;
                for (int k = 0; k < count; ++k)
                    repeated += unit;
                unit = std::move(repeated);
                i = end;
            }
            out += unit;
            if (out.size() > static_cast<std::size_t>(kMaxLayers))
                args.failFlag(flag, "the layout is too long");
        }
        return out;
    };
    const std::string flat = sequence();
    if (i != layout.size())
        args.failFlag(flag, "unbalanced ')' in the layout");
    std::vector<std::string> stages;
    std::size_t start = 0;
    for (;;) {
        const auto bar = flat.find('|', start);
        stages.push_back(flat.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
        if (bar == std::string::npos)
            break;
        start = bar + 1;
    }
    return stages;
}

/** torchrun / torch.distributed.run / deepspeed launcher options before the script. */
void readLauncher(const std::vector<Token>& launcher, ImportedConfig& out)
{
    std::string program;
    std::map<std::string, std::string> options;
    for (std::size_t i = 0; i < launcher.size(); ++i) {
        const std::string& t = launcher[i].text;
        if (!startsWith(t, "--")) {
            if (program.empty() || t == "torch.distributed.run" || t == "torch.distributed.launch")
                program = t;
            continue;
        }
        const auto eq = t.find('=');
        std::string name = t.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
        std::replace(name.begin(), name.end(), '_', '-');
        if (eq != std::string::npos)
            options[name] = t.substr(eq + 1);
        else if (i + 1 < launcher.size() && !startsWith(launcher[i + 1].text, "--"))
            options[name] = launcher[++i].text;
        else
            options[name] = "";
    }
    const auto number = [&](const std::string& key) -> int {
        const auto it = options.find(key);
        if (it == options.end())
            return 0;
        std::string text = it->second;
        if (const auto colon = text.find(':'); colon != std::string::npos) {
            out.warnings.push_back(cat("--", key, " ", text, " is elastic: simulated with its maximum"));
            text = text.substr(colon + 1);
        }
        int value = 0;
        const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
        if (result.ec != std::errc() || result.ptr != text.data() + text.size() || value < 1) {
            out.warnings.push_back(cat("--", key, " '", it->second, "' is not a count"));
            return 0;
        }
        return value;
    };
    out.nodes = number("nnodes");
    out.gpus_per_node = number("nproc-per-node");
    if (out.nodes == 0)
        out.nodes = number("num-nodes"); // the deepspeed launcher
    if (out.gpus_per_node == 0)
        out.gpus_per_node = number("num-gpus");
    if (out.gpus_per_node > 0 && out.nodes == 0 && (endsWith(program, "torchrun") || startsWith(program, "torch.")))
        out.nodes = 1; // torchrun's default --nnodes is 1
}

/** Blocks per virtual stage by Megatron's rules for the given split flags. */
std::vector<int> megatronBlocks(const MegatronArgs& args, int layers, int pp, int& vpp, ImportedConfig& out)
{
    const bool perStage = args.has("--num-layers-per-virtual-pipeline-stage");
    const bool perRank = args.has("--num-virtual-stages-per-pipeline-rank");
    const bool layout = args.has("--pipeline-model-parallel-layout");
    if (int {perStage} + int {perRank} + int {layout} > 1)
        args.failFlag(perStage ? "--num-layers-per-virtual-pipeline-stage" : "--num-virtual-stages-per-pipeline-rank",
                      "give only one of --num-layers-per-virtual-pipeline-stage, "
                      "--num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout");
    if (layout) {
        const auto stages = parseLayout(*args.string("--pipeline-model-parallel-layout"), args);
        const int count = static_cast<int>(stages.size());
        if (count % pp)
            args.failFlag("--pipeline-model-parallel-layout",
                          cat(count, " stages do not divide among --pipeline-model-parallel-size ", pp));
        vpp = count / pp;
        std::vector<int> blocks;
        int total = 0;
        for (int s = 0; s < count; ++s) {
            const std::string& stage = stages[static_cast<std::size_t>(s)];
            const int t = static_cast<int>(std::count(stage.begin(), stage.end(), 't'));
            blocks.push_back(t);
            total += t;
            if (stage.find('m') != std::string::npos)
                out.warnings.push_back("multi-token prediction layers (m) in the layout are not modelled");
            if ((stage.find('E') != std::string::npos && s != 0)
                || (stage.find('L') != std::string::npos && s + 1 != count))
                out.warnings.push_back("the layout puts the embedding or the loss away from the first or last stage: "
                                       "Shardscape keeps them there");
        }
        if (total != layers)
            args.failFlag("--pipeline-model-parallel-layout",
                          cat("the layout has ", total, " decoder layers, but --num-layers is ", layers));
        return blocks;
    }
    if (perStage) {
        const std::int64_t n = *args.integer("--num-layers-per-virtual-pipeline-stage", 1, kMaxLayers);
        if (layers % pp || (layers / pp) % n)
            args.failFlag(
                "--num-layers-per-virtual-pipeline-stage",
                cat("--num-layers ", layers, " / --pipeline-model-parallel-size ", pp, " is not a multiple of ", n));
        vpp = static_cast<int>(layers / pp / n);
    } else if (perRank) {
        vpp = static_cast<int>(*args.integer("--num-virtual-stages-per-pipeline-rank", 1, kMaxLayers));
    }
    if (vpp > 1 && pp == 1)
        args.failFlag(perStage ? "--num-layers-per-virtual-pipeline-stage" : "--num-virtual-stages-per-pipeline-rank",
                      "virtual pipeline stages need --pipeline-model-parallel-size 2 or more");
    const int stages = pp * vpp;
    const auto first = args.integer("--decoder-first-pipeline-num-layers", 0, kMaxLayers);
    const auto last = args.integer("--decoder-last-pipeline-num-layers", 0, kMaxLayers);
    if (first || last) {
        // The given ranks take their counts, the others share the rest evenly; each rank spreads over its chunks.
        std::vector<std::int64_t> perRankLayers(static_cast<std::size_t>(pp), -1);
        std::int64_t rest = layers;
        int others = pp;
        if (first) {
            perRankLayers.front() = *first;
            rest -= *first;
            --others;
        }
        if (last && pp > 1) {
            perRankLayers.back() = *last;
            rest -= *last;
            --others;
        }
        const std::string flag = first ? "--decoder-first-pipeline-num-layers" : "--decoder-last-pipeline-num-layers";
        if (rest < 0 || (others == 0 && rest != 0) || (others > 0 && rest % others))
            args.failFlag(flag,
                          cat("the other ", others, " pipeline ranks cannot share the remaining ", rest,
                              " of --num-layers ", layers, " evenly"));
        for (auto& n : perRankLayers)
            if (n < 0)
                n = others > 0 ? rest / others : 0;
        std::vector<int> blocks(static_cast<std::size_t>(stages), 0);
        for (int r = 0; r < pp; ++r) {
            if (perRankLayers[static_cast<std::size_t>(r)] % vpp)
                args.failFlag(flag,
                              cat("pipeline rank ", r, "'s ", perRankLayers[static_cast<std::size_t>(r)],
                                  " layers do not divide into ", vpp, " virtual stages"));
            for (int k = 0; k < vpp; ++k)
                blocks[static_cast<std::size_t>(k * pp + r)]
                    = static_cast<int>(perRankLayers[static_cast<std::size_t>(r)] / vpp);
        }
        return blocks;
    }
    // Even: the embedding and loss count as layers only with the account-for flags.
    const int embedding = args.has("--account-for-embedding-in-pipeline-split") ? 1 : 0;
    const int loss = args.has("--account-for-loss-in-pipeline-split") ? 1 : 0;
    const int effective = layers + embedding + loss;
    if (effective % stages)
        args.failFlag("--num-layers",
                      cat(layers, embedding + loss ? " layers (with the embedding and loss counted)" : " layers",
                          " do not divide into pp x vpp = ", stages, " stages"),
                      "Megatron needs an even split, or --decoder-first/last-pipeline-num-layers");
    std::vector<int> blocks(static_cast<std::size_t>(stages), effective / stages);
    blocks.front() -= embedding;
    blocks.back() -= loss;
    return blocks;
}

/** The recomputation the arguments ask for; `chunkBlocks` holds the decoder layers of each model chunk in layer order
    (empty when --num-layers is not given). */
std::optional<RecomputeKind> recomputeFrom(const MegatronArgs& args, ParallelConfig& c, ImportedConfig& out,
                                           const std::vector<int>& chunkBlocks)
{
    std::optional<std::string> granularity = args.string("--recompute-granularity");
    if (!granularity && args.has("--recompute-activations"))
        granularity = "selective";
    if (!granularity)
        return RecomputeKind::None;
    if (*granularity == "full") {
        const std::string method = args.string("--recompute-method").value_or("uniform");
        const std::int64_t n = args.integer("--recompute-num-layers", 1, kMaxLayers).value_or(1);
        if (method != "uniform" && method != "block")
            args.failFlag("--recompute-method", cat("unknown method '", method, "'"), "use uniform or block");
        if (method == "block") {
            // Each model chunk recomputes its first n layers whole and keeps the others' activations.
            std::vector<std::string> blocks = megatronBlockRecompute(chunkBlocks, n);
            if (!blocks.empty()) {
                c.recompute_modules = std::move(blocks);
                return RecomputeKind::Modules;
            }
            if (chunkBlocks.empty())
                out.warnings.push_back(cat("--recompute-method block --recompute-num-layers ", n,
                                           " without --num-layers: simulated as full recomputation of every layer"));
        } else if (n != 1) {
            // Uniform groups of n layers recompute every layer and keep one input per group.
            out.warnings.push_back(cat("--recompute-method uniform --recompute-num-layers ", n,
                                       " keeps one layer input per ", n,
                                       " layers: simulated as full recomputation keeping every layer's input"));
        }
        return RecomputeKind::Full;
    }
    if (*granularity != "selective")
        args.failFlag("--recompute-granularity", cat("unknown granularity '", *granularity, "'"),
                      "use full or selective");
    std::vector<std::string> modules = args.list("--recompute-modules");
    if (modules.empty() || (modules.size() == 1 && modules.front() == "core_attn"))
        return RecomputeKind::Selective;
    std::vector<std::string> unmodelled;
    for (const auto& m : modules) {
        if (m == "mlp" || m == "moe") {
            // "moe" is the MoE layers' MLP block: HF's "mlp" (DeepSeek, Qwen MoE) or Mixtral's "block_sparse_moe".
            if (std::find(c.recompute_modules.begin(), c.recompute_modules.end(), "mlp") == c.recompute_modules.end())
                c.recompute_modules.push_back("mlp");
            if (m == "moe")
                c.recompute_modules.push_back("block_sparse_moe");
        } else if (m == "layernorm") {
            c.recompute_modules.push_back("input_layernorm");
            c.recompute_modules.push_back("post_attention_layernorm");
        } else if (m != "core_attn") {
            unmodelled.push_back(m);
        }
    }
    if (std::find(modules.begin(), modules.end(), "core_attn") != modules.end())
        out.warnings.push_back("--recompute-modules core_attn with other modules: the attention core is not a "
                               "module of Shardscape's graphs and is not recomputed");
    if (!unmodelled.empty())
        out.warnings.push_back(cat("--recompute-modules ", join(unmodelled, " "), " are not modelled"));
    if (c.recompute_modules.empty())
        return RecomputeKind::None;
    return RecomputeKind::Modules;
}

/** Whether the script says it is for a Megatron-LM whose NullTokenizer adds an end-of-document token beyond
    --vocab-size (up to core_v0.17): Shardscape's export header names its release, and exports before the release
    line was named said so in words. Otherwise the current rule holds: the vocabulary is --vocab-size. */
bool scriptTargetsOldNullTokenizer(std::string_view text)
{
    static const std::regex release(R"(Framework version: megatron-core core_v0\.1[5-7]\b)");
    return std::regex_search(text.begin(), text.end(), release)
        || text.find("NullTokenizer adds an end-of-document token") != std::string_view::npos;
}

TransformerShape modelFrom(const MegatronArgs& args, bool nullTokenizerAddsEod)
{
    TransformerShape t;
    t.family = "megatron";
    t.num_layers = *args.integer("--num-layers", 1, kMaxLayers);
    t.hidden = *args.integer("--hidden-size", 1, kMaxSize);
    t.num_heads = *args.integer("--num-attention-heads", 1, kMaxSize);
    t.num_kv_heads = args.has("--group-query-attention") ? args.integer("--num-query-groups", 1, kMaxSize).value_or(1)
                                                         : t.num_heads;
    t.head_dim = args.integer("--kv-channels", 1, kMaxSize).value_or(t.hidden / t.num_heads);
    t.gated_mlp = args.has("--swiglu");
    // Megatron's default FFN size (validate_args).
    const std::int64_t defaultFfn = t.gated_mlp ? (4 * t.hidden * 2 / 3) / 64 * 64 : 4 * t.hidden;
    t.ffn_hidden = args.integer("--ffn-hidden-size", 1, kMaxSize).value_or(defaultFfn);
    if (const auto moe = args.integer("--moe-ffn-hidden-size", 1, kMaxSize))
        t.ffn_hidden = *moe;
    t.num_experts = args.integer("--num-experts", 0, kMaxSize).value_or(0);
    t.top_k = t.num_experts > 0 ? args.integer("--moe-router-topk", 1, kMaxSize).value_or(2) : 0;
    std::int64_t vocab = args.integer("--vocab-size", 1, kMaxSize).value_or(0);
    if (vocab > 0 && args.string("--tokenizer-type").value_or("") == "NullTokenizer" && nullTokenizerAddsEod)
        ++vocab; // NullTokenizer added an end-of-document token up to core_v0.17
    t.vocab = vocab;
    const std::int64_t seq = args.integer("--seq-length", 1, kMaxSize).value_or(0);
    t.max_positions = args.integer("--max-position-embeddings", 1, kMaxSize).value_or(seq);
    t.norm = args.string("--normalization").value_or("LayerNorm") == "RMSNorm" ? "rmsnorm" : "layernorm";
    t.learned_positions = args.string("--position-embedding-type").value_or("learned_absolute") == "learned_absolute";
    t.tied_embeddings = !args.has("--untie-embeddings-and-output-weights");
    t.dropout = args.number("--hidden-dropout").value_or(0.1);
    // --transformer-impl (TransformerConfig.transformer_impl, default transformer_engine): "local" builds the layer
    // from get_gpt_layer_local_spec (megatron/core/models/gpt/gpt_layer_specs.py), whose core attention is
    // DotProductAttention (megatron/core/transformer/dot_product_attention.py): baddbmm scores, the
    // scale-mask-softmax, bmm with the values, the s x s probabilities saved for backward. Transformer Engine's
    // DotProductAttention runs a fused flash kernel.
    const std::string impl = args.string("--transformer-impl").value_or("transformer_engine");
    if (impl != "transformer_engine" && impl != "local" && impl != "inference_optimized")
        args.failFlag("--transformer-impl", cat("unknown implementation '", impl, "'"),
                      "use transformer_engine (the default) or local");
    t.flash_attention = impl != "local";
    t.masked_softmax_fusion = !args.has("--no-masked-softmax-fusion");
    return t;
}

} // namespace

ImportedConfig importMegatron(std::string_view text, std::string_view originView, const ImportOptions& options)
{
    const std::string origin(originView);
    ImportedConfig out;
    out.format = "megatron";

    std::vector<Token> launcher;
    std::vector<Token> arguments;
    bool found = false;
    for (const std::vector<Token>& tokens : expandedCommands(text, origin)) {
        if (found)
            break;
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            const std::string& t = tokens[i].text;
            const auto slash = t.find_last_of('/');
            const std::string base = slash == std::string::npos ? t : t.substr(slash + 1);
            if (startsWith(base, "pretrain_") && endsWith(base, ".py")) {
                if (base != "pretrain_gpt.py")
                    out.warnings.push_back(cat(base, " is read as pretrain_gpt.py"));
                launcher.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(i));
                arguments.assign(tokens.begin() + static_cast<std::ptrdiff_t>(i) + 1, tokens.end());
                found = true;
                break;
            }
        }
    }
    if (!found)
        fail(origin, 0, "no pretrain_gpt.py command: not a Megatron-LM launch script",
             "export one with shardscape-cli export --format megatron");
    readLauncher(launcher, out);
    const MegatronArgs args(arguments, origin, out.warnings);
    ParallelConfig& c = out.config;
    c.framework = Framework::MegatronCore;

    c.tp = static_cast<int>(args.integer("--tensor-model-parallel-size", 1, kMaxDegree).value_or(1));
    c.pp = static_cast<int>(args.integer("--pipeline-model-parallel-size", 1, kMaxDegree).value_or(1));
    c.cp = static_cast<int>(args.integer("--context-parallel-size", 1, kMaxDegree).value_or(1));
    c.ep = static_cast<int>(args.integer("--expert-model-parallel-size", 1, kMaxDegree).value_or(1));
    if (const auto etp = args.integer("--expert-tensor-parallel-size", 1, kMaxDegree))
        c.etp = static_cast<int>(*etp) == c.tp ? 0 : static_cast<int>(*etp);

    // DP = world / (TP x PP x CP); the world comes from the launcher.
    std::int64_t world = std::int64_t {out.nodes} * out.gpus_per_node;
    if (world == 0) {
        if (options.world_size <= 0)
            fail(origin, 0,
                 "the launcher line does not give --nnodes and --nproc-per-node, so the world size is "
                 "unknown",
                 "add them to the torchrun line or give the cluster's size (--nodes, --gpus-per-node)");
        world = options.world_size;
        out.warnings.push_back(cat("the script does not give the world size: ", world, " GPUs assumed"));
    }
    const std::int64_t modelParallel = std::int64_t {c.tp} * c.pp * c.cp;
    if (world % modelParallel)
        args.failFlag(args.has("--context-parallel-size") ? "--context-parallel-size" : "--tensor-model-parallel-size",
                      cat("the ", world, " GPUs do not divide by TP x PP x CP = ", modelParallel));
    c.dp = static_cast<int>(world / modelParallel);

    // Batch: num_microbatches = global / (micro x DP).
    const auto micro = args.integer("--micro-batch-size", 1, kMaxBatch);
    if (!micro)
        fail(origin, 0, "--micro-batch-size is missing", "Megatron needs it; add --micro-batch-size 1");
    const std::int64_t perStep = *micro * c.dp;
    const std::int64_t global = args.integer("--global-batch-size", 1, kMaxBatch).value_or(perStep);
    if (global % perStep)
        args.failFlag("--global-batch-size",
                      cat("value ", global, " is not a multiple of micro-batch x DP = ", *micro, " x ", c.dp));
    if (args.has("--rampup-batch-size"))
        out.warnings.push_back("--rampup-batch-size: simulated at the full global batch");
    if (global / perStep > std::numeric_limits<int>::max() || *micro > std::numeric_limits<int>::max())
        args.failFlag("--global-batch-size", "too many micro-batches");
    c.micro_batch = static_cast<int>(*micro);
    c.num_microbatches = static_cast<int>(global / perStep);
    out.global_batch = global;

    // Pipeline split (blocks per virtual stage) and VPP.
    int vpp = 1;
    std::vector<int> chunkBlocks;
    if (c.pp > 1 || args.has("--pipeline-model-parallel-layout")) {
        if (!args.has("--num-layers"))
            fail(origin, 0, "--num-layers is missing", "Megatron needs it to split the layers into stages");
        const int layers = static_cast<int>(*args.integer("--num-layers", 1, kMaxLayers));
        chunkBlocks = megatronBlocks(args, layers, c.pp, vpp, out);
        c.stage_layers = stageLayersFromBlocks(chunkBlocks);
    } else if (const auto layers = args.integer("--num-layers", 1, kMaxLayers)) {
        chunkBlocks = {static_cast<int>(*layers)};
    }
    c.vpp = vpp;
    c.schedule = vpp > 1 ? ScheduleKind::Interleaved1F1B : ScheduleKind::OneFOneB;
    if (args.has("--microbatch-group-size-per-virtual-pipeline-stage"))
        out.warnings.push_back("--microbatch-group-size-per-virtual-pipeline-stage is not modelled (groups of pp)");

    c.sequence_parallel = args.has("--sequence-parallel") && c.tp > 1;
    if (args.has("--sequence-parallel") && c.tp == 1)
        out.warnings.push_back("--sequence-parallel with TP 1: Megatron disables it, and so does the simulation");

    // ZeRO: the distributed optimizer is ZeRO-1; Megatron-FSDP's strategies are ZeRO 0 to 3; torch FSDP2 is ZeRO-3.
    if (args.has("--use-megatron-fsdp") || args.has("--use-custom-fsdp")) {
        const std::string strategy = args.string("--data-parallel-sharding-strategy").value_or("no_shard");
        const std::map<std::string, int> stages {
            {"no_shard", 0}, {"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}};
        const auto it = stages.find(strategy);
        if (it == stages.end())
            args.failFlag("--data-parallel-sharding-strategy", cat("unknown strategy '", strategy, "'"),
                          "use no_shard, optim, optim_grads or optim_grads_params");
        c.zero_stage = it->second;
    } else if (args.has("--use-torch-fsdp2")) {
        c.zero_stage = 3;
    } else if (args.has("--use-distributed-optimizer")) {
        c.zero_stage = 1;
    }
    if (const auto instances = args.integer("--num-distributed-optimizer-instances", 1, kMaxDegree)) {
        if ((std::int64_t {c.dp} * c.cp) % *instances)
            args.failFlag("--num-distributed-optimizer-instances",
                          cat("value ", *instances, " does not divide DP x CP = ", c.dp * c.cp));
        if (c.zero_stage > 0)
            c.zero_ngroups = static_cast<int>(*instances);
    }

    if (const auto kind = recomputeFrom(args, c, out, chunkBlocks))
        c.recompute = *kind;
    if (args.has("--use-tp-pp-dp-mapping"))
        c.rank_order = "tp-cp-pp-dp";

    // What the simulation does not model.
    if (const auto etp = args.integer("--expert-tensor-parallel-size", 1, kMaxDegree); etp && *etp != c.tp)
        out.warnings.push_back(cat("--expert-tensor-parallel-size ", *etp,
                                   " differs from TP: simulated with the "
                                   "experts split by TP"));
    if (const auto comm = args.list("--cp-comm-type"); !comm.empty() && comm != std::vector<std::string> {"p2p"})
        out.warnings.push_back(cat("--cp-comm-type ", join(comm, " "), ": simulated as the p2p ring"));
    c.tp_comm_overlap = args.has("--tp-comm-overlap") && c.sequence_parallel;
    if (args.has("--tp-comm-overlap") && !c.sequence_parallel)
        out.warnings.push_back("--tp-comm-overlap without --sequence-parallel: Megatron refuses it; simulated off");
    c.overlap_param_gather = args.has("--overlap-param-gather") && (c.zero_stage == 1 || c.zero_stage == 2);
    if (args.has("--overlap-param-gather") && !c.overlap_param_gather)
        out.warnings.push_back("--overlap-param-gather needs the distributed optimizer; simulated off");
    c.moe_a2a_overlap = args.has("--overlap-moe-expert-parallel-comm") && c.ep > 1 && c.num_microbatches >= 2
        && (c.pp == 1 || c.schedule == ScheduleKind::Interleaved1F1B);
    if (args.has("--overlap-moe-expert-parallel-comm") && !c.moe_a2a_overlap)
        out.warnings.push_back("--overlap-moe-expert-parallel-comm needs ep > 1, two or more micro-batches and pp = 1 "
                               "or the interleaved schedule; simulated off");
    c.moe_shared_expert_overlap = args.has("--moe-shared-expert-overlap") && c.ep > 1
        && args.has("--moe-shared-expert-intermediate-size") && !c.moe_a2a_overlap;
    if (args.has("--moe-shared-expert-overlap") && !c.moe_shared_expert_overlap)
        out.warnings.push_back("--moe-shared-expert-overlap needs ep > 1, a shared expert and no "
                               "--overlap-moe-expert-parallel-comm; simulated off");
    if (const auto capacity = args.number("--moe-expert-capacity-factor")) {
        // Megatron reads a negative factor as none (dropless).
        if (*capacity > 1e3 || !std::isfinite(*capacity))
            args.failFlag("--moe-expert-capacity-factor", cat("'", *capacity, "' is not a capacity factor"),
                          "use a small positive number such as 1.0, or leave the flag out for dropless experts");
        c.moe_capacity_factor = *capacity > 0 ? *capacity : 0;
    }
    // megatron/training/arguments.py validate_args: --grad-reduce-in-bf16 turns accumulate_allreduce_grads_in_fp32
    // off, and the grad buffers take the parameters' dtype (param_and_grad_buffer.py).
    c.grad_reduce_bf16 = args.has("--grad-reduce-in-bf16");
    c.fp8_linears = args.has("--fp8-format");
    // --fp8-param-gather: fp8_model_init makes the weights FP8 parameters (megatron/training/arguments.py asserts the
    // distributed optimizer or an FSDP for it).
    c.fp8_param_gather = c.fp8_linears && args.has("--fp8-param-gather");
    if (c.fp8_linears) {
        // --fp8-recipe defaults to delayed scaling (megatron/training/arguments.py); only tensorwise is costed.
        const std::string recipe = args.string("--fp8-recipe").value_or("delayed");
        if (recipe != "tensorwise")
            out.warnings.push_back(
                cat("--fp8-recipe ", recipe, " is simulated as tensorwise (current per-tensor) scaling"));
        // megatron/core/fp8_utils.py is_first_last_bf16_layer: the first --num-layers-at-start-in-bf16 and last
        // --num-layers-at-end-in-bf16 layers (1 each, transformer_config.py) skip FP8; Megatron-Bridge's FP8-CS recipe
        // (mixed_precision.py bf16_with_fp8_current_scaling_mixed) turns it on. transformer_config.py refuses it
        // under the delayed recipe.
        if (args.has("--first-last-layers-bf16")) {
            if (recipe == "delayed")
                args.failFlag("--first-last-layers-bf16",
                              "Megatron refuses BF16 first and last layers with delayed scaling (--fp8-recipe "
                              "delayed, the default): transformer_config.py raises before training",
                              "add --fp8-recipe tensorwise, or drop --first-last-layers-bf16");
            c.fp8_bf16_first_layers
                = static_cast<int>(args.integer("--num-layers-at-start-in-bf16", 0, kMaxLayers).value_or(1));
            c.fp8_bf16_last_layers
                = static_cast<int>(args.integer("--num-layers-at-end-in-bf16", 0, kMaxLayers).value_or(1));
        }
    }
    for (const char* flag : {"--hierarchical-context-parallel-sizes", "--overlap-param-gather-with-optimizer-step",
                             "--distribute-saved-activations", "--no-overlap-p2p-communication"})
        if (args.has(flag))
            out.warnings.push_back(cat(flag, " is not modelled"));

    // The model.
    if (args.has("--num-layers") && args.has("--hidden-size") && args.has("--num-attention-heads"))
        out.model = modelFrom(args, scriptTargetsOldNullTokenizer(text));
    out.seq_len = args.integer("--seq-length", 1, kMaxSize).value_or(0);
    if (out.model && out.model->num_experts == 0 && c.ep > 1)
        args.failFlag("--expert-model-parallel-size", "expert parallelism needs --num-experts");
    return out;
}

} // namespace shardscape::importing
