// SPDX-License-Identifier: MIT
#include "options.h"

#include "errors.h"

#include <charconv>
#include <optional>
#include <string_view>

namespace shardscape::profiler {

namespace {

const std::string kSeeHelp = "see shardscape-profile --help";

std::int64_t parseInteger(std::string_view option, std::string_view text, std::int64_t min, std::int64_t max)
{
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        throw BadInput(std::string(option) + " needs a whole number, got '" + std::string(text) + "'",
                       "e.g. " + std::string(option) + " " + std::to_string(min));
    if (value < min || value > max)
        throw BadInput(std::string(option) + " = " + std::string(text) + " is out of range",
                       "use a value from " + std::to_string(min) + " to " + std::to_string(max));
    return value;
}

std::vector<DType> parseDTypeList(std::string_view text)
{
    std::vector<DType> list;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string_view item
            = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        const auto dtype = parseDType(item);
        if (!dtype)
            throw BadInput("--dtypes: unknown dtype '" + std::string(item) + "'",
                           "use a comma-separated list of bf16, fp16, tf32, fp32, fp8");
        bool seen = false;
        for (const DType d : list)
            seen = seen || d == *dtype;
        if (!seen)
            list.push_back(*dtype);
        if (comma == std::string_view::npos)
            break;
        start = comma + 1;
    }
    return list;
}

} // namespace

Options parseOptions(const std::vector<std::string>& args)
{
    Options o;
    bool modelOnlyGiven = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string_view arg = args[i];
        std::optional<std::string> inlineValue;
        if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
            inlineValue = std::string(arg.substr(eq + 1));
            arg = arg.substr(0, eq);
        }
        const auto value = [&]() -> std::string {
            if (inlineValue)
                return *inlineValue;
            if (i + 1 >= args.size())
                throw BadInput(std::string(arg) + " needs a value", kSeeHelp);
            return args[++i];
        };
        const auto flag = [&](bool& target) {
            if (inlineValue)
                throw BadInput(std::string(arg) + " takes no value", "write " + std::string(arg) + " alone");
            target = true;
        };
        if (arg == "--help" || arg == "-h")
            flag(o.help);
        else if (arg == "--version")
            flag(o.version);
        else if (arg == "--matmul")
            flag(o.matmul);
        else if (arg == "--memory")
            flag(o.memory);
        else if (arg == "--attention")
            flag(o.attention);
        else if (arg == "--collectives")
            flag(o.collectives);
        else if (arg == "--quick")
            flag(o.quick);
        else if (arg == "--progress")
            flag(o.progress);
        else if (arg == "--out") {
            o.outDir = value();
            if (o.outDir.empty())
                throw BadInput("--out needs a directory", "e.g. --out ./profile-h100");
        } else if (arg == "--dtypes") {
            o.dtypes = parseDTypeList(value());
            o.dtypesGiven = true;
        } else if (arg == "--device")
            o.device = static_cast<int>(parseInteger(arg, value(), 0, 1023));
        else if (arg == "--iters")
            o.iters = static_cast<int>(parseInteger(arg, value(), 1, 100000));
        else if (arg == "--warmup")
            o.warmup = static_cast<int>(parseInteger(arg, value(), 0, 100000));
        else if (arg == "--shapes") {
            o.shapesFile = value();
            if (o.shapesFile.empty())
                throw BadInput("--shapes needs a file", "e.g. --shapes gemms.json");
        } else if (arg == "--model") {
            o.modelConfig = value();
            if (o.modelConfig.empty())
                throw BadInput("--model needs a config.json file", "e.g. --model resources/models/llama3-8b.json");
        } else if (arg == "--tp") {
            o.tp = static_cast<int>(parseInteger(arg, value(), 1, 1024));
            modelOnlyGiven = true;
        } else if (arg == "--seq-len") {
            o.seqLen = parseInteger(arg, value(), 1, 10'000'000);
            modelOnlyGiven = true;
        } else if (arg == "--micro-batch") {
            o.microBatch = parseInteger(arg, value(), 1, 100'000);
            modelOnlyGiven = true;
        } else if (arg.starts_with("-"))
            throw BadInput("unknown option '" + std::string(arg) + "'", kSeeHelp);
        else
            throw BadInput("unexpected argument '" + std::string(arg) + "'", "options start with --; " + kSeeHelp);
    }
    if (modelOnlyGiven && o.modelConfig.empty())
        throw BadInput("--tp, --seq-len and --micro-batch describe the --model run, but no --model was given",
                       "add --model path/to/config.json");
    o.phasesGiven = o.matmul || o.memory || o.attention || o.collectives;
    if (!o.phasesGiven)
        o.matmul = o.memory = o.attention = o.collectives = true;
    if (!o.dtypesGiven)
        o.dtypes = allDTypes();
    return o;
}

std::string usageText()
{
    return R"(Usage: shardscape-profile [options]

Measures this machine's GPUs and writes the Shardscape profile DB (profile.json, format shardscape.profile/1)
that the planner's cost model reads instead of datasheet numbers.

Phases (default: all):
  --matmul              cuBLASLt GEMM throughput over a grid of shapes (plus --shapes / --model shapes)
  --memory              own kernels: copy, bias+GELU, RMSNorm, LayerNorm, softmax over sizes
  --attention           causal attention forward: cuBLAS batched QK^T, own causal softmax, batched PV
  --collectives         NCCL all_reduce, all_gather, reduce_scatter, all_to_all, send_recv over message
                        sizes across all local GPUs; under mpirun (one rank per GPU) across nodes

Options:
  --out DIR             write DIR/profile.json (default ~/.cache/shardscape/<device slug>/); the kinds not
                        measured in this run are kept from an existing valid profile of the same device
  --quick               a small grid for a fast run
  --dtypes LIST         comma-separated subset of bf16,fp16,tf32,fp32,fp8 (default: all; fp8 needs sm_89+;
                        memory ops use bf16/fp16/fp32, attention bf16/fp16)
  --device N            GPU index for the single-GPU phases (default 0)
  --iters N             timed repetitions, the median is recorded (default 20)
  --warmup N            untimed warm-up runs (default 5)
  --shapes FILE         also measure these GEMMs: JSON list of {"m":..,"n":..,"k":..,"dtype":"bf16"}
                        (optional "name"), C[m x n] = A[m x k] @ B[k x n]
  --model CONFIG        also measure the GEMMs and attention of a Hugging Face config.json (GPT-2, Llama,
                        Mistral, Mixtral, Qwen2/3): QKV, out, MLP gate/up/down, (router,) lm-head forward
                        and both backward GEMMs of each, per tensor-parallel rank, in each --dtypes dtype
  --tp T                tensor-parallel degree for --model (default 1)
  --seq-len S           sequence length for --model (default 2048)
  --micro-batch B       micro-batch size for --model (default 1)
  --progress            print "progress <done> <total> <phase>" lines on stdout (for a GUI)
  --help, --version

Correctness: before timing each kind, its result on fresh random data is compared with a CPU reference; a
kind that fails is never recorded.

Multi-node collectives: mpirun -np <ranks> shardscape-profile --collectives (only rank 0 writes the file).

Exit codes: 0 ok, 1 other error (e.g. output not writable), 2 bad arguments or input file,
3 no CUDA device or a CUDA/cuBLAS/NCCL failure, 4 a correctness check failed.
)";
}

} // namespace shardscape::profiler
