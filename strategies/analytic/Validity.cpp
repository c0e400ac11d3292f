#include "strategies/analytic/Validity.hpp"

#include <string>

#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/placement/Presets.hpp"
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

// strategy.layers_per_stage, or the rule's split over the virtual stages: all layers placed, at least one layer on
// every virtual stage but the first and the last, which may hold the embedding or the output layer and loss alone
// (Llama 3's pipeline, arXiv 2407.21783 section 3.3.2: "the first model chunk on the first stage has only the
// embedding, and the last model chunk on the last stage has only output projection and loss calculation").
void check_layers_per_stage(const Experiment& e) {
  const auto& s = e.strategy;
  // Under dualpipe each direction holds a copy of the model split the same way: one entry per stage.
  const bool chunked = chunks_per_stage(s) > 1 && !bidirectional(s.schedule);
  std::int64_t virtual_stages = 0;
  if (__builtin_mul_overflow(s.pp, chunked ? chunks_per_stage(s) : 1, &virtual_stages))
    refuse("strategy.pp x strategy.chunks = " + str(s.pp) + " x " + str(s.chunks) +
           " virtual stages overflows a 64-bit count");
  const std::string what = chunked ? "strategy.pp x strategy.chunks = " + str(s.pp) + " x " + str(s.chunks) + " = " +
                                         str(virtual_stages) + " virtual stages"
                                   : "strategy.pp=" + str(s.pp) +
                                         (bidirectional(s.schedule) ? " stages of each direction's copy" : " stages");
  // The ends may go without layers only when there are two ends: one stage must carry the layers.
  const std::int64_t empty_ends = virtual_stages >= 2 ? 2 : 0;
  if (s.layers_per_stage.empty()) {
    if (e.model.layers < virtual_stages - empty_ends)
      refuse("model.layers=" + str(e.model.layers) + " is fewer than the " + what +
             " less the two end ones: every virtual stage but the first and the last needs a layer");
    return;
  }
  if (static_cast<std::int64_t>(s.layers_per_stage.size()) != virtual_stages)
    refuse("strategy.layers_per_stage has " + str(static_cast<std::int64_t>(s.layers_per_stage.size())) +
           " entries but there are " + what + " (one entry per virtual stage, in model order)");
  std::int64_t sum = 0;
  for (std::size_t k = 0; k < s.layers_per_stage.size(); ++k) {
    const std::int64_t n = s.layers_per_stage[k];
    const bool end = empty_ends > 0 && (k == 0 || k + 1 == s.layers_per_stage.size());
    if (n == 0 && !end)
      refuse("strategy.layers_per_stage[" + str(static_cast<std::int64_t>(k)) +
             "]=0: only the first and the last virtual stage (which hold the embedding and the output layer) may go "
             "without layers");
    sum += n;
  }
  if (sum != e.model.layers)
    refuse("strategy.layers_per_stage adds up to " + str(sum) + " layers but model.layers=" + str(e.model.layers));
}

// Context parallelism splits each sequence over cp ranks: 2 cp balanced chunks for the ring, cp for the all-gather.
void check_context_parallel(const Experiment& e) {
  const auto& s = e.strategy;
  if (s.cp == 1) return;
  if (e.model.opaque())
    refuse("strategy.cp=" + str(s.cp) +
           " needs a model with layers and a sequence (model.hidden, model.layers, model.seq_len, ...): context "
           "parallelism splits the sequence");
  if (!e.model.flash_attention)
    refuse("strategy.cp=" + str(s.cp) +
           " needs model.flash_attention=true: context parallelism runs fused attention kernels on sequence blocks "
           "(TransformerEngine)");
  // Megatron-Core and TransformerEngine cut the sequence into 2 cp chunks for either exchange (load balancing).
  if (e.model.seq_len % (2 * s.cp) != 0)
    refuse("model.seq_len=" + str(e.model.seq_len) + " is not divisible by 2 x strategy.cp = " + str(2 * s.cp) +
           " (context parallelism balances causal attention over 2 cp chunks)");
  if (s.sp && local_seq_len(e) % s.tp != 0)
    refuse("strategy.tp=" + str(s.tp) + " does not divide the " + str(local_seq_len(e)) +
           " tokens per cp rank (model.seq_len / strategy.cp) that sequence parallelism splits");
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
    check_layers_per_stage(e);
    if (s.sp) require_divides(s.tp, "strategy.tp", m.seq_len, "model.seq_len (sequence parallelism splits it)");
  }
  if (s.sp && s.tp == 1)
    refuse("strategy.sp=true needs strategy.tp > 1: sequence parallelism shards over the tp group");
  check_context_parallel(e);
}

