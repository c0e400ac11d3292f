#include <algorithm>

#include "strategies/expand/Expander.hpp"

namespace placesim {

int layer_group_size(const Experiment& e, const ExpandOptions& o) {
  const auto& s = e.strategy;
  std::int64_t stage_layers = e.model.opaque() ? std::max<std::int64_t>(1, e.model.opaque_layers / s.pp)
                                               : stage_layer_counts(e.model.layers, s.pp).front();
  int per_chunk = static_cast<int>(std::max<std::int64_t>(1, stage_layers / s.chunks));
  if (o.layer_group > 0) return std::min(o.layer_group, per_chunk);
  double passes = e.training.recompute == Recompute::None ? 2 : 3;
  double ops = static_cast<double>(s.devices()) * static_cast<double>(s.microbatches * s.chunks) * passes;
  for (int g = 1; g <= per_chunk; ++g)
    if (per_chunk % g == 0 && ops * (per_chunk / g) <= o.task_budget) return g;
  return per_chunk;
}

TaskGraph expand(const Experiment& e, const ClusterSpec& c, const ExpandOptions& o) {
  return detail::Expander(e, c, o).run();
}

namespace detail {

PipelineSchedule step_schedule(const Experiment& e) {
  return make_schedule(shape_of(e.strategy, 1), strategy_shape_fields());
}

Expander::Expander(const Experiment& e, const ClusterSpec& c, const ExpandOptions& o)
    : e_(e),
      c_(c),
      dp_(static_cast<int>(e.strategy.dp)),
      tp_(static_cast<int>(e.strategy.tp)),
      pp_(static_cast<int>(e.strategy.pp)),
      v_(static_cast<int>(e.strategy.chunks)),
      m_(static_cast<int>(e.strategy.microbatches)),
      group_size_(layer_group_size(e, o)),
      layouts_(stage_layouts(e)) {
  for (const auto& st : layouts_) costs_.push_back(stage_costs(e, c, st));
  schedule_ = step_schedule(e);
  synchronous_ = e.strategy.schedule == Schedule::GPipe || e.strategy.schedule == Schedule::OneFOneB ||
                 e.strategy.schedule == Schedule::Interleaved;
  const bool megatron_p2p = e.strategy.p2p == PipelineP2P::Megatron && pp_ > 1 && !e.model.opaque();
  blocking_p2p_ = megatron_p2p && synchronous_;
  scatter_gather_ = megatron_p2p && !e.strategy.sp && tp_ > 1;
  apply_microbatch_.assign(static_cast<std::size_t>(pp_), -1);
  for (int s = 0; s < pp_; ++s) {
    groups_.emplace_back();
    for (int k = 0; k < v_; ++k) groups_.back().push_back(chunk_groups(s, k));
  }
  g_.devices = dp_ * tp_ * pp_;
  last_.assign(static_cast<std::size_t>(g_.devices), {});
  for (auto& streams : last_) streams.fill(kNoTask);
  step_end_deps_.resize(static_cast<std::size_t>(g_.devices));
  first_backward_.assign(static_cast<std::size_t>(g_.devices), kNoTask);
}

int Expander::rank(int d, int t, int s) const { return t + tp_ * (d + dp_ * s); }

int Expander::dp_group(int t, int s) {
  auto [it, fresh] = dp_groups_.try_emplace({t, s}, 0);
  if (fresh) {
    std::vector<int> members;
    for (int d = 0; d < dp_; ++d) members.push_back(rank(d, t, s));
    it->second = g_.add_group(std::move(members));
  }
  return it->second;
}

int Expander::tp_group(int d, int s) {
  auto [it, fresh] = tp_groups_.try_emplace({d, s}, 0);
  if (fresh) {
    std::vector<int> members;
    for (int t = 0; t < tp_; ++t) members.push_back(rank(d, t, s));
    it->second = g_.add_group(std::move(members));
  }
  return it->second;
}

TaskId Expander::add_single(TaskBody body, int stage, int device, Stream stream) {
  TaskId id = g_.add(std::move(body), stage);
  TaskId& last = last_[static_cast<std::size_t>(device)][static_cast<std::size_t>(stream)];
  if (last != kNoTask) g_.depend(last, id);
  last = id;
  return id;
}

TaskId Expander::add_collective(Collective c, int stage) {
  TaskId id = g_.add(c, stage);
  for (int device : g_.groups[static_cast<std::size_t>(c.group)]) {
    TaskId& last = last_[static_cast<std::size_t>(device)][static_cast<std::size_t>(c.stream)];
    if (last != kNoTask) g_.depend(last, id);
    last = id;
  }
  return id;
}

Collective Expander::tp_group_collective(int d, int s, CollectiveOp op, std::int64_t elems, int elem_bytes) {
  Collective c;
  c.op = op;
  c.cls = CommClass::TpCollective;
  c.stream = Stream::TpComm;
  c.group = tp_group(d, s);
  c.elems = shard_elems(elems, tp_) * tp_;
  c.elem_bytes = elem_bytes;
  return c;
}

std::vector<LayerGroup> Expander::chunk_groups(int s, int chunk) const {
  const StageLayout& st = layouts_[static_cast<std::size_t>(s)];
  const int per_chunk = static_cast<int>(std::max<std::int64_t>(1, st.n_layers / v_));
  const int first = static_cast<int>((chunk * pp_ + s) * per_chunk);
  std::vector<LayerGroup> out;
  for (int l = 0; l < per_chunk; l += group_size_) {
    LayerGroup g;
    g.first_layer = first + l;
    g.layers = std::min(group_size_, per_chunk - l);
    g.units.assign(static_cast<std::size_t>(g.layers), st.layer_elems);
    out.push_back(std::move(g));
  }
  if (s == 0 && chunk == 0 && st.embed_elems > 0) {
    out.front().has_embedding = true;
    out.front().units.push_back(st.embed_elems);
  }
  if (s == pp_ - 1 && chunk == v_ - 1 && st.head_elems > 0) {
    out.back().has_head = true;
    out.back().units.push_back(st.head_elems);
  }
  for (auto& g : out)
    for (auto u : g.units) g.elems += u;
  return out;
}

double Expander::activation_bytes(const LayerGroup& g) const {
  if (e_.strategy.placement.activations == Mode::Offloaded) return 0;
  return g.layers * layer_activation_bytes(e_);
}

std::int64_t Expander::padded(std::int64_t elems) const { return shard_elems(elems, dp_) * dp_; }

TaskGraph Expander::run() {
  for (int s = 0; s < pp_; ++s) expand_stage(s);
  embedding_sync();
  for (int s = 0; s < pp_; ++s) sequence_parallel_grad_sync(s);
  for (int s = 0; s < pp_; ++s) finish_step(s);
  set_resident_memory();
  return std::move(g_);
}

void Expander::expand_stage(int s) {
  const auto& order = schedule_.order[static_cast<std::size_t>(s)];
  last_backward_op_.assign(static_cast<std::size_t>(v_), -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i)
    if (order[static_cast<std::size_t>(i)].kind == PipeOpKind::Backward)
      last_backward_op_[static_cast<std::size_t>(order[static_cast<std::size_t>(i)].chunk)] = i;
  const std::size_t lanes = static_cast<std::size_t>(dp_ * tp_);
  gather_window_.assign(lanes, {});
  grad_window_.assign(lanes, {});
  op_tail_.assign(lanes, {});
  version_refs_.clear();
  current_version_ = 0;
  call_recvs_.assign(lanes, {});
  std::vector<StageOp> unsent;  // strategy.p2p=megatron: outputs waiting for the next exchange
  if (blocking_p2p_) post_receives(s, order, 0);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    const PipeOp& pop = order[static_cast<std::size_t>(i)];
    if (pop.kind == PipeOpKind::Apply) {
      if (synchronous_)
        apply_microbatch_[static_cast<std::size_t>(s)] = pop.microbatch;
      else
        apply_inline(s, pop);
      continue;
    }
    if (pop.kind == PipeOpKind::Average) throw InputError("strategy.schedule=localsgd is simulated for abstract pipelines only");
    const StageOp op = expand_op(s, i, pop);
    if (!blocking_p2p_) {
      send_boundary(s, op);
      continue;
    }
    unsent.push_back(op);
    if (ends_call(order, i)) p2p_call(s, order, i, unsent);
  }
  // The step's update waits for the last op's collectives too.
  for (int d = 0; d < dp_; ++d)
    for (int t = 0; t < tp_; ++t)
      for (TaskId id : op_tail_[static_cast<std::size_t>(d * tp_ + t)])
        step_end_deps_[static_cast<std::size_t>(rank(d, t, s))].push_back(id);
  for (int t = 0; t < tp_; ++t) flush_bucket(t, s);
}

StageOp Expander::expand_op(int s, int i, const PipeOp& pop) {
  if (!blocking_p2p_ && scatter_gather_) receive_gather(s, pop);
  const StageOp op{pop.kind == PipeOpKind::Forward, pop.microbatch, pop.chunk, pop.weight_version};
  const double stash = stash_change(s, pop);
  const auto& groups = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)];
  const int n = static_cast<int>(groups.size());
  frontier_.assign(static_cast<std::size_t>(dp_ * tp_), {});
  for (int k = 0; k < n; ++k) {
    int g = op.forward ? k : n - 1 - k;
    bool last_op_of_chunk = !op.forward && i == last_backward_op_[static_cast<std::size_t>(op.chunk)];
    expand_group(s, op, g, last_op_of_chunk, k == n - 1 ? stash : 0);
  }
  op_tail_ = frontier_;
  return op;
}

