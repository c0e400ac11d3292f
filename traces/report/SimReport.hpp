#pragma once
#include "strategies/graph/SimResult.hpp"
#include "strategies/analytic/Analytic.hpp"
#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// The `simulation` section: step time, MFU, tokens/s, per-device and maximum busy time per stream, exposed
/// communication, bubble fraction per stage, bytes sent per class, peak memory by state.
/// FLOP rates per GPU: model_tflops_per_gpu and mfu count the model's FLOPs (forward + backward = 3x forward, no
/// recompute); hardware_tflops_per_gpu and hfu count what the devices execute (recompute included).
Json simulation_section(const Experiment& e, const ClusterSpec& c, const Analysis& a, const SimResult& r);

/// The `validation` list: each analytic figure beside its simulated figure and their difference; the per-device
/// byte comparison counts the devices whose simulated bytes of any class differ from their stage's analytic bytes.
Json validation_section(const Experiment& e, const Analysis& a, const SimResult& r);

}  // namespace placesim
