// expand(): how the placement's states move along the data-parallel axis — parameter gathers, gradient
// synchronisation, the optimizer step, offload transfers — and the memory they occupy.
#include <algorithm>

#include "strategies/expand/Expander.hpp"

namespace placesim::detail {

namespace {

std::int64_t sharded(const LayerGroup& g, int n) {
  std::int64_t sum = 0;
  for (auto u : g.units) sum += shard_elems(u, n);
  return sum;
}

}  // namespace

const DataCollective* Expander::planned(State state, DataWhen when) const {
  for (const DataCollective& dc : plan_)
    if (dc.state == state && dc.when == when) return &dc;
  return nullptr;
}

const DataCollective* Expander::param_gather(bool forward) const {
  if (op_regather_) return planned(State::Parameters, DataWhen::AfterBackward);
  if (!forward) return planned(State::Parameters, DataWhen::Backward);
  if (const DataCollective* dc = planned(State::Parameters, DataWhen::Forward)) return dc;
  return op_first_forward_ ? planned(State::Parameters, DataWhen::FirstForward) : nullptr;
}

const DataCollective* Expander::grad_reduce() const {
  if (const DataCollective* dc = planned(State::Gradients, DataWhen::Backward)) return dc;
  return op_last_backward_ ? planned(State::Gradients, DataWhen::LastBackward) : nullptr;
}

double Expander::held(State state, const LayerGroup& lg) const {
  return static_cast<double>(held_share(e_.strategy, state, lg.elems, sharded(lg, dp_) * dp_));
}

void Expander::gather_params(int s, const StageOp& op, int g) {
  const auto& pl = e_.strategy.placement;
  gather_of_group_.assign(static_cast<std::size_t>(dl_ * tp_), {});
  const DataCollective* gather = param_gather(op.forward);
  const bool fetch = pl.parameters == Mode::Offloaded;
  // The updated parameters' gathers launched at the step's start (param_gather_overlap) feed the first forward.
  if (op_first_forward_)
    for (std::size_t lane = 0; lane < gather_of_group_.size(); ++lane)
      if (auto it = param_sync_.find({lane, op.chunk, g}); it != param_sync_.end()) gather_of_group_[lane] = it->second;
  if (!gather && !fetch) return;
  const LayerGroup& lg = group_of(s, op, g);
  const double pb = e_.training.param_bytes();
  // FSDP2's prefetch: a unit's gather is issued once the compute `depth` + 1 units back has finished (depth 1, the
  // default: the unit computing and the next gathered, as FSDP limits them; 0: no overlap).
  const auto depth =
      static_cast<std::size_t>(op.forward ? e_.strategy.prefetch_forward : e_.strategy.prefetch_backward);
  auto limit = [&](int d, int t, TaskId task) {
    after_window(gather_window_[static_cast<std::size_t>(d * tp_ + t)], task, depth);
  };
  for (int t = 0; t < tp_; ++t) {
    // Offloaded parameters: every device fetches its shard of the unit over PCIe (the whole unit when dp = 1) into
    // the unit's buffer, and the data-parallel group all-gathers the rest.
    std::vector<TaskId> fetched(static_cast<std::size_t>(dp_), kNoTask);
    if (fetch) {
      for (int d = 0; d < dl_; ++d) {
        int x = rank(d, t, s);
        TaskId id = add_single(Offload{x, false, static_cast<double>(sharded(lg, dp_)) * pb, State::Parameters}, s, x,
                               Stream::H2D);
        g_.set_memory(id, {{x, State::Parameters, static_cast<double>(lg.elems) * pb, true}}, {});
        limit(d, t, id);
        fetched[static_cast<std::size_t>(d)] = id;
        gather_of_group_[static_cast<std::size_t>(d * tp_ + t)] = {id};
      }
    }
    if (!gather) continue;
    Collective c = data_collective(*gather, Stream::DpGather, lg, static_cast<int>(pb), op.microbatch);
    c.backward = !op.forward;
    for (const DataCoset& coset : add_data_collectives(c, gather->group, t, s)) {
      std::vector<MemDelta> on_start;
      for (int d : coset.members) {
        for (TaskId first : coset.tasks.first) {
          if (fetch)
            g_.depend(fetched[static_cast<std::size_t>(d)], first);
          else
            limit(d, t, first);
          // Resharded after the previous op's backward, the unit is gathered again by this op's own hooks: after
          // the previous op has ended, never beside it.
          if (op_regather_)
            for (TaskId dep : op_tail_[static_cast<std::size_t>(d * tp_ + t)]) g_.depend(dep, first);
        }
        if (!fetch) {
          on_start.push_back({rank(d, t, s), State::Parameters, static_cast<double>(lg.elems) * pb, true});
          order_gather(static_cast<std::size_t>(d * tp_ + t), task_of_member(coset.tasks.first, rank(d, t, s)),
                       task_of_member(coset.tasks.last, rank(d, t, s)), op.forward, depth);
        }
        gather_of_group_[static_cast<std::size_t>(d * tp_ + t)] = coset.tasks.last;
      }
      if (!on_start.empty()) set_member_memory(coset.tasks.first, on_start, true);
    }
  }
}

// FSDP's issue order on one communicator. The backward's pre-hook of unit u + depth prefetches unit u, after the
// post-hook of unit u + depth + 1 reduce-scattered that unit's gradients and before its own post-hook reduce-scatters
// unit u + depth's: RS(u + depth + 1), AG(u), RS(u + depth). A forward's gathers follow the last reduce-scatter of
// the ops before it (the next micro-batch's first gather waits for the previous micro-batch's last reduce-scatter).
void Expander::order_gather(std::size_t lane, TaskId gather_first, TaskId gather_last, bool forward,
                            std::size_t depth) {
  auto same_group = [&](TaskId a, TaskId b) {
    return std::get<Collective>(g_[a].body).group == std::get<Collective>(g_[b].body).group;
  };
  const auto& issued = op_reduces_[lane];
  const std::size_t n = forward ? 0 : issued.size();
  const IssuedReduce before = n >= depth + 1 ? issued[n - depth - 1] : reduce_before_op_[lane];
  if (before.last != kNoTask && same_group(before.last, gather_first)) g_.depend(before.last, gather_first);
  if (!forward && depth >= 1 && n >= depth && same_group(issued[n - depth].first, gather_last))
    g_.depend(gather_last, issued[n - depth].first);
}

void Expander::after_window(const std::vector<TaskId>& window, TaskId task, std::size_t ahead) {
  if (window.size() >= ahead + 1) g_.depend(window[window.size() - ahead - 1], task);
}

TaskId Expander::task_of_member(const std::vector<TaskId>& tasks, int device) const {
  for (TaskId id : tasks) {
    const auto& m = task_devices(g_, g_[id]);
    if (std::find(m.begin(), m.end(), device) != m.end()) return id;
  }
  return tasks.front();
}

int Expander::subgroup(std::vector<int> members) {
  auto [it, fresh] = subgroups_.try_emplace(members, 0);
  if (fresh) it->second = g_.add_group(std::move(members));
  return it->second;
}

void Expander::set_member_memory(const std::vector<TaskId>& tasks, const std::vector<MemDelta>& deltas, bool at_start) {
  for (TaskId id : tasks) {
    const auto& members = task_devices(g_, g_[id]);
    std::vector<MemDelta> mine;
    for (const MemDelta& m : deltas)
      if (std::find(members.begin(), members.end(), m.device) != members.end()) mine.push_back(m);
    if (!mine.empty())
      g_.set_memory(id, at_start ? mine : std::vector<MemDelta>{}, at_start ? std::vector<MemDelta>{} : mine);
  }
}

Expander::Phases Expander::add_dp_collective(Collective c, int stage) {
  const std::vector<int> members = g_.groups[static_cast<std::size_t>(c.group)];
  // Members by node, in ring order; hierarchical only when every node holds the same number (> 1) of them.
  std::vector<std::vector<int>> nodes;
  for (int x : members) {
    if (nodes.empty() || x / c_.gpus_per_node != nodes.back().front() / c_.gpus_per_node) nodes.emplace_back();
    nodes.back().push_back(x);
  }
  bool even = nodes.size() > 1 && nodes.front().size() > 1;
  for (const auto& n : nodes) even = even && n.size() == nodes.front().size();
  if (e_.strategy.collective != CollectiveScheme::Hierarchical || !even) {
    TaskId id = add_collective(c, stage);
    return {{id}, {id}};
  }
  const auto local = static_cast<std::int64_t>(nodes.front().size());
  auto phase = [&](CollectiveOp op, bool intra, std::int64_t elems, const std::vector<TaskId>& after) {
    std::vector<TaskId> out;
    std::size_t count = intra ? nodes.size() : static_cast<std::size_t>(local);
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<int> sub;
      if (intra)
        sub = nodes[i];
      else
        for (const auto& n : nodes) sub.push_back(n[i]);
      // A folded step expands only the sub-groups that hold one of its devices.
      if (std::none_of(sub.begin(), sub.end(), [&](int x) { return expanded(x); })) continue;
      Collective part = c;
      part.op = op;
      part.group = subgroup(std::move(sub));
      part.elems = elems;
      TaskId id = add_collective(part, stage);
      for (TaskId a : after) g_.depend(a, id);
      out.push_back(id);
    }
    return out;
  };
  // Elements are padded to a multiple of the whole group, so every phase's buffer divides evenly.
  const std::int64_t x = c.elems, shard = c.elems / local;
  if (c.op == CollectiveOp::AllReduce) {
    auto a = phase(CollectiveOp::ReduceScatter, true, x, {});
    auto b = phase(CollectiveOp::AllReduce, false, shard, a);
    return {a, phase(CollectiveOp::AllGather, true, x, b)};
  }
  if (c.op == CollectiveOp::ReduceScatter) {
    auto a = phase(CollectiveOp::ReduceScatter, true, x, {});
    return {a, phase(CollectiveOp::ReduceScatter, false, shard, a)};
  }
  auto a = phase(CollectiveOp::AllGather, false, shard, {});
  return {a, phase(CollectiveOp::AllGather, true, x, a)};
}

