#include "strategies/analytic/Analytic.hpp"

#include <algorithm>

#include "strategies/analytic/TpLayerTimes.hpp"
#include "strategies/pipeline/StageMemory.hpp"
#include "strategies/placement/DataPlan.hpp"
#include "strategies/placement/Routing.hpp"

namespace placesim {

double CommBytes::total() const {
  double sum = 0;
  for (double b : by_class) sum += b;
  return sum;
}

namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}

double& at(CommBytes& c, CommClass k) {
  return c.by_class[static_cast<std::size_t>(k)];
}

// Versions of a stage's weights held at once beyond the current one.
double extra_weight_versions(const Experiment& e, const StageLayout& st) {
  const auto& s = e.strategy;
  if (s.pp == 1) return 0;
  if (s.schedule == Schedule::PipeDream) return d(std::min(s.noam, s.pp - st.stage) - 1);
  if (s.schedule == Schedule::PipeDream2BW) return 1;
  return 0;
}

// Per chunk of stage s, the bytes each of its layers holds from its forward to its backward (first to last).
std::vector<std::vector<double>> layer_activation_loads(const Experiment& e, const StageLayout& s) {
  const double dense = layer_activation_bytes(e), kept = kept_layer_activation_bytes(e);
  const double moe = s.moe_layers > 0 ? moe_layer_activation_bytes(e, expert_routing(e).busiest()) : 0;
  std::vector<std::vector<double>> out;
  for (std::size_t c = 0; c < s.chunk_layers.size(); ++c) {
    const std::int64_t n = s.chunk_layers[c];
    const std::int64_t recomputed = partial_recompute(e) ? recomputed_layers(e, n) : n;
    std::vector<double> loads;
    for (std::int64_t l = 0; l < n; ++l)
      loads.push_back(is_moe_layer(e.model, s.chunk_first[c] + l) ? moe : l < recomputed ? dense : kept);
    out.push_back(std::move(loads));
  }
  return out;
}

// The schedules whose pairs overlap layer by layer (DualPipe's with stages, Megatron-Core's combined 1F1B): their
// activations are walked part by part (paired_walked_peak).
bool walks_pairs(const Experiment& e) {
  return !e.model.opaque() && ((overlaps_pairs(e.strategy.schedule) && e.strategy.pp > 1) || e.strategy.ep_overlap);
}

