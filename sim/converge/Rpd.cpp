#include "sim/converge/Rpd.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "sim/converge/Random.hpp"
#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

constexpr std::uint64_t kStagePurpose = 0x5a3e, kDelayPurpose = 0xde1a;

/// Every version of one block with the iterate from which it is current (version v made by iteration k is x_{k+1}'s).
struct BlockHistory {
  std::vector<std::int64_t> from;  ///< iterate index from which each version holds
  std::vector<std::vector<double>> value;
  /// The block of iterate x_m.
  const std::vector<double>& at(std::int64_t m) const {
    auto it = std::upper_bound(from.begin(), from.end(), m);
    return value[static_cast<std::size_t>(it - from.begin() - 1)];
  }
  /// Drops versions no read from iterate `oldest` on can need (keeps the one current at `oldest`).
  void release(std::int64_t oldest) {
    auto it = std::upper_bound(from.begin(), from.end(), oldest);
    const auto keep = std::max<std::ptrdiff_t>(0, it - from.begin() - 1);
    if (keep > 64) {  // in batches, so that erasing stays linear overall
      from.erase(from.begin(), from.begin() + keep);
      value.erase(value.begin(), value.begin() + keep);
    }
  }
};

double squared_norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

void check_spec(const RpdSpec& spec, int d) {
  const int S = spec.stages;
  if (S < 1 || S > d)
    throw InputError("rpd.stages=" + std::to_string(S) + " must be from 1 to the objective's dimension " +
                     std::to_string(d));
  if (spec.delta < 0) throw InputError("rpd.delta=" + std::to_string(spec.delta) + " must be >= 0");
  if (!(spec.step_size > 0)) throw InputError("rpd.step_size=" + format_shortest(spec.step_size) + " must be positive");
}

struct ExactStep {
  int stage = 0;
  std::int64_t microbatch = 0;
  std::vector<int> versions;
  double time_s = 0;
};

/// The exact mode's iterations: one per Apply, each consuming the backward before it on its stage.
struct ExactSchedule {
  std::vector<ExactStep> steps;
  std::vector<double> apply_times;  ///< of every Apply, in the log's order
};

ExactSchedule read_exact_schedule(const UpdateLog& log, int S) {
  if (log.replicas != 1 || log.stages != S)
    throw InputError("rpd: the exact delays need one replica and " + std::to_string(S) + " stages (the log has " +
                     std::to_string(log.replicas) + " and " + std::to_string(log.stages) + ")");
  ExactSchedule exact;
  std::vector<const TrainEvent*> pending(static_cast<std::size_t>(S), nullptr);
  for (const TrainEvent& e : log.events) {
    if (e.kind == TrainEvent::Kind::Backward) {
      if (pending[static_cast<std::size_t>(e.stage)])
        throw InputError("rpd: the exact delays need one Apply after every Backward (PipeDream); stage " +
                         std::to_string(e.stage) + " has two backwards before an Apply");
      pending[static_cast<std::size_t>(e.stage)] = &e;
    } else if (e.kind == TrainEvent::Kind::Apply) {
      const TrainEvent* b = pending[static_cast<std::size_t>(e.stage)];
      if (!b) throw InputError("rpd: an Apply without a Backward in the exact log");
      exact.steps.push_back({e.stage, b->microbatch, b->versions_read, e.time_s});
      exact.apply_times.push_back(e.time_s);
      pending[static_cast<std::size_t>(e.stage)] = nullptr;
    } else {
      throw InputError("rpd: the exact delays need a PipeDream log (it has an Average)");
    }
  }
  return exact;
}

/// What one iteration reads: its active stage, the micro-batch of its gradient and the active block's delay.
struct StaleRead {
  int stage = 0;
  std::int64_t microbatch = 0;
  std::int64_t delay = 0;
};

/// One run of RPD: every block's versions, the stale model z an iteration reads and the result filled as it goes.
class RpdRun {
 public:
  RpdRun(const RpdSpec& spec, const Objective& f, ExactSchedule exact, std::int64_t iterations)
      : spec_(spec),
        f_(f),
        exact_(std::move(exact)),
        K_(iterations),
        S_(spec.stages),
        split_(f.dimension(), spec.stages),
        history_(static_cast<std::size_t>(S_)),
        made_by_(static_cast<std::size_t>(S_), std::vector<std::int64_t>{-1}),
        every_(spec.sample_every > 0 ? spec.sample_every : std::max<std::int64_t>(1, K_ / 200)),
        x_(static_cast<std::size_t>(f.dimension())),
        z_(static_cast<std::size_t>(f.dimension())),
        grad_(static_cast<std::size_t>(f.dimension())),
        stage_rng_(derive_key(spec.seed, kStagePurpose)),
        delay_rng_(derive_key(spec.seed, kDelayPurpose)) {
    for (int j = 0; j < S_; ++j) {
      history_[static_cast<std::size_t>(j)].from.push_back(0);
      history_[static_cast<std::size_t>(j)].value.emplace_back(static_cast<std::size_t>(split_.size(j)), 0.0);
    }
  }

