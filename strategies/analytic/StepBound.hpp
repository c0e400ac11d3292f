#pragma once
#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// A lower bound on the simulated step time of `e` on cluster `c`, from the compute tasks and the tensor-parallel
/// collectives they wait for: no simulation of the experiment at any fidelity can finish a step sooner. Each device
/// runs its compute tasks one at a time at no less than their cost (overlap interference only slows them,
/// communication only delays them), and a layer's exposed TP collectives (those not run beside a GEMM) sit between
/// its tasks on the same chain, so a device of stage s needs at least
///
///   microbatches x (its layers' forward + backward + recompute + 0.9 x their exposed TP collectives at the node
///                   fabric's fitted NCCL time, and the embedding or head it holds
///                   + under GPipe or 1F1B with blocking exchanges (strategy.p2p megatron or deepspeed), 0.9 x each
///                   send of its boundary activation (one per micro-batch on the first and last stage, two on the
///                   others) at its bytes over the fastest link it may cross)
///   + its optimizer step (held on the device)
///
/// and, under a synchronous pipeline (GPipe, 1F1B, interleaved), the first micro-batch's forward through the first
/// model chunk of every stage before s and the last one's backward through them after it (the fill and drain of the
/// pipeline). Routed experts count at the least-loaded rank's cost; a recompute only where the layers it applies to
/// are known. The bound is the maximum over stages; 0 for an abstract pipeline, an opaque model or local SGD.
/// `placesim search` never simulates a candidate whose bound is at least the best simulated step time.
double step_time_lower_bound(const Experiment& e, const ClusterSpec& c);
/// The same on the experiment's own cluster section (parsed once per thread and section); NaN without one.
double step_time_lower_bound(const Experiment& e);

}  // namespace placesim
