// SPDX-License-Identifier: MIT
#include "v_stage_split.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

namespace shardscape {

namespace {

/**
 * Lanes 0 .. lanes - 2 take layers from both ends of what is left, each lane up to `limit` seconds (and, when `even`,
 * about its share of the rest), adding to its lighter chunk first; the last lane takes the middle and cuts it in two.
 * Returns the chunk sizes, or empty when the middle lane would exceed `limit`.
 */
std::vector<int> fill(const std::vector<double>& time, int lanes, double limit, bool even)
{
    const int layers = static_cast<int>(time.size());
    std::vector<int> counts(static_cast<std::size_t>(2 * lanes), 0);
    int front = 0; // next layer for a front chunk
    int back = layers; // one past the next layer for a back chunk
    for (int lane = 0; lane + 1 < lanes; ++lane) {
        // Every later lane needs two layers (one per chunk).
        const auto spare = [&] { return back - front - 2 * (lanes - lane - 1); };
        // Evenly: a lane stops near its share of what is left (a layer joins while at least half of it fits).
        const double share
            = even ? std::accumulate(time.begin() + front, time.begin() + back, 0.0) / (lanes - lane) : limit;
        const auto fits
            = [&](double load, double next) { return load + next <= limit && (!even || load + next / 2 <= share); };
        double head = time[static_cast<std::size_t>(front++)];
        double tail = time[static_cast<std::size_t>(--back)];
        int headCount = 1;
        int tailCount = 1;
        if (head + tail > limit)
            return {};
        while (spare() > 0) {
            const double nextHead = time[static_cast<std::size_t>(front)];
            const double nextTail = time[static_cast<std::size_t>(back - 1)];
            const bool headFirst = head + nextHead <= tail + nextTail;
            if (headFirst && fits(head + tail, nextHead)) {
                head += nextHead;
                ++front;
                ++headCount;
            } else if (fits(head + tail, nextTail)) {
                tail += nextTail;
                --back;
                ++tailCount;
            } else if (fits(head + tail, nextHead)) {
                head += nextHead;
                ++front;
                ++headCount;
            } else {
                break;
            }
        }
        counts[static_cast<std::size_t>(lane)] = headCount;
        counts[static_cast<std::size_t>(2 * lanes - 1 - lane)] = tailCount;
    }
    // The turn of the V: one lane, two chunks, cut where they are most even.
    const double middle = std::accumulate(time.begin() + front, time.begin() + back, 0.0);
    if (middle > limit || back - front < 2)
        return {};
    int cut = front + 1;
    double first = time[static_cast<std::size_t>(front)];
    while (cut + 1 < back && first + time[static_cast<std::size_t>(cut)] <= middle / 2) {
        first += time[static_cast<std::size_t>(cut)];
        ++cut;
    }
    if (cut + 1 < back
        && std::abs(middle - 2 * (first + time[static_cast<std::size_t>(cut)])) < std::abs(middle - 2 * first))
        ++cut;
    counts[static_cast<std::size_t>(lanes - 1)] = cut - front;
    counts[static_cast<std::size_t>(lanes)] = back - cut;
    return counts;
}

} // namespace

std::vector<int> vShapedStageSplit(const std::vector<double>& time, int lanes)
{
    if (lanes < 1 || static_cast<int>(time.size()) < 2 * lanes)
        return {};
    const double total = std::accumulate(time.begin(), time.end(), 0.0);
    double low = total / lanes;
    double high = total;
    std::vector<int> best = fill(time, lanes, high, false);
    // Bisection on the busiest lane: fill() is monotone in the limit for the greedy it runs.
    for (int i = 0; i < 48 && high - low > 1e-9 * total; ++i) {
        const double mid = (low + high) / 2;
        auto counts = fill(time, lanes, mid, false);
        if (counts.empty()) {
            low = mid;
        } else {
            high = mid;
            best = std::move(counts);
        }
    }
    // The same busiest lane with the others levelled (the greedy above fills the first lanes to the limit and leaves
    // the turn of the V short): each lane takes about its share of what is left, never over the limit.
    if (auto even = fill(time, lanes, high, true); !even.empty())
        return even;
    return best;
}

} // namespace shardscape
