#pragma once
#include <string>

#include "strategies/graph/Record.hpp"
#include "tests/RecordBuilders.hpp"

namespace placesim::test {

/// The shape of a synthetic GPipe-scheduled Megatron-style run, for trace size and viewer checks. Not a
/// simulation: times follow a fixed pattern so that counts are known, streams never overlap, and the record has
/// the density (tasks per device) a real one has.
struct PipelineShape {
  int pp = 4, tp = 2, dp = 2;
  int microbatches = 8;
  int layers_per_stage = 2;
  bool recompute = true;
  int dp_buckets = 2;
  int only_dp = -1, only_tp = -1;  ///< when >= 0, record tasks and memory of those devices only (all are listed)
};

/// Task counts per device of a shape: compute (forward, backward, recompute, optimizer) and collective steps.
inline int compute_tasks_per_device(const PipelineShape& s) {
  return s.microbatches * s.layers_per_stage * (s.recompute ? 3 : 2) + 1;
}

/// Synthesizes the record. Per device, each forward layer is followed by 2 TP all-reduces (ring, 2(tp-1) steps),
/// each backward layer by 2 more (and its recompute by 2); P2P sends carry activations/gradients between stages;
/// DP gradients are all-reduced in `dp_buckets` rings after the last backward, then the optimizer runs.
inline SimulationRecord synthetic_pipeline(const PipelineShape& s) {
  const double compute_s = 1e-3, step_s = 20e-6, p2p_s = 200e-6, dp_step_s = 400e-6;
  const int tp_steps = s.tp > 1 ? 2 * (s.tp - 1) : 0, dp_steps = s.dp > 1 ? 2 * (s.dp - 1) : 0;
  const double layer_s = compute_s + 2 * tp_steps * step_s;
  const double fwd_slot = s.layers_per_stage * layer_s + p2p_s;
  const double bwd_slot = s.layers_per_stage * (s.recompute ? 3 : 2) * layer_s + p2p_s;
  const double act_bytes = 100e6, tp_step_bytes = 25e6, grad_bytes = 400e6;
  SimulationRecord r;
  const int devices = s.pp * s.dp * s.tp;
  for (int rank = 0; rank < devices; ++rank)
    r.devices.push_back(DeviceInfo{rank / 8, rank % 8, (rank / s.tp) % s.dp, rank % s.tp, rank / (s.tp * s.dp)});
  std::uint64_t id = 0, collective = 0, order = 0;
  auto rank_of = [&](int dp, int tp, int pp) { return tp + s.tp * (dp + s.dp * pp); };
  auto add = [&](int device, Stream stream, TaskKind kind, double start, double duration, std::string name) {
    TaskRecord t = task_record(device, stream, kind, start, start + duration);
    t.task = ++id;
    t.name = std::move(name);
    t.stage = static_cast<int>(r.devices[static_cast<std::size_t>(device)].pp);
    r.tasks.push_back(std::move(t));
    return &r.tasks.back();
  };
  auto memory = [&](int device, double at, State state, double delta) {
    r.memory.push_back(MemoryEvent{at, device, state, delta, order++});
  };
  /// A compute task on one layer, then its 2 TP all-reduces; returns when the layer is done.
  auto layer = [&](int device, TaskKind kind, double at, int l, int mb, const std::string& what) {
    auto* t =
        add(device, Stream::Compute, kind, at, compute_s, what + " L" + std::to_string(l) + " mb" + std::to_string(mb));
    t->layer = l;
    t->microbatch = mb;
    t->flops = (kind == TaskKind::Backward ? 2 : 1) * 1e12;
    at += compute_s;
    const auto& d = r.devices[static_cast<std::size_t>(device)];
    for (int c = 0; c < 2; ++c) {
      ++collective;
      for (int k = 0; k < tp_steps; ++k, at += step_s) {
        auto* step =
            add(device, Stream::TpComm, TaskKind::Collective, at, step_s,
                "allreduce tp grp" + std::to_string(d.pp * s.dp + d.dp) + " step" + std::to_string(k) + " 25 MB");
        step->bytes = tp_step_bytes;
        step->comm_class = CommClass::TpCollective;
        step->collective = collective * 10000 + static_cast<std::uint64_t>(d.pp * s.dp + d.dp);
        step->step = k;
        step->peer = rank_of(static_cast<int>(d.dp), static_cast<int>((d.tp + 1) % s.tp), static_cast<int>(d.pp));
        step->algorithm = "ring";
        step->layer = l;
        step->microbatch = mb;
      }
    }
    return at;
  };
  for (int device = 0; device < devices; ++device) {
    const auto& d = r.devices[static_cast<std::size_t>(device)];
    if ((s.only_dp >= 0 && d.dp != s.only_dp) || (s.only_tp >= 0 && d.tp != s.only_tp)) continue;
    const int st = static_cast<int>(d.pp);
    memory(device, 0, State::Parameters, 2e9);
    memory(device, 0, State::Optimizer, 12e9);
    collective = 0;  // every device numbers its collectives alike, so group members share ids
    for (int mb = 0; mb < s.microbatches; ++mb) {
      double at = (st + mb) * fwd_slot;
      memory(device, at, State::Activations, act_bytes);
      for (int l = 0; l < s.layers_per_stage; ++l)
        at = layer(device, TaskKind::Forward, at, st * s.layers_per_stage + l, mb, "fwd");
      if (st + 1 < s.pp) {
        auto* send = add(device, Stream::PpSend, TaskKind::P2P, at, p2p_s, "send act mb" + std::to_string(mb));
        send->peer = rank_of(static_cast<int>(d.dp), static_cast<int>(d.tp), st + 1);
        send->bytes = act_bytes;
        send->comm_class = CommClass::PpP2P;
        send->microbatch = mb;
      }
    }
    const double backward_start = (s.microbatches + s.pp - 1) * fwd_slot;
    memory(device, backward_start, State::Gradients, 2e9);
    for (int mb = 0; mb < s.microbatches; ++mb) {
      double at = backward_start + (s.pp - 1 - st + mb) * bwd_slot;
      for (int l = s.layers_per_stage - 1; l >= 0; --l) {
        if (s.recompute) at = layer(device, TaskKind::Recompute, at, st * s.layers_per_stage + l, mb, "recompute");
        at = layer(device, TaskKind::Backward, at, st * s.layers_per_stage + l, mb, "bwd");
      }
      memory(device, at, State::Activations, -act_bytes);
      if (st > 0) {
        auto* send = add(device, Stream::PpSend, TaskKind::P2P, at, p2p_s, "send grad mb" + std::to_string(mb));
        send->peer = rank_of(static_cast<int>(d.dp), static_cast<int>(d.tp), st - 1);
        send->bytes = act_bytes;
        send->comm_class = CommClass::PpP2P;
        send->microbatch = mb;
      }
    }
    double at = backward_start + (s.microbatches + s.pp - 1) * bwd_slot;
    for (int b = 0; b < s.dp_buckets && dp_steps > 0; ++b) {
      for (int k = 0; k < dp_steps; ++k, at += dp_step_s) {
        auto* step = add(device, Stream::DpComm, TaskKind::Collective, at, dp_step_s,
                         "allreduce dp bucket" + std::to_string(b) + " step" + std::to_string(k));
        step->bytes = grad_bytes / s.dp;
        step->comm_class = CommClass::DpGradSync;
        step->collective = 1000000000ULL + static_cast<std::uint64_t>(b * 100000 + st * 1000 + d.tp);
        step->step = k;
        step->peer = rank_of(static_cast<int>((d.dp + 1) % s.dp), static_cast<int>(d.tp), st);
        step->algorithm = "ring";
      }
    }
    add(device, Stream::Compute, TaskKind::Optimizer, at, 5 * compute_s, "adam");
    r.step_time_s = std::max(r.step_time_s, at + 5 * compute_s);
  }
  return r;
}

}  // namespace placesim::test