// PipeDream keeps the weights each in-flight micro-batch's forward read until its backward: a version superseded by
// an Apply while still referenced becomes a stashed copy, freed by the backward that releases it last.
double Expander::stash_change(int s, const PipeOp& op) {
  if (synchronous_ || e_.strategy.schedule == Schedule::PipeDream2BW) return 0;
  if (op.kind == PipeOpKind::Forward) {
    ++version_refs_[op.weight_version];
    return 0;
  }
  int& refs = version_refs_[op.weight_version];
  --refs;
  if (refs == 0 && op.weight_version != current_version_)
    return -static_cast<double>(layouts_[static_cast<std::size_t>(s)].elems()) * e_.training.param_bytes();
  return 0;
}

void Expander::apply_inline(int s, const PipeOp& op) {
  const StageCosts& k = costs_[static_cast<std::size_t>(s)];
  const double elems = static_cast<double>(layouts_[static_cast<std::size_t>(s)].elems());
  const int superseded = current_version_++;
  auto it = version_refs_.find(superseded);
  const bool stash = e_.strategy.schedule == Schedule::PipeDream && it != version_refs_.end() && it->second > 0;
  for (int d = 0; d < dp_; ++d)
    for (int t = 0; t < tp_; ++t) {
      int x = rank(d, t, s);
      TaskId id = add_single(Compute{TaskKind::Optimizer, x, elems * k.optimizer_s_per_elem, 0, -1, 0, op.microbatch, -1,
                                     op.weight_version},
                             s, x, Stream::Compute);
      if (stash) g_.set_memory(id, {}, {{x, State::Parameters, elems * e_.training.param_bytes(), false}});
    }
}