MemoryBytes stage_memory(const Experiment& e, const StageLayout& st) {
  const auto& t = e.training;
  const auto& s = e.strategy;
  const auto& pl = s.placement;
  MemoryBytes mem;
  const double pb = t.param_bytes(), hpb = t.held_param_bytes(), gb = t.grad_bytes(), k = t.optimizer_bytes_per_param;
  // Held parameters are fp32 where they are the master weights (training.master_weights); copies are 16-bit.
  mem.parameters = d(st.held_elems(s, State::Parameters)) * hpb;
  // hpZ: the secondary shard over dp_shard, cut from each forward gather and read by the backward's.
  mem.parameters += d(secondary_share(s, st.padded_elems(s.data_ranks()))) * pb;
  mem.parameters += extra_weight_versions(e, st) * d(stashed_version_elems(e, st)) * pb;
  mem.gradients = d(st.held_elems(s, State::Gradients)) * t.held_grad_bytes();
  mem.optimizer = d(st.held_elems(s, State::Optimizer)) * k;
  if (st.moe_layers > 0) {
    // The routed experts, placed along their expert-data-parallel group (expert_view).
    const StrategySpec v = expert_view(s);
    const std::int64_t whole = st.expert_total(), padded = st.expert_padded(s.edp());
    mem.parameters += d(held_share(v, State::Parameters, whole, padded)) * hpb;
    mem.gradients += d(held_share(v, State::Gradients, whole, padded)) * t.held_grad_bytes();
    mem.optimizer += d(held_share(v, State::Optimizer, whole, padded)) * k;
  }
  const double act = stage_activation_bytes(e, st);
  mem.activations = act;
  if (pl.activations == Mode::Offloaded) {
    // Offloaded activations leave the device layer by layer (offloaded_activation_layers): besides the kept last
    // layer of each chunk in flight, at most two layers' worth are on the device, one being computed or used while
    // the other is copied out or prefetched back. A bound: the peak depends on how the copies overlap compute.
    const double layer = layer_activation_bytes(e), kept = kept_activation_layers(e, st) * layer;
    mem.activations = std::min(act, kept + 2 * layer);
    mem.host += act - kept;
  }
  // The loss on the stage with the output head: its saved softmax for every micro-batch whose head forward waits for
  // its backward (all of them under GPipe, one otherwise), and the backward's gradients of one.
  // Under the interleaved schedule with uneven chunks, and where pairs overlap layer by layer, the peak of the layers
  // need not meet a live loss (a last chunk without layers, or a lighter one; a pair freeing as it allocates): the op
  // order is walked with both.
  if (holds_head(s, st.stage)) {
    std::optional<double> walked;
    if (walks_pairs(e))
      walked = paired_walked_peak(e, st, layer_activation_loads(e, st), loss_saved_bytes(e), loss_transient_bytes(e));
    else if (pl.activations != Mode::Offloaded)
      walked = interleaved_peak_with_loss(e, st, chunk_activation_bytes(e, st), loss_saved_bytes(e),
                                          loss_transient_bytes(e));
    const double in_flight = s.schedule == Schedule::GPipe && s.pp > 1 ? d(s.microbatches) : 1.0;
    if (walked)
      mem.activations = *walked;
    else
      mem.activations += in_flight * loss_saved_bytes(e) + loss_transient_bytes(e);
  }
  const double unit = d(st.max_unit_elems());
  // Transient: a gathered unit and the next one prefetched; unsharded gradients of a unit, double-buffered while
  // the previous one is reduce-scattered or copied to the host.
  // FSDP2 prefetch: the unit computing and prefetch_forward (backward) gathered ahead; without resharding after the
  // forward every unit of the stage stays gathered from its forward to its backward.
  if (holds_unit_buffer(s, State::Parameters))
    mem.buffers += s.reshard_after_forward || pl.parameters == Mode::Offloaded
                       ? d(1 + std::max(s.prefetch_forward, s.prefetch_backward)) * unit * pb
                       : d(st.padded_elems(s.data_ranks())) * pb;
  // FSDP under a pipeline (defers_grad_sync, whether gathered once or after each backward; offloaded gradients are
  // refused with it): the stage's gradients accumulate unsharded until the reduce-scatter after its last backward.
  if (holds_unit_buffer(s, State::Gradients))
    mem.buffers += s.defers_grad_sync() ? d(st.padded_elems(s.data_ranks())) * gb : 2 * unit * gb;
  // Context parallelism: one layer's K/V blocks in flight during its attention, the larger pass.
  mem.buffers += std::max(cp_buffer_bytes(e, false), cp_buffer_bytes(e, true));
  const double shard = d(st.sharded_elems(s.data_ranks()));
  if (pl.parameters == Mode::Offloaded) mem.host += shard * pb;
  if (pl.gradients == Mode::Offloaded) mem.host += shard * gb;
  if (pl.optimizer == Mode::Offloaded) mem.host += shard * k;
  return mem;
}

