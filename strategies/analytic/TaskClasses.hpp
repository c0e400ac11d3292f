#pragma once
#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/graph/TaskGraph.hpp"

namespace placesim {

/// Seconds of compute tasks by kernel class, with the optimizer's memory-bound step apart (a profiler trace shows it
/// as its own kernels: fused Adam's multi_tensor_apply).
struct TaskClassSeconds {
  ClassSeconds passes;
  double optimizer = 0;
  double total() const { return passes.total() + optimizer; }
};

/// Splits an experiment's compute tasks into kernel classes: a task is its layers' passes, each split by class as
/// the accelerator's profile costs it (layer_times, or moe_dense_times for an MoE layer; expert_times at the first
/// ep rank's routed pairs, in proportion to the task's; logit_times; embedding_times; a selective recompute inside the
/// backward), and what the expansion adds to them (FSDP's gather copies, sequence-parallel copies, context
/// parallelism's merges, the exposed share of overlapped tensor-parallel collectives), which is counted memory-bound.
/// An optimizer step is memory-bound (optimizer_step_s).
class TaskClassifier {
 public:
  TaskClassifier(const Experiment& e, const AcceleratorSpec& acc);
  /// The classes of a compute task that took `seconds` (its own, or as simulated).
  TaskClassSeconds split(const Compute& c, double seconds) const;
  /// The same task's classes under another profile `other` (another accelerator state of the same experiment): its
  /// passes' classes there, and what the expansion added scaled by the two profiles' memory efficiencies.
  TaskClassSeconds rescale(const Compute& c, double seconds, const TaskClassifier& other) const;

 private:
  const PassTimes& unit(const Compute& c) const;
  /// The classes of one pass of kind `kind` over `p`'s unit (a backward with its selective recompute).
  ClassSeconds pass_classes(const PassTimes& p, TaskKind kind) const;
  const ModelSpec* model_;
  bool selective_in_backward_ = false;
  double memory_efficiency_ = 1;
  PassTimes layer_, moe_, experts_, head_, embedding_;
  double optimizer_per_elem_ = 0;
};

/// Compute seconds of device `device` in graph g by class (its tasks' own seconds).
TaskClassSeconds device_class_seconds(const TaskGraph& g, int device, const TaskClassifier& classes);
/// The same under the profile of `other`.
TaskClassSeconds device_class_seconds(const TaskGraph& g, int device, const TaskClassifier& classes,
                                      const TaskClassifier& other);

}  // namespace placesim
