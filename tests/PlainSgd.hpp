#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/converge/Objectives.hpp"

namespace placesim::test {

/// A small seeded objective: `kind` over `dimension` coordinates, 64 samples in micro-batches of 8, data seeded with
/// `seed`; other fields at their defaults.
inline ObjectiveSpec small_objective(ObjectiveKind kind, int dimension, std::uint64_t seed) {
  ObjectiveSpec o;
  o.kind = kind;
  o.dimension = dimension;
  o.samples = 64;
  o.batch_size = 8;
  o.seed = seed;
  return o;
}

/// A run on small_objective(kind, dimension, seed) with step size `step`; other fields at their defaults.
inline ConvergenceSpec small_convergence(ObjectiveKind kind, int dimension, double step, std::uint64_t seed) {
  ConvergenceSpec spec;
  spec.objective = small_objective(kind, dimension, seed);
  spec.step_size = step;
  return spec;
}

/// Plain mini-batch SGD on one device, written independently of the executor: step n averages the full-vector
/// gradients of micro-batches n*m .. n*m+m-1 (summed in that order, then divided by m) at the current x.
/// Returns the iterate after every step.
inline std::vector<std::vector<double>> plain_sgd(const Objective& f, double step, int microbatches, int steps) {
  const int d = f.dimension();
  std::vector<double> x(d, 0.0), sum(d), g(d);
  std::vector<std::vector<double>> iterates;
  for (int n = 0; n < steps; ++n) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int j = 0; j < microbatches; ++j) {
      f.sample_gradient(x, SampleKey{0, n * microbatches + j}, 0, d, g);
      for (int k = 0; k < d; ++k) sum[k] += g[k];
    }
    for (int k = 0; k < d; ++k) x[k] = x[k] - step * (sum[k] / microbatches);
    iterates.push_back(x);
  }
  return iterates;
}

inline double loss_at(const Objective& f, const std::vector<double>& x) {
  std::vector<double> g(x.size());
  return f.evaluate(x, g);
}

}  // namespace placesim::test
