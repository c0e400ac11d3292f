#include "strategies/placement/Validity.hpp"

#include <string>

#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

[[noreturn]] void refuse(const std::string& message) {
  throw InvalidStrategy("invalid strategy: " + message);
}

void require_divides(std::int64_t degree, const char* degree_field, std::int64_t value, const char* value_field) {
  if (value % degree != 0)
    refuse(std::string(degree_field) + "=" + str(degree) + " does not divide " + value_field + "=" + str(value));
}

void check_mesh(const Experiment& e) {
  const auto& s = e.strategy;
  const auto& m = e.model;
  if (m.opaque()) {
    if (m.opaque_layers > 0) require_divides(s.pp, "strategy.pp", m.opaque_layers, "model.layers");
  } else {
    require_divides(s.tp, "strategy.tp", m.heads, "model.heads");
    require_divides(s.tp, "strategy.tp", m.kv_heads, "model.kv_heads");
    require_divides(s.tp, "strategy.tp", m.ffn, "model.ffn");
    if (s.pp > m.layers) refuse("strategy.pp=" + str(s.pp) + " exceeds model.layers=" + str(m.layers));
    if (m.layers % s.pp != 0 && s.schedule == Schedule::Interleaved)
      refuse("strategy.pp=" + str(s.pp) + " does not divide model.layers=" + str(m.layers) +
             ": the interleaved schedule needs equal stages (other schedules split unevenly, end stages lighter)");
    if (s.sp) require_divides(s.tp, "strategy.tp", m.seq_len, "model.seq_len (sequence parallelism splits it)");
  }
  if (s.sp && s.tp == 1)
    refuse("strategy.sp=true needs strategy.tp > 1: sequence parallelism shards over the tp group");
}

void check_schedule(const Experiment& e) {
  const auto& s = e.strategy;
  if (s.chunks != 1 && s.schedule != Schedule::Interleaved)
    refuse("strategy.chunks=" + str(s.chunks) + " is only meaningful with strategy.schedule=interleaved");
  if (s.schedule == Schedule::Interleaved) {
    if (s.pp < 2) refuse("strategy.schedule=interleaved needs strategy.pp >= 2");
    if (s.microbatches % s.pp != 0)
      refuse("strategy.schedule=interleaved needs strategy.microbatches=" + str(s.microbatches) +
             " to be a multiple of strategy.pp=" + str(s.pp));
    std::int64_t layers = e.model.opaque() ? e.model.opaque_layers : e.model.layers;
    if (layers > 0 && (layers / s.pp) % s.chunks != 0)
      refuse("strategy.chunks=" + str(s.chunks) + " does not divide the " + str(layers / s.pp) +
             " layers per stage (model.layers / strategy.pp)");
  }
  if (s.schedule == Schedule::LocalSGD && s.microbatches % s.replicas != 0)
    refuse("strategy.replicas=" + str(s.replicas) + " does not divide strategy.microbatches=" + str(s.microbatches));
}

// Gradient integrity and state consistency of the placement along the data-parallel axis.
void check_placement(const Experiment& e) {
  const Placement& p = e.strategy.placement;
  const bool multi = e.strategy.dp > 1;
  if (p.parameters == Mode::Materialized)
    refuse(
        "parameters=materialized along dp breaks state consistency: parameters carry their value across steps "
        "and cannot be recomputed");
  if (p.gradients == Mode::Materialized)
    refuse(
        "gradients=materialized along dp breaks gradient integrity: a gradient is the sum over all micro-batches "
        "and cannot be recomputed from a checkpoint");
  if (p.optimizer == Mode::Materialized)
    refuse("optimizer=materialized along dp breaks state consistency: optimizer state accumulates across steps");
  if (multi && p.parameters == Mode::Sharded)
    refuse("parameters=sharded along dp (dp=" + str(e.strategy.dp) +
           ") breaks state consistency: every replica's "
           "forward reads all parameters of its layers but holds only 1/dp; use sharded-with-gather");
  if (multi && (p.gradients == Mode::Sharded || p.gradients == Mode::ShardedWithGather) &&
      p.optimizer == Mode::Replicated)
    refuse("gradients=" + to_string(p.gradients) + " with optimizer=replicated along dp (dp=" + str(e.strategy.dp) +
           ") breaks gradient integrity: the reduce-scatter leaves each device the full gradient sum of only 1/dp "
           "of the parameters, while the replicated optimizer updates all of them; shard the optimizer or replicate "
           "the gradients");
  if (p.gradients == Mode::Offloaded && p.optimizer != Mode::Offloaded)
    refuse("gradients=offloaded with optimizer=" + to_string(p.optimizer) +
           " along dp breaks gradient integrity: the "
           "gradients move to host memory but the optimizer that must consume them stays on the device");
  if (p.parameters == Mode::Offloaded && p.optimizer != Mode::Offloaded)
    refuse("parameters=offloaded with optimizer=" + to_string(p.optimizer) +
           " along dp breaks state consistency: the "
           "device optimizer would update parameters that live in host memory");
  if (p.activations == Mode::Sharded || p.activations == Mode::ShardedWithGather)
    refuse("activations=" + to_string(p.activations) +
           " along dp is meaningless: each dp replica computes the "
           "activations of its own samples; shard activations over tp with strategy.sp=true");
}

}  // namespace

void check_validity(const Experiment& e) {
  check_mesh(e);
  check_schedule(e);
  check_placement(e);
}

void check_fits(const Experiment& e, const Analysis& a) {
  if (e.device_memory_bytes <= 0 || a.total_bytes <= e.device_memory_bytes) return;
  const MemoryBytes& m = a.memory;
  throw DoesNotFit("memory: the model does not fit: a device needs " + format_bytes(a.total_bytes) + " (parameters " +
                   format_bytes(m.parameters) + ", gradients " + format_bytes(m.gradients) + ", optimizer " +
                   format_bytes(m.optimizer) + ", activations " + format_bytes(m.activations) + ", buffers " +
                   format_bytes(m.buffers) + ") but device memory is " + format_bytes(e.device_memory_bytes));
}

}  // namespace placesim
