// SPDX-License-Identifier: MIT
#include "shardscape/search/tp_annotation.h"

#include "shardscape/support/strings.h"

namespace shardscape {

bool hasTensorParallelRoles(const ModelGraph& graph)
{
    for (const auto& op : graph.ops())
        if (op.tp_role != TpRole::Replicated)
            return true;
    return false;
}

namespace {

/** Rebuilds a graph with edited tensors and ops (ModelGraph is append-only by design). */
ModelGraph rebuilt(const ModelGraph& graph, std::vector<Tensor> tensors, std::vector<Op> ops)
{
    ModelGraph out;
    out.name = graph.name;
    out.batch = graph.batch;
    out.seq_len = graph.seq_len;
    out.dtype = graph.dtype;
    out.transformer = graph.transformer;
    out.reserve(tensors.size(), ops.size());
    for (auto& t : tensors)
        out.addTensor(std::move(t));
    for (auto& op : ops)
        out.addOp(std::move(op));
    return out;
}

bool hasMatrixWeight(const ModelGraph& graph, const Op& op)
{
    return !op.params.empty() && graph.tensor(op.params.front()).shape.size() >= 2 && op.kind != OpKind::Embedding;
}

} // namespace

ModelGraph withoutTensorParallelRoles(const ModelGraph& graph)
{
    std::vector<Tensor> tensors = graph.tensors();
    std::vector<Op> ops = graph.ops();
    for (auto& t : tensors)
        t.tp_sharded = false;
    for (auto& op : ops)
        op.tp_role = TpRole::Replicated;
    return rebuilt(graph, std::move(tensors), std::move(ops));
}

ModelGraph annotateTensorParallel(const ModelGraph& graph, const std::vector<Layer>& layers, const CostSource& costs,
                                  const ShardingOptions& options, TpAnnotationReport* report)
{
    std::vector<Tensor> tensors = graph.tensors();
    std::vector<Op> ops = graph.ops();
    TpAnnotationReport local;
    local.tp = options.tp;
    local.solver = options.solver;
    for (const auto& layer : layers) {
        const ShardingPlan plan = solveSharding(graph, layer.ops, costs, options);
        if (!plan.feasible) {
            local.warnings.push_back(cat(layer.name, ": ", plan.reason, " (kept replicated)"));
            continue;
        }
        for (const auto& choice : plan.ops) {
            Op& op = ops[static_cast<std::size_t>(choice.op)];
            const bool matrix = hasMatrixWeight(graph, op);
            const bool split = choice.strategy == ShardStrategy::Column || choice.strategy == ShardStrategy::Row
                || choice.strategy == ShardStrategy::Heads;
            if (split && (op.kind == OpKind::Embedding || op.kind == OpKind::Loss)) {
                // A split table (or a loss over split logits) is Megatron's vocab-parallel case: the table is
                // sharded and the output all-reduced whole; the loss needs its small per-token all-reduces.
                op.tp_role = TpRole::Vocab;
                for (const auto p : op.params)
                    tensors[static_cast<std::size_t>(p)].tp_sharded = true;
                ++local.column;
                continue;
            }
            switch (choice.strategy) {
            case ShardStrategy::Column:
                op.tp_role = matrix ? TpRole::Column : TpRole::Local;
                break;
            case ShardStrategy::Row:
                op.tp_role = matrix ? TpRole::Row : TpRole::Local;
                break;
            case ShardStrategy::Heads:
                op.tp_role = TpRole::Heads;
                break;
            case ShardStrategy::Batch:
            case ShardStrategy::Replicate:
                op.tp_role = TpRole::Replicated;
                break;
            }
            // Weights of split matmuls are split; outputs are split unless a row-parallel op sums them.
            if (op.tp_role == TpRole::Column || op.tp_role == TpRole::Row)
                for (const auto p : op.params)
                    tensors[static_cast<std::size_t>(p)].tp_sharded = true;
            if (op.tp_role == TpRole::Column || op.tp_role == TpRole::Heads || op.tp_role == TpRole::Local)
                for (const auto t : op.outputs)
                    tensors[static_cast<std::size_t>(t)].tp_sharded = true;
            switch (op.tp_role) {
            case TpRole::Column:
                ++local.column;
                break;
            case TpRole::Row:
                ++local.row;
                break;
            case TpRole::Heads:
                ++local.heads;
                break;
            case TpRole::Local:
                ++local.local;
                break;
            default:
                ++local.replicated;
                break;
            }
        }
    }
    if (report)
        *report = std::move(local);
    return rebuilt(graph, std::move(tensors), std::move(ops));
}

} // namespace shardscape