// Tensor-parallel collectives of one layer for one micro-batch, in bytes sent by one rank: its forward and
// backward, or (recompute) those a full recompute of its forward adds.
double tp_layer_bytes(const Experiment& e, bool recompute) {
  const auto& s = e.strategy;
  const auto& m = e.model;
  if (s.tp == 1 || m.opaque()) return 0;
  const std::int64_t x = local_seq_len(e) * e.training.micro_batch * m.hidden;
  const double el = e.training.activation_bytes();
  if (!s.sp) {
    // Two all-reduces forward (attention and MLP outputs), two backward, two more when the forward is recomputed.
    return (recompute ? 2 : 4) * d(ring_allreduce_elems_sent(x, s.tp)) * el;
  }
  // Sequence parallel: forward 2 all-gathers + 2 reduce-scatters; backward the 2 + 2 transposes plus the
  // re-gather of the column-parallel inputs (kept sharded to save memory); recompute repeats the forward's 4.
  // The all-gathers move tp_gather_elem_bytes an element (FP8 under torchao's Float8 TP plan).
  const double gathers = recompute ? 2 : 2 + 2 + 2, scatters = recompute ? 2 : 2 + 2;
  return (gathers * tp_gather_elem_bytes(e) + scatters * el) * d(ring_gather_elems_sent(x, s.tp));
}

// Bytes of the data-parallel axes and of offloading: gradient synchronisation, ZeRO gathers, host copies.
void data_parallel_comm(const Experiment& e, const StageLayout& st, const std::vector<DataCollective>& plan,
                        CommBytes& c, std::vector<DataCollectiveBytes>& collectives) {
  const auto& t = e.training;
  const auto& s = e.strategy;
  const auto& pl = s.placement;
  const std::int64_t n = s.data_ranks(), m = s.microbatches;
  const double pb = t.param_bytes(), gb = t.grad_bytes();
  const double shard = d(st.sharded_elems(n));
  collectives.reserve(plan.size());
  for (const DataCollective& dc : plan) {
    DataCollectiveBytes b;
    b.plan = dc;
    b.group_size = s.degree(dc.group);
    // Once per weight update: per step, or per micro-batch under PipeDream across data-parallel replicas.
    b.runs = d(per_microbatch(dc.when) ? m : updates_per_step(s));
    b.bytes_per_run =
        data_collective_elems_sent(s, dc, d(st.padded_elems(n))) * (dc.state == State::Parameters ? pb : gb);
    at(c, dc.cls) += b.bytes();
    collectives.push_back(b);
  }
  if (pl.gradients == Mode::Offloaded)
    c.d2h = d(m) * shard * gb;
  else if (pl.optimizer == Mode::Offloaded)
    c.d2h = (n > 1 ? shard : d(st.elems())) * gb;  // device gradients move to the host optimizer once per step
  if (pl.optimizer == Mode::Offloaded && pl.parameters != Mode::Offloaded) c.h2d += shard * pb;
  // Offloaded parameters: each rank fetches its shard of every unit before the unit's forward and its backward.
  if (pl.parameters == Mode::Offloaded) c.h2d += 2 * d(m) * shard * pb;
  if (pl.activations == Mode::Offloaded) {
    // Every offloaded layer's activations of every micro-batch go to the host after its forward and come back
    // before its backward.
    const double per_step = d(m) * offloaded_activation_layers(e, st) * layer_activation_bytes(e);
    c.d2h += per_step;
    c.h2d += per_step;
  }
}

