// The forward and backward passes of a layer group: compute tasks and Megatron-LM's TP collectives around them.
#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/analytic/TpLayerTimes.hpp"
#include "strategies/expand/Expander.hpp"

namespace placesim::detail {

// Megatron-LM's TP collectives per layer (Korthikanti et al. §4.2): forward 2 all-reduces (SP: 2 all-gathers +
// 2 reduce-scatters), exposed; backward 2 all-reduces hidden behind weight-gradient GEMMs (SP: 2 all-gathers
// exposed, 2 all-gathers + 2 reduce-scatters hidden); a full recompute repeats the forward's, exposed. Without
// strategy.tp_overlap the backward's hidden collectives run exposed after the backward compute instead.
// The embedding runs before the group's layers and the head after them (forward; the reverse in backward). The
// vocabulary-parallel embedding all-reduces its output (under sp the backward all-gathers its gradient); the output
// layer all-gathers its input under sp, and its backward reduces the input gradient (all-reduce, or re-gather plus
// reduce-scatter under sp) beside its weight-gradient GEMM (megatron/model/language_model.py, 2022).
void Expander::expand_group(int s, const StageOp& op, int g, bool last_backward, double stash_delta, int phase) {
  const int last = group_phases(s, op, g) - 1;
  if (runs_part(phase, 0)) gather_params(s, op, g);
  const LayerGroup& lg = group_of(s, op, g);
  const bool offload = offloads_activations(s, op.chunk, g);
  if (op.weight) {
    weight_group(s, op, g);
    sync_gradients(s, op, g, last_backward);
    if (last_backward && moe_group(lg)) expert_grads_ready(s, op.chunk, g);
  } else if (op.forward) {
    forward_group(s, op, g, stash_delta, phase);
    if (offload && runs_part(phase, last)) store_activations(s, op, g);
  } else {
    if (offload && runs_part(phase, 0)) fetch_activations(s, op, g);
    backward_group(s, op, g, stash_delta, phase);
    if (offload && runs_part(phase, last))
      for (std::size_t lane = 0; lane < compute_of_group_.size(); ++lane)
        activation_window_[lane].push_back(compute_of_group_[lane]);  // the backward frees them
    if (!defer_sync_ && !op.split && runs_part(phase, last)) sync_gradients(s, op, g, last_backward);
    if (!op.split && runs_part(phase, last) && last_backward && moe_group(lg)) expert_grads_ready(s, op.chunk, g);
  }
  if (runs_part(phase, last) && last_backward && !op.weight && (lg.has_embedding || lg.has_head))
    for (int d = 0; d < dl_; ++d)
      for (int t = 0; t < tp_; ++t)
        first_backward_[static_cast<std::size_t>(rank(d, t, s))] =
            compute_of_group_[static_cast<std::size_t>(d * tp_ + t)];
}

// An MoE layer's forward or backward: the dense part and its collectives, then the experts' three phases (forward),
// or the experts' phases, then the dense part (backward); a phase of the experts ends a part.
int Expander::group_phases(int s, const StageOp& op, int g) const {
  return !op.weight && moe_group(group_of(s, op, g)) ? 4 : 1;
}

bool Expander::offloads_activations(int s, int chunk, int g) const {
  if (e_.strategy.placement.activations != Mode::Offloaded) return false;
  const auto& chunk_groups = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(chunk)];
  return g + 1 < static_cast<int>(chunk_groups.size()) && chunk_groups[static_cast<std::size_t>(g)].layers > 0;
}

// The layer's activations go to the host once its forward has closed. At most two offloaded layers are on the
// device at once: a forward waits until the copy (or backward) that frees the layer two before it has finished.
void Expander::store_activations(int s, const StageOp& op, int g) {
  const double bytes = activation_bytes(group_of(s, op, g));
  for_each_lane(s, [&](std::size_t lane, int x) {
    TaskId closes = compute_of_group_[lane];
    after_window(activation_window_[lane], closes);
    TaskId copy = add_single(Offload{x, true, bytes, State::Activations}, s, x, Stream::D2H);
    g_.depend(closes, copy);
    g_.set_memory(copy, {}, {{x, State::Activations, -bytes, false}});
    activation_window_[lane].push_back(copy);
    activation_copies_[{static_cast<int>(lane), op.microbatch, op.chunk, g}] = copy;
  });
}

