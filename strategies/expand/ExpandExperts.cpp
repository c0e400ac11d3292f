// Mixture of experts: the routed experts of an MoE layer between two all-to-alls, and their step collectives.
#include "strategies/expand/Expander.hpp"

namespace placesim::detail {

int Expander::ep_group(int s, int first_lane) {
  auto [it, fresh] = ep_groups_.try_emplace({s, first_lane}, 0);
  if (fresh) {
    // Lanes are the stage's local ranks (lane = d x tp + t): an ep group is ep consecutive ones, member j holding
    // experts j x experts/ep onward.
    std::vector<int> members;
    for (int j = 0; j < ep_; ++j) members.push_back(rank((first_lane + j) / tp_, (first_lane + j) % tp_, s));
    it->second = g_.add_group(std::move(members));
  }
  return it->second;
}

TaskId Expander::ep_alltoall(int s, const StageOp& op, const LayerGroup& lg, int first_lane, bool combine,
                             bool backward) {
  Collective c;
  c.op = CollectiveOp::AllToAll;
  c.cls = CommClass::EpAllToAll;
  c.stream = Stream::EpComm;
  c.group = ep_group(s, first_lane);
  c.elems = e_.model.hidden;  // per token
  c.elem_bytes = e_.training.activation_bytes();
  c.layer = lg.first_layer;
  c.layers = 1;
  c.microbatch = op.microbatch;
  c.backward = backward;
  c.split = dispatch_split_;
  c.combine = combine;
  return add_collective(c, s);
}

// Megatron-Core's alltoall token dispatcher (megatron/core/transformer/moe/token_dispatcher.py): the dispatch sends
// each token to the ranks of its top_k experts, the experts run, the combine returns the outputs; the backward sends
// the combine's gradient the way of the dispatch and the dispatch's gradient the way of the combine. The step waits
// for the slowest rank of the group at the second all-to-all. Per ep group of the stage: the first all-to-all, the
// experts, the second (ExpertPhase::All), or only one of them for every ep group (a DualPipe pair interleaves them
// with the other op's).
void Expander::expert_block(int s, const StageOp& op, int g, TaskKind kind, ExpertPhase phase) {
  const int lanes = dl_ * tp_;
  if (expert_in_.empty()) {
    expert_in_.assign(static_cast<std::size_t>(lanes / ep_), kNoTask);
    expert_computes_.assign(static_cast<std::size_t>(lanes / ep_), {});
  }
  const auto& chunk_groups = groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)];
  const bool first_group = op.forward ? g == 0 : g == static_cast<int>(chunk_groups.size()) - 1;
  const bool first_of_op = first_group && frontier_.front().empty();
  for (int first = 0; first < lanes; first += ep_) {
    const auto e = static_cast<std::size_t>(first / ep_);
    if (phase == ExpertPhase::All || phase == ExpertPhase::In)
      expert_in_[e] = expert_dispatch(s, op, g, first, first_of_op);
    if (phase == ExpertPhase::All || phase == ExpertPhase::Compute)
      expert_computes_[e] = expert_compute(s, op, g, kind, first, expert_in_[e]);
    if (phase == ExpertPhase::All || phase == ExpertPhase::Out) {
      const TaskId out = ep_alltoall(s, op, group_of(s, op, g), first, true, !op.forward);
      for (TaskId id : expert_computes_[e]) g_.depend(id, out);
      for (int j = 0; j < ep_; ++j) {
        const auto lane = static_cast<std::size_t>(first + j);
        before_compute_[lane] = frontier_[lane];
        frontier_[lane] = {out};
      }
    }
  }
}

TaskId Expander::expert_dispatch(int s, const StageOp& op, int g, int first, bool first_of_op) {
  const int vstage = virtual_stage(op.chunk, s);
  const TaskId in = ep_alltoall(s, op, group_of(s, op, g), first, false, !op.forward);
  for (int j = 0; j < ep_; ++j) {
    const auto lane = static_cast<std::size_t>(first + j);
    for (TaskId dep : preceding(lane, frontier_[lane])) g_.depend(dep, in);
    if (first_of_op) link_op_inputs((first + j) / tp_, (first + j) % tp_, vstage, op.microbatch, op.forward, in);
  }
  return in;
}