// Bytes of the tensor- and pipeline-parallel axes: per-layer TP collectives, those of the vocabulary-parallel
// embedding and output layer, pipeline transfers (and their scatter-gather).
void model_parallel_comm(const Experiment& e, const StageLayout& st, CommBytes& c) {
  const auto& s = e.strategy;
  const auto& t = e.training;
  // Each chunk runs its share of the micro-batches (under dualpipe, each direction half).
  const double m = d(s.microbatches) * chunk_microbatch_share(s), el = t.activation_bytes();
  // An MoE layer without shared experts has no tensor-parallel MLP: only its attention's collectives (half).
  const double tp_layers = d(st.n_layers - st.moe_layers) + d(st.moe_layers) * (e.model.shared_experts > 0 ? 1.0 : 0.5);
  // Under a full recompute every layer's forward runs twice; with training.recompute_layers only those layers'.
  const double recomputed = partial_recompute(e)                      ? d(stage_recomputed_layers(e, st))
                            : e.training.recompute == Recompute::Full ? tp_layers
                                                                      : 0.0;
  at(c, CommClass::TpCollective) = m * (tp_layers * tp_layer_bytes(e, false) + recomputed * tp_layer_bytes(e, true));
  if (e.model.opaque()) return;
  // Context parallelism's K/V: forward, backward, and the forward again under a full recompute.
  const double cp_passes =
      cp_layer_bytes(e, false) * (e.training.recompute == Recompute::Full ? 2 : 1) + cp_layer_bytes(e, true);
  at(c, CommClass::CpKv) = m * d(st.n_layers) * cp_passes;
  const std::int64_t x = local_seq_len(e) * t.micro_batch * e.model.hidden;
  const bool first = st.stage == 0, last = st.stage == s.pp - 1, embedding = holds_embedding(s, st.stage),
             head = holds_head(s, st.stage);
  if (s.tp > 1) {
    // The vocabulary-parallel embedding all-reduces its output (sp: its backward all-gathers the gradient); the output
    // layer's backward all-reduces the input gradient (sp: all-gather forward, re-gather and reduce-scatter backward).
    const double all_reduce = d(ring_allreduce_elems_sent(x, s.tp)), gather = d(ring_gather_elems_sent(x, s.tp));
    double vocab = 0;
    if (embedding) vocab += all_reduce + (s.sp ? gather : 0);
    if (head) vocab += s.sp ? 3 * gather : all_reduce;
    at(c, CommClass::TpCollective) += m * vocab * el;
    if (s.sp)  // the norm and row-parallel-bias gradients, once per step
      at(c, CommClass::TpCollective) +=
          d(ring_allreduce_elems_sent(sequence_parallel_grad_elems(e, st), s.tp)) * t.grad_bytes();
  }
  if (s.pp == 1) return;
  // Megatron-LM's scatter-gather without sp (and DeepSpeed's partitioned tensors): each TP rank sends 1/tp of the
  // activation and the receiving TP group all-gathers it; every stage receives as many boundaries as it sends.
  const bool scatter_gather = s.scatter_gather();
  const double msg = d(s.sp || scatter_gather ? shard_elems(x, s.tp) : x) * el;
  // Activations forward, gradients back: a boundary per chunk but the model's ends; in a V the last stage's chunks
  // meet on the stage itself and the first stage holds both ends, so each direction sends 2 - first - last; under
  // dualpipe each chunk is one direction's, whose ends are the first and the last stage.
  const std::int64_t v = chunks_per_stage(s);
  const double per_microbatch = v_shaped(s.schedule) || bidirectional(s.schedule)
                                    ? 2 * d(2 - (first ? 1 : 0) - (last ? 1 : 0))
                                    : d(v - (last ? 1 : 0)) + d(v - (first ? 1 : 0));
  const double sends = m * per_microbatch;
  at(c, CommClass::PpP2P) = sends * msg;
  if (scatter_gather) at(c, CommClass::TpCollective) += sends * d(ring_gather_elems_sent(x, s.tp)) * el;
  // DeepSpeed gathers each sent output again over the TP group before its backward.
  if (scatter_gather && s.p2p == PipelineP2P::DeepSpeed && !last)
    at(c, CommClass::TpCollective) += m * d(v) * d(ring_gather_elems_sent(x, s.tp)) * el;
}

