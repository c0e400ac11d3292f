// The numeric executor under an asynchronous schedule (PipeDream, PipeDream-2BW, LocalSGD) on one data-parallel
// rank: each stage holds its layers of every replica, reads the version its algorithm prescribes (the newest; 2BW's
// double buffer), stashes it for the backward (weight stashing) and backpropagates with it. The run is compared with
// the stale-SGD replay of the schedule's UpdateLog (what the pipeline report's delays describe) and with one device
// (plain mini-batch SGD over the same micro-batches); its delays are counted from the versions it actually read.
#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <stdexcept>
#include <string>

#include "sim/converge/StaleSgd.hpp"
#include "sim/converge/UpdateDelays.hpp"
#include "sim/verify/Executor.hpp"
#include "sim/verify/TinyMlp.hpp"
#include "strategies/pipeline/PipelineEval.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/pipeline/PipelineTimeline.hpp"

namespace placesim {

namespace tm = tiny_mlp;

namespace {

using Vec = std::vector<double>;

/// One device: plain mini-batch SGD over the same micro-batches (a step of M, their mean gradient per update, every
/// micro-batch the sample the pipeline gave it), as a synchronous schedule trains.
Vec one_device(const ExecutorSpec& x, int replicas) {
  const int m = static_cast<int>(x.strategy.microbatches);
  Vec theta = tm::initial_parameters(x.layers, x.seed), g(theta.size());
  for (int k = 0; k < x.steps; ++k) {
    Vec sum(theta.size(), 0.0);
    for (int i = k * m; i < (k + 1) * m; ++i) {
      tm::full_gradient(theta, x.layers, tm::sample(x.seed, i % replicas, 0, i), g);
      for (std::size_t c = 0; c < g.size(); ++c) sum[c] += g[c];
    }
    for (std::size_t c = 0; c < theta.size(); ++c) theta[c] = theta[c] - x.step_size * (sum[c] / m);
  }
  return theta;
}

std::vector<Vec> replay(const UpdateLog& log, const ExecutorSpec& x, const TinyMlpObjective& objective) {
  ConvergenceSpec spec;
  spec.step_size = x.step_size;
  spec.sample_every = 1 << 30;
  const ConvergenceResult r = run_convergence(log, spec, objective);
  std::vector<Vec> out;
  for (const Vec& offset : r.final_weights) {
    Vec theta = objective.initial();
    for (std::size_t k = 0; k < theta.size(); ++k) theta[k] += offset[k];
    out.push_back(theta);
  }
  return out;
}

double max_gap(const std::vector<Vec>& a, const std::vector<Vec>& b) {
  double worst = 0;
  for (std::size_t r = 0; r < a.size(); ++r)
    for (std::size_t k = 0; k < a[r].size(); ++k) {
      const double d = std::abs(a[r][k] - b[r][k]);
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
  return worst;
}

/// Unit u's parameters within a stage's (or the whole model's) flat vector.
std::span<double> unit(Vec& v, int u) {
  return std::span<double>(v).subspan(static_cast<std::size_t>(u) * tm::kUnitElems, tm::kUnitElems);
}

/// One data-parallel rank running an asynchronous schedule, op by op in completion order. Per replica: the current
/// weights (stage s touches only its units), gradient sums and their counts per stage; per (replica, stage) every
/// version of its block (a forward may read an older one under 2BW). The run's own weight updates are kept as an
/// UpdateLog: backwards with the versions their forwards actually read.
class AsyncRank {
 public:
  AsyncRank(const ExecutorSpec& x, int replicas)
      : x_(x),
        pp_(static_cast<int>(x.strategy.pp)),
        per_stage_(x.layers / pp_),
        replicas_(replicas),
        m_(static_cast<int>(x.strategy.microbatches)) {
    const Vec theta0 = tm::initial_parameters(x.layers, x.seed);
    weights_.assign(static_cast<std::size_t>(replicas_), theta0);
    sums_.assign(static_cast<std::size_t>(replicas_), Vec(theta0.size(), 0.0));
    pending_.assign(static_cast<std::size_t>(replicas_), std::vector<int>(static_cast<std::size_t>(pp_), 0));
    for (int r = 0; r < replicas_; ++r)
      for (int st = 0; st < pp_; ++st) versions_[{r, st}].push_back(block(theta0, st));
    executed_.stages = pp_;
    executed_.replicas = replicas_;
  }

  /// Runs `op`, which completed at `time_s`, adding its pipeline sends to `sent`.
  void run(const PipeOp& op, double time_s, ExecutedTraffic& sent) {
    if (op.kind == PipeOpKind::Forward) {
      forward(op, sent);
    } else if (op.kind == PipeOpKind::Backward) {
      backward(op, time_s, sent);
    } else if (op.kind == PipeOpKind::Apply) {
      apply(op, time_s);
    } else {
      average(op.stage, time_s);
    }
  }

  const std::vector<Vec>& weights() const { return weights_; }
  const UpdateLog& executed() const { return executed_; }

 private:
  Vec block(const Vec& w, int st) const {
    return Vec(w.begin() + st * per_stage_ * tm::kUnitElems, w.begin() + (st + 1) * per_stage_ * tm::kUnitElems);
  }

  void forward(const PipeOp& op, ExecutedTraffic& sent) {
    const int st = op.stage, i = op.microbatch, first = st * per_stage_;
    const tm::Sample sample = tm::sample(x_.seed, op.replica, 0, i);
    Vec in = st == 0 ? sample.input : inbox_act_[{st, i}];
    inbox_act_.erase({st, i});
    // The version the forward reads: the stage's newest, except that PipeDream-2BW's forwards of mini-batch t read
    // W(t - 1), its double buffer (Narayanan et al., arXiv 2006.09503, §3.1). The schedule's own assignment is a
    // cross-check, not an input.
    const auto& mine = versions_[{op.replica, st}];
    const int newest = static_cast<int>(mine.size()) - 1;
    const int read =
        x_.strategy.schedule == Schedule::PipeDream2BW ? std::min(newest, std::max(0, i / m_ - 1)) : newest;
    if (read != op.weight_version)
      throw std::logic_error("executor: stage " + std::to_string(st) + " read version " + std::to_string(read) +
                             " where the schedule says " + std::to_string(op.weight_version));
    read_versions_[i].resize(static_cast<std::size_t>(pp_), 0);
    read_versions_[i][static_cast<std::size_t>(st)] = read;
    Vec& w = stash_[{st, i}];
    w = mine.at(static_cast<std::size_t>(read));
    for (int u = first; u < first + per_stage_; ++u) {
      act_[{u, i}] = in;
      Vec z(tm::kActElems);
      tm::forward(unit(w, u - first), in, u == x_.layers - 1, z);
      in = z;
    }
    if (st == pp_ - 1) {
      Vec dz(tm::kActElems);
      tm::loss_gradient(in, sample.target, dz);
      loss_grad_[{st, i}] = dz;
    } else {
      inbox_act_[{st + 1, i}] = in;
      sent.p2p += tm::kActElems;
    }
  }

  void backward(const PipeOp& op, double time_s, ExecutedTraffic& sent) {
    const int st = op.stage, i = op.microbatch, first = st * per_stage_;
    Vec dz = st == pp_ - 1 ? loss_grad_[{st, i}] : inbox_grad_[{st, i}];
    loss_grad_.erase({st, i});
    inbox_grad_.erase({st, i});
    Vec& w = stash_[{st, i}];
    Vec& sum = sums_[static_cast<std::size_t>(op.replica)];
    for (int u = first + per_stage_ - 1; u >= first; --u) {
      Vec g(tm::kUnitElems), dx(tm::kActElems);
      tm::backward(unit(w, u - first), act_[{u, i}], dz, u == x_.layers - 1, g, dx);
      act_.erase({u, i});
      for (int k = 0; k < tm::kUnitElems; ++k)
        unit(sum, u)[static_cast<std::size_t>(k)] += g[static_cast<std::size_t>(k)];
      dz = dx;
    }
    stash_.erase({st, i});
    ++pending_[static_cast<std::size_t>(op.replica)][static_cast<std::size_t>(st)];
    executed_.events.push_back({TrainEvent::Kind::Backward, st, op.replica, i, time_s, read_versions_[i]});
    if (st > 0) {
      inbox_grad_[{st - 1, i}] = dz;
      sent.p2p += tm::kActElems;
    }
  }

  void apply(const PipeOp& op, double time_s) {
    const int st = op.stage, first = st * per_stage_;
    Vec& w = weights_[static_cast<std::size_t>(op.replica)];
    Vec& sum = sums_[static_cast<std::size_t>(op.replica)];
    const double count = pending_[static_cast<std::size_t>(op.replica)][static_cast<std::size_t>(st)];
    for (int k = first * tm::kUnitElems; k < (first + per_stage_) * tm::kUnitElems; ++k) {
      w[static_cast<std::size_t>(k)] =
          w[static_cast<std::size_t>(k)] - x_.step_size * (sum[static_cast<std::size_t>(k)] / count);
      sum[static_cast<std::size_t>(k)] = 0;
    }
    pending_[static_cast<std::size_t>(op.replica)][static_cast<std::size_t>(st)] = 0;
    versions_[{op.replica, st}].push_back(block(w, st));
    executed_.events.push_back({TrainEvent::Kind::Apply, st, op.replica, -1, time_s, {}});
  }

  /// The stage's block of every replica becomes their mean, summed in replica order; the newest version of each is
  /// overwritten in place.
  void average(int st, double time_s) {
    const int first = st * per_stage_;
    for (int k = first * tm::kUnitElems; k < (first + per_stage_) * tm::kUnitElems; ++k) {
      double total = 0;
      for (const Vec& w : weights_) total += w[static_cast<std::size_t>(k)];
      for (Vec& w : weights_) w[static_cast<std::size_t>(k)] = total / replicas_;
    }
    for (int r = 0; r < replicas_; ++r) versions_[{r, st}].back() = block(weights_[static_cast<std::size_t>(r)], st);
    executed_.events.push_back({TrainEvent::Kind::Average, st, 0, -1, time_s, {}});
  }

  const ExecutorSpec& x_;
  const int pp_, per_stage_, replicas_, m_;
  std::vector<Vec> weights_, sums_;
  std::vector<std::vector<int>> pending_;
  std::map<std::pair<int, int>, std::vector<Vec>> versions_;
  std::map<std::pair<int, int>, Vec> stash_, inbox_act_, inbox_grad_, loss_grad_;  // (stage, micro-batch)
  std::map<std::pair<int, int>, Vec> act_;                                         // (unit, micro-batch)
  std::map<int, std::vector<int>> read_versions_;  // micro-batch -> version read per stage
  UpdateLog executed_;
};

/// Compares the run's final weights with the stale replay of the schedule's UpdateLog (the delays the pipeline report
/// describes) and with one device's plain mini-batch SGD.
void compare_with_references(const ExecutorSpec& x, const UpdateLog& log, const std::vector<Vec>& weights, int replicas,
                             ExecutorResult& result) {
  const TinyMlpObjective objective(x.layers, x.seed);
  result.stale_replay_deviation = max_gap(weights, replay(log, x, objective));
  result.max_deviation[2] = max_gap(weights, std::vector<Vec>(weights.size(), one_device(x, replicas)));
  result.diverged = !(result.max_deviation[2] <= x.tolerance);
  if (result.diverged) {
    result.first_state = 2;
    result.first_step = x.steps;  // compared at the end of the run
  }
}

/// The delays of the run's own reads, counted as the pipeline report counts them.
void record_delays(const UpdateLog& executed, ExecutorResult& result) {
  int last = -1;
  for (const TrainEvent& e : executed.events)
    if (e.kind == TrainEvent::Kind::Backward) last = std::max(last, e.microbatch);
  const UpdateDelays delays = update_delays(executed, (last + 1) / 2);
  result.max_delay = delays.steady.max;
  result.mean_delay = delays.steady.mean;
}

}  // namespace

ExecutorResult execute_async(const ExecutorSpec& x) {
  const PipelineSchedule schedule = make_schedule(shape_of(x.strategy, x.steps), strategy_shape_fields());
  PipelineTimes times;
  times.backward_s = 2;
  const PipelineTimeline timeline = evaluate_pipeline(schedule, times);
  const UpdateLog log = update_log(schedule, timeline);
  const int replicas = schedule.shape.replicas;
  AsyncRank rank(x, replicas);
  ExecutorResult result;
  result.asynchronous = true;
  result.traffic.assign(static_cast<std::size_t>(x.strategy.pp), {});
  for (const OpId& id : completion_order(schedule, timeline)) {
    const PipeOp& op = schedule.order[static_cast<std::size_t>(id.stage)][static_cast<std::size_t>(id.index)];
    const double time_s = timeline[static_cast<std::size_t>(id.stage)][static_cast<std::size_t>(id.index)].end_s;
    rank.run(op, time_s, result.traffic[static_cast<std::size_t>(op.stage)]);
  }
  for (auto& t : result.traffic) t.p2p /= x.steps;
  compare_with_references(x, log, rank.weights(), replicas, result);
  record_delays(rank.executed(), result);
  return result;
}

}  // namespace placesim
