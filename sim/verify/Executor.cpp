#include "sim/verify/Executor.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "sim/verify/TinyMlp.hpp"
#include "strategies/pipeline/PipelineEval.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/pipeline/PipelineTimeline.hpp"
#include "strategies/placement/DataPlan.hpp"

namespace placesim {

namespace tm = tiny_mlp;

ExecutorResult execute_async(const ExecutorSpec& spec);  // ExecutorAsync.cpp

namespace {

using Vec = std::vector<double>;

/// What one device (or its host) holds of one unit of a state: the unit padded to n atoms, one per data rank, and
/// which atoms are there. An atom that is not held reads as 0: the bytes are not on the device.
struct Store {
  Vec v;
  std::vector<char> held;
};

/// The data-parallel mesh of one stage: rank q and atom a both have coordinates (q mod dp_shard, q / dp_shard).
struct DataMesh {
  int ds = 1, dr = 1, n = 1;
  int padded = 0, atom = 0;  ///< a unit padded to a multiple of n, and its atoms
  bool match(int q, int a, AxisSet axes) const {
    if ((axes & kShardAxis) != 0 && q % ds != a % ds) return false;
    if ((axes & kReplicateAxis) != 0 && q / ds != a / ds) return false;
    return true;
  }
  /// The ranks that differ from q only along `axes`, in ring order.
  std::vector<int> group(int q, AxisSet axes) const {
    std::vector<int> out;
    for (int p = 0; p < n; ++p)
      if (match(q, p, kDataAxes & ~axes)) out.push_back(p);
    return out;
  }
  /// The atoms of q's buffer when the unit is already divided over `axes`.
  std::vector<int> atoms(int q, AxisSet axes) const {
    std::vector<int> out;
    for (int a = 0; a < n; ++a)
      if (match(q, a, axes)) out.push_back(a);
    return out;
  }
  Store empty() const {
    return {Vec(static_cast<std::size_t>(padded), 0.0), std::vector<char>(static_cast<std::size_t>(n), 0)};
  }
  Store whole(const double* unit) const {
    Store s = empty();
    std::copy(unit, unit + tm::kUnitElems, s.v.begin());
    std::fill(s.held.begin(), s.held.end(), 1);
    return s;
  }
  /// Elements a store occupies: a whole unit its elements, a shard its (padded) atoms.
  double elems(const Store& s) const {
    int held = 0;
    for (char h : s.held) held += h != 0 ? 1 : 0;
    return held == n ? tm::kUnitElems : static_cast<double>(held) * atom;
  }
  /// The values a device reads: absent atoms are zeros.
  Vec read(const Store& s) const {
    Vec out(static_cast<std::size_t>(padded), 0.0);
    for (int a = 0; a < n; ++a)
      if (s.held[static_cast<std::size_t>(a)] != 0)
        for (int k = a * atom; k < (a + 1) * atom; ++k)
          out[static_cast<std::size_t>(k)] = s.v[static_cast<std::size_t>(k)];
    return out;
  }
  void copy_atom(const Store& from, Store& to, int a) const {
    for (int k = a * atom; k < (a + 1) * atom; ++k)
      to.v[static_cast<std::size_t>(k)] = from.v[static_cast<std::size_t>(k)];
    to.held[static_cast<std::size_t>(a)] = from.held[static_cast<std::size_t>(a)];
  }
};

/// The atoms of the buffer whose coordinates along the group's axes are member j's: the chunk member j ends with.
std::vector<std::vector<int>> chunks_of(const DataMesh& m, const std::vector<int>& members,
                                        const std::vector<int>& buffer, AxisSet group) {
  std::vector<std::vector<int>> out(members.size());
  for (std::size_t j = 0; j < members.size(); ++j)
    for (int a : buffer)
      if (m.match(members[j], a, group)) out[j].push_back(a);
  return out;
}

/// Ring all-gather: member j starts with chunk j of src[j]; in step t it passes chunk (j - t) mod k to member j + 1.
/// out[j] may be src[j] (in place: a member's own chunk is never overwritten). Adds the elements each sends.
void ring_all_gather(const DataMesh& m, const std::vector<std::vector<int>>& chunk,
                     const std::vector<const Store*>& src, const std::vector<Store*>& out,
                     const std::vector<double*>& sent) {
  const int k = static_cast<int>(chunk.size());
  for (int j = 0; j < k; ++j)
    for (int a : chunk[static_cast<std::size_t>(j)])
      m.copy_atom(*src[static_cast<std::size_t>(j)], *out[static_cast<std::size_t>(j)], a);
  for (int t = 0; t < k - 1; ++t)
    for (int j = 0; j < k; ++j) {
      const auto& c = chunk[static_cast<std::size_t>(((j - t) % k + k) % k)];
      for (int a : c) m.copy_atom(*out[static_cast<std::size_t>(j)], *out[static_cast<std::size_t>((j + 1) % k)], a);
      *sent[static_cast<std::size_t>(j)] += static_cast<double>(c.size()) * m.atom;
    }
}

/// Ring reduce-scatter of the members' buffers (absent atoms count 0): in step t member j sends its partial sum of
/// chunk (j - t - 1) mod k to member j + 1, which adds its own; member j ends with the whole sum of chunk j, written
/// into out[j] (held); the rest of its buffer is freed.
void ring_reduce_scatter(const DataMesh& m, const std::vector<std::vector<int>>& chunk, const std::vector<Vec>& in,
                         const std::vector<Store*>& out, const std::vector<double*>& sent) {
  const int k = static_cast<int>(chunk.size());
  std::vector<Vec> part = in;
  for (int t = 0; t < k - 1; ++t)
    for (int j = 0; j < k; ++j) {
      const int r = (j + 1) % k;
      const auto& c = chunk[static_cast<std::size_t>(((j - t - 1) % k + k) % k)];
      for (int a : c)
        for (int e = a * m.atom; e < (a + 1) * m.atom; ++e)
          part[static_cast<std::size_t>(r)][static_cast<std::size_t>(e)] =
              part[static_cast<std::size_t>(j)][static_cast<std::size_t>(e)] +
              part[static_cast<std::size_t>(r)][static_cast<std::size_t>(e)];
      *sent[static_cast<std::size_t>(j)] += static_cast<double>(c.size()) * m.atom;
    }
  for (int j = 0; j < k; ++j) {
    Store& o = *out[static_cast<std::size_t>(j)];
    for (const auto& c : chunk)
      for (int a : c) o.held[static_cast<std::size_t>(a)] = 0;
    for (int a : chunk[static_cast<std::size_t>(j)]) {
      for (int e = a * m.atom; e < (a + 1) * m.atom; ++e)
        o.v[static_cast<std::size_t>(e)] = part[static_cast<std::size_t>(j)][static_cast<std::size_t>(e)];
      o.held[static_cast<std::size_t>(a)] = 1;
    }
  }
}

std::optional<DataCollective> plan_entry(const std::vector<DataCollective>& plan, State state, CollectiveOp op,
                                         DataWhen when) {
  for (const DataCollective& c : plan)
    if (c.state == state && c.op == op && c.when == when) return c;
  return std::nullopt;
}

bool materialized(const Placement& p, State s) {
  return p.mode(s, kShardAxis) == Mode::Materialized || p.mode(s, kReplicateAxis) == Mode::Materialized;
}
bool offloaded(const Placement& p, State s) {
  return p.mode(s, kShardAxis) == Mode::Offloaded;
}

/// One device of the mesh: its stores per global unit, the host's, and what it has in flight.
struct Device {
  std::map<int, Store> P, G, O, secondary, hostP, hostG, hostO, hostMaster;
  std::map<std::pair<int, int>, Vec> kept;      ///< (unit, micro-batch): gathered units kept for the backward
  std::map<std::pair<int, int>, Store> act;     ///< (unit, micro-batch): saved activations
  std::map<std::pair<int, int>, Vec> host_act;  ///< offloaded activations
  std::map<std::pair<int, int>, Vec> inbox_act, inbox_grad;  ///< (virtual stage, micro-batch): p2p receives
  std::map<int, Vec> loss_grad;                              ///< micro-batch: dL/dz of the last virtual stage
  ExecutedTraffic sent;
  std::array<double, 3> resident{};  ///< most elements held at once: parameters, gradients, optimizer
};

/// One device's training run, as a reference: SGD with momentum over all n x m micro-batches of each step.
struct Reference {
  std::vector<Vec> theta, momentum, gradient;  ///< per step, after it (gradient: the one it applied)
  double loss_first = 0, loss_last = 0;
};

Reference one_device(const ExecutorSpec& x, int n) {
  const int m = static_cast<int>(x.strategy.microbatches);
  Vec theta = tm::initial_parameters(x.layers, x.seed), mom(theta.size(), 0.0), g(theta.size());
  Reference r;
  for (int k = 0; k < x.steps; ++k) {
    Vec acc(theta.size(), 0.0);
    double loss = 0;
    for (int i = 0; i < m; ++i)
      for (int q = 0; q < n; ++q) {
        loss += tm::full_gradient(theta, x.layers, tm::sample(x.seed, 0, q, std::int64_t(k) * m + i), g);
        for (std::size_t e = 0; e < g.size(); ++e) acc[e] += g[e];
      }
    for (std::size_t e = 0; e < g.size(); ++e) {
      acc[e] /= static_cast<double>(n * m);
      mom[e] = x.momentum * mom[e] + acc[e];
      theta[e] -= x.step_size * mom[e];
    }
    if (k == 0) r.loss_first = loss / (n * m);
    r.loss_last = loss / (n * m);
    r.theta.push_back(theta);
    r.momentum.push_back(mom);
    r.gradient.push_back(acc);
  }
  return r;
}

class SyncRun {
 public:
  explicit SyncRun(const ExecutorSpec& x) : x_(x), s_(x.strategy), p_(x.strategy.placement) {
    mesh_.ds = static_cast<int>(s_.dp_shard);
    mesh_.dr = static_cast<int>(s_.dp_replicate);
    mesh_.n = mesh_.ds * mesh_.dr;
    mesh_.padded = (tm::kUnitElems + mesh_.n - 1) / mesh_.n * mesh_.n;
    mesh_.atom = mesh_.padded / mesh_.n;
    pp_ = static_cast<int>(s_.pp);
    chunks_ = static_cast<int>(chunks_per_stage(s_));
    per_vstage_ = x.layers / static_cast<int>(model_stages(s_));
    m_ = static_cast<int>(s_.microbatches);
    plan_ = data_plan(s_);
    theta0_ = tm::initial_parameters(x.layers, x.seed);
    ref_ = one_device(x, mesh_.n);
    devices_.assign(static_cast<std::size_t>(pp_), std::vector<Device>(static_cast<std::size_t>(mesh_.n)));
    stage_units_.resize(static_cast<std::size_t>(pp_));
    for (int u = 0; u < x.layers; ++u)
      for (int stage : stages_of_unit(u)) {
        stage_units_[static_cast<std::size_t>(stage)].push_back(u);
        for (int q = 0; q < mesh_.n; ++q) init_unit(dev(stage, q), q, u);
      }
    deviation_.assign(static_cast<std::size_t>(x.steps), {0, 0, 0});
  }

