#include "sim/converge/Rpd.hpp"

#include <algorithm>
#include <cmath>
#include <string>

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

}  // namespace

RpdResult run_rpd(const RpdSpec& spec, const Objective& f) {
  const int d = f.dimension(), S = spec.stages;
  if (S < 1 || S > d)
    throw InputError("rpd.stages=" + std::to_string(S) + " must be from 1 to the objective's dimension " +
                     std::to_string(d));
  if (spec.delta < 0) throw InputError("rpd.delta=" + std::to_string(spec.delta) + " must be >= 0");
  if (!(spec.step_size > 0)) throw InputError("rpd.step_size=" + format_shortest(spec.step_size) + " must be positive");
  // The exact mode's iterations: one per Apply, each consuming the backward before it on its stage.
  struct ExactStep {
    int stage = 0;
    std::int64_t microbatch = 0;
    std::vector<int> versions;
    double time_s = 0;
  };
  std::vector<ExactStep> exact;
  std::vector<double> apply_times;
  if (spec.exact) {
    const UpdateLog& log = *spec.exact;
    if (log.replicas != 1 || log.stages != S)
      throw InputError("rpd: the exact delays need one replica and " + std::to_string(S) + " stages (the log has " +
                       std::to_string(log.replicas) + " and " + std::to_string(log.stages) + ")");
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
        exact.push_back({e.stage, b->microbatch, b->versions_read, e.time_s});
        apply_times.push_back(e.time_s);
        pending[static_cast<std::size_t>(e.stage)] = nullptr;
      } else {
        throw InputError("rpd: the exact delays need a PipeDream log (it has an Average)");
      }
    }
  }
  const std::int64_t K = spec.exact ? static_cast<std::int64_t>(exact.size()) : spec.iterations;
  if (K < 1) throw InputError("rpd.iterations=" + std::to_string(K) + " must be positive");

  const BlockSplit split(d, S);
  std::vector<BlockHistory> history(static_cast<std::size_t>(S));
  for (int j = 0; j < S; ++j) {
    history[static_cast<std::size_t>(j)].from.push_back(0);
    history[static_cast<std::size_t>(j)].value.emplace_back(static_cast<std::size_t>(split.size(j)), 0.0);
  }
  // exact mode: the iterate each version of each block was made by (version v of block j: made_from[j][v]).
  std::vector<std::vector<std::int64_t>> made_by(static_cast<std::size_t>(S), std::vector<std::int64_t>{-1});
  RpdResult r;
  const std::int64_t every = spec.sample_every > 0 ? spec.sample_every : std::max<std::int64_t>(1, K / 200);
  std::vector<double> x(static_cast<std::size_t>(d)), z(static_cast<std::size_t>(d)), grad(static_cast<std::size_t>(d));
  auto current = [&](std::vector<double>& out) {
    for (int j = 0; j < S; ++j) {
      const auto& b = history[static_cast<std::size_t>(j)].value.back();
      std::copy(b.begin(), b.end(), out.begin() + split.begin(j));
    }
  };
  double sum_sq = 0;
  std::int64_t sampled = 0;
  double blow_up = 0;
  auto sample = [&](std::int64_t k) {
    current(x);
    ConvergencePoint p{k, static_cast<double>(k), f.evaluate(x, grad), 0};
    p.grad_norm = std::sqrt(squared_norm(grad));
    if (k < K) {
      sum_sq += p.grad_norm * p.grad_norm;
      ++sampled;
    }
    r.points.push_back(p);
    if (r.points.size() == 1) blow_up = 1e12 * std::max(1.0, std::fabs(p.loss));
    r.diverged = !std::isfinite(p.loss) || !std::isfinite(p.grad_norm) || std::fabs(p.loss) > blow_up;
    return !r.diverged;
  };
  bool going = sample(0);
  DelayTally tally;
  SplitMix64 stage_rng(derive_key(spec.seed, kStagePurpose)), delay_rng(derive_key(spec.seed, kDelayPurpose));
  std::vector<double> g;
  for (std::int64_t k = 0; k < K && going; ++k) {
    int s = 0;
    std::int64_t microbatch = k, active_delay = 0;
    if (spec.exact) {
      const ExactStep& step = exact[static_cast<std::size_t>(k)];
      s = step.stage;
      microbatch = step.microbatch;
      for (int j = 0; j < S; ++j) {
        const std::size_t v = static_cast<std::size_t>(step.versions[static_cast<std::size_t>(j)]);
        const auto& versions = made_by[static_cast<std::size_t>(j)];
        if (v >= versions.size()) throw InputError("rpd: the exact log reads a version not made yet");
        const std::int64_t maker = versions[v];
        const auto& block = history[static_cast<std::size_t>(j)].at(maker + 1);
        std::copy(block.begin(), block.end(), z.begin() + split.begin(j));
        if (j == s) {
          // As the pipeline report counts: Applies completed no later than the one that made the version.
          const std::int64_t before = maker < 0 ? 0
                                                : std::upper_bound(apply_times.begin(), apply_times.end(),
                                                                   apply_times[static_cast<std::size_t>(maker)]) -
                                                      apply_times.begin();
          active_delay = k - before;
        }
      }
    } else {
      s = spec.sampling == RpdSpec::Sampling::Uniform ? static_cast<int>(stage_rng.below(static_cast<std::uint64_t>(S)))
                                                      : S - 1 - static_cast<int>(k % S);
      const std::int64_t bound = std::min(spec.delta, k);
      for (int j = 0; j < S; ++j) {
        const std::int64_t dj =
            bound == 0 ? 0 : static_cast<std::int64_t>(delay_rng.below(static_cast<std::uint64_t>(bound) + 1));
        const auto& block = history[static_cast<std::size_t>(j)].at(k - dj);
        std::copy(block.begin(), block.end(), z.begin() + split.begin(j));
        if (j == s) active_delay = dj;
      }
    }
    tally.add(active_delay);
    if (!spec.exact || exact[static_cast<std::size_t>(k)].microbatch >= spec.steady_from_microbatch)
      ++r.histogram[active_delay];
    g.assign(static_cast<std::size_t>(split.size(s)), 0.0);
    f.sample_gradient(z, SampleKey{0, microbatch}, split.begin(s), split.end(s), g);
    r.second_moment = std::max(r.second_moment, squared_norm(g));
    std::vector<double> next = history[static_cast<std::size_t>(s)].value.back();
    for (std::size_t c = 0; c < next.size(); ++c) next[c] = next[c] - spec.step_size * g[c];
    auto& h = history[static_cast<std::size_t>(s)];
    h.from.push_back(k + 1);
    h.value.push_back(std::move(next));
    made_by[static_cast<std::size_t>(s)].push_back(k);
    if (!spec.exact)
      for (auto& b : history) b.release(k + 1 - spec.delta);
    if ((k + 1) % every == 0 || k + 1 == K) going = sample(k + 1);
  }
  r.iterations = K;
  r.delays = tally.stats();
  r.mean_squared_gradient = sampled > 0 ? sum_sq / static_cast<double>(sampled) : 0;
  r.final_x.resize(static_cast<std::size_t>(d));
  current(r.final_x);
  return r;
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
