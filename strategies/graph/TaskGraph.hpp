#pragma once
#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "strategies/placement/Collective.hpp"
#include "strategies/graph/Record.hpp"
#include "strategies/placement/Placement.hpp"

namespace placesim {

/// What part of the model a compute task runs: a group of transformer layers, the embedding lookup (first stage) or the
/// output head with the loss (last stage). The embedding and the head are tasks of their own, so that a layer's
/// simulated time can be read apart from them (as Megatron-LM's per-layer timers do).
/// Experts: an MoE layer's routed experts on one ep rank (the layer's dense part is a Layers task).
enum class ModelPart { Layers, Embedding, Head, Experts };

/// Work on one device's compute stream: a group of layers' forward, backward or recompute, the embedding's or the
/// head's forward or backward, or an optimizer step.
struct Compute {
  TaskKind kind = TaskKind::Forward;  ///< Forward, Backward, Recompute or Optimizer
  int device = 0;
  double seconds = 0;
  double flops = 0;
  int layer = -1, layers = 0;  ///< first layer and count (-1: not a layer task)
  int microbatch = -1;
  int chunk = -1;
  int weight_version = -1;
  ModelPart part = ModelPart::Layers;  ///< Embedding and Head tasks have layer -1
};


/// A collective over a group of devices, lowered by the simulator into algorithm steps (or an exact α–β delay).
/// `elems` is the full (padded) buffer: a multiple of the group size.
struct Collective {
  CollectiveOp op = CollectiveOp::AllReduce;
  CommClass cls = CommClass::DpGradSync;
  Stream stream = Stream::DpComm;
  int group = 0;  ///< index into TaskGraph::groups
  std::int64_t elems = 0;
  int elem_bytes = 2;
  int repeat = 1;  ///< back-to-back identical collectives merged into one task (TP layer groups)
  int layer = -1, layers = 0;
  int microbatch = -1;
  int chunk = -1;         ///< tensor-parallel collectives: the model chunk of the pass that issued it
  bool backward = false;  ///< issued by a backward pass (its recompute included)
  int split = -1;         ///< AllToAll: index into TaskGraph::a2a_tokens (tokens each member sends to member j)
  bool combine = false;   ///< AllToAll: a combine (member i returns tokens[i] tokens to every member), else a dispatch
};

/// A point-to-point transfer between two devices (pipeline activations and gradients).
struct P2P {
  int src = 0, dst = 0;
  double bytes = 0;
  CommClass cls = CommClass::PpP2P;
  int microbatch = -1;
  int chunk = -1;
  bool backward = false;  ///< gradient flowing to the previous stage
};

/// A PCIe transfer between a device and its host memory.
struct Offload {
  int device = 0;
  bool to_host = true;
  double bytes = 0;
  State state = State::Gradients;
};

/// Work on the host CPU on behalf of one device: the offloaded optimizer step, or (wait) host time the device's
/// compute stream waits for (training.host_time_per_microbatch and host_time_per_step).
struct HostCompute {
  int device = 0;
  double seconds = 0;
  double flops = 0;
  int microbatch = -1;       ///< the optimizer step on the host: the micro-batch after which the stage applies it
  bool wait = false;         ///< host time before the device's next compute: not an optimizer step
  int wait_microbatch = -1;  ///< wait: the micro-batch it comes before (-1: the step's own host time)
};

using TaskBody = std::variant<Compute, Collective, P2P, Offload, HostCompute>;

/// A change of resident memory applied when a task starts or ends.
struct MemDelta {
  int device = 0;
  State state = State::Parameters;
  double bytes = 0;
  bool buffer = false;  ///< transient gather/gradient buffer rather than resident state
};

struct Task {
  TaskBody body;
  int stage = -1;
  std::uint32_t mem_first = 0, mem_on_start = 0, mem_on_end = 0;  ///< deltas [first, +on_start) then (+on_end)
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Task>;
using TaskId = Graph::vertex_descriptor;

/// The expanded training step: tasks with stable ids (vertex index = expansion order) and dependencies (data plus
/// stream order). Pure data: built by expand(), read by the simulator, testable without SimGrid.
struct TaskGraph {
  Graph graph;
  int devices = 0;
  std::vector<std::vector<int>> groups;         ///< device lists of collectives, in ring order
  std::vector<MemDelta> deltas;                 ///< referenced by Task::mem_*
  std::vector<std::array<double, 4>> resident;  ///< per device, bytes per State resident from t = 0
  /// All-to-all routings: per entry, the tokens every member of the group sends to member j (Collective::split).
  std::vector<std::vector<std::int64_t>> a2a_tokens;

  TaskId add(TaskBody body, int stage);
  void depend(TaskId before, TaskId after);
  /// Memory deltas of `task`: applied at its start and at its end. Call once per task, right after add().
  void set_memory(TaskId task, const std::vector<MemDelta>& on_start, const std::vector<MemDelta>& on_end);
  int add_group(std::vector<int> devices);
  std::size_t size() const { return boost::num_vertices(graph); }
  const Task& operator[](TaskId id) const { return graph[id]; }
};

/// Devices a task occupies (one for most, the group for a collective) and the stream it runs on.
std::vector<int> task_devices(const TaskGraph& g, const Task& t);
Stream task_stream(const Task& t);
/// Bytes one device sends for a task (collectives: per algorithm step sums, ring algorithm; all-to-all: its pairs).
double task_bytes_sent(const TaskGraph& g, const Task& t, int device);

}  // namespace placesim