Collective Expander::data_collective(const DataCollective& dc, Stream stream, const LayerGroup& lg, int elem_bytes,
                                     int microbatch) const {
  Collective c;
  c.op = dc.op;
  c.cls = dc.cls;
  c.stream = stream;
  c.elems = sharded(lg, dp_) * dp_ / e_.strategy.degree(dc.divided);
  c.elem_bytes = elem_bytes;
  c.layer = lg.first_layer;
  c.layers = lg.layers;
  c.microbatch = microbatch;
  return c;
}

void Expander::sync_gradients(int s, const StageOp& op, int g, bool last_backward) {
  const auto& pl = e_.strategy.placement;
  const LayerGroup& lg = group_of(s, op, g);
  const double gb = e_.training.grad_bytes();
  const DataCollective* reduce = grad_reduce();
  const bool offloaded = pl.gradients == Mode::Offloaded;
  // Kept gathered for the step (gathers_once_per_step): the unit is resharded once its gradients are reduced.
  const bool reshard = reduce && reduce->when == DataWhen::LastBackward && e_.strategy.gathers_once_per_step() &&
                       holds_unit_buffer(e_.strategy, State::Parameters);
  // Sharded (or offloaded) gradients: reduce-scattered after every micro-batch into the owner's shard; per data
  // index, the task after which its shard is complete.
  std::vector<std::vector<TaskId>> produced(static_cast<std::size_t>(dp_ * tp_));
  for (int t = 0; t < tp_; ++t) {
    for (int d = 0; d < dl_; ++d)
      produced[static_cast<std::size_t>(d * tp_ + t)] = {compute_of_group_[static_cast<std::size_t>(d * tp_ + t)]};
    std::vector<DataCoset> cosets;
    if (reduce) {
      Collective c = data_collective(*reduce, Stream::DpComm, lg, static_cast<int>(gb), op.microbatch);
      c.backward = true;
      cosets = add_data_collectives(c, reduce->group, t, s);
    }
    for (const DataCoset& coset : cosets) {
      std::vector<MemDelta> on_end;
      for (int d : coset.members) {
        const auto lane = static_cast<std::size_t>(d * tp_ + t);
        for (TaskId first : coset.tasks.first) g_.depend(compute_of_group_[lane], first);
        produced[lane] = {task_of_member(coset.tasks.last, rank(d, t, s))};
        if (offloaded) continue;
        op_reduces_[lane].push_back({task_of_member(coset.tasks.first, rank(d, t, s)), produced[lane].front()});
        // The step's update reads the reduced shard: it waits for the last micro-batch's reduce-scatter of every
        // group (earlier ones precede it on the same stream).
        if (last_backward) step_end_deps_[static_cast<std::size_t>(rank(d, t, s))].push_back(produced[lane].front());
        on_end.push_back({rank(d, t, s), State::Gradients, -static_cast<double>(lg.elems) * gb, true});
        if (reshard)
          on_end.push_back(
              {rank(d, t, s), State::Parameters, -static_cast<double>(lg.elems) * e_.training.param_bytes(), true});
        grad_window_[lane].push_back(produced[lane].front());
      }
      set_member_memory(coset.tasks.last, on_end, false);
    }
    if (!offloaded) continue;
    for (int d = 0; d < dl_; ++d) {
      int x = rank(d, t, s);
      const auto lane = static_cast<std::size_t>(d * tp_ + t);
      TaskId id =
          add_single(Offload{x, true, static_cast<double>(sharded(lg, dp_)) * gb, State::Gradients}, s, x, Stream::D2H);
      g_.depend(produced[lane].front(), id);
      g_.set_memory(id, {}, {{x, State::Gradients, -static_cast<double>(lg.elems) * gb, true}});
      grad_window_[lane].push_back(id);
      step_end_deps_[static_cast<std::size_t>(x)].push_back(id);
    }
  }
  if (offloaded) return;
  // Gradients accumulated along some axes: bucketed after the step's last backward and synchronised once.
  if (!last_backward || !(planned(State::Gradients, DataWhen::Step))) return;
  for (int t = 0; t < tp_; ++t) {
    Bucket& b = buckets_[{t, s}];
    b.producers.resize(static_cast<std::size_t>(dp_));
    b.elems += sharded(lg, dp_) * dp_;
    for (int d = 0; d < dl_; ++d) {
      auto& mine = b.producers[static_cast<std::size_t>(d)];
      const auto& p = produced[static_cast<std::size_t>(d * tp_ + t)];
      mine.insert(mine.end(), p.begin(), p.end());
    }
    if (static_cast<double>(b.elems) * gb >= e_.strategy.bucket_bytes) flush_bucket(t, s);
  }
}