// Before its backward the layer's activations come back (a prefetch: it runs while the layer after it computes its
// backward, once the window has room), and every compute task of the group waits for them.
void Expander::fetch_activations(int s, const StageOp& op, int g) {
  const double bytes = activation_bytes(group_of(s, op, g));
  for_each_lane(s, [&](std::size_t lane, int x) {
    TaskId fetch = add_single(Offload{x, false, bytes, State::Activations}, s, x, Stream::H2D);
    g_.depend(activation_copies_.at({static_cast<int>(lane), op.microbatch, op.chunk, g}), fetch);
    after_window(activation_window_[lane], fetch);
    g_.set_memory(fetch, {{x, State::Activations, bytes, false}}, {});
    gather_of_group_[lane].push_back(fetch);
  });
}

// Phases of an MoE layer (group_phases): 0 the dense part, 1-3 the experts' dispatch, compute and combine, the head
// with the last.
void Expander::forward_group(int s, const StageOp& op, int g, double stash_delta, int phase) {
  const LayerGroup& lg = group_of(s, op, g);
  const bool sp = e_.strategy.sp, moe = moe_group(lg);
  if (runs_part(phase, 0)) {
    if (lg.has_embedding) {
      compute_tasks(s, op, g, TaskKind::Forward, ModelPart::Embedding, false, 0);
      vocab_collective(s, op, g, CollectiveOp::AllReduce, false);
    }
    compute_tasks(s, op, g, TaskKind::Forward, ModelPart::Layers, !lg.has_head, stash_delta);
    tp_collective(s, op, g, sp ? 4 : 2, sp ? 2 : 0, false);
  }
  if (moe) expert_phase(s, op, g, TaskKind::Forward, phase, 1);
  if (lg.has_head && runs_part(phase, moe ? 3 : 0)) {
    if (sp) vocab_collective(s, op, g, CollectiveOp::AllGather, false);
    compute_tasks(s, op, g, TaskKind::Forward, ModelPart::Head, true, stash_delta);
  }
}

// Phases of an MoE layer (group_phases): 0 the head, the recompute and the experts' first all-to-all, 1 their
// compute, 2 their second all-to-all, 3 the dense part and the embedding.
void Expander::backward_group(int s, const StageOp& op, int g, double stash_delta, int phase) {
  const LayerGroup& lg = group_of(s, op, g);
  const bool sp = e_.strategy.sp, moe = moe_group(lg);
  if (runs_part(phase, 0)) {
    if (lg.has_head) {
      if (sp) vocab_collective(s, op, g, CollectiveOp::AllGather, false);
      compute_tasks(s, op, g, TaskKind::Backward, ModelPart::Head, false, 0);
      vocab_collective(s, op, g, sp ? CollectiveOp::AllGather : CollectiveOp::AllReduce, e_.strategy.tp_overlap);
    }
    const StageCosts& k = costs_[static_cast<std::size_t>(s)];
    if (lg.recomputed && (moe ? k.moe_recompute_s : k.layer_recompute_s) > 0)
      compute_tasks(s, op, g, TaskKind::Recompute, ModelPart::Layers, false, 0);
    const bool full = e_.training.recompute == Recompute::Full && lg.recomputed;
    if (moe && full) expert_block(s, op, g, TaskKind::Recompute);
    tp_collective(s, op, g, (sp ? 2 : 0) + (full ? (sp ? 4 : 2) : 0), sp ? 2 + (full ? 2 : 0) : 0, false);
  }
  if (moe) expert_phase(s, op, g, TaskKind::Backward, phase, 0);
  if (!runs_part(phase, moe ? 3 : 0)) return;
  compute_tasks(s, op, g, TaskKind::Backward, ModelPart::Layers, !lg.has_embedding, stash_delta);
  // Split (B): the weight-gradient GEMMs these collectives hide behind run later, in W: here they are exposed.
  tp_collective(s, op, g, sp ? 4 : 2, sp ? 2 : 0, e_.strategy.tp_overlap && !op.split);
  if (lg.has_embedding) {
    if (sp) vocab_collective(s, op, g, CollectiveOp::AllGather, false);
    compute_tasks(s, op, g, TaskKind::Backward, ModelPart::Embedding, true, stash_delta);
  }
}

// The experts of an MoE group in group phase `phase`: all of them in the whole group, else their dispatch, compute
// and combine in phases `first` to `first` + 2.
void Expander::expert_phase(int s, const StageOp& op, int g, TaskKind kind, int phase, int first) {
  if (phase == kWholeGroup) return expert_block(s, op, g, kind);
  constexpr ExpertPhase kPhases[] = {ExpertPhase::In, ExpertPhase::Compute, ExpertPhase::Out};
  if (phase >= first && phase < first + 3) expert_block(s, op, g, kind, kPhases[phase - first]);
}

