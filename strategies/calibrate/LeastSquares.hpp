#pragma once
#include <functional>
#include <vector>

namespace placesim {

/// Residuals of a model at a parameter vector.
using ResidualFunction = std::function<std::vector<double>(const std::vector<double>&)>;

struct LeastSquaresFit {
  std::vector<double> params;
  double cost = 0;  ///< half the sum of squared residuals at params
};

/// Minimises a Cauchy-robust sum of squared residuals over strictly positive parameters: Levenberg-Marquardt in
/// log-parameter space (so positivity holds and parameters of different scales are treated alike), started from
/// `start` and from each start scaled by 1/4 and 4 one parameter at a time, the best result winning; then
/// iteratively reweighted (weight 1 / (1 + (r / robust_scale)^2)) so that a few points the model cannot represent do
/// not drag the rest. Exact data are fitted exactly. Deterministic.
/// Precondition: every start value is positive and `residuals` returns at least start.size() finite values.
LeastSquaresFit fit_positive(const ResidualFunction& residuals, const std::vector<double>& start,
                             double robust_scale = 0.1);

}  // namespace placesim