void Expander::flush_bucket(int t, int s) {
  auto it = buckets_.find({t, s});
  if (it == buckets_.end() || it->second.elems == 0) return;
  Bucket& b = it->second;
  // The step's synchronisation in plan order (reduce-scatter over the axes the optimizer is sharded along, then
  // all-reduce over the rest); each phase of a data index follows the previous phase of its group.
  std::vector<std::vector<TaskId>> before = b.producers;
  for (const DataCollective& dc : plan_) {
    if (dc.state != State::Gradients || dc.when != DataWhen::Step) continue;
    Collective c;
    c.op = dc.op;
    c.cls = dc.cls;
    c.stream = Stream::DpComm;
    c.elems = b.elems / e_.strategy.degree(dc.divided);
    c.elem_bytes = e_.training.grad_bytes();
    std::vector<std::vector<TaskId>> after(static_cast<std::size_t>(dp_));
    for (const DataCoset& coset : add_data_collectives(c, dc.group, t, s))
      for (int d : coset.members) {
        for (TaskId p : before[static_cast<std::size_t>(d)])
          for (TaskId first : coset.tasks.first) g_.depend(p, first);
        after[static_cast<std::size_t>(d)] = coset.tasks.last;
      }
    before = std::move(after);
  }
  for (int d = 0; d < dl_; ++d)
    for (TaskId last : before[static_cast<std::size_t>(d)])
      step_end_deps_[static_cast<std::size_t>(rank(d, t, s))].push_back(last);
  b = Bucket{};
}

