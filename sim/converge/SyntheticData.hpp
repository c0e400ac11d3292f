#pragma once
#include <cstdint>
#include <vector>

namespace placesim {

/// Independent purposes of the random streams drawn from one objective seed (see derive_key in
/// sim/converge/Random.hpp).
/// Init: the initial parameters of the character-level language model (sim/converge/CharLm.hpp).
enum class RandomStream : std::uint64_t { Rotation = 1, Minimizer, Features, Targets, Truth, Batch, Noise, Init };

/// A seeded orthogonal d x d matrix Q, stored as butterfly layers of Givens rotations. Layer l (2^l < d) rotates
/// every pair of coordinates (i, i + 2^l) with bit l of i clear and i + 2^l < d, each by its own angle: after
/// all ceil(log2 d) layers every output coordinate depends on every input one (a dense Q), and applying Q costs
/// O(d log d) instead of O(d^2). Cosine and sine come from two uniform draws scaled to unit length, so no
/// transcendental function (whose last bit may differ across math libraries) is involved.
class ButterflyRotation {
 public:
  ButterflyRotation(int dimension, std::uint64_t seed);

  int dimension() const { return dimension_; }

  /// v <- Q v, where v[i] lives at v[i * stride].
  void apply(double* v, std::ptrdiff_t stride = 1) const;

  /// v <- Q^T v (the rotations undone in reverse order).
  void apply_transpose(double* v) const;

 private:
  struct Givens {
    int i, j;
    double c, s;
  };
  int dimension_;
  std::vector<Givens> rotations_;  ///< in application order
};

/// Eigenvalues 1/kappa + (1 - 1/kappa) k / (d - 1) for k = 0 .. d-1: evenly spaced on [1/kappa, 1], so that the
/// largest is 1 (a step size below 2 is stable for the plain quadratic) and the condition number is kappa.
std::vector<double> linear_spectrum(int dimension, double condition_number);

/// n feature rows a_j = Q (s .* z_j), row-major n x d: z_j has independent mean-0 variance-1 coordinates and
/// s_k = sqrt(spectrum_k), so the population covariance is Q diag(spectrum) Q^T. The z_j come from the objective
/// seed's Features stream, row by row.
std::vector<double> rotated_features(int samples, const std::vector<double>& spectrum, std::uint64_t seed);

/// `count` independent mean-0 variance-1 draws (uniform on [-sqrt 3, sqrt 3)) of the stream `key`, times `scale`.
std::vector<double> standard_vector(int count, double scale, std::uint64_t key);

}  // namespace placesim