// Expert parallelism: the all-to-alls of the stage's MoE layers per ep rank (dispatch and combine in the forward,
// their gradients in the backward, again under a full recompute), and the experts' collectives over edp.
void expert_comm(const Experiment& e, const StageLayout& st, const ExpertRouting& routing, StageAnalysis& sa) {
  if (st.moe_layers == 0) return;
  const auto& s = e.strategy;
  const double passes = e.training.recompute == Recompute::Full ? 3 : 2;
  const double runs = passes * d(st.moe_layers) * d(s.microbatches) * chunk_microbatch_share(s);
  const double el = e.training.activation_bytes();
  double most = 0;
  for (int j = 0; j < static_cast<int>(routing.tokens_to.size()); ++j) {
    const double sent = d(alltoall_elems_sent(routing.tokens_to, e.model.hidden, j, false) +
                          alltoall_elems_sent(routing.tokens_to, e.model.hidden, j, true)) *
                        el * runs;
    sa.ep_rank_bytes.push_back(sent);
    most = std::max(most, sent);
  }
  at(sa.comm, CommClass::EpAllToAll) = most;
  const StrategySpec v = expert_view(s);
  for (const DataCollective& dc : expert_plan(s)) {
    DataCollectiveBytes b;
    b.plan = dc;
    b.group_size = v.degree(dc.group);
    b.runs = 1;  // per step (expert_plan refuses per-micro-batch ones in resolve)
    b.bytes_per_run = data_collective_elems_sent(v, dc, d(st.expert_padded(s.edp()))) *
                      (dc.state == State::Parameters ? e.training.param_bytes() : e.training.grad_bytes());
    at(sa.comm, CommClass::ExpertDataSync) += b.bytes();
    sa.expert_collectives.push_back(b);
  }
}

// `plan` is data_plan(e.strategy), the same for every stage.
CommBytes stage_comm(const Experiment& e, const StageLayout& st, const std::vector<DataCollective>& plan,
                     std::vector<DataCollectiveBytes>& collectives) {
  CommBytes c;
  data_parallel_comm(e, st, plan, c, collectives);
  model_parallel_comm(e, st, c);
  if (st.tied_copy_elems > 0)
    at(c, CommClass::EmbeddingSync) = 2 * d(shard_elems(st.tied_copy_elems, 2)) * e.training.grad_bytes();
  return c;
}

// FLOPs one device of the stage executes per step (forward, backward = 2x forward, recompute).
// With experts: the mean over the stage's devices (the busiest ep rank executes more under a skewed routing).
double stage_hardware_flops(const Experiment& e, const StageLayout& st, const ExpertRouting& routing) {
  if (e.model.opaque()) return 0;
  const auto& m = e.model;
  const auto& s = e.strategy;
  double tokens = d(local_seq_len(e)) * d(e.training.micro_batch) * d(s.microbatches) * chunk_microbatch_share(s);
  double layer = layer_forward_flops_per_token(m);
  const double dense_layers = d(st.n_layers - st.moe_layers);
  double per_token =
      dense_layers * 3 * layer + (partial_recompute(e) ? d(stage_recomputed_layers(e, st)) : dense_layers) *
                                     recompute_flops_per_token(m, e.training.recompute);
  const bool full = e.training.recompute == Recompute::Full;
  if (st.moe_layers > 0) {
    const double dense = moe_dense_forward_flops_per_token(m);
    const double recompute = full                                           ? dense
                             : e.training.recompute == Recompute::Selective ? attention_core_flops_per_token(m)
                                                                            : 0;
    per_token += d(st.moe_layers) * (3 * dense + recompute);
  }
  if (holds_head(s, st.stage)) per_token += 3 * logit_forward_flops_per_token(m);
  double flops = per_token * tokens / d(s.tp);
  if (st.moe_layers > 0) {
    const double mean = d(routing.total()) / d(s.ep);
    flops += (full ? 4 : 3) * mean * expert_forward_flops_per_token(m) * d(st.moe_layers) * d(s.microbatches) *
             chunk_microbatch_share(s);
  }
  return flops;
}

}  // namespace

std::vector<double> chunk_activation_bytes(const Experiment& e, const StageLayout& s) {
  std::vector<double> chunk;
  if (partial_recompute(e)) {  // dense layers only (resolve refuses MoE)
    for (std::int64_t n : s.chunk_layers) chunk.push_back(chunk_layers_activation_bytes(e, n));
    return chunk;
  }
  const double dense = layer_activation_bytes(e);
  const double moe = s.moe_layers > 0 ? moe_layer_activation_bytes(e, expert_routing(e).busiest()) : 0;
  for (std::size_t c = 0; c < s.chunk_layers.size(); ++c) {
    const double k = d(moe_layers_in(e.model, s.chunk_first[c], s.chunk_layers[c]));
    chunk.push_back((d(s.chunk_layers[c]) - k) * dense + k * moe);
  }
  return chunk;
}