  ExecutorResult run() {
    const PipelineSchedule schedule = make_schedule(shape_of(s_, x_.steps), strategy_shape_fields());
    PipelineTimes times;
    times.backward_s = 2;
    if (splits_backward(s_.schedule)) times.weight_s = 1;
    const PipelineTimeline timeline = evaluate_pipeline(schedule, times);
    std::vector<int> applies(static_cast<std::size_t>(pp_), 0);
    int completed_steps = 0;
    const auto execute = [&](const PipeOp& op) {
      if (op.kind == PipeOpKind::Forward) forward(op);
      if (op.kind == PipeOpKind::Backward) backward(op);
      if (op.kind == PipeOpKind::Weight) weight(op);
      if (op.kind == PipeOpKind::Apply) {
        const int step = applies[static_cast<std::size_t>(op.stage)]++;
        sync_step_gradients(op.stage);
        if (bidirectional(s_.schedule)) {
          const int mirror = pp_ - 1 - op.stage;
          applies[static_cast<std::size_t>(mirror)]++;
          sync_step_gradients(mirror);
          mirror_sum(op.stage);
          update(mirror, step);
        }
        update(op.stage, step);
        const int done = *std::min_element(applies.begin(), applies.end());
        while (completed_steps < done) compare_step(completed_steps++);
      }
    };
    if (bidirectional(s_.schedule))
      run_when_ready(schedule, execute);
    else
      for (const OpId& id : completion_order(schedule, timeline))
        execute(schedule.order[static_cast<std::size_t>(id.stage)][static_cast<std::size_t>(id.index)]);
    ExecutorResult r;
    r.loss_first = ref_.loss_first;
    r.loss_last = ref_.loss_last;
    for (int k = 0; k < x_.steps; ++k)
      for (int st = 0; st < 3; ++st) {
        const double d = deviation_[static_cast<std::size_t>(k)][static_cast<std::size_t>(st)];
        r.max_deviation[static_cast<std::size_t>(st)] = std::max(r.max_deviation[static_cast<std::size_t>(st)], d);
        if (!r.diverged && !(d <= x_.tolerance)) {
          r.diverged = true;
          r.first_state = st;
          r.first_step = k + 1;
        }
      }
    for (int st = 0; st < pp_; ++st) {
      ExecutedTraffic most;
      for (const Device& d : devices_[static_cast<std::size_t>(st)]) {
        most.gather = std::max(most.gather, d.sent.gather / x_.steps);
        most.grad_sync = std::max(most.grad_sync, d.sent.grad_sync / x_.steps);
        most.h2d = std::max(most.h2d, d.sent.h2d / x_.steps);
        most.d2h = std::max(most.d2h, d.sent.d2h / x_.steps);
        most.activation_copies = std::max(most.activation_copies, d.sent.activation_copies / x_.steps);
        most.p2p = std::max(most.p2p, d.sent.p2p / x_.steps);
      }
      r.traffic.push_back(most);
      std::array<double, 3> held{};
      for (const Device& d : devices_[static_cast<std::size_t>(st)])
        for (std::size_t k = 0; k < 3; ++k) held[k] = std::max(held[k], d.resident[k]);
      r.resident.push_back(held);
    }
    return r;
  }