TaskId Expander::add_pair_allreduce(int a, int b, CommClass cls, std::int64_t elems) {
  Collective c;
  c.op = CollectiveOp::AllReduce;
  c.cls = cls;
  c.stream = Stream::DpComm;
  c.group = g_.add_group({a, b});
  c.elems = elems;
  c.elem_bytes = e_.training.grad_bytes();
  return add_collective(c, -1);
}

void Expander::embedding_sync() {
  const StageLayout& first = layouts_.front();
  if (first.tied_copy_elems == 0 || pp_ == 1) return;
  for (int d = 0; d < dl_; ++d) {
    for (int t = 0; t < tp_; ++t) {
      int a = rank(d, t, 0), b = rank(d, t, pp_ - 1);
      TaskId id = add_pair_allreduce(a, b, CommClass::EmbeddingSync, shard_elems(first.tied_copy_elems, 2) * 2);
      for (int x : {a, b}) {
        if (first_backward_[static_cast<std::size_t>(x)] != kNoTask)
          g_.depend(first_backward_[static_cast<std::size_t>(x)], id);
        step_end_deps_[static_cast<std::size_t>(x)].push_back(id);
      }
    }
  }
}

// DualPipe's two copies of a stage's layers, on stages s and pp - 1 - s, each saw half the micro-batches: after the
// data-parallel synchronisation each device all-reduces what its optimizer updates with its mirror, so both copies
// step with the whole gradient (deepseek-ai/DualPipe examples/example_dualpipe.py sums them the same way).
void Expander::mirror_sync() {
  if (!bidirectional(e_.strategy.schedule)) return;
  for (int s = 0; s < pp_ / 2; ++s) {
    const std::int64_t elems = mirror_grad_elems(e_, layouts_[static_cast<std::size_t>(s)]);
    for (int d = 0; d < dl_; ++d)
      for (int t = 0; t < tp_; ++t) {
        const int a = rank(d, t, s), b = rank(d, t, pp_ - 1 - s);
        const TaskId id = add_pair_allreduce(a, b, CommClass::DpGradSync, elems);
        for (int x : {a, b}) {
          auto& deps = step_end_deps_[static_cast<std::size_t>(x)];
          for (TaskId dep : deps) g_.depend(dep, id);
          deps = {id};
        }
      }
  }
}

