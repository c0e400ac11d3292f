#include "sim/converge/SyntheticData.hpp"

#include <cmath>

#include "sim/converge/Random.hpp"

namespace placesim {

ButterflyRotation::ButterflyRotation(int dimension, std::uint64_t seed) : dimension_(dimension) {
  SplitMix64 rng(seed);
  for (int half = 1; half < dimension; half *= 2) {
    for (int i = 0; i + half < dimension; ++i) {
      if (i & half) continue;
      double a = 2 * rng.uniform() - 1, b = 2 * rng.uniform() - 1;
      double r = std::sqrt(a * a + b * b);
      // A (near-)zero draw has no direction: keep the pair unrotated rather than divide by ~0.
      if (r < 1e-9)
        rotations_.push_back({i, i + half, 1.0, 0.0});
      else
        rotations_.push_back({i, i + half, a / r, b / r});
    }
  }
}

void ButterflyRotation::apply(double* v, std::ptrdiff_t stride) const {
  for (const Givens& g : rotations_) {
    double& x = v[g.i * stride];
    double& y = v[g.j * stride];
    double rx = g.c * x - g.s * y;
    double ry = g.s * x + g.c * y;
    x = rx;
    y = ry;
  }
}

void ButterflyRotation::apply_transpose(double* v) const {
  for (auto g = rotations_.rbegin(); g != rotations_.rend(); ++g) {
    double& x = v[g->i];
    double& y = v[g->j];
    double rx = g->c * x + g->s * y;
    double ry = -g->s * x + g->c * y;
    x = rx;
    y = ry;
  }
}

std::vector<double> linear_spectrum(int dimension, double condition_number) {
  std::vector<double> spectrum(dimension, 1.0);
  double low = 1.0 / condition_number;
  for (int k = 0; k + 1 < dimension; ++k) spectrum[k] = low + (1.0 - low) * k / (dimension - 1);
  return spectrum;
}

std::vector<double> rotated_features(int samples, const std::vector<double>& spectrum, std::uint64_t seed) {
  const int d = static_cast<int>(spectrum.size());
  ButterflyRotation q(d, derive_key(seed, static_cast<std::uint64_t>(RandomStream::Rotation)));
  SplitMix64 rng(derive_key(seed, static_cast<std::uint64_t>(RandomStream::Features)));
  std::vector<double> scale(d);
  for (int k = 0; k < d; ++k) scale[k] = std::sqrt(spectrum[k]);
  std::vector<double> a(static_cast<std::size_t>(samples) * d);
  for (int j = 0; j < samples; ++j) {
    double* row = a.data() + static_cast<std::size_t>(j) * d;
    for (int k = 0; k < d; ++k) row[k] = scale[k] * rng.standard();
    q.apply(row);
  }
  return a;
}

std::vector<double> standard_vector(int count, double scale, std::uint64_t key) {
  SplitMix64 rng(key);
  std::vector<double> v(count);
  for (double& x : v) x = scale * rng.standard();
  return v;
}

}  // namespace placesim
