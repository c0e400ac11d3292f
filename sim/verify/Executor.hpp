#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/placement/Strategy.hpp"

namespace placesim {

/// What the numeric executor runs: the tiny MLP (sim/verify/TinyMlp.hpp) of `layers` layers under `strategy`'s
/// placement, pipeline schedule and mesh (dp_shard x dp_replicate x pp; tp, cp and ep must be 1), for `steps` steps of
/// strategy.microbatches micro-batches per data rank, with SGD with momentum (synchronous schedules) or plain SGD
/// (asynchronous ones, as the stale-SGD executor of sim/converge runs them).
struct ExecutorSpec {
  StrategySpec strategy;  ///< resolved: dp = dp_shard x dp_replicate, microbatches set
  int layers = 4;
  int steps = 3;
  double step_size = 0.05;
  double momentum = 0.9;
  std::uint64_t seed = 1;
  /// Largest |executed - one device| still counted as equal. The data-parallel reductions sum in ring order, the
  /// one-device run in micro-batch order: fp64 rounding, far below it. 0 deviation (bit for bit) where the order is
  /// the same: one data rank.
  double tolerance = 1e-12;
};

/// Elements one device moved per step, by kind: what the analytic model counts as zero_gather, dp_grad_sync and the
/// model states' host copies (activation copies and pipeline transfers are counted apart: the analytic model of an
/// opaque model counts neither).
struct ExecutedTraffic {
  double gather = 0;             ///< parameter all-gathers (forward, backward, after the step), elements sent
  double grad_sync = 0;          ///< gradient reduce-scatters and all-reduces, elements sent
  double h2d = 0, d2h = 0;       ///< model states' host copies
  double activation_copies = 0;  ///< offloaded activations, both ways
  double p2p = 0;                ///< pipeline sends (activations forward, gradients backward)
};

/// The states compared, in the order a step produces them.
inline constexpr std::array<const char*, 3> kExecutedStates = {"gradients", "optimizer", "parameters"};

struct ExecutorResult {
  /// Per compared state (kExecutedStates order): largest |executed - one device| over steps and elements, over every
  /// copy a device or host keeps across steps (parameters, master copies, optimizer state) and every gradient an
  /// optimizer applied; transient buffers (gathered units, hpZ's secondary shard) are not compared. A state nobody
  /// holds counts as recomputed: the initial parameters, a zero momentum.
  std::array<double, 3> max_deviation{};
  bool diverged = false;
  int first_state = -1;  ///< index into kExecutedStates of the first state past the tolerance, -1 when none
  int first_step = 0;    ///< its step, from 1
  double loss_first = 0, loss_last = 0;  ///< one device's mean micro-batch loss in the first and last step
  /// Per pipeline stage, the most any of its devices moved per step (every device of a stage moves the same).
  std::vector<ExecutedTraffic> traffic;
  /// Per pipeline stage, the most elements of parameters (with hpZ's secondary shard), gradients and optimizer state
  /// one of its devices held at once (a whole unit counts its elements, a shard its padded atoms, as the analytic
  /// memory does). Synchronous schedules only.
  std::vector<std::array<double, 3>> resident;
  bool asynchronous = false;
  /// Asynchronous schedules (max_deviation[2] is then the parameters against one device's plain mini-batch SGD over
  /// the same micro-batches, at the end of the run): the largest |executed - stale replay| (sim/converge's
  /// run_convergence of the schedule's UpdateLog: one device applying the delays the pipeline report counts) — equal
  /// when the staleness is exactly the predicted one — and the steady-state delays of the versions the run read.
  double stale_replay_deviation = 0;
  std::int64_t max_delay = 0;
  double mean_delay = 0;
};

/// Runs the training step under the placement, device by device, and compares with one device after every step.
/// Throws InputError when the strategy cannot be executed (tp, cp or ep above 1; an asynchronous schedule with more
/// than one data rank; a state offloaded along one data axis only, which has no host layout).
ExecutorResult execute_placement(const ExecutorSpec& spec);

}  // namespace placesim