// Sequence parallelism leaves each TP rank the gradients of the replicated norms and row-parallel biases for its
// slice of the sequence only; Megatron-LM all-reduces them over the TP group, flattened into one buffer, after the
// backward and before the optimizer (allreduce_sequence_parallel_grads in megatron/training.py, 2022).
void Expander::sequence_parallel_grad_sync(int s) {
  if (!e_.strategy.sp || tp_ == 1 || e_.model.opaque()) return;
  const std::int64_t elems = sequence_parallel_grad_elems(e_, layouts_[static_cast<std::size_t>(s)]);
  for (int d = 0; d < dl_; ++d) {
    TaskId id = add_collective(tp_group_collective(d, s, CollectiveOp::AllReduce, elems, e_.training.grad_bytes()), s);
    for (int t = 0; t < tp_; ++t) {
      auto& deps = step_end_deps_[static_cast<std::size_t>(rank(d, t, s))];
      for (TaskId dep : deps) g_.depend(dep, id);
      deps.push_back(id);
    }
  }
}

void Expander::finish_step(int s) {
  if (!synchronous_) return;  // asynchronous schedules applied their updates inline
  const auto& pl = e_.strategy.placement;
  const StageCosts& k = costs_[static_cast<std::size_t>(s)];
  std::int64_t full = 0, shard = 0;
  for (const auto& chunk : groups_[static_cast<std::size_t>(s)])
    for (const auto& lg : chunk) {
      full += lg.elems;
      shard += sharded(lg, dp_);
    }
  const double pb = e_.training.param_bytes();
  std::vector<TaskId> updated_lanes(static_cast<std::size_t>(dl_ * tp_), kNoTask);
  for (int t = 0; t < tp_; ++t) {
    std::vector<TaskId> updated;
    for (int d = 0; d < dl_; ++d) {
      int x = rank(d, t, s);
      TaskId step;
      if (pl.optimizer == Mode::Offloaded) {
        double elems = static_cast<double>(dp_ > 1 ? shard : full);
        if (pl.gradients != Mode::Offloaded) {  // replicated/sharded device gradients move once, at the step's end
          TaskId d2h =
              add_single(Offload{x, true, elems * e_.training.grad_bytes(), State::Gradients}, s, x, Stream::D2H);
          for (TaskId dep : step_end_deps_[static_cast<std::size_t>(x)]) g_.depend(dep, d2h);
          step_end_deps_[static_cast<std::size_t>(x)] = {d2h};
        }
        step = add_single(HostCompute{x, elems * k.host_optimizer_s_per_elem, 16 * elems,
                                      apply_microbatch_[static_cast<std::size_t>(s)]},
                          s, x, Stream::Host);
        for (TaskId dep : step_end_deps_[static_cast<std::size_t>(x)]) g_.depend(dep, step);
        if (pl.parameters != Mode::Offloaded) {
          TaskId h2d = add_single(Offload{x, false, elems * pb, State::Parameters}, s, x, Stream::H2D);
          g_.depend(step, h2d);
          step = h2d;
        }
      } else {
        double elems = 0;
        for (const auto& chunk : groups_[static_cast<std::size_t>(s)])
          for (const auto& lg : chunk) elems += held(State::Optimizer, lg);
        elems += held_experts(s, State::Optimizer);
        step = add_single(Compute{TaskKind::Optimizer, x, elems * k.optimizer_s_per_elem, 0, -1, 0,
                                  apply_microbatch_[static_cast<std::size_t>(s)], -1, 0},
                          s, x, Stream::Compute);
        for (TaskId dep : step_end_deps_[static_cast<std::size_t>(x)]) g_.depend(dep, step);
      }
      updated.push_back(step);
      updated_lanes[static_cast<std::size_t>(d * tp_ + t)] = step;
    }
    // Replicated parameters updated shard by shard are gathered back (ZeRO-1/2, ZeRO-Offload), unless the next step's
    // forward gathers them (param_gather_overlap: issue_param_sync).
    const DataCollective* regather = planned(State::Parameters, DataWhen::AfterStep);
    if (!regather || e_.strategy.param_gather_overlap) continue;
    std::int64_t bucket = 0;
    auto issue = [&]() {
      for (const DataCoset& coset : add_data_collectives(regather_collective(*regather, bucket), regather->group, t, s))
        for (TaskId first : coset.tasks.first)
          for (int d : coset.members) g_.depend(updated[static_cast<std::size_t>(d)], first);
      bucket = 0;
    };
    for (const auto& chunk : groups_[static_cast<std::size_t>(s)])
      for (const auto& lg : chunk) {
        bucket += sharded(lg, dp_) * dp_;
        if (static_cast<double>(bucket) * pb >= e_.strategy.bucket_bytes) issue();
      }
    if (bucket > 0) issue();
  }
  // The experts' after-step gathers follow every lane's update (or the next step's forward gathers them).
  if (!e_.strategy.param_gather_overlap) expert_regather(s, updated_lanes);
}

