// SPDX-License-Identifier: MIT
#include "shardscape/sim/schedule.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace shardscape {

namespace {

struct NamedSchedule
{
    ScheduleKind kind;
    std::string_view name;
};

constexpr std::array<NamedSchedule, 4> kScheduleNames {{
    {ScheduleKind::GPipe, "gpipe"},
    {ScheduleKind::OneFOneB, "1f1b"},
    {ScheduleKind::Interleaved1F1B, "interleaved"},
    {ScheduleKind::ZeroBubbleH1, "zb-h1"},
}};

// Far beyond any real pipeline (Megatron runs a few thousand micro-batches at most), and small enough that
// every index the simulator derives from (stage, microbatch) fits an int32.
constexpr std::int64_t kMaxActions = std::int64_t(1) << 26;

void checkShape(ScheduleKind kind, int pp, int vpp, int numMicrobatches)
{
    if (pp < 1)
        throw InputError(cat("pipeline parallel size must be at least 1, got pp = ", pp), "use --pp 1 or more");
    if (vpp < 1)
        throw InputError(cat("virtual pipeline size must be at least 1, got vpp = ", vpp), "use --vpp 1 or more");
    if (numMicrobatches < 1)
        throw InputError(cat("the number of micro-batches must be at least 1, got ", numMicrobatches),
                         "raise the global batch or lower the micro-batch size");
    if (std::int64_t(pp) * vpp * numMicrobatches > kMaxActions)
        throw InputError(cat("pipeline of pp = ", pp, ", vpp = ", vpp, ", ", numMicrobatches,
                             " micro-batches is too large to simulate"),
                         "use fewer micro-batches or a smaller pipeline");

    switch (kind) {
    case ScheduleKind::Interleaved1F1B:
        if (vpp < 2)
            throw InputError(cat("the interleaved 1F1B schedule needs vpp >= 2, got vpp = ", vpp),
                             "use --vpp 2 or more, or --schedule 1f1b");
        if (numMicrobatches % pp != 0)
            throw InputError(cat("the interleaved 1F1B schedule needs the number of micro-batches (", numMicrobatches,
                                 ") to be a multiple of pp (", pp, ")"),
                             "change the global batch or micro-batch size, or use --schedule 1f1b");
        break;
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB:
    case ScheduleKind::ZeroBubbleH1:
        if (vpp != 1)
            throw InputError(cat("the ", scheduleName(kind), " schedule has one model chunk per rank, got vpp = ", vpp),
                             "use --vpp 1, or --schedule interleaved for virtual stages");
        break;
    default:
        throw InputError(cat("unknown pipeline schedule #", int(kind)), "use gpipe, 1f1b, interleaved or zb-h1");
    }
}

Action forwardAction(int stage, int microbatch)
{
    return {ActionKind::Forward, stage, microbatch};
}

std::vector<std::vector<Action>> buildGPipe(int pp, int m)
{
    std::vector<std::vector<Action>> ranks(static_cast<std::size_t>(pp));
    for (int r = 0; r < pp; ++r) {
        auto& actions = ranks[std::size_t(r)];
        actions.reserve(std::size_t(2 * m));
        for (int mb = 0; mb < m; ++mb)
            actions.push_back(forwardAction(r, mb));
        for (int mb = 0; mb < m; ++mb)
            actions.push_back({ActionKind::Backward, r, mb});
    }
    return ranks;
}

// Megatron's forward_backward_pipelining_without_interleaving: warm-up forwards fill the pipeline, then
// one forward and one backward alternate, then the remaining backwards drain it.
std::vector<std::vector<Action>> buildOneFOneB(int pp, int m)
{
    std::vector<std::vector<Action>> ranks(static_cast<std::size_t>(pp));
    for (int r = 0; r < pp; ++r) {
        auto& actions = ranks[std::size_t(r)];
        actions.reserve(std::size_t(2 * m));
        const int warmup = std::min(m, pp - r - 1);
        for (int mb = 0; mb < warmup; ++mb)
            actions.push_back(forwardAction(r, mb));
        for (int i = 0; i < m - warmup; ++i) {
            actions.push_back(forwardAction(r, warmup + i));
            actions.push_back({ActionKind::Backward, r, i});
        }
        for (int mb = m - warmup; mb < m; ++mb)
            actions.push_back({ActionKind::Backward, r, mb});
    }
    return ranks;
}

// Megatron's forward_backward_pipelining_with_interleaving: the k-th forward of a rank runs chunk
// (k / pp) % vpp of micro-batch (k / (pp vpp)) pp + k % pp, i.e. pp micro-batches go through one chunk
// before the rank moves to its next chunk; backwards visit the chunks in reverse.
std::vector<std::vector<Action>> buildInterleaved(int pp, int vpp, int m)
{
    const int total = m * vpp;
    const auto microbatchOf = [pp, vpp](int k) { return (k / (pp * vpp)) * pp + k % pp; };
    std::vector<std::vector<Action>> ranks(static_cast<std::size_t>(pp));
    for (int r = 0; r < pp; ++r) {
        const auto forwardAt = [&](int k) { return forwardAction(((k / pp) % vpp) * pp + r, microbatchOf(k)); };
        const auto backwardAt = [&](int k) {
            return Action {ActionKind::Backward, (vpp - 1 - (k / pp) % vpp) * pp + r, microbatchOf(k)};
        };
        auto& actions = ranks[std::size_t(r)];
        actions.reserve(std::size_t(2 * total));
        const int warmup = std::min(total, (pp - r - 1) * 2 + (vpp - 1) * pp);
        for (int k = 0; k < warmup; ++k)
            actions.push_back(forwardAt(k));
        for (int k = 0; k < total - warmup; ++k) {
            actions.push_back(forwardAt(warmup + k));
            actions.push_back(backwardAt(k));
        }
        for (int k = total - warmup; k < total; ++k)
            actions.push_back(backwardAt(k));
    }
    return ranks;
}

// ZB-H1 (Qi et al., ICLR'24): 1F1B's warm-up and order of F and B, with the backward split into B (input
// gradient, on the critical path) and W (weight gradient, off it). Rank r holds back its W passes by r
// micro-batches so that they fill the slots where 1F1B waits for the next B; the leftovers close the
// step. With F = B = W and free communication this leaves (p - 1) idle slots per rank, a third of 1F1B's.
// The paper counts the same peak memory as 1F1B because B frees most of a micro-batch's activations;
// with activations kept until W (our model) rank r stashes up to min(m, p) micro-batches.
std::vector<std::vector<Action>> buildZeroBubbleH1(int pp, int m)
{
    std::vector<std::vector<Action>> ranks(static_cast<std::size_t>(pp));
    for (int r = 0; r < pp; ++r) {
        auto& actions = ranks[std::size_t(r)];
        actions.reserve(std::size_t(3 * m));
        const int warmup = std::min(m, pp - r - 1);
        const int deferred = r;
        int nextForward = 0;
        int nextBackward = 0;
        int nextWeight = 0;
        const auto backward = [&] {
            actions.push_back({ActionKind::BackwardInput, r, nextBackward++});
            if (nextBackward - nextWeight > deferred)
                actions.push_back({ActionKind::BackwardWeight, r, nextWeight++});
        };
        while (nextForward < warmup)
            actions.push_back(forwardAction(r, nextForward++));
        while (nextForward < m) {
            actions.push_back(forwardAction(r, nextForward++));
            backward();
        }
        while (nextBackward < m)
            backward();
        while (nextWeight < m)
            actions.push_back({ActionKind::BackwardWeight, r, nextWeight++});
    }
    return ranks;
}

} // namespace

std::string_view scheduleName(ScheduleKind kind)
{
    for (const auto& entry : kScheduleNames) {
        if (entry.kind == kind)
            return entry.name;
    }
    return "unknown";
}

std::optional<ScheduleKind> parseSchedule(std::string_view name)
{
    const std::string lower = toLower(name);
    for (const auto& entry : kScheduleNames) {
        if (entry.name == lower)
            return entry.kind;
    }
    return std::nullopt;
}

std::vector<std::vector<Action>> buildSchedule(ScheduleKind kind, int pp, int vpp, int numMicrobatches)
{
    checkShape(kind, pp, vpp, numMicrobatches);
    switch (kind) {
    case ScheduleKind::GPipe:
        return buildGPipe(pp, numMicrobatches);
    case ScheduleKind::OneFOneB:
        return buildOneFOneB(pp, numMicrobatches);
    case ScheduleKind::Interleaved1F1B:
        return buildInterleaved(pp, vpp, numMicrobatches);
    case ScheduleKind::ZeroBubbleH1:
        return buildZeroBubbleH1(pp, numMicrobatches);
    }
    return {}; // unreachable: checkShape rejects unknown kinds
}

} // namespace shardscape