// Chunks per stage: the interleaved schedule's (its group, Megatron-LM's exchange), a V's two, an opaque model's
// even split.
void check_chunks(const Experiment& e) {
  const auto& s = e.strategy;
  if (s.chunks != 1 && !interleaves_chunks(s.schedule) && !v_shaped(s.schedule) && !bidirectional(s.schedule))
    refuse("strategy.chunks=" + str(s.chunks) + " is only meaningful with strategy.schedule=interleaved");
  // What the V schedules and interleaved-zb refuse themselves: a V's two chunks, DualPipeV's micro-batches,
  // interleaved-zb's stages and rounds.
  if (v_shaped(s.schedule) || bidirectional(s.schedule) || s.schedule == Schedule::InterleavedZb) {
    try {
      check_shape(shape_of(s, 1), strategy_shape_fields());
    } catch (const InputError& x) {
      refuse(x.what());
    }
  }
  if (s.schedule == Schedule::Interleaved) {
    if (s.pp < 2) refuse("strategy.schedule=interleaved needs strategy.pp >= 2");
    // Megatron-LM's blocking exchange: the last stage's send into the first stage's next chunk waits until the first
    // stage has run its group's forwards, and those wait for the last stage (its receives are blocked behind the send).
    const bool blocking = s.p2p == PipelineP2P::Megatron && !e.model.opaque();
    if (blocking && s.microbatch_group > s.pp)
      refuse("strategy.microbatch_group=" + str(s.microbatch_group) + " above strategy.pp=" + str(s.pp) +
             " needs strategy.p2p=async: with Megatron-LM's blocking exchanges (strategy.p2p=megatron) the last "
             "stage's send into the first stage's next chunk waits for forwards that wait for the last stage");
    // The schedule itself refuses what it cannot run (a group below pp micro-batches, or more than a step has).
    try {
      check_interleaved_group(shape_of(s, 1), strategy_shape_fields());
    } catch (const InputError& x) {
      refuse(x.what());
    }
  }
  // An opaque model's layers are split evenly (it has no layer list to place unevenly).
  const std::int64_t opaque_layers = e.model.opaque() ? e.model.opaque_layers : 0;
  if (opaque_layers > 0 && !bidirectional(s.schedule) && (opaque_layers / s.pp) % chunks_per_stage(s) != 0)
    refuse("strategy.chunks=" + str(s.chunks) + " does not divide the " + str(opaque_layers / s.pp) +
           " layers per stage (model.layers / strategy.pp) of an opaque model");
}