 private:
  Device& dev(int stage, int q) { return devices_[static_cast<std::size_t>(stage)][static_cast<std::size_t>(q)]; }
  /// The stages holding unit u: one, or under dualpipe two (one copy per direction, on stages s and pp - 1 - s).
  std::vector<int> stages_of_unit(int u) const {
    const int position = u / per_vstage_, stage = stage_of_virtual(s_.schedule, pp_, position);
    if (!bidirectional(s_.schedule)) return {stage};
    return {stage, stage_of_virtual(s_.schedule, pp_, position + pp_)};
  }
  int vstage_of(const PipeOp& op) const { return virtual_stage_of(s_.schedule, pp_, op.chunk, op.stage); }
  int stage_of_vstage(int v) const { return stage_of_virtual(s_.schedule, pp_, v); }
  /// The first unit of virtual stage v (its position in the model: each direction's copy under dualpipe).
  int first_unit(int v) const { return model_position(s_.schedule, pp_, v) * per_vstage_; }
  bool starts(int v) const { return starts_model(s_.schedule, pp_, v); }
  bool ends(int v) const { return ends_model(s_.schedule, pp_, pp_ * chunks_, v); }
  const double* theta0(int u) const { return theta0_.data() + static_cast<std::size_t>(u) * tm::kUnitElems; }
  const std::vector<int>& units_of_stage(int stage) const { return stage_units_[static_cast<std::size_t>(stage)]; }

  /// Each stage's ops in schedule order, each once its input has arrived, an Apply together with the mirror stage's
  /// (dualpipe: the copies' gradients are summed before either updates, so neither runs on before the other's).
  template <class Execute>
  void run_when_ready(const PipelineSchedule& schedule, Execute&& execute) {
    std::vector<std::size_t> next(static_cast<std::size_t>(pp_), 0);
    const auto pending = [&](int st) -> const PipeOp* {
      const auto& order = schedule.order[static_cast<std::size_t>(st)];
      return next[static_cast<std::size_t>(st)] < order.size() ? &order[next[static_cast<std::size_t>(st)]] : nullptr;
    };
    const auto ready = [&](const PipeOp& op) {
      const int v = vstage_of(op);
      const Device& d = dev(op.stage, 0);
      if (op.kind == PipeOpKind::Forward) return starts(v) || d.inbox_act.count({v, op.microbatch}) != 0;
      if (op.kind == PipeOpKind::Backward)
        return ends(v) ? d.loss_grad.count(op.microbatch) != 0 : d.inbox_grad.count({v, op.microbatch}) != 0;
      if (op.kind == PipeOpKind::Apply) {
        const PipeOp* other = pending(pp_ - 1 - op.stage);
        return other != nullptr && other->kind == PipeOpKind::Apply;
      }
      return true;
    };
    for (bool progressed = true; progressed;) {
      progressed = false;
      for (int st = 0; st < pp_; ++st)
        while (const PipeOp* op = pending(st)) {
          if (!ready(*op)) break;
          if (op->kind == PipeOpKind::Apply) ++next[static_cast<std::size_t>(pp_ - 1 - st)];
          ++next[static_cast<std::size_t>(st)];
          execute(*op);
          progressed = true;
        }
    }
    for (int st = 0; st < pp_; ++st)
      if (pending(st) != nullptr) throw std::logic_error("dualpipe's executor stalled on stage " + std::to_string(st));
  }

