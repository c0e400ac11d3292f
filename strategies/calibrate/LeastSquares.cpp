#include "strategies/calibrate/LeastSquares.hpp"

#include <cmath>
#include <limits>

namespace placesim {

namespace {

double half_squared_norm(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) s += v * v;
  return std::isfinite(s) ? 0.5 * s : std::numeric_limits<double>::infinity();
}

std::vector<double> exp_all(const std::vector<double>& x) {
  std::vector<double> p(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) p[i] = std::exp(x[i]);
  return p;
}

// Solves A d = b for a small dense symmetric positive-definite A (Gaussian elimination with partial pivoting).
std::vector<double> solve(std::vector<std::vector<double>> A, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::fabs(A[r][c]) > std::fabs(A[pivot][c])) pivot = r;
    std::swap(A[c], A[pivot]);
    std::swap(b[c], b[pivot]);
    if (A[c][c] == 0) return std::vector<double>(n, 0.0);
    for (std::size_t r = c + 1; r < n; ++r) {
      double f = A[r][c] / A[c][c];
      for (std::size_t k = c; k < n; ++k) A[r][k] -= f * A[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t k = i + 1; k < n; ++k) s -= A[i][k] * x[k];
    x[i] = s / A[i][i];
  }
  return x;
}

// Central-difference Jacobian of the residuals with respect to log-parameters.
std::vector<std::vector<double>> jacobian(const ResidualFunction& f, const std::vector<double>& x, std::size_t m) {
  const double h = 1e-6;
  std::vector<std::vector<double>> J(m, std::vector<double>(x.size()));
  for (std::size_t j = 0; j < x.size(); ++j) {
    std::vector<double> up = x, down = x;
    up[j] += h;
    down[j] -= h;
    std::vector<double> ru = f(exp_all(up)), rd = f(exp_all(down));
    for (std::size_t i = 0; i < m; ++i) J[i][j] = (ru[i] - rd[i]) / (2 * h);
  }
  return J;
}

LeastSquaresFit levenberg_marquardt(const ResidualFunction& f, std::vector<double> x) {
  std::vector<double> r = f(exp_all(x));
  double cost = half_squared_norm(r), lambda = 1e-3;
  for (int iteration = 0; iteration < 500 && cost > 0; ++iteration) {
    auto J = jacobian(f, x, r.size());
    const std::size_t n = x.size();
    std::vector<std::vector<double>> JtJ(n, std::vector<double>(n, 0.0));
    std::vector<double> Jtr(n, 0.0);
    for (std::size_t i = 0; i < r.size(); ++i)
      for (std::size_t a = 0; a < n; ++a) {
        Jtr[a] -= J[i][a] * r[i];
        for (std::size_t b = 0; b < n; ++b) JtJ[a][b] += J[i][a] * J[i][b];
      }
    bool improved = false;
    while (lambda < 1e12) {
      auto A = JtJ;
      for (std::size_t a = 0; a < n; ++a) A[a][a] += lambda * (JtJ[a][a] + 1e-12);
      std::vector<double> step = solve(A, Jtr), trial = x;
      for (std::size_t a = 0; a < n; ++a) trial[a] += std::max(-2.0, std::min(2.0, step[a]));
      std::vector<double> rt = f(exp_all(trial));
      double ct = half_squared_norm(rt);
      if (ct < cost) {
        bool converged = cost - ct <= 1e-15 * (1 + cost);
        x = trial, r = rt, cost = ct, lambda = std::max(lambda / 10, 1e-12), improved = true;
        if (converged) return {exp_all(x), cost};
        break;
      }
      lambda *= 10;
    }
    if (!improved) break;
  }
  return {exp_all(x), cost};
}

LeastSquaresFit multi_start(const ResidualFunction& residuals, const std::vector<double>& start) {
  std::vector<double> x0(start.size());
  for (std::size_t i = 0; i < start.size(); ++i) x0[i] = std::log(start[i]);
  LeastSquaresFit best = levenberg_marquardt(residuals, x0);
  for (std::size_t i = 0; i < start.size(); ++i)
    for (double scale : {0.25, 4.0}) {
      std::vector<double> x = x0;
      x[i] += std::log(scale);
      LeastSquaresFit candidate = levenberg_marquardt(residuals, x);
      if (candidate.cost < best.cost) best = candidate;
    }
  return best;
}

}  // namespace

LeastSquaresFit fit_positive(const ResidualFunction& residuals, const std::vector<double>& start, double robust_scale) {
  LeastSquaresFit fit = multi_start(residuals, start);
  std::vector<double> weights(residuals(fit.params).size(), 1.0);
  for (int round = 0; round < 20; ++round) {
    std::vector<double> r = residuals(fit.params);
    for (std::size_t i = 0; i < r.size(); ++i) weights[i] = 1 / (1 + (r[i] / robust_scale) * (r[i] / robust_scale));
    auto weighted = [&](const std::vector<double>& p) {
      std::vector<double> v = residuals(p);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] *= std::sqrt(weights[i]);
      return v;
    };
    std::vector<double> x(fit.params.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::log(fit.params[i]);
    LeastSquaresFit next = levenberg_marquardt(weighted, x);
    bool settled = true;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::fabs(std::log(next.params[i] / fit.params[i])) > 1e-10) settled = false;
    fit = next;
    if (settled) break;
  }
  fit.cost = half_squared_norm(residuals(fit.params));
  return fit;
}

}  // namespace placesim