// Megatron-Core's combined 1F1B (strategy.ep_overlap) where Megatron-Core runs it: TransformerConfig's asserts
// (expert parallelism, virtual pipeline stages when pp > 1, no full recompute).
void check_ep_overlap(const Experiment& e) {
  const auto& s = e.strategy;
  if (!s.ep_overlap) return;
  const std::string what = "strategy.ep_overlap=true (Megatron-Core's combined 1F1B)";
  if (!e.model.moe() || s.ep < 2)
    throw InputError(what + " needs expert parallelism: a mixture-of-experts model with strategy.ep > 1 (strategy.ep=" +
                     std::to_string(s.ep) + ")");
  if (s.pp > 1 && s.schedule != Schedule::Interleaved)
    throw InputError(what + " with strategy.pp=" + std::to_string(s.pp) +
                     " runs the interleaved schedule (Megatron-Core " +
                     "asserts virtual_pipeline_model_parallel_size): strategy.schedule=" + to_string(s.schedule) +
                     " must be interleaved");
  if (s.pp == 1 && s.schedule != Schedule::OneFOneB)
    throw InputError(what + " without pipeline stages pairs each forward with the previous micro-batch's backward: " +
                     "strategy.schedule=" + to_string(s.schedule) + " must be 1f1b");
  if (e.training.recompute == Recompute::Full)
    throw InputError(what + " with training.recompute=full: Megatron-Core refuses full recomputation with it");
  if (s.pp > 1 && s.p2p != PipelineP2P::Async)
    throw InputError(what + " with strategy.p2p=" + to_string(s.p2p) + ": the combined step is modelled with " +
                     "non-blocking exchanges (it receives both inputs before it runs); set strategy.p2p=async");
}

void check_schedule(const Experiment& e) {
  check_ep_overlap(e);
  const auto& s = e.strategy;
  // What the model of DualPipe's two copies does not cover (not a validity verdict: DualPipe trains the same model).
  if (bidirectional(s.schedule) && e.model.tied_embeddings && !e.model.opaque())
    throw InputError("strategy.schedule=" + to_string(s.schedule) +
                     " with model.tied_embeddings=true: each end stage would hold one direction's embedding and the "
                     "other's output layer, copies of one tied matrix whose gradients are not modelled; use dualpipev");
  // The split backward's W accumulates into whole gradients that the step synchronises (DDP, ZeRO-1, Megatron's
  // distributed optimizer), as the zero-bubble reference code runs it (sail-sg/zero-bubble-pipeline-parallelism,
  // on Megatron-LM).
  if (splits_backward(s.schedule))
    for (State state : {State::Parameters, State::Gradients, State::Optimizer, State::Activations})
      for (AxisSet axis : {kShardAxis, kReplicateAxis}) {
        const Mode mode = s.placement.mode(state, axis);
        const bool kept = mode == Mode::Replicated || (state == State::Optimizer && mode == Mode::Sharded) ||
                          (state == State::Activations && mode == Mode::Materialized);
        const bool checked = s.degree(axis) > 1 || state == State::Activations;  // else only offload matters
        if (checked ? !kept : mode == Mode::Offloaded)
          refuse("strategy.schedule=" + to_string(s.schedule) + " with " + to_string(state) + "=" + to_string(mode) +
                 " along " + axes_name(axis) +
                 ": the split backward is modelled with whole gradients synchronised at the step (replicated "
                 "parameters and gradients, the optimizer replicated or sharded, activations kept or recomputed)");
      }
  // The zero-bubble reference code posts its sends and receives without blocking and waits for a receive only before
  // the op that needs it; Megatron-LM's and DeepSpeed's blocking exchanges would serialise the W ops' slots.
  if (splits_backward(s.schedule) && s.pp > 1 && s.p2p != PipelineP2P::Async && !e.model.opaque())
    refuse("strategy.schedule=" + to_string(s.schedule) + " with strategy.p2p=" + to_string(s.p2p) +
           ": the zero-bubble schedules exchange without blocking (sail-sg/zero-bubble-pipeline-parallelism); set "
           "strategy.p2p=async");
  if (s.p2p == PipelineP2P::DeepSpeed && s.pp > 1 && s.schedule != Schedule::OneFOneB)
    refuse(
        "strategy.p2p=deepspeed is DeepSpeed's pipeline engine, whose only training schedule is 1F1B "
        "(deepspeed/runtime/pipe/schedule.py TrainSchedule); strategy.schedule=" +
        to_string(s.schedule) + " needs p2p megatron or async");
  check_chunks(e);
  if (!s.layers_per_stage.empty() && e.model.opaque())
    refuse(
        "strategy.layers_per_stage needs a model with layers (model.hidden, model.layers, ...); an opaque model is "
        "split evenly");
  // PipeDream across data-parallel replicas (Narayanan et al., SOSP 2019, section 3.2; PipeDream-2BW, ICML 2021,
  // section 3.1): every replica stashes whole weight versions and all-reduces a stage's gradients before each update.
  const bool asynchronous = s.schedule == Schedule::PipeDream || s.schedule == Schedule::PipeDream2BW;
  if (asynchronous && s.data_ranks() > 1)
    for (State state : {State::Parameters, State::Gradients, State::Optimizer})
      for (AxisSet axis : {kShardAxis, kReplicateAxis})
        if (s.degree(axis) > 1 && s.placement.mode(state, axis) != Mode::Replicated)
          refuse("strategy.schedule=" + to_string(s.schedule) + " with " + to_string(state) + "=" +
                 to_string(s.placement.mode(state, axis)) + " along " + axes_name(axis) +
                 ": its replicas keep whole weight versions and all-reduce the gradients before each update; use "
                 "the dp preset (every state replicated)");
  if (s.schedule == Schedule::LocalSGD && s.microbatches % s.replicas != 0)
    refuse("strategy.replicas=" + str(s.replicas) + " does not divide strategy.microbatches=" + str(s.microbatches));
}

