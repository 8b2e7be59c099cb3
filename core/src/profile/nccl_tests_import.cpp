// SPDX-License-Identifier: MIT
// nccl-tests output (text and -J JSON) to profile rows. Layout from nccl-tests src/util.cu (writeDeviceReport,
// writeResultHeader, writeBenchmarkLine*) and doc/PERFORMANCE.md; summarised in shared/research/ecosystem.md §5.
#include "shardscape/profile/nccl_tests_import.h"

#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace shardscape {

namespace {

std::vector<std::string> tokens(std::string_view line)
{
    std::vector<std::string> out;
    std::istringstream in {std::string(line)};
    for (std::string t; in >> t;)
        out.push_back(t);
    return out;
}

std::optional<std::int64_t> toInt(std::string_view text)
{
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

std::optional<double> toDouble(const std::string& text)
{
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

/** "all_reduce_perf_mpi" -> all_reduce; nullopt for programs the cost model has no use for. */
std::optional<std::string> opOfProgram(std::string program)
{
    for (const char* suffix : {"_mpi", "_perf"})
        if (program.size() > std::string_view(suffix).size()
            && program.compare(program.size() - std::string_view(suffix).size(), std::string::npos, suffix) == 0)
            program.resize(program.size() - std::string_view(suffix).size());
    static const std::map<std::string, std::string> kOps {{"all_reduce", "all_reduce"},
                                                          {"all_gather", "all_gather"},
                                                          {"reduce_scatter", "reduce_scatter"},
                                                          {"alltoall", "all_to_all"},
                                                          {"sendrecv", "send_recv"}};
    const auto it = kOps.find(program);
    return it == kOps.end() ? std::nullopt : std::optional<std::string>(it->second);
}

/** The test a file name names ("all_reduce_perf.log", "h100_alltoall.txt"), or empty. */
std::string programOfFileName(std::string_view fileName)
{
    std::string name(fileName);
    for (auto& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // Longest names first so "reduce_scatter" is not read as something shorter.
    for (const auto& [needle, program] :
         std::vector<std::pair<std::string, std::string>> {{"reduce_scatter", "reduce_scatter_perf"},
                                                           {"reducescatter", "reduce_scatter_perf"},
                                                           {"all_reduce", "all_reduce_perf"},
                                                           {"allreduce", "all_reduce_perf"},
                                                           {"all_gather", "all_gather_perf"},
                                                           {"allgather", "all_gather_perf"},
                                                           {"alltoall", "alltoall_perf"},
                                                           {"all_to_all", "alltoall_perf"},
                                                           {"sendrecv", "sendrecv_perf"},
                                                           {"send_recv", "sendrecv_perf"}})
        if (name.find(needle) != std::string::npos)
            return program;
    return {};
}

std::string opFor(const std::string& program, std::string_view fileName, std::string_view where)
{
    if (program.empty())
        throw InputError(cat(where,
                             ": cannot tell which collective was measured (no \"# Collective test starting\" "
                             "line, and the file name names none)"),
                         cat("rename the file after the test, e.g. all_reduce_perf.log (", fileName, ")"));
    const auto op = opOfProgram(program);
    if (!op)
        throw InputError(
            cat(where, ": ", program, " measures a collective the cost model does not use"),
            "import all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf or sendrecv_perf");
    return *op;
}

struct RankLine
{
    int rank = 0;
    std::string host;
    int device = -1;
    std::string device_name;
};

/** "#  Rank  3 Group  0 Pid 1890 on worker-1 device  3 [0x99] NVIDIA H100 80GB HBM3" (older lines lack Group). */
std::optional<RankLine> parseRankLine(std::string_view body)
{
    const auto t = tokens(body);
    if (t.size() < 2 || t[0] != "Rank")
        return std::nullopt;
    RankLine r;
    const auto rank = toInt(t[1]);
    if (!rank)
        return std::nullopt;
    r.rank = static_cast<int>(*rank);
    for (std::size_t i = 2; i + 1 < t.size(); ++i) {
        if (t[i] == "on")
            r.host = t[i + 1];
        if (t[i] == "device" && r.device < 0)
            if (const auto device = toInt(t[i + 1]))
                r.device = static_cast<int>(*device);
    }
    const auto bracket = body.find("] ");
    if (bracket != std::string_view::npos) {
        std::string name(body.substr(bracket + 2));
        while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
            name.pop_back();
        r.device_name = name;
    }
    return r;
}

/** Where the values sit in a data line, from the table header. */
struct Columns
{
    std::size_t size = 0, count = 1, type = 2;
    std::size_t time[2] {}, algbw[2] {}, busbw[2] {}, wrong[2] {};
    std::size_t groupWidth = 0; ///< columns of one (time, algbw, busbw, #wrong) group
    std::size_t fullTokens = 0;
};

std::optional<Columns> parseHeader(const std::vector<std::string>& t)
{
    const auto find = [&](std::initializer_list<const char*> names, std::size_t from) -> std::optional<std::size_t> {
        for (std::size_t i = from; i < t.size(); ++i)
            for (const char* name : names)
                if (t[i] == name)
                    return i;
        return std::nullopt;
    };
    Columns c;
    const auto size = find({"size"}, 0);
    const auto count = find({"count"}, 0);
    const auto type = find({"type"}, 0);
    if (!size || !count || !type || *size != 0)
        return std::nullopt;
    c.count = *count;
    c.type = *type;
    std::size_t from = 0;
    for (int g = 0; g < 2; ++g) {
        const auto time = find({"time", "cputime"}, from);
        if (!time)
            return std::nullopt;
        const auto algbw = find({"algbw"}, *time);
        const auto busbw = find({"busbw"}, *time);
        const auto wrong = find({"#wrong", "error"}, *time);
        if (!algbw || !busbw || !wrong)
            return std::nullopt;
        c.time[g] = *time;
        c.algbw[g] = *algbw;
        c.busbw[g] = *busbw;
        c.wrong[g] = *wrong;
        from = *wrong + 1;
    }
    // Rows are indexed by these columns, so each must lie inside a row that has fullTokens columns (or, for a trace
    // replay's blank out-of-place group, fullTokens - groupWidth): a header with its names out of order or repeated
    // (found by fuzz_nccl_tests) must not let a row be read past its end. count and type precede the groups.
    if (c.count >= c.time[0] || c.type >= c.time[0])
        return std::nullopt;
    c.groupWidth = c.time[1] - c.time[0];
    c.fullTokens
        = 1 + std::max({c.wrong[0], c.wrong[1], c.algbw[0], c.algbw[1], c.busbw[0], c.busbw[1], c.time[0], c.time[1]});
    return c;
}

/** A run being read from text. */
struct TextRun
{
    NcclTestsRun run;
    std::size_t firstLine = 0;
    bool preamble = false; ///< "# nThread" seen
    int threads = 0;
    int gpus = 0;
    std::vector<RankLine> ranks;
    std::optional<Columns> columns;
    int skippedWrong = 0;
    int skippedEmpty = 0;
    bool touched() const { return preamble || columns || !ranks.empty() || !run.results.empty(); }
};

void finishRanks(NcclTestsRun& run, const std::vector<RankLine>& lines, int threads, int gpus, std::string_view where)
{
    if (lines.empty()) {
        run.ranks = threads * gpus;
        run.ranks_per_node = run.ranks;
        if (run.ranks > 0)
            run.notes.push_back(cat("no \"# Rank\" lines: ", run.ranks, " ranks (nThread x nGpus) on one node"));
        return;
    }
    std::set<int> seen;
    int maxRank = 0;
    int maxDevice = -1;
    std::map<std::string, int> perHost;
    for (const auto& line : lines) {
        if (!seen.insert(line.rank).second)
            throw InputError(cat(where, ": rank ", line.rank, " is listed twice: each process ran the test alone (",
                                 "nccl-tests built without MPI support)"),
                             "rebuild nccl-tests with make MPI=1 and run it again");
        maxRank = std::max(maxRank, line.rank);
        maxDevice = std::max(maxDevice, line.device);
        ++perHost[line.host];
        if (run.device_name.empty())
            run.device_name = line.device_name;
    }
    run.ranks = maxRank + 1;
    if (static_cast<int>(seen.size()) == run.ranks) {
        for (const auto& [host, count] : perHost)
            run.ranks_per_node = std::max(run.ranks_per_node, count);
    } else {
        // Elided rank lines ("..."): GPUs per node from the device indices shown.
        run.ranks_per_node = std::clamp(maxDevice + 1, 1, run.ranks);
        run.notes.push_back(cat(seen.size(), " of ", run.ranks, " rank lines shown: ", run.ranks_per_node,
                                " ranks per node taken from the highest device index"));
    }
}

NcclTestsRun finishText(TextRun& r, std::string_view fileName)
{
    const std::string where = cat(fileName, ":", r.firstLine);
    if (r.run.program.empty())
        r.run.program = programOfFileName(fileName);
    r.run.op = opFor(r.run.program, fileName, where);
    if (!r.columns)
        throw InputError(cat(where, ": no result table (the line \"#  size  count  type ... time  algbw  busbw\")"),
                         "pass the complete output of the test");
    finishRanks(r.run, r.ranks, r.threads, r.gpus, where);
    if (r.run.ranks < 1)
        throw InputError(cat(where, ": cannot tell how many ranks ran (no \"# nThread\" or \"# Rank\" lines)"),
                         "pass the complete output of the test");
    if (r.run.ranks < 2)
        throw InputError(cat(where, ": ", r.run.program, " ran on one rank: that measures no communication"),
                         "run it on two or more GPUs");
    if (r.skippedWrong > 0)
        r.run.notes.push_back(cat(r.skippedWrong, " rows skipped: their results were wrong (#wrong > 0)"));
    if (r.skippedEmpty > 0)
        r.run.notes.push_back(cat(r.skippedEmpty, " rows skipped: zero size or time"));
    if (r.run.results.empty())
        throw InputError(cat(where, ": the table has no usable rows"), "pass the complete output of the test");
    return std::move(r.run);
}

/** Removes mpirun --tag-output's "[1,0]<stdout>:" prefix. */
std::string_view untag(std::string_view line)
{
    if (!line.empty() && line.front() == '[') {
        const auto tag = line.find("]<stdout>:");
        if (tag != std::string_view::npos && tag < 24)
            return line.substr(tag + 10);
    }
    return line;
}

} // namespace

double ncclBusBandwidthFactor(std::string_view op, int ranks)
{
    const double n = ranks;
    if (op == "all_reduce")
        return 2 * (n - 1) / n;
    if (op == "send_recv")
        return 1;
    return (n - 1) / n;
}

std::vector<NcclTestsRun> parseNcclTestsText(std::string_view text, std::string_view fileName)
{
    std::vector<NcclTestsRun> runs;
    TextRun current;
    std::size_t lineNumber = 0;
    const auto startRun = [&](std::size_t line) {
        if (current.touched())
            runs.push_back(finishText(current, fileName));
        current = TextRun {};
        current.firstLine = line;
    };
    current.firstLine = 1;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const auto end = std::min(text.find('\n', pos), text.size());
        std::string_view line = untag(text.substr(pos, end - pos));
        pos = end + 1;
        ++lineNumber;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        const auto first = line.find_first_not_of(" \t");
        if (first == std::string_view::npos)
            continue;
        line.remove_prefix(first);
        if (line.front() == '#') {
            const std::string_view body = line.substr(1);
            const auto t = tokens(body);
            if (t.empty())
                continue;
            constexpr std::string_view kStarting = "Collective test starting:";
            if (const auto at = body.find(kStarting); at != std::string_view::npos) {
                startRun(lineNumber);
                const auto name = tokens(body.substr(at + kStarting.size()));
                current.run.program = name.empty() ? std::string() : name.front();
            } else if (t[0] == "nThread") {
                // A second preamble without a "starting" line: the next run (or a duplicate from a non-MPI build,
                // which the repeated rank 0 reports).
                if (current.preamble)
                    startRun(lineNumber);
                current.preamble = true;
                for (std::size_t i = 0; i + 1 < t.size(); ++i) {
                    if (t[i] == "nThread")
                        current.threads = static_cast<int>(toInt(t[i + 1]).value_or(0));
                    if (t[i] == "nGpus")
                        current.gpus = static_cast<int>(toInt(t[i + 1]).value_or(0));
                }
            } else if (t[0] == "Rank") {
                if (const auto rank = parseRankLine(body))
                    current.ranks.push_back(*rank);
            } else if (const auto columns = parseHeader(t)) {
                current.columns = columns;
            }
            continue;
        }
        const auto t = tokens(line);
        if (!current.columns || t.empty() || !toInt(t[0]))
            continue; // NCCL INFO lines, "NCCL version ...", shell prompts
        const Columns& c = *current.columns;
        const std::string where = cat(fileName, ":", lineNumber);
        int group = 0;
        std::size_t shift = 0;
        if (t.size() < c.fullTokens) {
            // Trace replay leaves the out-of-place group blank: the in-place values sit one group to the left.
            if (t.size() + c.groupWidth < c.fullTokens)
                throw InputError(cat(where, ": ", t.size(), " columns, the table header has ", c.fullTokens),
                                 "pass the output unchanged");
            group = 1;
            shift = c.groupWidth;
        }
        NcclTestsResult result;
        const auto size = toInt(t[c.size]);
        const auto count = toInt(t[c.count]);
        const auto time = toDouble(t[c.time[group] - shift]);
        const auto algbw = toDouble(t[c.algbw[group] - shift]);
        const auto busbw = toDouble(t[c.busbw[group] - shift]);
        if (!size || !count || !time || !algbw || !busbw)
            throw InputError(cat(where, ": cannot read the size, count, time and bandwidth columns"),
                             "pass the output unchanged");
        const std::string& wrong = t[c.wrong[group] - shift];
        if (wrong != "N/A") {
            const auto errors = toDouble(wrong);
            if (!errors)
                throw InputError(cat(where, ": cannot read the #wrong column ('", wrong, "')"),
                                 "pass the output unchanged");
            if (*errors != 0) {
                ++current.skippedWrong;
                continue;
            }
        }
        if (*size <= 0 || *time <= 0) {
            ++current.skippedEmpty;
            continue;
        }
        result.bytes = static_cast<double>(*size);
        result.count = *count;
        result.type = t[c.type];
        result.time_us = *time;
        result.algbw_gb_s = *algbw;
        result.busbw_gb_s = *busbw;
        result.in_place = group == 1;
        current.run.results.push_back(std::move(result));
    }
    if (current.touched())
        runs.push_back(finishText(current, fileName));
    if (runs.empty())
        throw InputError(cat(fileName, ": no nccl-tests output in it"),
                         "pass the output of all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf or "
                         "sendrecv_perf");
    return runs;
}

NcclTestsRun parseNcclTestsJson(const nlohmann::json& doc, std::string_view fileName)
{
    const std::string where(fileName);
    if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array())
        throw InputError(cat(where, ": not an nccl-tests -J file (no \"results\" array)"));
    NcclTestsRun run;
    if (const auto args = doc.find("args");
        args != doc.end() && args->is_array() && !args->empty() && (*args)[0].is_string())
        run.program = std::filesystem::path((*args)[0].get<std::string>()).filename().string();
    if (!opOfProgram(run.program))
        run.program = programOfFileName(fileName);
    run.op = opFor(run.program, fileName, where);

    const auto intOf = [&](const nlohmann::json& object, const char* key, int fallback) {
        const auto it = object.find(key);
        return it != object.end() && it->is_number_integer() ? it->get<int>() : fallback;
    };
    const nlohmann::json config = doc.value("config", nlohmann::json::object());
    const int perProcess = intOf(config, "nthreads", 1) * intOf(config, "ngpus", 1);
    // One "devices" entry per process (util.cu parses the first rank line of each), each driving nthreads x ngpus.
    std::map<std::string, int> perHost;
    int processes = 0;
    if (const auto devices = doc.find("devices"); devices != doc.end() && devices->is_array()) {
        for (const auto& device : *devices) {
            if (!device.is_object())
                continue;
            ++processes;
            perHost[device.value("hostname", std::string())] += perProcess;
            if (run.device_name.empty())
                run.device_name = device.value("device_info", std::string());
        }
    }
    run.ranks = std::max(processes, 1) * perProcess;
    for (const auto& [host, count] : perHost)
        run.ranks_per_node = std::max(run.ranks_per_node, count);
    if (run.ranks_per_node == 0)
        run.ranks_per_node = run.ranks;
    if (run.ranks < 2)
        throw InputError(cat(where, ": ", run.program, " ran on one rank: that measures no communication"),
                         "run it on two or more GPUs");

    int skipped = 0;
    const auto number = [](const nlohmann::json& object, const char* key) -> std::optional<double> {
        const auto it = object.find(key);
        if (it == object.end() || !it->is_number())
            return std::nullopt; // null, or the string "nan"
        return it->get<double>();
    };
    for (const auto& r : doc["results"]) {
        if (!r.is_object())
            continue;
        const auto size = number(r, "size");
        const nlohmann::json* group = nullptr;
        bool inPlace = false;
        for (const char* key : {"out_of_place", "in_place"}) {
            const auto it = r.find(key);
            if (it != r.end() && it->is_object()) {
                group = &*it;
                inPlace = std::string_view(key) == "in_place";
                break;
            }
        }
        if (!size || !group) {
            ++skipped;
            continue;
        }
        auto time = number(*group, "time");
        if (!time)
            time = number(*group, "cpu_time");
        const auto algbw = number(*group, "alg_bw");
        const auto busbw = number(*group, "bus_bw");
        const auto wrong = number(*group, "nwrong");
        if (!time || !algbw || !busbw || *size <= 0 || *time <= 0 || (wrong && *wrong != 0)) {
            ++skipped;
            continue;
        }
        NcclTestsResult result;
        result.bytes = *size;
        result.count = static_cast<std::int64_t>(number(r, "count").value_or(0));
        result.type = r.value("type", std::string());
        result.time_us = *time;
        result.algbw_gb_s = *algbw;
        result.busbw_gb_s = *busbw;
        result.in_place = inPlace;
        run.results.push_back(std::move(result));
    }
    if (skipped > 0)
        run.notes.push_back(cat(skipped, " results skipped: missing, zero, NaN or wrong"));
    if (run.results.empty())
        throw InputError(cat(where, ": the results have no usable rows"), "pass the complete -J output");
    return run;
}

std::vector<NcclTestsRun> readNcclTestsFile(const std::filesystem::path& file)
{
    const std::string text = readTextFile(file, kMaxProfileBytes);
    const std::string name = file.filename().string();
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{')
        return {parseNcclTestsJson(parseJson(text, file.string()), name)};
    return parseNcclTestsText(text, name);
}

DType ncclTestsDType(std::string_view type)
{
    static const std::map<std::string, DType, std::less<>> kTypes {
        {"int8", DType::I8},    {"uint8", DType::U8},      {"int32", DType::I32},  {"uint32", DType::I32},
        {"int64", DType::I64},  {"uint64", DType::I64},    {"half", DType::F16},   {"float", DType::F32},
        {"double", DType::F64}, {"bfloat16", DType::BF16}, {"f8e4m3", DType::FP8}, {"f8e5m2", DType::FP8}};
    const auto it = kTypes.find(type);
    if (it == kTypes.end())
        throw InputError(cat("unknown nccl-tests data type '", type, "'"),
                         "expected int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3 "
                         "or f8e5m2");
    return it->second;
}

std::vector<CollectiveRow> collectiveRows(const NcclTestsRun& run, std::string_view fileName)
{
    std::vector<CollectiveRow> rows;
    for (const auto& result : run.results) {
        CollectiveRow row;
        row.op = run.op;
        row.bytes = result.bytes;
        row.ranks = run.ranks;
        row.ranks_per_node = run.ranks_per_node;
        row.dtype = ncclTestsDType(result.type);
        row.time_s = result.time_us / 1e6;
        row.busbw_gb_per_s = result.bytes / row.time_s / 1e9 * ncclBusBandwidthFactor(run.op, run.ranks);
        row.source = cat("nccl-tests:", fileName);
        rows.push_back(std::move(row));
    }
    return rows;
}

MergeCounts mergeCollectives(Profile& profile, const std::vector<CollectiveRow>& rows)
{
    MergeCounts counts;
    for (const auto& row : rows) {
        const auto same = std::find_if(profile.collectives.begin(), profile.collectives.end(), [&](const auto& r) {
            return r.op == row.op && r.bytes == row.bytes && r.ranks == row.ranks
                && r.ranks_per_node == row.ranks_per_node;
        });
        if (same != profile.collectives.end()) {
            *same = row;
            ++counts.replaced;
        } else {
            profile.collectives.push_back(row);
            ++counts.added;
        }
    }
    const auto& ops = profileCollectiveOps();
    const auto rank = [&](const std::string& op) { return std::find(ops.begin(), ops.end(), op) - ops.begin(); };
    std::stable_sort(profile.collectives.begin(), profile.collectives.end(), [&](const auto& a, const auto& b) {
        return std::make_tuple(rank(a.op), a.ranks, a.ranks_per_node, a.bytes)
            < std::make_tuple(rank(b.op), b.ranks, b.ranks_per_node, b.bytes);
    });
    return counts;
}

} // namespace shardscape
