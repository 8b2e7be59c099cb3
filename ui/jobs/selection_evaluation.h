// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"

#include <memory>
#include <stop_token>
#include <utility>
#include <vector>

namespace shardscape::ui {

/** Why a configuration is evaluated: the selected candidate, or a what-if edit of it. */
enum class EvaluationPurpose
{
    Selection,
    WhatIf
};

/** One configuration to look at closely: plain data, copied into the job. */
struct EvaluationRequest
{
    EvaluationPurpose purpose = EvaluationPurpose::Selection;
    std::shared_ptr<const CostModel> model;
    ParallelConfig config;
    Workload workload;
    /** What-if edits may use fewer GPUs than the cluster has. */
    bool require_full_cluster = true;
    /** Also compute the bubble ratio for other micro-batch counts (the bubble chart). */
    bool bubble_curve = true;
};

/** A configuration evaluated with its timeline, plus what the views derive from it. */
struct SelectionEvaluation
{
    EvaluationPurpose purpose = EvaluationPurpose::Selection;
    std::shared_ptr<const Evaluation> evaluation; ///< simulation holds the timeline events
    /** (micro-batches per step, bubble ratio) for the same config with other micro-batch counts, ascending. */
    std::vector<std::pair<int, double>> bubble_curve;
    double evaluate_s = 0; ///< seconds spent re-simulating the configuration itself
    double total_s = 0; ///< seconds for everything, the curve included
};

/**
 * Re-simulates `request.config` with EvaluateOptions{record_timeline = true} and, when asked, the bubble ratio for
 * micro-batch counts around it (powers of two up to 4x the current one, and the current one; multiples of pp for
 * the interleaved schedule). Synchronous; InputError for a malformed configuration.
 */
SelectionEvaluation evaluateSelection(const EvaluationRequest& request, std::stop_token stop = {});

} // namespace shardscape::ui