  /// dualpipe: after the step's data-parallel collectives, stage s's and its mirror's gradients of each unit, of the
  /// atoms each rank's optimizer updates, summed on both (an all-reduce of two ranks: each sends its atoms once).
  void mirror_sum(int stage) {
    const int mirror = pp_ - 1 - stage;
    for (int u : units_of_stage(stage))
      for (int q = 0; q < mesh_.n; ++q) {
        Store& a = dev(stage, q).G[u];
        Store& b = dev(mirror, q).G[u];
        const auto opt = dev(stage, q).O.find(u);  // none kept (materialized): every atom is updated
        for (int atom = 0; atom < mesh_.n; ++atom) {
          if (opt != dev(stage, q).O.end() && opt->second.held[static_cast<std::size_t>(atom)] == 0) continue;
          for (int e = atom * mesh_.atom; e < (atom + 1) * mesh_.atom; ++e) {
            const std::size_t k = static_cast<std::size_t>(e);
            a.v[k] = b.v[k] = a.v[k] + b.v[k];
          }
          dev(stage, q).sent.grad_sync += mesh_.atom;
          dev(mirror, q).sent.grad_sync += mesh_.atom;
        }
      }
  }

  void init_unit(Device& d, int q, int u) {
    Store whole = mesh_.whole(theta0(u));
    auto shard_of = [&](const Store& s, AxisSet axes) {
      Store out = mesh_.empty();
      for (int a : mesh_.atoms(q, axes)) mesh_.copy_atom(s, out, a);
      return out;
    };
    if (offloaded(p_, State::Parameters))
      d.hostP[u] = shard_of(whole, kDataAxes);
    else if (!materialized(p_, State::Parameters))
      d.P[u] = shard_of(whole, p_.sharded_axes(State::Parameters));
    Store zero = mesh_.empty();
    std::fill(zero.held.begin(), zero.held.end(), 1);
    if (offloaded(p_, State::Optimizer)) {
      d.hostO[u] = shard_of(zero, kDataAxes);
      if (!offloaded(p_, State::Parameters)) d.hostMaster[u] = shard_of(whole, kDataAxes);
    } else if (!materialized(p_, State::Optimizer)) {
      d.O[u] = shard_of(zero, p_.sharded_axes(State::Optimizer));
    }
    d.G[u] = mesh_.empty();
    d.hostG[u] = mesh_.empty();
  }

  /// The unit's parameters as each data rank of the stage computes with them, `when` = Forward or Backward.
  std::vector<Vec> parameters(int stage, int u, int mb, DataWhen when) {
    const int n = mesh_.n;
    std::vector<Vec> out(static_cast<std::size_t>(n));
    if (materialized(p_, State::Parameters)) {
      // Recomputed from the only checkpoint parameters have: their initial values.
      for (auto& v : out) v = mesh_.read(mesh_.whole(theta0(u)));
      return out;
    }
    // Kept across ops: for the step (gathers_once_per_step: gathered before the unit's first forward;
    // sync_step_gradients drops it), or until the next backward (regathers_after_backward: gathered at the chunk's
    // first op and again at each op after a backward, which drops it; the executor runs each stage's ops in schedule
    // order).
    for (DataWhen keep : {DataWhen::FirstForward, DataWhen::AfterBackward}) {
      if (when == keep || !plan_entry(plan_, State::Parameters, CollectiveOp::AllGather, keep)) continue;
      if (dev(stage, 0).kept.count({u, -1}) == 0) {
        const std::vector<Vec> gathered = parameters(stage, u, -1, keep);
        for (int q = 0; q < n; ++q) dev(stage, q).kept[{u, -1}] = gathered[static_cast<std::size_t>(q)];
      }
      for (int q = 0; q < n; ++q) {
        out[static_cast<std::size_t>(q)] = dev(stage, q).kept.at({u, -1});
        if (keep == DataWhen::AfterBackward && when == DataWhen::Backward) dev(stage, q).kept.erase({u, -1});
      }
      return out;
    }
    const auto fwd = plan_entry(plan_, State::Parameters, CollectiveOp::AllGather, DataWhen::Forward);
    const auto entry = plan_entry(plan_, State::Parameters, CollectiveOp::AllGather, when);
    if (when == DataWhen::Backward && !s_.reshard_after_forward && fwd) {
      for (int q = 0; q < n; ++q) {
        auto it = dev(stage, q).kept.find({u, mb});
        out[static_cast<std::size_t>(q)] = it->second;
        dev(stage, q).kept.erase(it);
      }
      return out;
    }
    std::vector<Store> src(static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) {
      Device& d = dev(stage, q);
      if (offloaded(p_, State::Parameters)) {
        // Each rank fetches its shard of the unit from the host first (ZeRO-Infinity).
        src[static_cast<std::size_t>(q)] = d.hostP[u];
        d.sent.h2d += mesh_.atom;
      } else if (when == DataWhen::Backward && p_.secondary) {
        src[static_cast<std::size_t>(q)] = d.secondary[u];
      } else {
        src[static_cast<std::size_t>(q)] = d.P[u];
      }
    }
    std::vector<Store> gathered = src;
    if (entry) {
      for (auto& g : gathered) g = mesh_.empty();
      parameter_gather(
          stage, *entry, [&](int p) { return &src[static_cast<std::size_t>(p)]; },
          [&](int p) { return &gathered[static_cast<std::size_t>(p)]; });
    }
    for (int q = 0; q < n; ++q) {
      Device& d = dev(stage, q);
      const Store& g = gathered[static_cast<std::size_t>(q)];
      if (when == DataWhen::Forward && p_.secondary) {
        // hpZ: the secondary shard over dp_shard, cut from the forward's gather.
        Store sec = mesh_.empty();
        for (int a : mesh_.atoms(q, kShardAxis)) mesh_.copy_atom(g, sec, a);
        d.secondary[u] = sec;
      }
      out[static_cast<std::size_t>(q)] = mesh_.read(g);
      if (when == DataWhen::Forward && !s_.reshard_after_forward && fwd)
        d.kept[{u, mb}] = out[static_cast<std::size_t>(q)];
    }
    return out;
  }