// The all-gather of a bucket of `bucket` updated parameter elements (the plan's after-step entry `regather`).
Collective Expander::regather_collective(const DataCollective& regather, std::int64_t bucket) const {
  Collective c;
  c.op = regather.op;
  c.cls = regather.cls;
  c.stream = Stream::DpGather;
  c.elems = bucket / e_.strategy.degree(regather.divided);
  c.elem_bytes = e_.training.param_bytes();
  return c;
}

// Megatron-Core's --overlap-param-gather (distrib_optimizer.py step_with_ready_grads: "the first all-gather is launched
// asynchronously in the next optimizer.zero_grad() call and subsequent all-gathers are launched in the forward
// pre-hook"): in one step, the gathers of the step before's update run at the start, in the forward's bucket order,
// and a layer group's first forward waits for the bucket holding it (its first layer's pre-hook waits for its bucket;
// the buckets are consecutive layer groups, as the after-step gathers' of finish_step).
void Expander::issue_param_sync(int s) {
  param_sync_.clear();
  if (!e_.strategy.param_gather_overlap || !synchronous_) return;
  const DataCollective* regather = planned(State::Parameters, DataWhen::AfterStep);
  const double pb = e_.training.param_bytes();
  const auto& chunks = groups_[static_cast<std::size_t>(s)];
  std::vector<std::int64_t> bucket(static_cast<std::size_t>(tp_), 0);  // per tp rank: the bucket being filled
  std::vector<std::vector<std::pair<int, int>>> members(static_cast<std::size_t>(tp_));  // its (chunk, group)s
  auto issue = [&](int t) {
    const Collective c = regather_collective(*regather, bucket[static_cast<std::size_t>(t)]);
    for (const DataCoset& coset : add_data_collectives(c, regather->group, t, s))
      for (int d : coset.members) {
        const TaskId last = task_of_member(coset.tasks.last, rank(d, t, s));
        for (auto [chunk, g] : members[static_cast<std::size_t>(t)])
          param_sync_[{static_cast<std::size_t>(d * tp_ + t), chunk, g}].push_back(last);
      }
    bucket[static_cast<std::size_t>(t)] = 0;
    members[static_cast<std::size_t>(t)].clear();
  };
  // In the forward's order, so that each device's gathers queue as its forward needs them: a group's bucket when it
  // is full, then the group's experts (their own buckets, one per MoE layer).
  for (std::size_t chunk = 0; chunk < chunks.size(); ++chunk)
    for (std::size_t g = 0; g < chunks[chunk].size(); ++g) {
      for (int t = 0; regather && t < tp_; ++t) {
        bucket[static_cast<std::size_t>(t)] += sharded(chunks[chunk][g], dp_) * dp_;
        members[static_cast<std::size_t>(t)].emplace_back(static_cast<int>(chunk), static_cast<int>(g));
        if (static_cast<double>(bucket[static_cast<std::size_t>(t)]) * pb >= e_.strategy.bucket_bytes) issue(t);
      }
      if (moe_group(chunks[chunk][g])) issue_expert_param_sync(s, static_cast<int>(chunk), static_cast<int>(g));
    }
  for (int t = 0; regather && t < tp_; ++t)
    if (bucket[static_cast<std::size_t>(t)] > 0) issue(t);
}