// A refusal names the rule, the state, its mode and the axis.
[[noreturn]] void refuse_rule(const char* rule, State state, Mode mode, AxisSet axis, const StrategySpec& s,
                              const std::string& why, const std::string& with = "") {
  std::string where = axis == kDataAxes ? "along dp" : "along " + axes_name(axis);
  if (axis != kDataAxes) where += " (degree " + str(s.degree(axis)) + ")";
  refuse("rule " + std::string(rule) + ": " + to_string(state) + "=" + to_string(mode) + with + " " + where + " " +
         why);
}

// Gradient integrity and state consistency of the placement along every data-parallel axis (dp_shard,
// dp_replicate). TP and PP place states by construction and accept only their own modes (see parse_strategy).
void check_placement(const Experiment& e, const std::string& disabled) {
  const StrategySpec& s = e.strategy;
  const Placement& p = s.placement;
  auto on = [&](const char* rule) { return disabled != rule; };
  // When dp_replicate = 1 the one data axis is reported as dp, as the one-axis placement always was. Rules that
  // hold whatever the degree (no materialized state) apply to the modes of both axes even then.
  const bool split = s.dp_replicate > 1;
  for (AxisSet axis : {kShardAxis, kReplicateAxis}) {
    const AxisSet named = split ? axis : kDataAxes;
    const bool multi = s.degree(axis) > 1;
    const Mode P = p.mode(State::Parameters, axis), G = p.mode(State::Gradients, axis),
               O = p.mode(State::Optimizer, axis);
    if (P == Mode::Materialized && on("parameters-persist"))
      refuse_rule("parameters-persist", State::Parameters, P, named, s,
                  "breaks state consistency: parameters carry their value across steps and cannot be recomputed");
    if (G == Mode::Materialized && on("gradients-accumulate"))
      refuse_rule("gradients-accumulate", State::Gradients, G, named, s,
                  "breaks gradient integrity: a gradient is the sum over all micro-batches and cannot be recomputed "
                  "from a checkpoint");
    if (O == Mode::Materialized && on("optimizer-persists"))
      refuse_rule("optimizer-persists", State::Optimizer, O, named, s,
                  "breaks state consistency: optimizer state accumulates across steps");
    if (multi && P == Mode::Sharded && on("parameters-gathered"))
      refuse_rule("parameters-gathered", State::Parameters, P, named, s,
                  "breaks state consistency: every replica's forward reads all parameters of its layers but holds "
                  "only a shard; use sharded-with-gather");
    if (multi && (G == Mode::Sharded || G == Mode::ShardedWithGather) && O == Mode::Replicated && on("gradient-owner"))
      refuse_rule("gradient-owner", State::Gradients, G, named, s,
                  "breaks gradient integrity: the reduce-scatter leaves each "
                  "device the full gradient sum of only its shard of the parameters, while the replicated optimizer "
                  "updates all of them; shard the optimizer or replicate the gradients",
                  " with optimizer=replicated");
  }
  for (State state : {State::Parameters, State::Gradients, State::Optimizer}) {
    const Mode a = p.mode(state, kShardAxis), b = p.mode(state, kReplicateAxis);
    if ((a == Mode::Offloaded) != (b == Mode::Offloaded) && on("offload-whole"))
      refuse_rule("offload-whole", state, a == Mode::Offloaded ? a : b,
                  a == Mode::Offloaded ? kShardAxis : kReplicateAxis, s,
                  "but " + to_string(a == Mode::Offloaded ? b : a) + " along the other data axis: an offloaded " +
                      "state lives in host memory, one shard per data-parallel rank; offload it along both axes");
  }
  if (p.gradients == Mode::Offloaded && p.optimizer != Mode::Offloaded && on("offload-with-optimizer"))
    refuse_rule("offload-with-optimizer", State::Gradients, p.gradients, kDataAxes, s,
                "breaks gradient integrity: the gradients move to host memory but the optimizer that must consume "
                "them stays on the device",
                " with optimizer=" + to_string(p.optimizer));
  if (p.parameters == Mode::Offloaded && p.optimizer != Mode::Offloaded && on("offload-with-optimizer"))
    refuse_rule("offload-with-optimizer", State::Parameters, p.parameters, kDataAxes, s,
                "breaks state consistency: the device optimizer would update parameters that live in host memory",
                " with optimizer=" + to_string(p.optimizer));
  if ((p.activations == Mode::Sharded || p.activations == Mode::ShardedWithGather) && on("activations-per-replica"))
    refuse_rule("activations-per-replica", State::Activations, p.activations, kDataAxes, s,
                "is meaningless: each data-parallel replica computes the activations of its own samples; shard "
                "activations over tp with strategy.sp=true");
  if (p.secondary && (s.dp_shard == 1 || s.dp_replicate == 1))
    refuse(
        "rule secondary-of-primary: parameters.secondary=dp_shard (ZeRO++ hpZ) needs dp_shard > 1 and "
        "dp_replicate > 1 (got dp_replicate " +
        str(s.dp_replicate) + " x dp_shard " + str(s.dp_shard) +
        "): with one of them 1 the secondary shard is the primary one or the whole model");
  if (p.secondary && (p.parameters != Mode::ShardedWithGather || p.replicate.parameters != Mode::ShardedWithGather))
    refuse(
        "rule secondary-of-primary: parameters.secondary=dp_shard (ZeRO++ hpZ) needs parameters "
        "sharded-with-gather along both data axes (the primary shard), not " +
        short_name(p.parameters) + " along dp_shard and " + short_name(p.replicate.parameters) + " along dp_replicate");
}