  /// Runs the all-gather `c` over every group of the stage's data ranks: member p's chunk comes from from(p), the
  /// gathered buffer goes to to(p) (it may be from(p)); the sends count as parameter gathers.
  void parameter_gather(int stage, const DataCollective& c, const std::function<const Store*(int)>& from,
                        const std::function<Store*(int)>& to) {
    std::vector<char> done(static_cast<std::size_t>(mesh_.n), 0);
    for (int q = 0; q < mesh_.n; ++q) {
      if (done[static_cast<std::size_t>(q)] != 0) continue;
      const std::vector<int> members = mesh_.group(q, c.group);
      std::vector<const Store*> sources;
      std::vector<Store*> targets;
      std::vector<double*> sent;
      for (int p : members) {
        done[static_cast<std::size_t>(p)] = 1;
        sources.push_back(from(p));
        targets.push_back(to(p));
        sent.push_back(&dev(stage, p).sent.gather);
      }
      ring_all_gather(mesh_, chunks_of(mesh_, members, mesh_.atoms(q, c.divided), c.group), sources, targets, sent);
    }
  }

  // Activations: an activation is padded to n atoms like a unit; a rank's own atom is the one with its index.
  int act_atom() const { return (tm::kActElems + mesh_.n - 1) / mesh_.n; }

  void save_activation(Device& d, int q, int u, int mb, const Vec& x, bool checkpoint) {
    const Mode a = p_.activations;
    if (a == Mode::Offloaded) {
      d.host_act[{u, mb}] = x;
      d.sent.activation_copies += tm::kActElems;
      return;
    }
    if (a == Mode::Materialized && !checkpoint) return;
    Store s{Vec(static_cast<std::size_t>(act_atom() * mesh_.n), 0.0),
            std::vector<char>(static_cast<std::size_t>(mesh_.n), 1)};
    std::copy(x.begin(), x.end(), s.v.begin());
    if (a == Mode::Sharded || a == Mode::ShardedWithGather) {
      // Only the rank's own atom of its activation stays.
      for (int k = 0; k < static_cast<int>(s.v.size()); ++k)
        if (k / act_atom() != q) s.v[static_cast<std::size_t>(k)] = 0;
      std::fill(s.held.begin(), s.held.end(), 0);
      s.held[static_cast<std::size_t>(q)] = 1;
    }
    d.act[{u, mb}] = s;
  }

  void forward(const PipeOp& op) {
    const int v = vstage_of(op), n = mesh_.n;
    std::vector<Vec> x(static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) {
      Device& d = dev(op.stage, q);
      if (starts(v)) {
        x[static_cast<std::size_t>(q)] = tm::sample(x_.seed, 0, q, op.microbatch).input;
      } else {
        auto it = d.inbox_act.find({v, op.microbatch});
        x[static_cast<std::size_t>(q)] = it->second;
        d.inbox_act.erase(it);
      }
    }
    for (int u = first_unit(v); u < first_unit(v) + per_vstage_; ++u) {
      const std::vector<Vec> w = parameters(op.stage, u, op.microbatch, DataWhen::Forward);
      for (int q = 0; q < n; ++q) {
        Vec& xq = x[static_cast<std::size_t>(q)];
        save_activation(dev(op.stage, q), q, u, op.microbatch, xq, u == first_unit(v));
        Vec z(tm::kActElems);
        tm::forward(w[static_cast<std::size_t>(q)], xq, u == x_.layers - 1, z);
        xq = z;
      }
    }
    const int next = !ends(v) ? stage_of_vstage(v + 1) : op.stage;
    for (int q = 0; q < n; ++q) {
      Device& d = dev(op.stage, q);
      if (ends(v)) {
        Vec dz(tm::kActElems);
        tm::loss_gradient(x[static_cast<std::size_t>(q)], tm::sample(x_.seed, 0, q, op.microbatch).target, dz);
        d.loss_grad[op.microbatch] = dz;
      } else {
        dev(next, q).inbox_act[{v + 1, op.microbatch}] = x[static_cast<std::size_t>(q)];
        if (next != op.stage) d.sent.p2p += tm::kActElems;  // a V's turn stays on the stage
      }
    }
  }

