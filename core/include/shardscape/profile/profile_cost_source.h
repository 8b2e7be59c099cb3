// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_params.h"
#include "shardscape/cost/cost_source.h"
#include "shardscape/profile/profile.h"
#include "shardscape/profile/profile_db.h"

#include <memory>
#include <string>
#include <vector>

namespace shardscape {

/**
 * A cost source that answers from measurements where the profile has them and asks `fallback` (the datasheet)
 * otherwise. Every lookup interpolates with LogCurve (log time against log work between measured points, the
 * nearest measured throughput beyond them):
 *
 * - matmul (m, n, k, dtype): rows of that dtype. An exact (m, n, k) match is used as measured. Otherwise the rows
 *   of the most similar aspect are interpolated by FLOPs (2mnk): a shape's aspect is (log m, log n, log k) minus
 *   their mean, rows within log(2) of the nearest aspect distance (Euclidean) form the curve. No row of that dtype:
 *   the fallback.
 * - attention (unmasked FLOPs, dtype): causal rows of that dtype by FLOPs (the backward pass, charged with more
 *   FLOPs, runs at the measured forward throughput). None: the fallback.
 * - memory (bytes): the "elementwise" rows, else "copy", else whichever op was measured, by bytes.
 * - collectives (kind, bytes, group): rows of that op measured on the same ranks and ranks per node, by bytes.
 *   Another group on the same side of the node boundary (one node, or several) is rescaled through its bus
 *   bandwidth, which nccl-tests defines to be independent of the rank count: t = t_measured(bytes) * f(n) / f(n_m)
 *   with f = 2(n-1)/n for all-reduce and (n-1)/n otherwise; the nearest such group (in log ranks and log ranks per
 *   node) is used. No group on that side: the fallback.
 * - p2p (bytes, inter-node): send_recv rows from one node (intra) or several (inter), the fewest ranks first.
 * - compute kernels are never shorter than fallback.minKernelTime(); collectives are used as measured.
 *
 * name() is "profile:<device slug> (<kinds measured>) + datasheet (<the others>)"; kinds are matmul, attention,
 * memory, collectives and p2p. Immutable and thread-safe.
 */
std::shared_ptr<const CostSource> makeProfileCostSource(std::shared_ptr<const Profile> profile,
                                                        std::shared_ptr<const CostSource> fallback);

/**
 * `inner` with matmul, attention, memory and collective (and p2p) times multiplied by the calibration's scales;
 * name() adds ", calibrated on N runs". Immutable and thread-safe.
 */
std::shared_ptr<const CostSource> makeCalibratedCostSource(const ProfileCalibration& calibration,
                                                           std::shared_ptr<const CostSource> inner);

/** The cost source for a cluster, and what was decided on the way (for the log and the CLI). */
struct CostSourceChoice
{
    std::shared_ptr<const CostSource> source;
    ProfileChoice profile;
    /** The profile's calibration memory term (CostParams::calibrated_memory_bytes); 0 without one. */
    double calibrated_memory_bytes = 0;
};

/**
 * The datasheet source for `cluster`, wrapped in the measured profile findProfile() picks for its device when there
 * is a usable one, and in its calibration when it has one (`calibrated_memory_bytes` is then the calibration's
 * memory term). Never throws for profile contents (they are reported in `profile.notes`).
 */
CostSourceChoice chooseCostSource(const Cluster& cluster, const CostParams& params, const ProfileRequest& request);

} // namespace shardscape