// The W op of a split backward: the layers' weight-gradient kernels, after their B (the device's chain orders them);
// the layers' activations, held since their forward, are freed when it ends. An MoE layer's routed experts run
// their weight-gradient GEMMs first.
void Expander::weight_group(int s, const StageOp& op, int g) {
  if (moe_group(group_of(s, op, g))) expert_weights(s, op, g);
  compute_tasks(s, op, g, TaskKind::WeightGrad, ModelPart::Layers, true, 0);
}

namespace {

struct PartCost {
  double seconds = 0, flops = 0;
};

PartCost part_cost(const StageCosts& k, const LayerGroup& lg, TaskKind kind, ModelPart part, bool moe, bool split) {
  const bool forward = kind == TaskKind::Forward;
  // A split backward: W takes the layers' weight-gradient kernels (and a third of the backward's FLOPs: the
  // weight-gradient GEMMs equal the forward's), B the rest without the cost of collectives hidden behind them.
  // An MoE layer's dense part splits the same way (its routed experts are tasks of their own).
  const double layers = static_cast<double>(lg.layers);
  const double weight_s = moe ? k.moe_weight_s : layers * k.layer_weight_s;
  const double backward_s = moe ? k.moe_backward_s : layers * k.layer_backward_s;
  const double backward_flops = moe ? k.moe_backward_flops : layers * k.layer_backward_flops;
  if (kind == TaskKind::WeightGrad) return {weight_s, backward_flops / 2};
  if (split && kind == TaskKind::Backward && part == ModelPart::Layers)
    return {backward_s - layers * k.layer_backward_hidden_s - weight_s, backward_flops / 2};
  if (moe && part == ModelPart::Layers) {  // an MoE layer's dense part (its experts are tasks of their own)
    if (kind == TaskKind::Recompute) return {k.moe_recompute_s, k.moe_recompute_flops};
    return {forward ? k.moe_forward_s : k.moe_backward_s, forward ? k.moe_forward_flops : k.moe_backward_flops};
  }
  switch (part) {
    case ModelPart::Embedding:
      return {forward ? k.embed_forward_s : k.embed_backward_s, 0};
    case ModelPart::Head:
      return {forward ? k.extra_forward_s : k.extra_backward_s,
              forward ? k.extra_forward_flops : k.extra_backward_flops};
    case ModelPart::Layers:
    case ModelPart::Experts:  // costed as layers here, as before the switch named every part
      break;
  }
  if (kind == TaskKind::Recompute) return {lg.layers * k.layer_recompute_s, lg.layers * k.layer_recompute_flops};
  return {lg.layers * (forward ? k.layer_forward_s : k.layer_backward_s),
          lg.layers * (forward ? k.layer_forward_flops : k.layer_backward_flops)};
}

}  // namespace

// FSDP2's copies on the compute stream (strategy.gather_copies): a gathered unit is copied out of the all-gather's
// output into the parameters (split_with_sizes_copy: read and write the unit), and before the reduce-scatter the
// unit's gradients are copied into its input, cast to the reduce dtype (chunk_cat: read in the parameters' dtype,
// write in the gradients'). FSDP1's flat parameters (strategy.flat_params) use the gathered buffer in place (no
// copy-out) and concatenate the gradients in the parameters' dtype (split's backward), then cast them to the reduce
// dtype in a pass of their own when it differs. Element-wise, memory-bound kernels.
double Expander::gather_copy_s(const LayerGroup& lg, bool forward) const {
  if (!e_.strategy.gather_copies || lg.elems == 0) return 0;
  const double elems = static_cast<double>(lg.elems), pb = e_.training.param_bytes(), gb = e_.training.grad_bytes();
  const bool flat = e_.strategy.flat_params;
  double bytes = 0;
  if (param_gather(forward) && !flat) bytes += 2 * elems * pb;
  if (!forward && grad_reduce())
    bytes += flat ? 2 * elems * pb + (gb != pb ? elems * (pb + gb) : 0) : elems * (pb + gb);
  return bytes > 0 ? elementwise_time_s(bytes, c_.accelerator) : 0;
}