void Expander::set_resident_memory() {
  const double pb = e_.training.param_bytes(), hpb = e_.training.held_param_bytes(), gb = e_.training.held_grad_bytes(),
               ob = e_.training.optimizer_bytes_per_param;
  // PipeDream-2BW double-buffers its weights for the whole run; hpZ's secondary shard is one copy whatever the
  // versions.
  const double copies = e_.strategy.schedule == Schedule::PipeDream2BW && pp_ > 1 ? 2 : 1;
  g_.resident.assign(static_cast<std::size_t>(g_.devices), {0, 0, 0, 0});
  for (int x = 0; x < g_.devices; ++x) {
    int s = x / (tp_ * dp_);
    auto& r = g_.resident[static_cast<std::size_t>(x)];
    for (const auto& chunk : groups_[static_cast<std::size_t>(s)])
      for (const auto& lg : chunk) {
        const double second = static_cast<double>(secondary_share(e_.strategy, sharded(lg, dp_) * dp_));
        r[static_cast<std::size_t>(State::Parameters)] += copies * held(State::Parameters, lg) * hpb + second * pb;
        r[static_cast<std::size_t>(State::Gradients)] += held(State::Gradients, lg) * gb;
        r[static_cast<std::size_t>(State::Optimizer)] += held(State::Optimizer, lg) * ob;
      }
    r[static_cast<std::size_t>(State::Parameters)] += copies * held_experts(s, State::Parameters) * hpb;
    r[static_cast<std::size_t>(State::Gradients)] += held_experts(s, State::Gradients) * gb;
    r[static_cast<std::size_t>(State::Optimizer)] += held_experts(s, State::Optimizer) * ob;
  }
}

}  // namespace placesim::detail
