#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "sim/converge/Objectives.hpp"
#include "sim/converge/StaleSgd.hpp"
#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/pipeline/UpdateLog.hpp"

namespace placesim {

/// Randomized PipeDream (RPD), the theoretical object of Ilin & Richtarik (arXiv 2606.03498), as its authors' code
/// runs it (github.com/vectozavr/randomized-pipedream, src/methods/gpd.py; the paper's algorithm box was not
/// reachable): x is cut into S contiguous blocks (BlockSplit); iteration k = 0, 1, ..., K - 1
///   1. samples a stage s (uniformly, or PipeDream's backward order S-1, S-2, ..., 0, S-1, ...);
///   2. gives every block j (the active one included) its own delay d_j, uniform on {0, ..., min(delta, k)}, drawn
///      independently;
///   3. reads the stale mixed model z whose block j is block j of the iterate x_{k - d_j};
///   4. takes micro-batch k's stochastic gradient of block s at z and sets x_{k+1} = x_k with block s replaced by
///      x_k^(s) - step_size * g (no other block changes; no 1/S factor, no averaging).
/// Delays count iterations, i.e. block updates, as the pipeline report counts PipeDream's.
///
/// With `exact` set, stage order and delays are PipeDream's own, from a simulated schedule's UpdateLog (one Apply
/// after every Backward, one replica): iteration k is the k-th Apply; its block is the Apply's stage and z holds, of
/// every block, the version the backward's forwards read. The delay recorded for an iteration is that of its active
/// block, counted as the pipeline report counts it: k minus the Applies that completed no later than the Apply that
/// made the version read.
struct RpdSpec {
  int stages = 4;
  std::int64_t iterations = 1000;  ///< K (ignored with `exact`: the log's Applies)
  double step_size = 0.05;
  enum class Sampling { Uniform, BackwardOrder };
  Sampling sampling = Sampling::Uniform;
  std::int64_t delta = 0;            ///< delay bound (uniform delays)
  const UpdateLog* exact = nullptr;  ///< PipeDream's delays and order instead
  std::uint64_t seed = 1;            ///< stage sampling and delays (the objective has its own for the data)
  std::int64_t sample_every = 0;     ///< full loss and gradient every this many iterations; 0: about 200 points
  int steady_from_microbatch = 0;    ///< exact: the histogram counts backwards of micro-batches from this one on
};

struct RpdResult {
  std::vector<ConvergencePoint> points;  ///< x_0, every sample_every-th iterate and the last
  std::vector<double> final_x;
  std::int64_t iterations = 0;
  DelayStats delays;                               ///< of the active block, every iteration
  std::map<std::int64_t, std::int64_t> histogram;  ///< exact: steady state (as the pipeline report); else all
  double mean_squared_gradient = 0;                ///< mean of ||grad f(x_k)||^2 over the sampled iterates (k < K)
  double second_moment = 0;  ///< G^2: the largest ||g||^2 of a sampled block gradient (as the authors' code)
  bool diverged = false;
};

/// Runs RPD on `f` from x = 0. Throws InputError when the spec is inconsistent (stages outside 1..d, a negative
/// delta, a non-positive step or iteration count, an exact log that is not one replica with one Backward per Apply).
RpdResult run_rpd(const RpdSpec& spec, const Objective& f);

/// The nonconvex guarantee the authors' code evaluates (gpd.py, the bound it plots against the run; the paper's
/// theorem text was not reachable, so constants and conditions are the code's): for K iterations of RPD with step
/// gamma, S blocks, delays at most delta, an L-smooth f with f(x_0) - f* <= gap and block gradients of second moment
/// at most G^2,
///     (1/K) sum_k E ||grad f(x_k)||^2 <= 2 S gap / (gamma K) + gamma S L G^2 + gamma^2 L^2 delta^2 G^2.
/// The last term is the stale read: Theta(gamma^2 S^4) with PipeDream's delta = S^2 - S/2. With the step
/// gamma* = sqrt(2 gap / (L G^2 K)) that balances the first two terms the bound becomes
///     2 S sqrt(2 L gap G^2 / K) + 2 L gap delta^2 / K,
/// whose stale-read term is Theta(S^4 / K).
struct RpdBound {
  double descent = 0, noise = 0, stale = 0;  ///< the three terms at the run's step
  double total() const { return descent + noise + stale; }
  double tuned_step = 0;
  double tuned_main = 0, tuned_stale = 0;  ///< 2 S sqrt(2 L gap G^2 / K) and 2 L gap delta^2 / K
  double tuned_total() const { return tuned_main + tuned_stale; }
};
RpdBound rpd_bound(double step, int stages, std::int64_t iterations, std::int64_t delta, double smoothness,
                   double second_moment, double gap);

/// A local smoothness estimate: the largest eigenvalue of the Hessian at x by power iteration with central
/// finite-difference Hessian-vector products (100 iterations from a seeded start; the Rayleigh quotient, so a slight
/// underestimate when the top eigenvalues are close). The bound's L is global; for the
/// quadratic this is its largest eigenvalue, for a nonconvex f a local figure.
double estimate_smoothness(const Objective& f, const std::vector<double>& x, std::uint64_t seed = 1);

}  // namespace placesim