  RpdResult run() {
    bool going = sample(0);
    for (std::int64_t k = 0; k < K_ && going; ++k) {
      const StaleRead read = spec_.exact ? read_exact(k) : read_delayed(k);
      tally_.add(read.delay);
      if (!spec_.exact || exact_.steps[static_cast<std::size_t>(k)].microbatch >= spec_.steady_from_microbatch)
        ++r_.histogram[read.delay];
      update(k, read);
      if (!spec_.exact)
        for (auto& b : history_) b.release(k + 1 - spec_.delta);
      if ((k + 1) % every_ == 0 || k + 1 == K_) going = sample(k + 1);
    }
    r_.iterations = K_;
    r_.delays = tally_.stats();
    r_.mean_squared_gradient = sampled_ > 0 ? sum_sq_ / static_cast<double>(sampled_) : 0;
    r_.final_x.resize(static_cast<std::size_t>(f_.dimension()));
    current(r_.final_x);
    return r_;
  }

 private:
  /// Copies the newest iterate into `out`.
  void current(std::vector<double>& out) const {
    for (int j = 0; j < S_; ++j) {
      const auto& b = history_[static_cast<std::size_t>(j)].value.back();
      std::copy(b.begin(), b.end(), out.begin() + split_.begin(j));
    }
  }

  /// Records the loss and gradient norm of iterate x_k; false once the run has diverged.
  bool sample(std::int64_t k) {
    current(x_);
    ConvergencePoint p{k, static_cast<double>(k), f_.evaluate(x_, grad_), 0};
    p.grad_norm = std::sqrt(squared_norm(grad_));
    if (k < K_) {
      sum_sq_ += p.grad_norm * p.grad_norm;
      ++sampled_;
    }
    r_.points.push_back(p);
    if (r_.points.size() == 1) blow_up_ = 1e12 * std::max(1.0, std::fabs(p.loss));
    r_.diverged = !std::isfinite(p.loss) || !std::isfinite(p.grad_norm) || std::fabs(p.loss) > blow_up_;
    return !r_.diverged;
  }

  /// Iteration k of the exact mode: z holds the versions the k-th Apply's backward read.
  StaleRead read_exact(std::int64_t k) {
    const ExactStep& step = exact_.steps[static_cast<std::size_t>(k)];
    StaleRead read{step.stage, step.microbatch, 0};
    const auto& apply_times = exact_.apply_times;
    for (int j = 0; j < S_; ++j) {
      const std::size_t v = static_cast<std::size_t>(step.versions[static_cast<std::size_t>(j)]);
      const auto& versions = made_by_[static_cast<std::size_t>(j)];
      if (v >= versions.size()) throw InputError("rpd: the exact log reads a version not made yet");
      const std::int64_t maker = versions[v];
      const auto& block = history_[static_cast<std::size_t>(j)].at(maker + 1);
      std::copy(block.begin(), block.end(), z_.begin() + split_.begin(j));
      if (j == read.stage) {
        // As the pipeline report counts: Applies completed no later than the one that made the version.
        const std::int64_t before = maker < 0 ? 0
                                              : std::upper_bound(apply_times.begin(), apply_times.end(),
                                                                 apply_times[static_cast<std::size_t>(maker)]) -
                                                    apply_times.begin();
        read.delay = k - before;
      }
    }
    return read;
  }

  /// Iteration k with a sampled stage and every block's own uniform delay in {0, ..., min(delta, k)}.
  StaleRead read_delayed(std::int64_t k) {
    StaleRead read{0, k, 0};
    read.stage = spec_.sampling == RpdSpec::Sampling::Uniform
                     ? static_cast<int>(stage_rng_.below(static_cast<std::uint64_t>(S_)))
                     : S_ - 1 - static_cast<int>(k % S_);
    const std::int64_t bound = std::min(spec_.delta, k);
    for (int j = 0; j < S_; ++j) {
      const std::int64_t dj =
          bound == 0 ? 0 : static_cast<std::int64_t>(delay_rng_.below(static_cast<std::uint64_t>(bound) + 1));
      const auto& block = history_[static_cast<std::size_t>(j)].at(k - dj);
      std::copy(block.begin(), block.end(), z_.begin() + split_.begin(j));
      if (j == read.stage) read.delay = dj;
    }
    return read;
  }

