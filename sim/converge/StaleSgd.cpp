#include "sim/converge/StaleSgd.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <stdexcept>

#include "sim/converge/UpdatePlan.hpp"
#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

/// The versions of one block of one replica that some event may still read, oldest first; the last is current.
class VersionStore {
 public:
  explicit VersionStore(std::vector<double> initial) { versions_.push_back(std::move(initial)); }

  const std::vector<double>& at(std::int64_t version) const {
    if (version < oldest_ || version > newest_version())
      throw std::logic_error("stale SGD: version " + std::to_string(version) + " was released too early");
    return versions_[static_cast<std::size_t>(version - oldest_)];
  }
  std::vector<double>& newest() { return versions_.back(); }
  const std::vector<double>& newest() const { return versions_.back(); }
  std::int64_t newest_version() const { return oldest_ + static_cast<std::int64_t>(versions_.size()) - 1; }
  int held() const { return static_cast<int>(versions_.size()); }
  void push(std::vector<double> block) { versions_.push_back(std::move(block)); }

  /// Drops the oldest versions, except the newest, whose last reader is at or before event `now`.
  void release(std::int64_t now, const std::vector<std::int64_t>& last_reader) {
    while (versions_.size() > 1 && last_reader[static_cast<std::size_t>(oldest_)] <= now) {
      versions_.pop_front();
      ++oldest_;
    }
  }

 private:
  std::deque<std::vector<double>> versions_;
  std::int64_t oldest_ = 0;
};

// A loss 10^12 times the initial one (or than 1) is treated as divergence: going on to overflow would only cost time.
constexpr double kBlowUp = 1e12;

class Executor {
 public:
  Executor(const UpdateLog& trace, const ConvergenceSpec& spec, const Objective& objective, UpdatePlan plan);
  ConvergenceResult run();

 private:
  // The backwards of one micro-batch on its S stages normally read the same versions: the model-dependent part of
  // its gradient (MicrobatchState) is computed by the first and reused by the others, until all S have run.
  struct InFlight {
    std::vector<int> versions;
    std::vector<double> model;  // the mixed model those versions make
    MicrobatchState state;
    int remaining = 0;
  };

  int slot(int replica, int stage) const { return replica * stages_ + stage; }
  void backward(const TrainEvent& e, std::int64_t k);
  const InFlight& in_flight(const TrainEvent& e);
  void apply(const TrainEvent& e, std::int64_t k);
  void average(const TrainEvent& e);
  void assemble_current(int replica, std::vector<double>& out) const;
  bool sample(double time_s);

  const UpdateLog& trace_;
  const Objective& objective_;
  UpdatePlan plan_;
  BlockSplit split_;
  int stages_, replicas_;
  double step_;
  std::vector<VersionStore> stores_;                            // slot(r, t)
  std::vector<std::vector<double>> accumulated_;                // slot(r, s): sum of gradients since the last Apply
  std::vector<int> pending_;                                    // slot(r, s): how many
  std::map<std::pair<int, std::int64_t>, InFlight> in_flight_;  // (replica, micro-batch)
  std::vector<double> model_, mean_, gradient_;
  double blow_up_ = 0;  // a loss beyond this has diverged
  ConvergenceResult result_;
};

std::int64_t resolve_sample_every(std::int64_t requested, const UpdatePlan& plan, int full_model) {
  if (requested > 0) return requested;
  std::int64_t full_updates = (plan.applies + full_model - 1) / full_model;
  return full_model * std::max<std::int64_t>(1, (full_updates + 127) / 128);
}

Executor::Executor(const UpdateLog& trace, const ConvergenceSpec& spec, const Objective& objective, UpdatePlan plan)
    : trace_(trace),
      objective_(objective),
      plan_(std::move(plan)),
      split_(objective.dimension(), trace.stages),
      stages_(trace.stages),
      replicas_(trace.replicas),
      step_(spec.step_size),
      model_(objective.dimension()),
      mean_(objective.dimension()),
      gradient_(objective.dimension()) {
  for (int r = 0; r < replicas_; ++r) {
    for (int s = 0; s < stages_; ++s) {
      stores_.emplace_back(std::vector<double>(split_.size(s), 0.0));
      accumulated_.emplace_back(split_.size(s), 0.0);
      pending_.push_back(0);
    }
  }
  result_.objective = objective.name();
  result_.dimension = objective.dimension();
  result_.stages = stages_;
  result_.replicas = replicas_;
  result_.step_size = step_;
  result_.sample_every = resolve_sample_every(spec.sample_every, plan_, stages_ * replicas_);
  result_.peak_versions.assign(stages_, 1);
}

// The mixed model and state of an earlier backward of the same micro-batch at the same versions, or new ones.
const Executor::InFlight& Executor::in_flight(const TrainEvent& e) {
  InFlight& entry = in_flight_[{e.replica, e.microbatch}];
  if (entry.remaining > 0 && entry.versions == e.versions_read) return entry;
  entry.versions = e.versions_read;
  entry.model.resize(split_.dimension());
  for (int t = 0; t < stages_; ++t) {
    const std::vector<double>& block = stores_[slot(e.replica, t)].at(e.versions_read[t]);
    std::copy(block.begin(), block.end(), entry.model.begin() + split_.begin(t));
  }
  entry.state = objective_.prepare(entry.model, SampleKey{e.replica, e.microbatch});
  entry.remaining = stages_;
  return entry;
}