std::vector<TaskId> Expander::expert_compute(int s, const StageOp& op, int g, TaskKind kind, int first, TaskId in) {
  const LayerGroup& lg = group_of(s, op, g);
  const StageCosts& k = costs_[static_cast<std::size_t>(s)];
  const bool backward = kind == TaskKind::Backward;
  std::vector<TaskId> computes;
  for (int j = 0; j < ep_; ++j) {
    const int lane = first + j;
    const int x = rank(lane / tp_, lane % tp_, s);
    const auto r = static_cast<std::size_t>(j);
    // A split backward's B leaves the weight-gradient GEMMs (and their FLOPs) to its W (expert_weights).
    const double seconds = backward && op.split          ? k.expert_backward_s[r] - k.expert_weight_s[r]
                           : backward                    ? k.expert_backward_s[r]
                           : kind == TaskKind::Recompute ? k.expert_recompute_s[r]
                                                         : k.expert_forward_s[r];
    const double flops = k.expert_forward_flops[r] * (backward && !op.split ? 2 : 1);
    Compute c{
        kind, x, seconds, flops, lg.first_layer, 1, op.microbatch, op.chunk, op.weight_version, ModelPart::Experts};
    const TaskId id = add_single(c, s, x, Stream::Compute);
    g_.depend(in, id);
    computes.push_back(id);
    if (backward && !op.split) expert_last_[static_cast<std::size_t>(s)][static_cast<std::size_t>(lane)] = id;
    if (backward && !op.split && op_last_backward_)
      expert_ready_[{s, static_cast<std::size_t>(lane), op.chunk, g}] = id;
  }
  return computes;
}

// The W op of a split backward on an MoE layer: each rank's experts' weight-gradient GEMMs, on its own tokens (no
// all-to-all: the B op brought the output gradients), after the op's frontier.
void Expander::expert_weights(int s, const StageOp& op, int g) {
  const LayerGroup& lg = group_of(s, op, g);
  const StageCosts& k = costs_[static_cast<std::size_t>(s)];
  for_each_lane(s, [&](std::size_t lane, int x) {
    const std::size_t r = lane % static_cast<std::size_t>(ep_);
    Compute c{TaskKind::WeightGrad, x,        k.expert_weight_s[r], k.expert_forward_flops[r], lg.first_layer, 1,
              op.microbatch,        op.chunk, op.weight_version,    ModelPart::Experts};
    const TaskId id = add_single(c, s, x, Stream::Compute);
    for (TaskId dep : preceding(lane, frontier_[lane])) g_.depend(dep, id);
    frontier_[lane] = {id};
    expert_last_[static_cast<std::size_t>(s)][lane] = id;
    expert_ready_[{s, lane, op.chunk, g}] = id;  // the W ops run in order: the chunk's last one stays
  });
}

int Expander::edp_group(int s, int j) {
  auto [it, fresh] = edp_groups_.try_emplace({s, j}, 0);
  if (fresh) {
    std::vector<int> members;
    for (int lane = j; lane < dp_ * tp_; lane += ep_) members.push_back(rank(lane / tp_, lane % tp_, s));
    it->second = g_.add_group(std::move(members));
  }
  return it->second;
}

double Expander::held_experts(int s, State state) const {
  const StageLayout& st = layouts_[static_cast<std::size_t>(s)];
  if (st.moe_layers == 0) return 0;
  return static_cast<double>(
      held_share(expert_view(e_.strategy), state, st.expert_total(), st.expert_padded(e_.strategy.edp())));
}

// A collective of the experts' plan entry `dc` over expert-data-parallel group j of stage s, on a buffer of `padded`
// elements (divided as the entry says).
Collective Expander::expert_collective(const DataCollective& dc, int s, int j, std::int64_t padded, Stream stream,
                                       int elem_bytes) {
  Collective c;
  c.op = dc.op;
  c.cls = CommClass::ExpertDataSync;
  c.stream = stream;
  c.group = edp_group(s, j);
  c.elems = padded / expert_view(e_.strategy).degree(dc.divided);
  c.elem_bytes = elem_bytes;
  return c;
}