// Presets whose name promises an axis the mesh lacks would silently be another strategy.
void check_preset_mesh(const Experiment& e) {
  const StrategySpec& s = e.strategy;
  auto it = strategy_presets().find(s.preset);
  if (it == strategy_presets().end() || !it->second.requirement) return;
  const StrategyPreset::Requirement& need = *it->second.requirement;
  if (need.rule.holds(s, e.training)) return;
  refuse("strategy.preset=" + s.preset + " needs " + need.needs + " (got dp_replicate " + str(s.dp_replicate) +
         " x dp_shard " + str(s.dp_shard) + ", tp " + str(s.tp) + "); " + need.otherwise_text);
}

}  // namespace

// FSDP2's reshard_after_forward=false as modelled: one forward and one backward per unit and micro-batch without a
// pipeline; under a pipeline (pp > 1) the units stay gathered for the whole step (gathers_once_per_step), which a
// synchronous schedule allows; gathered parameters, not offloaded ones, and no hpZ secondary shard (it serves the
// backward gather).
void check_reshard(const Experiment& e) {
  const StrategySpec& s = e.strategy;
  if (s.reshard_after_backward && !s.defers_grad_sync())
    throw InputError(
        "strategy.reshard_after_backward=true is modelled for FSDP under a pipeline only (pp > 1 with "
        "reshard_after_forward=false; here pp=" +
        std::to_string(s.pp) + ", reshard_after_forward=" + (s.reshard_after_forward ? "true" : "false") +
        "); without it every unit is already resharded after each backward");
  if (s.reshard_after_forward) return;
  const std::string field = "strategy.reshard_after_forward=false";
  if (s.placement.parameters == Mode::Offloaded)
    throw InputError(field +
                     " keeps gathered parameters on the device, but strategy.placement.parameters is offloaded");
  if (s.placement.secondary)
    throw InputError(field +
                     " contradicts the hpZ secondary shard (strategy.placement.parameters.secondary), which "
                     "exists to serve the backward gather");
  if (s.pp > 1) {
    if (!synchronous_schedule(s.schedule))
      throw InputError(field + " with pp=" + std::to_string(s.pp) + " and schedule=" + to_string(s.schedule) +
                       " is not modelled (units kept gathered for a step need a synchronous schedule: one update "
                       "per step); use gpipe, 1f1b or interleaved");
    if (s.placement.gradients == Mode::Offloaded)
      throw InputError(field + " with pp=" + std::to_string(s.pp) +
                       " accumulates each unit's gradients on the device for the step, but "
                       "strategy.placement.gradients is offloaded");
    return;
  }
  // Every forward before any backward (gpipe, or an asynchronous schedule) would hold one gathered copy per
  // micro-batch in flight where FSDP2 keeps one.
  if (s.schedule != Schedule::OneFOneB && s.microbatches > 1)
    throw InputError(field + " with schedule=" + to_string(s.schedule) + " and " + std::to_string(s.microbatches) +
                     " micro-batches is not modelled (forwards of several micro-batches before their backwards "
                     "share one gathered copy in FSDP2); use schedule=1f1b");
}