double stage_activation_bytes(const Experiment& e, const StageLayout& s) {
  if (walks_pairs(e)) return paired_walked_peak(e, s, layer_activation_loads(e, s));
  if (partial_recompute(e) && splits_backward(e.strategy.schedule) && chunks_per_stage(e.strategy) > 1 &&
      e.strategy.pp > 1)
    return walked_peak(e, s, chunk_activation_bytes(e, s));
  if (((s.moe_layers > 0 && s.moe_layers < s.n_layers) || partial_recompute(e)) &&
      e.strategy.schedule == Schedule::Interleaved && e.strategy.pp > 1) {
    // Chunks of dense and MoE layers, or of recomputed and kept layers, hold different bytes: the op order walked
    // with each chunk's own.
    const std::vector<double> chunk = chunk_activation_bytes(e, s);
    return interleaved_peak(e, s, true, &chunk);
  }
  return stage_layer_activation_bytes(e, s) * activation_layer_equivalents(e, s);
}

Analysis analyze(const Experiment& e) {
  Analysis a;
  a.parameters = total_parameters(e.model);
  std::vector<StageLayout> layouts = stage_layouts(e);
  a.stages.reserve(layouts.size());
  const std::vector<DataCollective> plan = data_plan(e.strategy);
  const ExpertRouting routing = expert_routing(e);
  for (const auto& st : layouts) {
    StageAnalysis sa;
    sa.stage = st.stage;
    sa.memory = stage_memory(e, st);
    sa.comm = stage_comm(e, st, plan, sa.data_collectives);
    // dualpipe: the sum with the mirror stage's copy, a two-rank all-reduce, synchronises gradients like the
    // data-parallel collectives (the two copies are replicas along the direction).
    sa.mirror_sync_bytes = d(ring_allreduce_elems_sent(mirror_grad_elems(e, st), 2)) * e.training.grad_bytes();
    at(sa.comm, CommClass::DpGradSync) += sa.mirror_sync_bytes;
    expert_comm(e, st, routing, sa);
    sa.hardware_flops = stage_hardware_flops(e, st, routing);
    auto& mx = a.memory;
    mx.parameters = std::max(mx.parameters, sa.memory.parameters);
    mx.gradients = std::max(mx.gradients, sa.memory.gradients);
    mx.optimizer = std::max(mx.optimizer, sa.memory.optimizer);
    mx.activations = std::max(mx.activations, sa.memory.activations);
    mx.buffers = std::max(mx.buffers, sa.memory.buffers);
    mx.host = std::max(mx.host, sa.memory.host);
    a.model_states_bytes = std::max(a.model_states_bytes, sa.memory.model_states());
    a.total_bytes = std::max(a.total_bytes, sa.memory.total());
    for (int k = 0; k < kCommClasses; ++k)
      a.comm.by_class[static_cast<std::size_t>(k)] =
          std::max(a.comm.by_class[static_cast<std::size_t>(k)], sa.comm.by_class[static_cast<std::size_t>(k)]);
    a.comm.h2d = std::max(a.comm.h2d, sa.comm.h2d);
    a.comm.d2h = std::max(a.comm.d2h, sa.comm.d2h);
    a.bytes_per_step = std::max(a.bytes_per_step, sa.comm.total());
    a.hardware_flops_per_step += sa.hardware_flops * d(e.strategy.data_ranks() * e.strategy.tp);
    a.stages.push_back(std::move(sa));
  }
  if (!e.model.opaque()) {
    const auto& m = e.model;
    a.tokens_per_step = d(e.training.global_batch) * d(m.seq_len);
    a.model_flops_per_step = 3 * model_forward_flops_per_token(m) * a.tokens_per_step;
  }
  return a;
}

}  // namespace placesim