// The experts' gradients, synchronised once per step over each expert-data-parallel group (the stage's lanes that
// hold the same experts: lane % ep alike) in expert_plan order, bucket by bucket as the dense gradients: MoE layers
// fill a bucket of bucket_bytes in the backward's order, reduced once the last backward of each of its layers is done
// (Megatron-Core core_v0.14.0 distributed_data_parallel.py: the experts' own buffers, expert_parallel_bucket_groups,
// take the same backward post-hook, register_grad_ready, as the dense ones). Each bucket follows the one before.
void Expander::expert_grads_ready(int s, int chunk, int g) {
  const StageLayout& st = layouts_[static_cast<std::size_t>(s)];
  if (e_.strategy.edp() < 2) return;  // nothing to synchronise
  for (int j = 0; j < ep_; ++j) {
    ExpertBucket& b = expert_buckets_[{s, j}];
    for (int lane = j; lane < dl_ * tp_; lane += ep_) {
      const auto it = expert_ready_.find({s, static_cast<std::size_t>(lane), chunk, g});
      b.ready.push_back(it != expert_ready_.end()
                            ? it->second
                            : expert_last_[static_cast<std::size_t>(s)][static_cast<std::size_t>(lane)]);
    }
    b.elems += st.expert_layer_padded(e_.strategy.edp());
    if (static_cast<double>(b.elems) * e_.training.grad_bytes() >= e_.strategy.bucket_bytes) reduce_expert_bucket(s, j);
  }
}

void Expander::reduce_expert_bucket(int s, int j) {
  ExpertBucket& b = expert_buckets_[{s, j}];
  if (b.elems == 0) return;
  std::vector<TaskId> before = b.before;
  for (TaskId dep : b.ready) before.push_back(dep);
  for (const DataCollective& dc : expert_plan(e_.strategy)) {
    if (dc.state != State::Gradients || dc.when != DataWhen::Step) continue;
    const TaskId id = add_collective(expert_collective(dc, s, j, b.elems, Stream::DpComm, e_.training.grad_bytes()), s);
    for (TaskId dep : before)
      if (dep != kNoTask) g_.depend(dep, id);
    before = {id};
  }
  for (int lane = j; lane < dl_ * tp_; lane += ep_)
    for (TaskId dep : before)
      if (dep != kNoTask) step_end_deps_[static_cast<std::size_t>(rank(lane / tp_, lane % tp_, s))].push_back(dep);
  b = ExpertBucket{0, {}, before};
}

// What is left in the experts' buckets once the stage's ops are expanded.
void Expander::expert_step_sync(int s) {
  for (int j = 0; j < ep_; ++j) reduce_expert_bucket(s, j);
}

// The experts' updated shards of one MoE layer group under param_gather_overlap: gathered at the step's start (in
// the forward's order, issue_param_sync), before the group's first forward. The after-step gather of expert_regather
// in one bucket per MoE layer: the same bytes.
void Expander::issue_expert_param_sync(int s, int chunk, int g) {
  const StageLayout& st = layouts_[static_cast<std::size_t>(s)];
  for (const DataCollective& dc : expert_plan(e_.strategy)) {
    if (dc.when != DataWhen::AfterStep) continue;
    for (int j = 0; j < ep_; ++j) {
      const TaskId id = add_collective(expert_collective(dc, s, j, st.expert_layer_padded(e_.strategy.edp()),
                                                         Stream::DpGather, e_.training.param_bytes()),
                                       s);
      for (int lane = j; lane < dl_ * tp_; lane += ep_)
        param_sync_[{static_cast<std::size_t>(lane), chunk, g}].push_back(id);
    }
  }
}

// ZeRO-1 for the experts: the updated shards are all-gathered over the expert-data-parallel group after the step.
void Expander::expert_regather(int s, const std::vector<TaskId>& updated) {
  const StageLayout& st = layouts_[static_cast<std::size_t>(s)];
  if (st.moe_layers == 0) return;
  for (const DataCollective& dc : expert_plan(e_.strategy)) {
    if (dc.when != DataWhen::AfterStep) continue;
    for (int j = 0; j < ep_; ++j) {
      const TaskId id = add_collective(
          expert_collective(dc, s, j, st.expert_padded(e_.strategy.edp()), Stream::DpGather, e_.training.param_bytes()),
          s);
      for (int lane = j; lane < dl_ * tp_; lane += ep_) g_.depend(updated[static_cast<std::size_t>(lane)], id);
    }
  }
}

}  // namespace placesim::detail