// The memory changes of a compute task on device x (lane `lane`): what the task that closes the group's pass frees or
// keeps (activations, gathered parameters, unsharded gradients, a stashed weight version), and the loss's buffers
// around the head.
void Expander::compute_memory(const StageOp& op, const LayerGroup& lg, std::size_t lane, int x, TaskKind kind,
                              ModelPart part, bool closes, double stash_delta, std::vector<MemDelta>& on_start,
                              std::vector<MemDelta>& on_end) const {
  const double pb = e_.training.param_bytes(), gb = e_.training.grad_bytes();
  const bool grad_buffer = holds_unit_buffer(e_.strategy, State::Gradients);
  const bool param_buffer = holds_unit_buffer(e_.strategy, State::Parameters);
  const bool once = e_.strategy.gathers_once_per_step();
  const double act = activation_bytes(lg, lane);
  if (closes) {
    // A split backward's B keeps the activations for its W, which frees them.
    if (act > 0 && !(op.split && kind == TaskKind::Backward))
      on_end.push_back({x, State::Activations, op.forward ? act : -act, false});
    // Without resharding after the forward the unit stays gathered until its backward closes; kept for the
    // step (once), until the reduce-scatter after its last backward, or that backward when there is none.
    if (param_buffer &&
        (once ? !op.forward && op_last_backward_ && !grad_reduce() : !op.forward || e_.strategy.reshard_after_forward))
      on_end.push_back({x, State::Parameters, -static_cast<double>(lg.elems) * pb, true});
    // Kept for the step, the unsharded gradients accumulate from the chunk's first backward.
    if (!op.forward && grad_buffer && (!e_.strategy.defers_grad_sync() || op_first_backward_))
      on_end.push_back({x, State::Gradients, static_cast<double>(lg.elems) * gb, true});
    if (stash_delta != 0) on_end.push_back({x, State::Parameters, stash_delta, false});
  }
  // The loss (loss_saved_bytes): the head's forward leaves its softmax, the head's backward adds its gradients
  // while it runs and frees both.
  if (part == ModelPart::Head && kind == TaskKind::Forward)
    on_end.push_back({x, State::Activations, loss_saved_, false});
  if (part == ModelPart::Head && kind == TaskKind::Backward) {
    on_start.push_back({x, State::Activations, loss_transient_, false});
    on_end.push_back({x, State::Activations, -(loss_saved_ + loss_transient_), false});
  }
}

void Expander::compute_tasks(int s, const StageOp& op, int g, TaskKind kind, ModelPart part, bool closes,
                             double stash_delta) {
  const auto& chunk_groups = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)];
  const LayerGroup& lg = chunk_groups[static_cast<std::size_t>(g)];
  const int vstage = virtual_stage(op.chunk, s);
  const bool first_of_op =
      frontier_.front().empty() && (op.forward ? g == 0 : g == static_cast<int>(chunk_groups.size()) - 1);
  const bool moe = moe_group(lg);
  PartCost cost = part_cost(costs_[static_cast<std::size_t>(s)], lg, kind, part, moe, op.split);
  const bool layers = part == ModelPart::Layers;
  // Context parallelism: the attention runs as tasks of its own after the layers' other work.
  // A recompute re-runs the attention only under full recompute (selective-op saves the attention's output).
  const bool cp_split = layers && lg.layers > 0 && cp_ > 1 && !e_.model.opaque() && kind != TaskKind::WeightGrad &&
                        (kind != TaskKind::Recompute || e_.training.recompute == Recompute::Full);
  if (cp_split) {
    const StageCosts& k = costs_[static_cast<std::size_t>(s)];
    const bool bwd = kind == TaskKind::Backward;
    cost.seconds -= lg.layers * (moe ? (bwd ? k.moe_attention_backward_s : k.moe_attention_forward_s)
                                     : (bwd ? k.layer_attention_backward_s : k.layer_attention_forward_s));
  }
  if (layers && kind != TaskKind::Recompute) cost.seconds += gather_copy_s(lg, op.forward);
  std::vector<TaskId> bodies;
  std::vector<std::vector<MemDelta>> deferred;
  const bool grad_buffer = holds_unit_buffer(e_.strategy, State::Gradients);
  const bool once = e_.strategy.gathers_once_per_step();
  compute_of_group_.assign(static_cast<std::size_t>(dl_ * tp_), kNoTask);
  before_compute_.assign(static_cast<std::size_t>(dl_ * tp_), {});
  for (int d = 0; d < dl_; ++d) {
    for (int t = 0; t < tp_; ++t) {
      const int x = rank(d, t, s);
      const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
      std::vector<MemDelta> on_start, on_end;
      compute_memory(op, lg, lane, x, kind, part, closes, stash_delta, on_start, on_end);
      Compute c{kind,
                x,
                cost.seconds,
                cost.flops,
                layers && lg.layers > 0 ? lg.first_layer : -1,
                layers ? lg.layers : 0,
                op.microbatch,
                op.chunk,
                op.weight_version,
                part};
      TaskId id = add_single(c, s, x, Stream::Compute);
      g_.set_memory(id, on_start, cp_split ? std::vector<MemDelta>{} : on_end);
      if (cp_split) {
        bodies.push_back(id);
        deferred.push_back(std::move(on_end));
      }
      for (TaskId dep : preceding(lane, frontier_[lane])) g_.depend(dep, id);
      if (first_of_op && !op.weight) link_op_inputs(d, t, vstage, op.microbatch, op.forward, id);
      if (first_of_op && op.pair_vstage >= 0)
        link_boundary(d, t, op.pair_vstage, op.pair_microbatch, op.pair_forward, id, false);
      if (gather_of_group_.size() > lane)
        for (TaskId gather : gather_of_group_[lane]) g_.depend(gather, id);
      // Double-buffered unsharded gradients (as DeepSpeed's reduce buckets): a backward waits until the buffer
      // filled two groups back has been reduce-scattered or copied out.
      if (kind == TaskKind::Backward && grad_buffer && !once) after_window(grad_window_[lane], id);
      before_compute_[lane] = frontier_[lane];
      frontier_[lane] = {id};
      compute_of_group_[lane] = id;
      if (closes && !cp_split) gather_window_[lane].push_back(id);
    }
  }
  if (cp_split) cp_attention(s, op, g, kind, bodies, deferred, closes);
}

