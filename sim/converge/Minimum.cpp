#include "sim/converge/Minimum.hpp"

#include <cmath>
#include <vector>

namespace placesim {

namespace {

// 2^60 times the smoothness estimate without a sufficient decrease: the decrease is lost in rounding.
constexpr int kMaxDoublings = 60;

double squared_norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

}  // namespace

MinimumEstimate estimate_minimum(const Objective& f, int max_iterations, double tolerance) {
  const auto d = static_cast<std::size_t>(f.dimension());
  std::vector<double> x(d, 0.0), y(d, 0.0), next(d), g_y(d), g_next(d);
  double smoothness = 1;  // grows by doubling until the descent condition holds, shrinks a little each iteration
  double t = 1;
  double f_x = f.evaluate(x, g_next), f_y = f.evaluate(y, g_y);
  MinimumEstimate best{f_x, std::sqrt(squared_norm(g_next)), 0};
  for (int it = 1; it <= max_iterations && best.gradient_norm > tolerance; ++it) {
    const double g2 = squared_norm(g_y);
    double f_next = 0;
    int doublings = 0;
    for (;; ++doublings) {  // gradient step from y with the sufficient decrease of an L-smooth function
      for (std::size_t k = 0; k < d; ++k) next[k] = y[k] - g_y[k] / smoothness;
      f_next = f.evaluate(next, g_next);
      if (f_next <= f_y - g2 / (2 * smoothness) || doublings == kMaxDoublings) break;
      smoothness *= 2;
    }
    // Near the minimum the decrease falls below the rounding of f: no step passes, and none can help any more.
    if (doublings == kMaxDoublings) break;
    if (f_next < best.value) best = {f_next, std::sqrt(squared_norm(g_next)), it};
    // Momentum, reset when it stops helping (the objective went up).
    const double t_next = f_next > f_x ? 1 : (1 + std::sqrt(1 + 4 * t * t)) / 2;
    const double beta = f_next > f_x ? 0 : (t - 1) / t_next;
    for (std::size_t k = 0; k < d; ++k) y[k] = next[k] + beta * (next[k] - x[k]);
    x.swap(next);
    f_x = f_next;
    t = t_next;
    f_y = beta == 0 ? f_next : f.evaluate(y, g_y);
    if (beta == 0) g_y = g_next;
    smoothness *= 0.9;
  }
  return best;
}

}  // namespace placesim
