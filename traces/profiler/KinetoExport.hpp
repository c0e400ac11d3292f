#pragma once
#include <string>

#include "strategies/graph/Record.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "strategies/placement/Experiment.hpp"
#include "topology/hardware/Accelerator.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// The simulated step of `device` as a PyTorch profiler (Kineto) trace, as torch.profiler would have recorded it on
/// that rank: one ProfilerStep#1 span, every compute task as its kernels by class in the proportions of its unit's
/// pass (TaskClassifier: GEMM, fused attention and memory-bound kernels back to back, the launch floor as idle
/// time), the forward launched from the main thread and the backward from a second (autograd's) thread, the
/// optimizer step inside an Optimizer.step span, each collective as one NCCL kernel on its stream with PyTorch's
/// record_param_comms operator (its message sizes, group size and dtype), point-to-point transfers as send/recv
/// kernels, offloads as copies, and host time as idle GPU time under a host span. `graph` is the expanded step the
/// record came from; `record` must hold the device's tasks.
Json kineto_trace(const SimulationRecord& record, const TaskGraph& graph, const Experiment& e,
                  const AcceleratorSpec& acc, int device);

}  // namespace placesim