void Executor::backward(const TrainEvent& e, std::int64_t k) {
  const int begin = split_.begin(e.stage), end = split_.end(e.stage);
  std::span<double> out(gradient_.data(), static_cast<std::size_t>(end - begin));
  const InFlight& entry = in_flight(e);
  objective_.block_gradient(entry.model, SampleKey{e.replica, e.microbatch}, entry.state, begin, end, out);
  if (--in_flight_[{e.replica, e.microbatch}].remaining == 0) in_flight_.erase({e.replica, e.microbatch});
  std::vector<double>& sum = accumulated_[slot(e.replica, e.stage)];
  for (std::size_t c = 0; c < sum.size(); ++c) sum[c] += out[c];
  ++pending_[slot(e.replica, e.stage)];
  for (int t = 0; t < stages_; ++t) stores_[slot(e.replica, t)].release(k, plan_.last_reader[slot(e.replica, t)]);
  ++result_.backwards;
}

void Executor::apply(const TrainEvent& e, std::int64_t k) {
  const int i = slot(e.replica, e.stage);
  VersionStore& store = stores_[i];
  std::vector<double> next = store.newest();
  const double count = pending_[i];
  for (std::size_t c = 0; c < next.size(); ++c) {
    next[c] = next[c] - step_ * (accumulated_[i][c] / count);
    accumulated_[i][c] = 0;
  }
  pending_[i] = 0;
  store.push(std::move(next));
  store.release(k, plan_.last_reader[i]);
  result_.peak_versions[e.stage] = std::max(result_.peak_versions[e.stage], store.held());
  ++result_.updates;
}

void Executor::average(const TrainEvent& e) {
  std::vector<double> sum(split_.size(e.stage), 0.0);
  for (int r = 0; r < replicas_; ++r) {
    const std::vector<double>& block = stores_[slot(r, e.stage)].newest();
    for (std::size_t c = 0; c < sum.size(); ++c) sum[c] += block[c];
  }
  for (double& v : sum) v /= replicas_;
  for (int r = 0; r < replicas_; ++r) stores_[slot(r, e.stage)].newest() = sum;
  in_flight_.clear();  // states computed from the overwritten versions no longer describe them
}

void Executor::assemble_current(int replica, std::vector<double>& out) const {
  for (int t = 0; t < stages_; ++t) {
    const std::vector<double>& block = stores_[slot(replica, t)].newest();
    std::copy(block.begin(), block.end(), out.begin() + split_.begin(t));
  }
}

// Records the loss and gradient norm at the replicas' mean model; false once the run has diverged.
bool Executor::sample(double time_s) {
  std::fill(mean_.begin(), mean_.end(), 0.0);
  for (int r = 0; r < replicas_; ++r) {
    assemble_current(r, model_);
    for (std::size_t c = 0; c < mean_.size(); ++c) mean_[c] += model_[c];
  }
  for (double& v : mean_) v /= replicas_;
  ConvergencePoint p{result_.updates, time_s, objective_.evaluate(mean_, gradient_), 0};
  double norm2 = 0;
  for (double g : gradient_) norm2 += g * g;
  p.grad_norm = std::sqrt(norm2);
  result_.points.push_back(p);
  if (result_.points.size() == 1) blow_up_ = kBlowUp * std::max(1.0, std::fabs(p.loss));
  result_.diverged = !std::isfinite(p.loss) || !std::isfinite(p.grad_norm) || std::fabs(p.loss) > blow_up_;
  return !result_.diverged;
}

ConvergenceResult Executor::run() {
  bool going = sample(0.0);
  double last_apply_time = 0;
  for (std::size_t k = 0; going && k < trace_.events.size(); ++k) {
    const TrainEvent& e = trace_.events[k];
    const auto index = static_cast<std::int64_t>(k);
    if (e.kind == TrainEvent::Kind::Backward) backward(e, index);
    if (e.kind == TrainEvent::Kind::Average) average(e);
    if (e.kind != TrainEvent::Kind::Apply) continue;
    apply(e, index);
    last_apply_time = e.time_s;
    if (result_.updates % result_.sample_every == 0) going = sample(e.time_s);
  }
  if (going && result_.points.back().updates != result_.updates) sample(last_apply_time);
  result_.final_weights.assign(replicas_, std::vector<double>(split_.dimension()));
  for (int r = 0; r < replicas_; ++r) assemble_current(r, result_.final_weights[r]);
  return std::move(result_);
}

// Rules the spec parser cannot check alone (the stage count comes from the trace) or that a spec built in code
// may break.
void check_executable(const UpdateLog& trace, const ConvergenceSpec& spec, int dimension) {
  if (dimension < trace.stages)
    throw InputError("convergence.dimension=" + std::to_string(dimension) + " is smaller than the " +
                     std::to_string(trace.stages) + " pipeline stages of the trace: every stage needs a parameter");
  if (!(spec.step_size > 0))
    throw InputError("convergence.step_size=" + format_shortest(spec.step_size) + " must be positive");
  if (spec.sample_every < 0)
    throw InputError("convergence.sample_every=" + std::to_string(spec.sample_every) + " must not be negative");
}

}  // namespace

ConvergenceResult run_convergence(const UpdateLog& trace, const ConvergenceSpec& spec, const Objective& objective) {
  UpdatePlan plan = plan_updates(trace);
  check_executable(trace, spec, objective.dimension());
  return Executor(trace, spec, objective, std::move(plan)).run();
}

ConvergenceResult run_convergence(const UpdateLog& trace, const ConvergenceSpec& spec) {
  UpdatePlan plan = plan_updates(trace);  // a bad trace is reported before the objective's data is generated
  // char_lm's dimension is known once its text is read (a parsed spec holds 0): it is checked after building.
  const bool derived = spec.objective.kind == ObjectiveKind::CharLm;
  if (!derived) check_executable(trace, spec, spec.objective.dimension);
  std::unique_ptr<Objective> objective = make_objective(spec.objective);
  if (derived) check_executable(trace, spec, objective->dimension());
  return Executor(trace, spec, *objective, std::move(plan)).run();
}

}  // namespace placesim
