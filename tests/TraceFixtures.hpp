#pragma once
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "strategies/graph/Record.hpp"
#include "tests/RecordBuilders.hpp"

namespace placesim::test {

/// A tiny two-stage pipeline, small enough to count by hand (times in ms):
///
///   device 0 (pp0)  compute  F0 F1 F0 F1 (0-4)  B1 B0 B1 B0 (6-10)  opt (13-14)
///                   pp-send  act mb0 → 1 (2-2.5), act mb1 → 1 (4-4.5)
///                   dp-comm  allreduce steps 0,1,2 (10-10.8, 11-11.8, 12-12.8) → device 1
///   device 1 (pp1)  the same compute and collective; pp-send grad mb0 → 0 (10.2-10.6)
///
/// Each device: 2 micro-batches × 2 layers × (forward, backward) = 8 compute tasks + 1 optimizer; 3 P2P in all.
/// Memory per device: parameters 1000 and optimizer 4000 at 0, activations +100 at each forward start and -100 at
/// each backward end, gradients +1000 at 6 ms, and at 12 ms a transient +500/-500 of activations (same instant):
/// peak 1000 + 4000 + 1000 + 500 = 6500, reached only if the transient is kept.
/// Bytes in flight: 3e6 on both devices while the grad P2P (2e6) overlaps collective step 0 (1e6).
inline SimulationRecord two_stage_record() {
  constexpr double ms = 1e-3;
  SimulationRecord r;
  r.devices = {DeviceInfo{0, 0, 0, 0, 0}, DeviceInfo{0, 1, 0, 0, 1}};
  r.step_time_s = 14 * ms;
  std::uint64_t id = 0;
  auto task = [&](int device, Stream stream, TaskKind kind, double start_ms, double end_ms, std::string name) {
    TaskRecord t = task_record(device, stream, kind, start_ms * ms, end_ms * ms);
    t.task = ++id;
    t.name = std::move(name);
    t.stage = device;
    r.tasks.push_back(t);
    return r.tasks.size() - 1;
  };
  std::uint64_t order = 0;
  auto memory = [&](int device, double at_ms, State state, double delta) {
    r.memory.push_back(MemoryEvent{at_ms * ms, device, state, delta, order++});
  };
  for (int d = 0; d < 2; ++d) {
    memory(d, 0, State::Parameters, 1000);
    memory(d, 0, State::Optimizer, 4000);
    for (int mb = 0; mb < 2; ++mb)
      for (int layer = 0; layer < 2; ++layer) {
        double at = 2 * mb + layer;
        auto i = task(d, Stream::Compute, TaskKind::Forward, at, at + 1,
                      "fwd L" + std::to_string(layer) + " mb" + std::to_string(mb));
        r.tasks[i].layer = layer;
        r.tasks[i].microbatch = mb;
        r.tasks[i].flops = 1e9;
        memory(d, at, State::Activations, 100);
      }
    memory(d, 6, State::Gradients, 1000);
    for (int mb = 0; mb < 2; ++mb)
      for (int layer = 1; layer >= 0; --layer) {
        double at = 6 + 2 * mb + (1 - layer);
        auto i = task(d, Stream::Compute, TaskKind::Backward, at, at + 1,
                      "bwd L" + std::to_string(layer) + " mb" + std::to_string(mb));
        r.tasks[i].layer = layer;
        r.tasks[i].microbatch = mb;
        r.tasks[i].flops = 2e9;
        memory(d, at + 1, State::Activations, -100);
      }
    memory(d, 12, State::Activations, 500);
    memory(d, 12, State::Activations, -500);
    for (int step = 0; step < 3; ++step) {
      auto i = task(d, Stream::DpComm, TaskKind::Collective, 10 + step, 10.8 + step,
                    "allreduce dp grp@gpu0 step" + std::to_string(step) + " 1.0 MB");
      TaskRecord& t = r.tasks[i];
      t.bytes = 1e6;
      t.comm_class = CommClass::DpGradSync;
      t.peer = 1 - d;
      t.collective = 7;
      t.step = step;
      t.algorithm = "ring";
    }
    task(d, Stream::Compute, TaskKind::Optimizer, 13, 14, "adam");
  }
  auto p2p = [&](int from, double start_ms, double end_ms, std::string name, int mb) {
    auto i = task(from, Stream::PpSend, TaskKind::P2P, start_ms, end_ms, std::move(name));
    r.tasks[i].peer = 1 - from;
    r.tasks[i].bytes = 2e6;
    r.tasks[i].comm_class = CommClass::PpP2P;
    r.tasks[i].microbatch = mb;
  };
  p2p(0, 2, 2.5, "send act mb0", 0);
  p2p(0, 4, 4.5, "send act mb1", 1);
  p2p(1, 10.2, 10.6, "send grad mb0", 0);
  std::stable_sort(r.memory.begin(), r.memory.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) { return a.time_s < b.time_s; });
  return r;
}

/// A file in the temporary directory for one test's output, distinct per process (tests run in parallel),
/// removed when the test ends.
struct ScratchFile {
  explicit ScratchFile(const std::string& name)
      : path(
            (std::filesystem::temp_directory_path() / ("placesim-" + std::to_string(getpid()) + "-" + name)).string()) {
  }
  ~ScratchFile() { std::filesystem::remove(path); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  std::string path;
};

}  // namespace placesim::test
