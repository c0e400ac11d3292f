#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/placement/Collective.hpp"
#include "strategies/placement/Placement.hpp"

namespace placesim {

/// Streams of a device: each runs one task at a time, and they overlap with each other, like CUDA streams.
/// CpComm: context parallelism's K/V exchanges (ring sends and receives, all-gathers, reduce-scatters).
/// EpComm: expert parallelism's all-to-alls (dispatch and combine) and the experts' data-parallel collectives.
enum class Stream { Compute, TpComm, DpComm, DpGather, PpSend, PpRecv, H2D, D2H, Host, CpComm, EpComm };
inline constexpr int kStreams = 11;
const char* to_string(Stream s);
/// The stream a transfer of class `c` occupies on its receiver: pp-recv, or cp for context parallelism's ring.
inline Stream receive_stream(CommClass c) {
  return c == CommClass::CpKv ? Stream::CpComm : Stream::PpRecv;
}

/// What a task is. Collective steps and point-to-point transfers are recorded on the sending device.
/// Kinds of executed tasks. WeightGrad: the weight-gradient half of a backward that a schedule split (zb-h1, zb-h2);
/// Backward is then its input-gradient half.
enum class TaskKind { Forward, Backward, Recompute, Optimizer, Collective, P2P, Offload, HostCompute, WeightGrad };
const char* to_string(TaskKind k);

/// One executed task: what ran where and when, with the arguments a trace viewer shows.
struct TaskRecord {
  std::uint64_t task = 0;  ///< stable id from expand()
  int device = 0;          ///< global device (GPU) index
  Stream stream = Stream::Compute;
  TaskKind kind = TaskKind::Forward;
  double start_s = 0, end_s = 0;
  std::string name;  ///< "fwd L12 mb3", "allreduce dp grp7 step3 1.2 MB"
  int layer = -1;    ///< first layer of the task's layer group, -1 if none
  int layers = 0;    ///< layers in the task's group
  int microbatch = -1;
  int stage = -1;
  int chunk = -1;                                ///< interleaved model chunk
  int weight_version = -1;                       ///< version of the stage's weights the task read (pipelines)
  double bytes = 0;                              ///< payload (communication) or 0
  double flops = 0;                              ///< FLOPs (compute) or 0
  CommClass comm_class = CommClass::DpGradSync;  ///< for Collective/P2P tasks
  int peer = -1;                                 ///< receiving device of a transfer
  std::uint64_t collective = 0;                  ///< id shared by all steps of one collective (0 = none)
  int group_first = -1;                          ///< collectives: the group's lowest device (its name's grp@gpuN)
  /// Folded steps: the data lanes a collective's group spans (its lane count when contiguous, else every lane):
  /// the device in lane l belongs to the group copy starting at lane (l / group_lanes) x group_lanes.
  int group_lanes = 0;
  int step = -1;          ///< step index within the collective
  std::string algorithm;  ///< "ring", "tree", "hierarchical", "direct"
  bool backward = false;  ///< part of a backward pass: backward and recompute compute, gradient transfers and
                          ///< the collectives a backward issues
};

/// A change in the resident memory of one state on one device.
struct MemoryEvent {
  double time_s = 0;
  int device = 0;
  State state = State::Parameters;
  double delta_bytes = 0;
  std::uint64_t order = 0;  ///< tie-break for events at the same time (expansion order)
};

/// Names and coordinates of one simulated device.
struct DeviceInfo {
  int node = 0, local = 0;  ///< node index and GPU index inside the node
  std::int64_t dp = 0, tp = 0, pp = 0;
  std::int64_t cp = -1;      ///< context-parallel rank; -1 without context parallelism
  std::string name() const;  ///< "node3/gpu5 [dp1 pp2 tp5]", with cp "node3/gpu5 [dp1 pp2 cp1 tp1]"
};

/// Everything a simulation observed; the trace writer and the report consume it.
struct SimulationRecord {
  std::vector<DeviceInfo> devices;
  std::vector<TaskRecord> tasks;    ///< in completion order
  std::vector<MemoryEvent> memory;  ///< in time order
  double step_time_s = 0;
};

}  // namespace placesim