// Context parallelism's attention of a group: a ring (cp_ring), PyTorch's variants (cp_pytorch) or all-gathered K/V
// (cp_gathered); then the K/V buffers' lifetime and the lanes' frontier.
void Expander::cp_attention(int s, const StageOp& op, int g, TaskKind kind, const std::vector<TaskId>& body,
                            std::vector<std::vector<MemDelta>>& on_end, bool closes) {
  const LayerGroup& lg = group_of(s, op, g);
  const StageCosts& k = costs_[static_cast<std::size_t>(s)];
  const bool backward = kind == TaskKind::Backward;
  const double attention =
      lg.layers * (moe_group(lg) ? (backward ? k.moe_attention_backward_s : k.moe_attention_forward_s)
                                 : (backward ? k.layer_attention_backward_s : k.layer_attention_forward_s));
  const int el = static_cast<int>(e_.training.activation_bytes());
  const double kv_bytes = static_cast<double>(lg.layers) * static_cast<double>(cp_kv_elems(e_)) * el;
  const std::size_t lanes = body.size();
  CpPass p{s,
           g,
           op,
           kind,
           backward,
           attention,
           kv_bytes,
           body,
           std::vector<TaskId>(lanes, kNoTask),
           std::vector<TaskId>(lanes, kNoTask),
           std::vector<std::vector<TaskId>>(lanes)};
  const bool pytorch = e_.strategy.cp_impl == CpImpl::PyTorch;
  if (e_.strategy.cp_comm == CpComm::Ring && !(pytorch && backward))
    cp_ring(p);
  else if (pytorch)
    cp_pytorch(p);
  else
    cp_gathered(p);
  // The layer's K/V blocks live from its attention's first task to its last (one layer at a time within a group).
  const double buffer = cp_buffer_bytes(e_, backward);
  for (std::size_t lane = 0; lane < lanes; ++lane) {
    const int x = rank(static_cast<int>(lane) / tp_, static_cast<int>(lane) % tp_, s);
    std::vector<MemDelta> start{{x, State::Activations, buffer, true}};
    on_end[lane].push_back({x, State::Activations, -buffer, true});
    if (p.first[lane] == p.last[lane]) {
      g_.set_memory(p.last[lane], start, on_end[lane]);
    } else {
      g_.set_memory(p.first[lane], start, {});
      g_.set_memory(p.last[lane], {}, on_end[lane]);
    }
    frontier_[lane] = p.tail[lane];
    compute_of_group_[lane] = p.last[lane];
    if (closes) gather_window_[lane].push_back(p.last[lane]);
  }
}

