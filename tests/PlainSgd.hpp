#pragma once
#include <algorithm>
#include <vector>

#include "sim/converge/Objectives.hpp"

namespace placesim::test {

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
