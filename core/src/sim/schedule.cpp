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

constexpr std::array<NamedSchedule, 7> kScheduleNames {{
    {ScheduleKind::GPipe, "gpipe"},
    {ScheduleKind::OneFOneB, "1f1b"},
    {ScheduleKind::Interleaved1F1B, "interleaved"},
    {ScheduleKind::ZeroBubbleH1, "zb-h1"},
    {ScheduleKind::ZeroBubbleV, "zb-v"},
    {ScheduleKind::DualPipeV, "dualpipev"},
    {ScheduleKind::DualPipe, "dualpipe"},
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
    case ScheduleKind::ZeroBubbleV:
    case ScheduleKind::DualPipeV:
    case ScheduleKind::DualPipe:
        if (pp < 2 || vpp != 2)
            throw InputError(cat("the ", scheduleName(kind),
                                 " schedule places two chunks on each of pp >= 2 ranks, got pp = ", pp,
                                 ", vpp = ", vpp),
                             "use --pp 2 or more with --vpp 2");
        // DualPipeV asserts num_chunks >= 2 x ranks (dualpipev.py step); PyTorch's ScheduleDualPipeV raises below
        // as many micro-batches as stages, and its ZB-V pads shorter runs with idle slots.
        if (numMicrobatches < 2 * pp)
            throw InputError(cat("the ", scheduleName(kind), " schedule needs at least 2 x pp = ", 2 * pp,
                                 " micro-batches, got ", numMicrobatches),
                             "raise the global batch, lower the micro-batch size or pp, or use --schedule 1f1b");
        // dualpipe.py step: num_ranks % 2 == 0 and num_chunks % 2 == 0 (half the micro-batches enter at each end).
        if (kind == ScheduleKind::DualPipe && (pp % 2 != 0 || numMicrobatches % 2 != 0))
            throw InputError(cat("the dualpipe schedule feeds half the micro-batches from each end, so pp and the "
                                 "micro-batch count must both be even, got pp = ",
                                 pp, ", ", numMicrobatches, " micro-batches"),
                             "use an even pp and an even number of micro-batches, or --schedule dualpipev");
        break;
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB:
    case ScheduleKind::ZeroBubbleH1:
        if (vpp != 1)
            throw InputError(cat("the ", scheduleName(kind), " schedule has one model chunk per rank, got vpp = ", vpp),
                             "use --vpp 1, or --schedule interleaved for virtual stages");
        break;
    default:
        throw InputError(cat("unknown pipeline schedule #", int(kind)),
                         "use gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipev or dualpipe");
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

// PyTorch's ScheduleZBVZeroBubble._calculate_single_rank_operations: warm-up forwards of chunk 0, then chunk 1
// and chunk 0 alternating, then chunk 1 with its backward split into I and W; the steady state runs F, I, W of
// chunk 0 then of chunk 1; the cool-down issues the remaining I's and defers W's to the end.
std::vector<std::vector<Action>> buildZeroBubbleV(int pp, int m)
{
    std::vector<std::vector<Action>> ranks(static_cast<std::size_t>(pp));
    for (int r = 0; r < pp; ++r) {
        auto& actions = ranks[std::size_t(r)];
        actions.reserve(std::size_t(6 * m));
        const int s0 = r;
        const int s1 = 2 * pp - 1 - r;
        int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
        const auto add = [&](ActionKind kind, int stage, int mb) { actions.push_back({kind, stage, mb}); };
        for (int i = 0; i < 2 * (pp - r) - 1; ++i)
            add(ActionKind::Forward, s0, f0++);
        for (int i = 0; i < r; ++i) {
            add(ActionKind::Forward, s1, f1++);
            add(ActionKind::Forward, s0, f0++);
        }
        for (int i = 0; i < pp - r; ++i) {
            add(ActionKind::Forward, s1, f1++);
            add(ActionKind::BackwardInput, s1, b1);
            add(ActionKind::BackwardWeight, s1, b1++);
        }
        while (f1 < f0 || f0 < m) {
            if (f0 < m)
                add(ActionKind::Forward, s0, f0++);
            add(ActionKind::BackwardInput, s0, b0);
            add(ActionKind::BackwardWeight, s0, b0++);
            add(ActionKind::Forward, s1, f1++);
            add(ActionKind::BackwardInput, s1, b1);
            add(ActionKind::BackwardWeight, s1, b1++);
        }
        int w0 = b0, w1 = b1;
        for (int i = 0; i < r; ++i) {
            add(ActionKind::BackwardInput, s0, b0++);
            add(ActionKind::BackwardInput, s1, b1++);
        }
        for (int i = 0; i < pp - r; ++i) {
            add(ActionKind::BackwardInput, s0, b0++);
            add(ActionKind::BackwardWeight, s0, w0++);
        }
        while (w1 < b1)
            add(ActionKind::BackwardWeight, s1, w1++);
        while (w0 < b0)
            add(ActionKind::BackwardWeight, s0, w0++);
    }
    return ranks;
}

// One rank of DeepSeek's DualPipe family (deepseek-ai/DualPipe): the eight steps of dualpipev.py DualPipeV.step and
// dualpipe.py DualPipe.step, which are the same loop over (ranks, rank, chunks) = (pp, r, m) in DualPipeV and
// (pp / 2, min(r, pp - 1 - r), m / 2) in DualPipe, with "phase" 0 and 1 naming the rank's two virtual stages. A
// backward with zero bubble ("enable_zb") runs its input half now and queues the weight half, which a later W slot
// runs oldest first; otherwise the backward is whole. An overlapped forward-backward pair runs here as the forward
// followed by the whole backward: the pair shares the SMs, and what it hides is communication, priced elsewhere.
void appendDualPipeRank(std::vector<Action>& actions, int ranks, int rank, int chunks, std::array<int, 2> stage)
{
    std::array<int, 2> forwards {0, 0};
    std::array<int, 2> backwards {0, 0};
    std::vector<std::pair<int, int>> weights; // (stage, micro-batch), oldest first
    std::size_t nextWeight = 0;
    const auto forward = [&](int phase, bool paired = false) {
        actions.push_back({ActionKind::Forward, stage[std::size_t(phase)], forwards[std::size_t(phase)]++, paired});
    };
    const auto backward = [&](int phase, bool zeroBubble) {
        const int s = stage[std::size_t(phase)];
        const int mb = backwards[std::size_t(phase)]++;
        if (zeroBubble) {
            actions.push_back({ActionKind::BackwardInput, s, mb});
            weights.emplace_back(s, mb);
        } else {
            actions.push_back({ActionKind::Backward, s, mb});
        }
    };
    const auto weight = [&] {
        if (nextWeight < weights.size()) {
            const auto [s, mb] = weights[nextWeight++];
            actions.push_back({ActionKind::BackwardWeight, s, mb});
        }
    };
    for (int i = 0; i < (ranks - rank - 1) * 2; ++i) // step 1: F0
        forward(0);
    for (int i = 0; i < rank + 1; ++i) { // step 2: F0 F1
        forward(0);
        forward(1);
    }
    for (int i = 0; i < ranks - rank - 1; ++i) { // step 3: I1 W F1
        backward(1, true);
        weight();
        forward(1);
    }
    for (int i = 0; i < chunks - 2 * ranks + rank + 1; ++i) { // step 4: (F0 B1) (F1 B0)
        // The middle rank runs its first F0 and B1 apart "to further reduce bubble size" (both files).
        forward(0, !(i == 0 && rank == ranks - 1));
        backward(1, false);
        forward(1, true);
        backward(0, false);
    }
    for (int i = 0; i < ranks - rank - 1; ++i) { // step 5: B1 (F1 B0)
        backward(1, false);
        forward(1, true);
        backward(0, false);
    }
    const int step6 = rank + 1; // step 6: B1 B0, the second half with zero bubble
    bool zeroBubble = false;
    for (int i = 0; i < step6; ++i) {
        if (i == step6 / 2 && rank % 2 == 1)
            zeroBubble = true;
        backward(1, zeroBubble);
        if (i == step6 / 2 && rank % 2 == 0)
            zeroBubble = true;
        backward(0, zeroBubble);
    }
    for (int i = 0; i < ranks - rank - 1; ++i) { // step 7: W B0
        weight();
        backward(0, zeroBubble);
    }
    while (nextWeight < weights.size()) // step 8: the remaining W
        weight();
}

// DualPipeV (dualpipev.py, as PyTorch's ScheduleDualPipeV writes it out): phase 0 is the rank's stage on the way
// down the V, phase 1 its stage on the way back.
std::vector<std::vector<Action>> buildDualPipeV(int pp, int m)
{
    std::vector<std::vector<Action>> ranks(static_cast<std::size_t>(pp));
    for (int r = 0; r < pp; ++r) {
        ranks[std::size_t(r)].reserve(std::size_t(6 * m));
        appendDualPipeRank(ranks[std::size_t(r)], pp, r, m, {r, 2 * pp - 1 - r});
    }
    return ranks;
}

// DualPipe (dualpipe.py): in the first half of the ranks phase 0 is the forward direction (virtual stage r) and
// phase 1 the reverse one (2pp - 1 - r); in the second half the other way round.
std::vector<std::vector<Action>> buildDualPipe(int pp, int m)
{
    std::vector<std::vector<Action>> ranks(static_cast<std::size_t>(pp));
    for (int r = 0; r < pp; ++r) {
        const int halfRank = std::min(r, pp - 1 - r);
        const std::array<int, 2> stage
            = r < pp / 2 ? std::array<int, 2> {r, 2 * pp - 1 - r} : std::array<int, 2> {2 * pp - 1 - r, r};
        ranks[std::size_t(r)].reserve(std::size_t(3 * m));
        appendDualPipeRank(ranks[std::size_t(r)], pp / 2, halfRank, m / 2, stage);
    }
    return ranks;
}

} // namespace

bool isVShaped(ScheduleKind kind)
{
    return kind == ScheduleKind::ZeroBubbleV || kind == ScheduleKind::DualPipeV || kind == ScheduleKind::DualPipe;
}

bool overlapsMicrobatchPairs(ScheduleKind kind)
{
    return kind == ScheduleKind::Interleaved1F1B || kind == ScheduleKind::DualPipeV || kind == ScheduleKind::DualPipe;
}

bool isBidirectional(ScheduleKind kind)
{
    return kind == ScheduleKind::DualPipe;
}

bool startsChain(ScheduleKind kind, int pp, int stage)
{
    return stage == 0 || (isBidirectional(kind) && stage == pp);
}

bool endsChain(ScheduleKind kind, int pp, int vpp, int stage)
{
    return stage == pp * vpp - 1 || (isBidirectional(kind) && stage == pp - 1);
}

int chainMicrobatches(ScheduleKind kind, int numMicrobatches)
{
    return isBidirectional(kind) ? numMicrobatches / 2 : numMicrobatches;
}

int layerChunks(ScheduleKind kind, int pp, int vpp)
{
    return isBidirectional(kind) ? pp : pp * vpp;
}

std::string_view layerChunksName(ScheduleKind kind)
{
    return isBidirectional(kind) ? "pp" : "pp x vpp";
}

int layerChunkOf(ScheduleKind kind, int pp, int stage)
{
    return isBidirectional(kind) ? stage % pp : stage;
}

int stageRank(ScheduleKind kind, int pp, int stage)
{
    if (isVShaped(kind))
        return stage < pp ? stage : 2 * pp - 1 - stage;
    return stage % pp;
}

int chunkStage(ScheduleKind kind, int pp, int rank, int chunk)
{
    if (isVShaped(kind))
        return chunk == 0 ? rank : 2 * pp - 1 - rank;
    return chunk * pp + rank;
}

int stageChunk(ScheduleKind kind, int pp, int stage)
{
    if (isVShaped(kind))
        return stage < pp ? 0 : 1;
    return stage / pp;
}

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
    case ScheduleKind::ZeroBubbleV:
        return buildZeroBubbleV(pp, numMicrobatches);
    case ScheduleKind::DualPipeV:
        return buildDualPipeV(pp, numMicrobatches);
    case ScheduleKind::DualPipe:
        return buildDualPipe(pp, numMicrobatches);
    }
    return {}; // unreachable: checkShape rejects unknown kinds
}

} // namespace shardscape