// The lane whose send lane d receives: its ring predecessor, or in a folded step whose blocks split a ring (dl_ < cp)
// the predecessor's representative in block 0 (the ring moved by one block is itself). A send goes to the successor's
// real device, outside block 0 for the block's last lane (the simulator routes it to a mirror).
int Expander::cp_pred(int d) const {
  return dl_ < cp_ ? (d + dl_ - 1) % dl_ : d - d % cp_ + (d % cp_ + cp_ - 1) % cp_;
}

int Expander::cp_succ(int d) const {
  return d - d % cp_ + (d % cp_ + 1) % cp_;
}

TaskId Expander::cp_attention_task(const CpPass& p, int d, int t, double seconds) {
  const LayerGroup& lg =
      groups_[static_cast<std::size_t>(p.s)][static_cast<std::size_t>(p.op.chunk)][static_cast<std::size_t>(p.g)];
  const int x = rank(d, t, p.s);
  Compute c{
      p.kind,           x, seconds, 0, lg.first_layer, lg.layers, p.op.microbatch, p.op.chunk, p.op.weight_version,
      ModelPart::Layers};
  return add_single(c, p.s, x, Stream::Compute);
}

// A transfer from lane d's rank to the next of its cp ring, on the CP stream.
TaskId Expander::cp_ring_send(const CpPass& p, int d, int t, double bytes) {
  const int x = rank(d, t, p.s);
  return add_single(P2P{x, rank(cp_succ(d), t, p.s), bytes, CommClass::CpKv, p.op.microbatch, p.op.chunk, p.backward},
                    p.s, x, Stream::CpComm);
}

// The all-gather of a cp group's K/V blocks (group of lane d's cp ranks, tp rank t), one per layer of the group.
Collective Expander::cp_kv_gather(const CpPass& p, int d, int t) {
  const LayerGroup& lg =
      groups_[static_cast<std::size_t>(p.s)][static_cast<std::size_t>(p.op.chunk)][static_cast<std::size_t>(p.g)];
  Collective c;
  c.op = CollectiveOp::AllGather;
  c.cls = CommClass::CpKv;
  c.stream = Stream::CpComm;
  c.group = cp_group(d, t, p.s);
  c.elems = cp_kv_elems(e_) * cp_;
  c.elem_bytes = static_cast<int>(e_.training.activation_bytes());
  c.repeat = lg.layers;
  c.layer = lg.first_layer;
  c.layers = lg.layers;
  c.microbatch = p.op.microbatch;
  c.backward = p.backward;
  return c;
}

// A ring pass ends with its last block; a backward one also waits until its own block's K/V gradient, the last of
// `returned` its predecessor sent, is back.
void Expander::cp_close_ring(CpPass& p, const std::vector<TaskId>& computed, const std::vector<TaskId>& returned) {
  for (int d = 0; d < dl_; ++d)
    for (int t = 0; t < tp_; ++t) {
      const auto lane = static_cast<std::size_t>(d * tp_ + t);
      p.last[lane] = computed[lane];
      p.tail[lane] = {computed[lane]};
      if (!returned.empty()) p.tail[lane].push_back(returned[static_cast<std::size_t>(cp_pred(d) * tp_ + t)]);
    }
}

// Ring (Megatron-Core/TransformerEngine "p2p" CP, and PyTorch's forward): in forward step i each rank computes
// attention against the K/V block it holds while sending that block to the ring's next rank (cp - 1 transfers); step
// i + 1 needs the block received in step i. Backward (TransformerEngine's AttnFuncWithCPAndKVP2P): the transfer
// launched at step i carries the K/V for the next step and the K/V gradient accumulated through step i - 1: K/V alone
// at step 0, both in the middle, the gradient alone at step cp - 1, which brings each rank its own block's full
// gradient.
void Expander::cp_ring(CpPass& p) {
  const std::size_t lanes = p.body.size();
  auto lane_of = [&](int d, int t) { return static_cast<std::size_t>(d * tp_ + t); };
  std::vector<TaskId> sent(lanes, kNoTask), computed(p.body);
  const int transfers = p.backward ? cp_ : cp_ - 1;
  for (int i = 0; i < cp_; ++i) {
    std::vector<TaskId> step(lanes, kNoTask), send(lanes, kNoTask);
    for (int d = 0; d < dl_; ++d)
      for (int t = 0; t < tp_; ++t) {
        const std::size_t lane = lane_of(d, t);
        step[lane] = cp_attention_task(p, d, t, p.attention / cp_);
        if (i == 0) p.first[lane] = step[lane];
        if (i > 0) g_.depend(sent[lane_of(cp_pred(d), t)], step[lane]);
        if (i >= transfers) continue;
        const double bytes = !p.backward || i == 0 || i == cp_ - 1 ? p.kv_bytes : 2 * p.kv_bytes;
        send[lane] = cp_ring_send(p, d, t, bytes);
        g_.depend(i == 0 ? p.body[lane] : sent[lane_of(cp_pred(d), t)], send[lane]);
        if (p.backward && i > 0) g_.depend(computed[lane], send[lane]);  // the gradient of step i - 1
      }
    computed = step;
    sent = send;
  }
  cp_close_ring(p, computed, p.backward ? sent : std::vector<TaskId>{});
}