  /// The saved input of each unit of virtual stage v for micro-batch mb, on every data rank.
  std::vector<std::vector<Vec>> activations(int stage, int v, int mb, const std::vector<std::vector<Vec>>& w) {
    const int n = mesh_.n, first = first_unit(v);
    std::vector<std::vector<Vec>> in(static_cast<std::size_t>(per_vstage_),
                                     std::vector<Vec>(static_cast<std::size_t>(n)));
    for (int l = 0; l < per_vstage_; ++l) {
      const int u = first + l;
      for (int q = 0; q < n; ++q) {
        Device& d = dev(stage, q);
        Vec& out = in[static_cast<std::size_t>(l)][static_cast<std::size_t>(q)];
        switch (p_.activations) {
          case Mode::Offloaded: {
            auto it = d.host_act.find({u, mb});
            out = it->second;
            d.host_act.erase(it);
            d.sent.activation_copies += tm::kActElems;
            break;
          }
          case Mode::Materialized:
            if (l == 0) {
              out = Vec(d.act[{u, mb}].v.begin(), d.act[{u, mb}].v.begin() + tm::kActElems);
            } else {  // recomputed from the checkpoint with the backward's parameters
              out.assign(tm::kActElems, 0);
              tm::forward(w[static_cast<std::size_t>(l - 1)][static_cast<std::size_t>(q)],
                          in[static_cast<std::size_t>(l - 1)][static_cast<std::size_t>(q)], false, out);
            }
            break;
          case Mode::ShardedWithGather: {
            // The gather assembles every rank's atom: the others' atoms are of their own samples.
            Vec all(static_cast<std::size_t>(act_atom() * n), 0.0);
            for (int p = 0; p < n; ++p) {
              const Store& s = dev(stage, p).act[{u, mb}];
              for (int k = p * act_atom(); k < (p + 1) * act_atom(); ++k)
                all[static_cast<std::size_t>(k)] = s.v[static_cast<std::size_t>(k)];
            }
            out = Vec(all.begin(), all.begin() + tm::kActElems);
            break;
          }
          default:  // replicated, or sharded: what the device kept (absent atoms are zeros)
            out = Vec(d.act[{u, mb}].v.begin(), d.act[{u, mb}].v.begin() + tm::kActElems);
        }
      }
    }
    for (int l = 0; l < per_vstage_; ++l)
      for (int q = 0; q < n; ++q) dev(stage, q).act.erase({first + l, mb});
    return in;
  }

  void backward(const PipeOp& op) {
    const int v = vstage_of(op), n = mesh_.n, first = first_unit(v);
    std::vector<Vec> dz(static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) {
      Device& d = dev(op.stage, q);
      if (ends(v)) {
        dz[static_cast<std::size_t>(q)] = d.loss_grad[op.microbatch];
        d.loss_grad.erase(op.microbatch);
      } else {
        auto it = d.inbox_grad.find({v, op.microbatch});
        dz[static_cast<std::size_t>(q)] = it->second;
        d.inbox_grad.erase(it);
      }
    }
    std::vector<std::vector<Vec>> w(static_cast<std::size_t>(per_vstage_));
    for (int l = per_vstage_ - 1; l >= 0; --l)
      w[static_cast<std::size_t>(l)] = parameters(op.stage, first + l, op.microbatch, DataWhen::Backward);
    const auto in = activations(op.stage, v, op.microbatch, w);
    for (int l = per_vstage_ - 1; l >= 0; --l) {
      const int u = first + l;
      std::vector<Vec> grad(static_cast<std::size_t>(n), Vec(static_cast<std::size_t>(mesh_.padded), 0.0));
      for (int q = 0; q < n; ++q) {
        Vec dx(tm::kActElems);
        tm::backward(w[static_cast<std::size_t>(l)][static_cast<std::size_t>(q)],
                     in[static_cast<std::size_t>(l)][static_cast<std::size_t>(q)], dz[static_cast<std::size_t>(q)],
                     u == x_.layers - 1, std::span<double>(grad[static_cast<std::size_t>(q)]).first(tm::kUnitElems),
                     dx);
        dz[static_cast<std::size_t>(q)] = dx;
      }
      // A split backward (zero-bubble schedules) computes the input gradient now and leaves the weight gradient
      // to its W op, which accumulates it later.
      if (op.split)
        deferred_[{op.stage, op.microbatch, op.chunk}].emplace_back(u, std::move(grad));
      else
        accumulate(op.stage, u, grad);
    }
    const int previous = !starts(v) ? stage_of_vstage(v - 1) : op.stage;
    if (!starts(v))
      for (int q = 0; q < n; ++q) {
        dev(previous, q).inbox_grad[{v - 1, op.microbatch}] = dz[static_cast<std::size_t>(q)];
        if (previous != op.stage) dev(op.stage, q).sent.p2p += tm::kActElems;
      }
  }

  /// The W op of a split backward: the weight gradients its B op computed, accumulated now, in the B op's unit order.
  void weight(const PipeOp& op) {
    auto it = deferred_.find({op.stage, op.microbatch, op.chunk});
    if (it == deferred_.end()) throw std::logic_error("a weight-gradient op without its input-gradient op");
    for (const auto& [u, grad] : it->second) accumulate(op.stage, u, grad);
    deferred_.erase(it);
  }

  /// Runs the group collective `c` of every group of the stage over each rank's gradient store of unit u.
  void gradient_collective(int stage, const DataCollective& c, const std::vector<Vec>& in,
                           const std::function<Store&(int)>& store) {
    std::vector<char> done(static_cast<std::size_t>(mesh_.n), 0);
    for (int q = 0; q < mesh_.n; ++q) {
      if (done[static_cast<std::size_t>(q)] != 0) continue;
      const std::vector<int> members = mesh_.group(q, c.group);
      const auto chunk = chunks_of(mesh_, members, mesh_.atoms(q, c.divided), c.group);
      std::vector<Vec> values;
      std::vector<Store*> out;
      std::vector<double*> sent;
      for (int p : members) {
        done[static_cast<std::size_t>(p)] = 1;
        values.push_back(in[static_cast<std::size_t>(p)]);
        out.push_back(&store(p));
        sent.push_back(&dev(stage, p).sent.grad_sync);
      }
      ring_reduce_scatter(mesh_, chunk, values, out, sent);
      if (c.op == CollectiveOp::AllReduce) {
        std::vector<const Store*> from(out.begin(), out.end());
        ring_all_gather(mesh_, chunk, from, out, sent);
      }
    }
  }