void check_validity(const Experiment& e, const std::string& disabled_rule) {
  check_reshard(e);
  check_mesh(e);
  check_schedule(e);
  check_preset_mesh(e);
  check_placement(e, disabled_rule);
}

// What to do when the plan is known to run (a stack that keeps fewer activations than the one modelled).
constexpr const char* kTimeAnyway =
    "; to time it regardless, e.g. for a stack that saves fewer activations than Megatron-Core, pass a larger "
    "--device-memory";

void check_fits(const Experiment& e, const Analysis& a) {
  if (e.device_memory_bytes <= 0 || a.total_bytes <= e.device_memory_bytes) return;
  const MemoryBytes& m = a.memory;
  throw DoesNotFit("memory: the model does not fit: a device needs " + format_bytes(a.total_bytes) + " (parameters " +
                   format_bytes(m.parameters) + ", gradients " + format_bytes(m.gradients) + ", optimizer " +
                   format_bytes(m.optimizer) + ", activations " + format_bytes(m.activations) + ", buffers " +
                   format_bytes(m.buffers) + ") but device memory is " + format_bytes(e.device_memory_bytes) +
                   kTimeAnyway);
}

void check_peak_fits(const Experiment& e, const Analysis& a, double peak, const std::array<double, 5>& at_peak) {
  if (e.device_memory_bytes <= 0 || peak <= e.device_memory_bytes) return;
  throw DoesNotFit("memory: the model does not fit: the simulated peak of a device is " + format_bytes(peak) +
                   " (at that moment parameters " + format_bytes(at_peak[0]) + ", gradients " +
                   format_bytes(at_peak[1]) + ", optimizer " + format_bytes(at_peak[2]) + ", activations " +
                   format_bytes(at_peak[3]) + ", buffers " + format_bytes(at_peak[4]) + "; analytic bound " +
                   format_bytes(a.total_bytes) + ") but device memory is " + format_bytes(e.device_memory_bytes) +
                   kTimeAnyway);
}

}  // namespace placesim