// PyTorch (_templated_ring_attention and its backward): the K/V all-gathered once, beside the first block (the rank's
// own K/V, the causal one), or rotated around the ring as cp_ring does; the blocks run as cp tasks. Backward: after
// each block the K/V gradients summed so far go to the next rank in fp32 (the all-to-all rotater), where the next step
// adds its block's; the pass ends when the rank's own block's sum has come back (the last send).
void Expander::cp_pytorch(CpPass& p) {
  const std::size_t lanes = p.body.size();
  auto lane_of = [&](int d, int t) { return static_cast<std::size_t>(d * tp_ + t); };
  const bool gathered = e_.strategy.cp_comm == CpComm::AllGather;
  std::vector<TaskId> kv_ready(lanes, kNoTask);
  if (gathered)
    for (int d = 0; d < dl_; d += cp_)
      for (int t = 0; t < tp_; ++t) {
        const TaskId gather = add_collective(cp_kv_gather(p, d, t), p.s);
        for (int j = d; j < std::min(d + cp_, dl_); ++j) {
          g_.depend(p.body[lane_of(j, t)], gather);
          kv_ready[lane_of(j, t)] = gather;
        }
      }
  if (!p.backward) {
    for (int d = 0; d < dl_; ++d)
      for (int t = 0; t < tp_; ++t) {
        const std::size_t lane = lane_of(d, t);
        p.first[lane] = cp_attention_task(p, d, t, p.attention / cp_);
        p.last[lane] = cp_attention_task(p, d, t, p.attention * (cp_ - 1) / cp_);
        g_.depend(kv_ready[lane], p.last[lane]);
        p.tail[lane] = {p.last[lane]};
      }
    return;
  }
  const LayerGroup& lg =
      groups_[static_cast<std::size_t>(p.s)][static_cast<std::size_t>(p.op.chunk)][static_cast<std::size_t>(p.g)];
  const double grad_bytes = static_cast<double>(lg.layers) * cp_grad_send_bytes(e_);
  std::vector<TaskId> kv_sent(lanes, kNoTask), grad_sent(lanes, kNoTask), computed(lanes, kNoTask);
  for (int i = 0; i < cp_; ++i) {
    std::vector<TaskId> kv_send(lanes, kNoTask), grad_send(lanes, kNoTask);
    for (int d = 0; d < dl_; ++d)
      for (int t = 0; t < tp_; ++t) {
        const std::size_t lane = lane_of(d, t);
        // The ring's K/V for the next step leave before this step's block.
        if (!gathered && i < cp_ - 1) {
          kv_send[lane] = cp_ring_send(p, d, t, p.kv_bytes);
          g_.depend(i == 0 ? p.body[lane] : kv_sent[lane_of(cp_pred(d), t)], kv_send[lane]);
        }
        const TaskId step = cp_attention_task(p, d, t, p.attention / cp_);
        if (i == 0) p.first[lane] = step;
        if (i > 0) g_.depend(gathered ? kv_ready[lane] : kv_sent[lane_of(cp_pred(d), t)], step);
        grad_send[lane] = cp_ring_send(p, d, t, grad_bytes);
        g_.depend(step, grad_send[lane]);
        if (i > 0) g_.depend(grad_sent[lane_of(cp_pred(d), t)], grad_send[lane]);
        computed[lane] = step;
      }
    kv_sent = kv_send;
    grad_sent = grad_send;
  }
  cp_close_ring(p, computed, grad_sent);
}