  /// A unit's fresh gradient of one micro-batch on every rank: reduce-scattered when the placement says so, then
  /// accumulated (a materialized gradient is not kept: it is replaced) on the device or, offloaded, on the host.
  void accumulate(int stage, int u, const std::vector<Vec>& grad) {
    const int n = mesh_.n;
    std::vector<Store> fresh(static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) {
      fresh[static_cast<std::size_t>(q)] = mesh_.empty();
      fresh[static_cast<std::size_t>(q)].v = grad[static_cast<std::size_t>(q)];
      std::fill(fresh[static_cast<std::size_t>(q)].held.begin(), fresh[static_cast<std::size_t>(q)].held.end(), 1);
    }
    if (auto rs = plan_entry(plan_, State::Gradients, CollectiveOp::ReduceScatter, DataWhen::Backward))
      gradient_collective(stage, *rs, grad, [&](int p) -> Store& { return fresh[static_cast<std::size_t>(p)]; });
    const bool off = offloaded(p_, State::Gradients), replace = materialized(p_, State::Gradients);
    for (int q = 0; q < n; ++q) {
      Device& d = dev(stage, q);
      Store& target = off ? d.hostG[u] : d.G[u];
      const Store& f = fresh[static_cast<std::size_t>(q)];
      for (int a = 0; a < n; ++a) {
        if (f.held[static_cast<std::size_t>(a)] == 0) continue;
        if (off) d.sent.d2h += mesh_.atom;
        for (int e = a * mesh_.atom; e < (a + 1) * mesh_.atom; ++e) {
          const std::size_t k = static_cast<std::size_t>(e);
          target.v[k] = replace || target.held[static_cast<std::size_t>(a)] == 0 ? f.v[k] : target.v[k] + f.v[k];
        }
        target.held[static_cast<std::size_t>(a)] = 1;
      }
      if (!off) {
        double held = 0;
        for (int v : units_of_stage(stage)) held += mesh_.elems(d.G[v]);
        d.resident[1] = std::max(d.resident[1], held);
      }
    }
  }

  void record_gradient(int step, int u, int e, double g) {
    if (e >= tm::kUnitElems) return;
    double& worst = deviation_[static_cast<std::size_t>(step)][0];
    worst = std::max(
        worst,
        std::abs(g - ref_.gradient[static_cast<std::size_t>(step)][static_cast<std::size_t>(u * tm::kUnitElems + e)]));
    if (std::isnan(g)) worst = INFINITY;
  }

  /// 1. The step's gradient collectives of each unit of the stage, in the plan's order.
  void sync_step_gradients(int stage) {
    const int n = mesh_.n;
    for (int u : units_of_stage(stage)) {
      // Kept for the step, the unit is resharded now; its accumulated gradients are reduce-scattered first
      // (LastBackward, before the Step collectives in plan order).
      for (int q = 0; q < n; ++q) dev(stage, q).kept.erase({u, -1});
      for (const DataCollective& c : plan_) {
        if (c.state != State::Gradients || (c.when != DataWhen::Step && c.when != DataWhen::LastBackward)) continue;
        std::vector<Vec> in;
        for (int q = 0; q < n; ++q) in.push_back(mesh_.read(dev(stage, q).G[u]));
        gradient_collective(stage, c, in, [&](int p) -> Store& { return dev(stage, p).G[u]; });
      }
    }
  }

  /// 2. and 3. The optimizer of each unit of the stage, on the device or on the host, and the updated parameters'
  /// all-gather.
  void update(int stage, int step) {
    const int n = mesh_.n;
    const double count = static_cast<double>(n) * m_;
    for (int u : units_of_stage(stage)) {
      // 2. The optimizer, on the device or on the host.
      for (int q = 0; q < n; ++q) {
        Device& d = dev(stage, q);
        if (offloaded(p_, State::Optimizer)) {
          const Store& g = offloaded(p_, State::Gradients) ? d.hostG[u] : d.G[u];
          if (!offloaded(p_, State::Gradients)) d.sent.d2h += mesh_.atom;
          Store& mom = d.hostO[u];
          Store& master = offloaded(p_, State::Parameters) ? d.hostP[u] : d.hostMaster[u];
          for (int e = q * mesh_.atom; e < (q + 1) * mesh_.atom; ++e) {
            const std::size_t k = static_cast<std::size_t>(e);
            const double gk = (g.held[static_cast<std::size_t>(q)] != 0 ? g.v[k] : 0) / count;
            record_gradient(step, u, e, gk);
            mom.v[k] = x_.momentum * mom.v[k] + gk;
            master.v[k] -= x_.step_size * mom.v[k];
          }
          if (!offloaded(p_, State::Parameters) && !materialized(p_, State::Parameters)) {
            mesh_.copy_atom(master, d.P[u], q);  // the updated shard back to the device
            d.sent.h2d += mesh_.atom;
          }
          continue;
        }
        Store fresh_momentum = mesh_.empty();
        std::fill(fresh_momentum.held.begin(), fresh_momentum.held.end(), 1);
        Store& mom = materialized(p_, State::Optimizer) ? fresh_momentum : d.O[u];
        const Store& g = d.G[u];
        const bool has_params = d.P.count(u) != 0;
        for (int a = 0; a < n; ++a) {
          if (mom.held[static_cast<std::size_t>(a)] == 0) continue;
          for (int e = a * mesh_.atom; e < (a + 1) * mesh_.atom; ++e) {
            const std::size_t k = static_cast<std::size_t>(e);
            const double gk = (g.held[static_cast<std::size_t>(a)] != 0 ? g.v[k] : 0) / count;
            record_gradient(step, u, e, gk);
            mom.v[k] = x_.momentum * mom.v[k] + gk;
            if (has_params && d.P[u].held[static_cast<std::size_t>(a)] != 0) d.P[u].v[k] -= x_.step_size * mom.v[k];
          }
        }
      }
      // 3. The updated parameters' all-gather.
      if (auto c = plan_entry(plan_, State::Parameters, CollectiveOp::AllGather, DataWhen::AfterStep)) {
        // Materialized parameters have no store: the gather moves nothing a device holds.
        for (int q = 0; q < n; ++q)
          if (dev(stage, q).P.count(u) == 0) dev(stage, q).P[u] = mesh_.empty();
        parameter_gather(
            stage, *c, [&](int p) { return &dev(stage, p).P[u]; }, [&](int p) { return &dev(stage, p).P[u]; });
      }
      for (int q = 0; q < n; ++q) {
        dev(stage, q).G[u] = mesh_.empty();
        dev(stage, q).hostG[u] = mesh_.empty();
      }
    }
  }