  /// x_{k+1}: the active block stepped along its stochastic gradient at z.
  void update(std::int64_t k, const StaleRead& read) {
    const int s = read.stage;
    g_.assign(static_cast<std::size_t>(split_.size(s)), 0.0);
    f_.sample_gradient(z_, SampleKey{0, read.microbatch}, split_.begin(s), split_.end(s), g_);
    r_.second_moment = std::max(r_.second_moment, squared_norm(g_));
    std::vector<double> next = history_[static_cast<std::size_t>(s)].value.back();
    for (std::size_t c = 0; c < next.size(); ++c) next[c] = next[c] - spec_.step_size * g_[c];
    auto& h = history_[static_cast<std::size_t>(s)];
    h.from.push_back(k + 1);
    h.value.push_back(std::move(next));
    made_by_[static_cast<std::size_t>(s)].push_back(k);
  }

  const RpdSpec& spec_;
  const Objective& f_;
  const ExactSchedule exact_;
  const std::int64_t K_;
  const int S_;
  const BlockSplit split_;
  std::vector<BlockHistory> history_;
  /// Exact mode: the iteration that made each version of each block (version v of block j: made_by_[j][v]).
  std::vector<std::vector<std::int64_t>> made_by_;
  const std::int64_t every_;
  std::vector<double> x_, z_, grad_, g_;
  SplitMix64 stage_rng_, delay_rng_;
  DelayTally tally_;
  RpdResult r_;
  double sum_sq_ = 0;
  std::int64_t sampled_ = 0;
  double blow_up_ = 0;
};

}  // namespace

RpdResult run_rpd(const RpdSpec& spec, const Objective& f) {
  const int d = f.dimension();
  check_spec(spec, d);
  ExactSchedule exact;
  if (spec.exact) exact = read_exact_schedule(*spec.exact, spec.stages);
  const std::int64_t K = spec.exact ? static_cast<std::int64_t>(exact.steps.size()) : spec.iterations;
  if (K < 1) throw InputError("rpd.iterations=" + std::to_string(K) + " must be positive");
  return RpdRun(spec, f, std::move(exact), K).run();
}

RpdBound rpd_bound(double step, int stages, std::int64_t iterations, std::int64_t delta, double smoothness,
                   double second_moment, double gap) {
  RpdBound b;
  const double S = stages, K = static_cast<double>(iterations), L = smoothness, G2 = second_moment;
  const double dl = static_cast<double>(delta);
  b.descent = 2 * S * gap / (step * K);
  b.noise = step * S * L * G2;
  b.stale = step * step * L * L * dl * dl * G2;
  b.tuned_step = std::sqrt(2 * gap / (L * G2 * K));
  b.tuned_main = 2 * S * std::sqrt(2 * L * gap * G2 / K);
  b.tuned_stale = 2 * L * gap * dl * dl / K;
  return b;
}

double estimate_smoothness(const Objective& f, const std::vector<double>& x, std::uint64_t seed) {
  const std::size_t d = x.size();
  SplitMix64 rng(derive_key(seed, 0x5300));
  std::vector<double> v(d), plus(d), minus(d), gp(d), gm(d), hv(d);
  for (double& c : v) c = rng.standard();
  double lambda = 0;
  const double eps = 1e-5 * std::max(1.0, std::sqrt(squared_norm(x)));
  for (int it = 0; it < 100; ++it) {
    const double norm = std::sqrt(squared_norm(v));
    for (double& c : v) c /= norm;
    for (std::size_t c = 0; c < d; ++c) {
      plus[c] = x[c] + eps * v[c];
      minus[c] = x[c] - eps * v[c];
    }
    f.evaluate(plus, gp);
    f.evaluate(minus, gm);
    double rayleigh = 0;
    for (std::size_t c = 0; c < d; ++c) {
      hv[c] = (gp[c] - gm[c]) / (2 * eps);
      rayleigh += v[c] * hv[c];
    }
    lambda = rayleigh;
    v = hv;
  }
  return lambda;
}

}  // namespace placesim