// All-gather (Llama 3): K and V all-gathered before the attention (again in the backward), their gradients
// reduce-scattered after it; exposed.
void Expander::cp_gathered(CpPass& p) {
  auto lane_of = [&](int d, int t) { return static_cast<std::size_t>(d * tp_ + t); };
  for (int d = 0; d < dl_; d += cp_)
    for (int t = 0; t < tp_; ++t) {
      Collective c = cp_kv_gather(p, d, t);
      const TaskId gather = add_collective(c, p.s);
      std::vector<TaskId> kernels;
      for (int j = d; j < std::min(d + cp_, dl_); ++j) {
        g_.depend(p.body[lane_of(j, t)], gather);
        const TaskId kernel = cp_attention_task(p, j, t, p.attention);
        p.first[lane_of(j, t)] = kernel;
        g_.depend(gather, kernel);
        kernels.push_back(kernel);
        p.last[lane_of(j, t)] = kernel;
        p.tail[lane_of(j, t)] = {kernel};
      }
      if (!p.backward) continue;
      c.op = CollectiveOp::ReduceScatter;
      const TaskId scatter = add_collective(c, p.s);
      for (int j = d; j < std::min(d + cp_, dl_); ++j) {
        g_.depend(kernels[static_cast<std::size_t>(j - d)], scatter);
        p.tail[lane_of(j, t)] = {scatter};
      }
    }
}

void Expander::tp_collective(int s, const StageOp& op, int g, int ops, int gathers, bool hidden) {
  const auto& lg = group_of(s, op, g);
  if (ops == 0 || lg.layers == 0) return;
  // An MoE layer without shared experts has no tensor-parallel MLP: its attention's collectives only.
  if (moe_group(lg) && e_.model.shared_experts == 0) {
    ops /= 2;
    gathers /= 2;
  }
  const CollectiveOp kind = e_.strategy.sp ? CollectiveOp::AllGather : CollectiveOp::AllReduce;
  const int el = e_.training.activation_bytes();
  // All-gathers of another element size than the activations' (FP8 under strategy.tp_fp8_gather: the analytic
  // model's tp_gather_elem_bytes) are collectives of their own, before the phase's reduce-scatters.
  const int gather_el = static_cast<int>(tp_gather_elem_bytes(e_));
  const int own = gather_el != el ? gathers : 0;
  if (own > 0) add_tp_collective(s, op, g, kind, own * lg.layers, true, hidden, gather_el);
  if (ops > own) add_tp_collective(s, op, g, kind, (ops - own) * lg.layers, true, hidden, el);
}

void Expander::vocab_collective(int s, const StageOp& op, int g, CollectiveOp kind, bool hidden) {
  add_tp_collective(s, op, g, kind, 1, false, hidden, e_.training.activation_bytes());
}

void Expander::add_tp_collective(int s, const StageOp& op, int g, CollectiveOp kind, int repeat, bool per_layer,
                                 bool hidden, int elem_bytes) {
  if (tp_ == 1 || e_.model.opaque()) return;
  const auto& chunk_groups = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)];
  const LayerGroup& lg = chunk_groups[static_cast<std::size_t>(g)];
  const bool first_group = op.forward ? g == 0 : g == static_cast<int>(chunk_groups.size()) - 1;
  // A hidden collective starts beside its compute, so it is first of the op when that compute was.
  const bool first_of_op = first_group && (hidden ? before_compute_.front().empty() : frontier_.front().empty());
  const std::int64_t x = local_seq_len(e_) * e_.training.micro_batch * e_.model.hidden;
  for (int d = 0; d < dl_; ++d) {
    Collective c = tp_group_collective(d, s, kind, x, elem_bytes);
    c.repeat = repeat;
    c.layer = per_layer ? lg.first_layer : -1;
    c.layers = per_layer ? lg.layers : 0;
    c.microbatch = op.microbatch;
    c.chunk = op.chunk;
    c.backward = !op.forward;
    TaskId id = add_collective(c, s);
    for (int t = 0; t < tp_; ++t) {
      std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
      for (TaskId dep : preceding(lane, hidden ? before_compute_[lane] : frontier_[lane])) g_.depend(dep, id);
      if (first_of_op) link_op_inputs(d, t, virtual_stage(op.chunk, s), op.microbatch, op.forward, id);
      if (first_of_op && op.pair_vstage >= 0)
        link_boundary(d, t, op.pair_vstage, op.pair_microbatch, op.pair_forward, id, false);
      if (hidden)
        frontier_[lane].push_back(id);
      else
        frontier_[lane] = {id};
    }
  }
}

}  // namespace placesim::detail