// Megatron-LM's TP collectives per layer (Korthikanti et al. §4.2): forward 2 all-reduces (SP: 2 all-gathers +
// 2 reduce-scatters), exposed; backward 2 all-reduces hidden behind weight-gradient GEMMs (SP: 2 all-gathers
// exposed, 2 all-gathers + 2 reduce-scatters hidden); a full recompute repeats the forward's, exposed. Without
// strategy.tp_overlap the backward's hidden collectives run exposed after the backward compute instead.
// The embedding runs before the group's layers and the head after them (forward; the reverse in backward). The
// vocabulary-parallel embedding all-reduces its output (under sp the backward all-gathers its gradient); the output
// layer all-gathers its input under sp, and its backward reduces the input gradient (all-reduce, or re-gather plus
// reduce-scatter under sp) beside its weight-gradient GEMM (megatron/model/language_model.py, 2022).
void Expander::expand_group(int s, const StageOp& op, int g, bool last_backward, double stash_delta) {
  gather_params(s, op, g);
  const LayerGroup& lg = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)][static_cast<std::size_t>(g)];
  if (op.forward) {
    forward_group(s, op, g, stash_delta);
  } else {
    backward_group(s, op, g, stash_delta);
    sync_gradients(s, op, g, last_backward);
  }
  if (last_backward && (lg.has_embedding || lg.has_head))
    for (int d = 0; d < dp_; ++d)
      for (int t = 0; t < tp_; ++t)
        first_backward_[static_cast<std::size_t>(rank(d, t, s))] = compute_of_group_[static_cast<std::size_t>(d * tp_ + t)];
}

