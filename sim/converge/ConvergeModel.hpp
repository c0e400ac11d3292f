#pragma once
#include "strategies/pipeline/AbstractPipeline.hpp"
#include "strategies/placement/Experiment.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// An abstract pipeline standing for a model + cluster experiment, and how it was obtained.
struct DerivedPipeline {
  AbstractPipeline pipeline;  ///< the strategy's shape (one step) with uniform op times
  Json derivation;            ///< {"method", "simulated_step_time_s", "abstract_step_time_s", "per_stage": [{
                              ///<  "forward_s", "backward_s", "optimizer_s"}], "forward_s", "backward_s", "p2p_s",
                              ///<  "apply_s"}
};

/// Simulates one step of `e` with SimGrid (so: once per process) and derives the abstract pipeline the convergence
/// executor runs for many steps. From the task records of the pipeline at dp 0, tp 0:
/// - forward_s, backward_s: per stage, the summed spans of its forward (backward) ops divided by the micro-batches
///   per step, an op's span running from its first record's start to its last one's end (so the tensor-parallel
///   collectives between its layers count), recomputation added to the backward; the pipeline takes the slowest
///   stage's, since the slowest stage paces a pipeline;
/// - p2p_s: the mean pipeline send;
/// - apply_s: synchronous schedules (gpipe, 1f1b, interleaved): what makes the abstract step as long as the simulated
///   one (the optimizer, the data-parallel gradient sync and any other exposed time of the step end), never below
///   0; asynchronous ones: the slowest stage's optimizer span per weight update.
/// Throws InputError for what simulate refuses (no cluster, localsgd, an invalid strategy, ...).
DerivedPipeline derive_pipeline(const Experiment& e);

}  // namespace placesim