  /// After step k: every copy of the parameters and of the optimizer state against one device's.
  void compare_step(int k) {
    for (int st = 0; st < pp_; ++st)
      for (Device& d : devices_[static_cast<std::size_t>(st)]) {
        double params = 0, opt = 0;
        for (const auto& [u, store] : d.P) params += mesh_.elems(store);
        for (const auto& [u, store] : d.secondary) params += mesh_.elems(store);
        for (const auto& [u, store] : d.O) opt += mesh_.elems(store);
        d.resident[0] = std::max(d.resident[0], params);
        d.resident[2] = std::max(d.resident[2], opt);
      }
    for (int u = 0; u < x_.layers; ++u)
      for (int stage : stages_of_unit(u)) compare_unit(k, u, stage);
  }

  /// Step k's parameters and optimizer state of unit u on every device of the stage against one device's.
  void compare_unit(int k, int u, int stage) {
    auto& dv = deviation_[static_cast<std::size_t>(k)];
    auto worst = [](double& w, double a, double b) { w = std::isnan(a) ? INFINITY : std::max(w, std::abs(a - b)); };
    {
      for (int e = 0; e < tm::kUnitElems; ++e) {
        const std::size_t at = static_cast<std::size_t>(u * tm::kUnitElems + e);
        const int a = e / mesh_.atom;
        bool any_p = false, any_o = false;
        for (int q = 0; q < mesh_.n; ++q) {
          Device& d = dev(stage, q);
          for (const auto* stores : {&d.P, &d.hostP, &d.hostMaster})
            if (auto it = stores->find(u); it != stores->end() && it->second.held[static_cast<std::size_t>(a)] != 0) {
              worst(dv[2], it->second.v[static_cast<std::size_t>(e)], ref_.theta[static_cast<std::size_t>(k)][at]);
              any_p = true;
            }
          for (const auto* stores : {&d.O, &d.hostO})
            if (auto it = stores->find(u); it != stores->end() && it->second.held[static_cast<std::size_t>(a)] != 0) {
              worst(dv[1], it->second.v[static_cast<std::size_t>(e)], ref_.momentum[static_cast<std::size_t>(k)][at]);
              any_o = true;
            }
        }
        // Held by nobody: recomputed, which parameters and optimizer state can only be from their initial values.
        if (!any_p) worst(dv[2], theta0_[at], ref_.theta[static_cast<std::size_t>(k)][at]);
        if (!any_o) worst(dv[1], 0.0, ref_.momentum[static_cast<std::size_t>(k)][at]);
      }
    }
  }

  ExecutorSpec x_;
  StrategySpec s_;
  Placement p_;
  DataMesh mesh_;
  int pp_ = 1, chunks_ = 1, per_vstage_ = 1, m_ = 1;
  std::vector<DataCollective> plan_;
  Vec theta0_;
  Reference ref_;
  std::vector<std::vector<Device>> devices_;
  std::vector<std::vector<int>> stage_units_;  ///< per stage, the units it holds, ascending
  std::vector<std::array<double, 3>> deviation_;
  /// (stage, micro-batch, chunk) -> the weight gradients of a split backward, per unit, until its W op.
  std::map<std::tuple<int, int, int>, std::vector<std::pair<int, std::vector<Vec>>>> deferred_;
};

}  // namespace

ExecutorResult execute_placement(const ExecutorSpec& spec) {
  const StrategySpec& s = spec.strategy;
  auto refuse = [](const std::string& why) {
    throw InputError("the numeric executor cannot run this strategy: " + why);
  };
  if (s.tp != 1 || s.cp != 1 || s.ep != 1)
    refuse(
        "strategy.tp, strategy.cp and strategy.ep must be 1 (the miniature places states along dp_shard, "
        "dp_replicate and pp)");
  const std::int64_t vstages = model_stages(s);
  if (spec.layers < 1 || spec.layers % vstages != 0)
    refuse("layers=" + std::to_string(spec.layers) + " is not a multiple of the " + std::to_string(vstages) +
           " virtual stages");
  for (State st : {State::Parameters, State::Gradients, State::Optimizer})
    if ((s.placement.mode(st, kShardAxis) == Mode::Offloaded) !=
        (s.placement.mode(st, kReplicateAxis) == Mode::Offloaded))
      refuse(to_string(st) +
             " offloaded along one data axis only has no host layout (rule offload-whole: the host "
             "holds one shard per data-parallel rank, cut along both axes)");
  if (s.schedule == Schedule::PipeDream || s.schedule == Schedule::PipeDream2BW || s.schedule == Schedule::LocalSGD) {
    if (s.dp_shard * s.dp_replicate != 1)
      refuse("an asynchronous schedule (" + to_string(s.schedule) + ") runs on one data-parallel rank here");
    for (State st : {State::Parameters, State::Gradients, State::Optimizer})
      if (materialized(s.placement, st))
        refuse(to_string(st) + " materialized under an asynchronous schedule (no weight version to recompute from)");
    return execute_async(spec);
  }
  return SyncRun(spec).run();
}

}  // namespace placesim