void Expander::forward_group(int s, const StageOp& op, int g, double stash_delta) {
  const LayerGroup& lg = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)][static_cast<std::size_t>(g)];
  const bool sp = e_.strategy.sp;
  if (lg.has_embedding) {
    compute_tasks(s, op, g, TaskKind::Forward, ModelPart::Embedding, false, 0);
    vocab_collective(s, op, g, CollectiveOp::AllReduce, false);
  }
  compute_tasks(s, op, g, TaskKind::Forward, ModelPart::Layers, !lg.has_head, stash_delta);
  tp_collective(s, op, g, sp ? 4 : 2, false);
  if (lg.has_head) {
    if (sp) vocab_collective(s, op, g, CollectiveOp::AllGather, false);
    compute_tasks(s, op, g, TaskKind::Forward, ModelPart::Head, true, stash_delta);
  }
}

void Expander::backward_group(int s, const StageOp& op, int g, double stash_delta) {
  const LayerGroup& lg = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)][static_cast<std::size_t>(g)];
  const bool sp = e_.strategy.sp;
  if (lg.has_head) {
    if (sp) vocab_collective(s, op, g, CollectiveOp::AllGather, false);
    compute_tasks(s, op, g, TaskKind::Backward, ModelPart::Head, false, 0);
    vocab_collective(s, op, g, sp ? CollectiveOp::AllGather : CollectiveOp::AllReduce, e_.strategy.tp_overlap);
  }
  if (costs_[static_cast<std::size_t>(s)].layer_recompute_s > 0)
    compute_tasks(s, op, g, TaskKind::Recompute, ModelPart::Layers, false, 0);
  tp_collective(s, op, g, (sp ? 2 : 0) + (e_.training.recompute == Recompute::Full ? (sp ? 4 : 2) : 0), false);
  compute_tasks(s, op, g, TaskKind::Backward, ModelPart::Layers, !lg.has_embedding, stash_delta);
  tp_collective(s, op, g, sp ? 4 : 2, e_.strategy.tp_overlap);
  if (lg.has_embedding) {
    if (sp) vocab_collective(s, op, g, CollectiveOp::AllGather, false);
    compute_tasks(s, op, g, TaskKind::Backward, ModelPart::Embedding, true, stash_delta);
  }
}

const std::vector<TaskId>& Expander::preceding(std::size_t lane, const std::vector<TaskId>& frontier) const {
  return frontier.empty() ? op_tail_[lane] : frontier;
}

namespace {

struct PartCost {
  double seconds = 0, flops = 0;
};

PartCost part_cost(const StageCosts& k, const LayerGroup& lg, TaskKind kind, ModelPart part) {
  const bool forward = kind == TaskKind::Forward;
  switch (part) {
    case ModelPart::Embedding:
      return {forward ? k.embed_forward_s : k.embed_backward_s, 0};
    case ModelPart::Head:
      return {forward ? k.extra_forward_s : k.extra_backward_s, forward ? k.extra_forward_flops : k.extra_backward_flops};
    case ModelPart::Layers:
      break;
  }
  if (kind == TaskKind::Recompute) return {lg.layers * k.layer_recompute_s, lg.layers * k.layer_recompute_flops};
  return {lg.layers * (forward ? k.layer_forward_s : k.layer_backward_s),
          lg.layers * (forward ? k.layer_forward_flops : k.layer_backward_flops)};
}

}  // namespace

void Expander::compute_tasks(int s, const StageOp& op, int g, TaskKind kind, ModelPart part, bool closes,
                             double stash_delta) {
  const auto& chunk_groups = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)];
  const LayerGroup& lg = chunk_groups[static_cast<std::size_t>(g)];
  const auto& pl = e_.strategy.placement;
  const int vstage = op.chunk * pp_ + s;
  const bool first_of_op = frontier_.front().empty() && (op.forward ? g == 0 : g == static_cast<int>(chunk_groups.size()) - 1);
  const double act = activation_bytes(lg);
  const double pb = e_.training.param_bytes(), gb = e_.training.grad_bytes();
  const PartCost cost = part_cost(costs_[static_cast<std::size_t>(s)], lg, kind, part);
  const bool layers = part == ModelPart::Layers;
  const bool grad_buffer = pl.gradients == Mode::Offloaded ||
                           ((pl.gradients == Mode::Sharded || pl.gradients == Mode::ShardedWithGather) && dp_ > 1);
  compute_of_group_.assign(static_cast<std::size_t>(dp_ * tp_), kNoTask);
  before_compute_.assign(static_cast<std::size_t>(dp_ * tp_), {});
  for (int d = 0; d < dp_; ++d) {
    for (int t = 0; t < tp_; ++t) {
      const int x = rank(d, t, s);
      const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
      std::vector<MemDelta> on_end;
      if (closes) {
        if (act > 0) on_end.push_back({x, State::Activations, op.forward ? act : -act, false});
        if ((pl.parameters == Mode::ShardedWithGather && dp_ > 1) || pl.parameters == Mode::Offloaded)
          on_end.push_back({x, State::Parameters, -static_cast<double>(lg.elems) * pb, true});
        if (!op.forward && grad_buffer) on_end.push_back({x, State::Gradients, static_cast<double>(lg.elems) * gb, true});
        if (stash_delta != 0) on_end.push_back({x, State::Parameters, stash_delta, false});
      }
      Compute c{kind, x, cost.seconds, cost.flops, layers ? lg.first_layer : -1, layers ? lg.layers : 0, op.microbatch,
                op.chunk, op.weight_version, part};
      TaskId id = add_single(c, s, x, Stream::Compute);
      g_.set_memory(id, {}, on_end);
      for (TaskId dep : preceding(lane, frontier_[lane])) g_.depend(dep, id);
      if (first_of_op) link_op_inputs(d, t, vstage, op.microbatch, op.forward, id);
      if (gather_of_group_.size() > static_cast<std::size_t>(t))
        for (TaskId gather : gather_of_group_[static_cast<std::size_t>(t)]) g_.depend(gather, id);
      // Double-buffered unsharded gradients (as DeepSpeed's reduce buckets): a backward waits until the buffer
      // filled two groups back has been reduce-scattered or copied out.
      const auto& window = grad_window_[lane];
      if (kind == TaskKind::Backward && grad_buffer && window.size() >= 2) g_.depend(window[window.size() - 2], id);
      before_compute_[lane] = frontier_[lane];
      frontier_[lane] = {id};
      compute_of_group_[lane] = id;
      if (closes) gather_window_[lane].push_back(id);
    }
  }
}

void Expander::tp_collective(int s, const StageOp& op, int g, int ops, bool hidden) {
  const auto& lg = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)][static_cast<std::size_t>(g)];
  if (ops == 0) return;
  add_tp_collective(s, op, g, e_.strategy.sp ? CollectiveOp::AllGather : CollectiveOp::AllReduce, ops * lg.layers, true,
                    hidden);
}

void Expander::vocab_collective(int s, const StageOp& op, int g, CollectiveOp kind, bool hidden) {
  add_tp_collective(s, op, g, kind, 1, false, hidden);
}

void Expander::add_tp_collective(int s, const StageOp& op, int g, CollectiveOp kind, int repeat, bool per_layer,
                                 bool hidden) {
  if (tp_ == 1 || e_.model.opaque()) return;
  const auto& chunk_groups = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)];
  const LayerGroup& lg = chunk_groups[static_cast<std::size_t>(g)];
  const bool first_group = op.forward ? g == 0 : g == static_cast<int>(chunk_groups.size()) - 1;
  // A hidden collective starts beside its compute, so it is first of the op when that compute was.
  const bool first_of_op = first_group && (hidden ? before_compute_.front().empty() : frontier_.front().empty());
  const std::int64_t x = e_.model.seq_len * e_.training.micro_batch * e_.model.hidden;
  for (int d = 0; d < dp_; ++d) {
    Collective c = tp_group_collective(d, s, kind, x, e_.training.activation_bytes());
    c.repeat = repeat;
    c.layer = per_layer ? lg.first_layer : -1;
    c.layers = per_layer ? lg.layers : 0;
    c.microbatch = op.microbatch;
    c.backward = !op.forward;
    TaskId id = add_collective(c, s);
    for (int t = 0; t < tp_; ++t) {
      std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
      for (TaskId dep : preceding(lane, hidden ? before_compute_[lane] : frontier_[lane])) g_.depend(dep, id);
      if (first_of_op) link_op_inputs(d, t, op.chunk * pp_ + s, op.microbatch, op.forward, id);
      if (hidden)
        frontier_[lane].push_back(id);
      else
        frontier_[lane] = {id};
    }
  }
}

std::vector<TaskId> Expander::send_boundary(int s, const StageOp& op) {
  std::vector<TaskId> sent(static_cast<std::size_t>(dp_ * tp_), kNoTask);
  const int vstage = op.chunk * pp_ + s;
  const int last_vstage = pp_ * v_ - 1;
  if ((op.forward && vstage == last_vstage) || (!op.forward && vstage == 0) || e_.model.opaque()) return sent;
  const int dst_v = op.forward ? vstage + 1 : vstage - 1;
  const std::int64_t x = e_.model.seq_len * e_.training.micro_batch * e_.model.hidden;
  const bool piece = e_.strategy.sp || scatter_gather_;
  const double bytes = static_cast<double>(piece ? shard_elems(x, tp_) : x) * e_.training.activation_bytes();
  for (int d = 0; d < dp_; ++d) {
    for (int t = 0; t < tp_; ++t) {
      const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
      P2P p{rank(d, t, s), rank(d, t, dst_v % pp_), bytes, CommClass::PpP2P, op.microbatch, op.chunk, !op.forward};
      TaskId id = add_single(p, s, p.src, Stream::PpSend);
      for (TaskId dep : frontier_[lane]) g_.depend(dep, id);
      link_boundary(d, t, dst_v, op.microbatch, op.forward, id, true);
      sent[lane] = id;
    }
  }
  return sent;
}

void Expander::link_boundary(int d, int t, int vstage, int mb, bool forward, TaskId task, bool is_producer) {
  Boundary& b = boundaries_[{d, t, vstage, mb, forward}];
  if (is_producer) {
    b.producer = task;
    for (TaskId c : b.consumers) g_.depend(task, c);
    for (TaskId p : b.posters) g_.depend(p, task);
    return;
  }
  b.consumers.push_back(task);
  if (b.producer != kNoTask) g_.depend(b.producer, task);
}

void Expander::post_boundary(const BoundaryKey& key, const std::vector<TaskId>& tail) {
  Boundary& b = boundaries_[key];
  if (b.producer != kNoTask)
    for (TaskId p : tail) g_.depend(p, b.producer);
  else
    b.posters.insert(b.posters.end(), tail.begin(), tail.end());
}

void Expander::link_op_inputs(int d, int t, int vstage, int mb, bool forward, TaskId task) {
  link_boundary(d, t, vstage, mb, forward, task, false);
  for (const BoundaryKey& key : call_recvs_[static_cast<std::size_t>(d * tp_ + t)])
    if (key != BoundaryKey{d, t, vstage, mb, forward})
      link_boundary(std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<4>(key), task, false);
}

bool Expander::has_input(int s, const PipeOp& op) const {
  const int vstage = op.chunk * pp_ + s;
  return op.kind == PipeOpKind::Forward ? vstage > 0 : vstage < pp_ * v_ - 1;
}

void Expander::receive_gather(int s, const PipeOp& op) {
  if (!has_input(s, op)) return;
  const int vstage = op.chunk * pp_ + s;
  const bool forward = op.kind == PipeOpKind::Forward;
  const std::int64_t x = e_.model.seq_len * e_.training.micro_batch * e_.model.hidden;
  for (int d = 0; d < dp_; ++d) {
    Collective c = tp_group_collective(d, s, CollectiveOp::AllGather, x, e_.training.activation_bytes());
    c.microbatch = op.microbatch;
    c.backward = !forward;
    TaskId id = add_collective(c, s);
    for (int t = 0; t < tp_; ++t) {
      const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
      link_boundary(d, t, vstage, op.microbatch, forward, id, false);
      for (TaskId dep : op_tail_[lane]) g_.depend(dep, id);
      op_tail_[lane].push_back(id);
    }
  }
}

// Megatron-LM exchanges after every op, except that the interleaved steady state runs a forward and the backward
// after it back to back and exchanges once for both (send_forward_backward_recv_forward_backward).
bool Expander::ends_call(const std::vector<PipeOp>& order, int i) const {
  const int n = static_cast<int>(order.size());
  int next = i + 1;
  while (next < n && order[static_cast<std::size_t>(next)].kind != PipeOpKind::Forward &&
         order[static_cast<std::size_t>(next)].kind != PipeOpKind::Backward)
    ++next;
  if (next == n) return true;
  return !(v_ > 1 && order[static_cast<std::size_t>(i)].kind == PipeOpKind::Forward &&
           order[static_cast<std::size_t>(next)].kind == PipeOpKind::Backward);
}

void Expander::p2p_call(int s, const std::vector<PipeOp>& order, int i, std::vector<StageOp>& unsent) {
  std::vector<std::vector<TaskId>> sends(static_cast<std::size_t>(dp_ * tp_));
  for (const StageOp& op : unsent) {
    std::vector<TaskId> ids = send_boundary(s, op);
    for (std::size_t lane = 0; lane < ids.size(); ++lane)
      if (ids[lane] != kNoTask) sends[lane].push_back(ids[lane]);
  }
  unsent.clear();
  post_receives(s, order, i + 1);
  // Blocking: what follows the exchange waits for its sends too.
  for (std::size_t lane = 0; lane < sends.size(); ++lane) op_tail_[lane].insert(op_tail_[lane].end(), sends[lane].begin(), sends[lane].end());
}

// The exchange posts the receives of the ops up to the next exchange once the device's tail is done; the first of
// those ops waits for all of them (and for their all-gathers with scatter-gather).
void Expander::post_receives(int s, const std::vector<PipeOp>& order, int first) {
  for (auto& keys : call_recvs_) keys.clear();
  const std::vector<std::vector<TaskId>> tail = op_tail_;
  for (int k = first; k < static_cast<int>(order.size()); ++k) {
    const PipeOp& op = order[static_cast<std::size_t>(k)];
    if (op.kind != PipeOpKind::Forward && op.kind != PipeOpKind::Backward) continue;
    if (has_input(s, op)) {
      const int vstage = op.chunk * pp_ + s;
      const bool forward = op.kind == PipeOpKind::Forward;
      for (int d = 0; d < dp_; ++d)
        for (int t = 0; t < tp_; ++t) {
          const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
          BoundaryKey key{d, t, vstage, op.microbatch, forward};
          post_boundary(key, tail[lane]);
          call_recvs_[lane].push_back(key);
        }
      if (scatter_gather_) receive_gather(s, op);
    }
    if (ends_call(order, k)) break;
  }
}

}  // namespace detail
}  // namespace placesim
