#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/converge/SyntheticData.hpp"
#include "workloads/objective/ConvergenceSpec.hpp"

namespace placesim {

/// R^d cut into S contiguous blocks as evenly as possible: the first d mod S blocks hold ceil(d/S) coordinates,
/// the others floor(d/S). Block s is the parameters of pipeline stage s.
///
///   d = 10, S = 4:  [0 1 2][3 4 5][6 7][8 9]
class BlockSplit {
 public:
  /// Precondition: 1 <= blocks <= dimension.
  BlockSplit(int dimension, int blocks);
  int dimension() const { return dimension_; }
  int blocks() const { return blocks_; }
  int begin(int block) const { return begins_[block]; }
  int end(int block) const { return begins_[block + 1]; }
  int size(int block) const { return end(block) - begin(block); }

 private:
  int dimension_, blocks_;
  std::vector<int> begins_;  ///< blocks + 1 entries
};

/// Whose data a stochastic gradient uses. Micro-batch i of replica r always draws the same samples (its seeded
/// stream is keyed by (seed, r, i)), whichever stage asks and whatever model it is evaluated at.
struct SampleKey {
  int replica = 0;
  std::int64_t microbatch = 0;
};

/// What a micro-batch's gradient needs from the model beyond the coordinates of the block asked for: computed once
/// per micro-batch and model (Objective::prepare), then shared by every block's gradient. Opaque to callers.
struct MicrobatchState {
  std::vector<double> values;          ///< quadratic: A (x - x*); finite sums: the loss slope of each batch sample
  std::vector<std::uint32_t> samples;  ///< finite sums: the batch's sample indices
};

/// The batch of micro-batch `key` of an objective seeded with `seed`: `size` indices drawn with replacement from
/// [0, n), index j being output j of the SplitMix64 stream keyed (seed, RandomStream::Batch, replica, micro-batch),
/// modulo n. FiniteSumObjective (samples) and CharLmObjective (text positions) draw their batches with it.
std::vector<std::uint32_t> draw_batch(std::uint64_t seed, SampleKey key, int size, std::uint64_t n);

/// A differentiable objective f: R^d -> R with a seeded stochastic gradient per micro-batch. Immutable once built:
/// one objective can serve many executions, also from several threads.
class Objective {
 public:
  virtual ~Objective() = default;
  virtual std::string name() const = 0;
  virtual int dimension() const = 0;

  /// Full objective f(x); fills `gradient` (size d) with the full gradient. x has size d.
  virtual double evaluate(std::span<const double> x, std::span<double> gradient) const = 0;

  /// The part of micro-batch `key`'s stochastic gradient at x that all blocks share.
  virtual MicrobatchState prepare(std::span<const double> x, SampleKey key) const = 0;

  /// Coordinates [begin, end) of micro-batch `key`'s stochastic gradient at x, into `out` (size end - begin);
  /// `state` is prepare(x, key). Each coordinate is computed by the same operations in the same order whatever
  /// the range: a block is bit for bit the slice of the vector for [0, d).
  virtual void block_gradient(std::span<const double> x, SampleKey key, const MicrobatchState& state, int begin,
                              int end, std::span<double> out) const = 0;

  /// prepare and block_gradient in one call.
  void sample_gradient(std::span<const double> x, SampleKey key, int begin, int end, std::span<double> out) const {
    block_gradient(x, key, prepare(x, key), begin, end, out);
  }
};

/// f(x) = 1/2 (x - x*)^T A (x - x*) + l2/2 ||x||^2, i.e. 1/2 x^T A x - b^T x + const with b = A x*, shifted so
/// that f(x*) = 0 when l2 = 0. The micro-batch gradient is the full gradient plus noise * xi, with xi_k
/// mean-0 variance-1 draws at position k of the stream keyed (seed, replica, micro-batch).
///
/// A is either dense (given entry by entry) or Q diag(spectrum) Q^T with Q a ButterflyRotation, applied in
/// O(d log d) without ever forming A: the generated objectives use the latter.
class QuadraticObjective final : public Objective {
 public:
  /// Dense `hessian`, row-major d x d; `minimizer` size d. Throws std::invalid_argument unless the Hessian is d x d
  /// and exactly symmetric.
  QuadraticObjective(std::vector<double> hessian, std::vector<double> minimizer, double noise, double l2,
                     std::uint64_t seed);
  /// A = rotation diag(spectrum) rotation^T; spectrum and minimizer have the rotation's dimension.
  QuadraticObjective(ButterflyRotation rotation, std::vector<double> spectrum, std::vector<double> minimizer,
                     double noise, double l2, std::uint64_t seed);
  std::string name() const override { return "quadratic"; }
  int dimension() const override { return static_cast<int>(minimizer_.size()); }
  double evaluate(std::span<const double> x, std::span<double> gradient) const override;
  /// The state is A (x - x*), whole: blocks are slices of it.
  MicrobatchState prepare(std::span<const double> x, SampleKey key) const override;
  void block_gradient(std::span<const double> x, SampleKey key, const MicrobatchState& state, int begin, int end,
                      std::span<double> out) const override;

 private:
  void hessian_times(const std::vector<double>& u, std::span<double> out) const;  ///< out = A u
  std::vector<double> offset(std::span<const double> x) const;                    ///< x - x*

  std::vector<double> dense_;                  ///< row-major, or empty when A is rotated
  std::optional<ButterflyRotation> rotation_;  ///< Q when A = Q diag(spectrum_) Q^T
  std::vector<double> spectrum_;
  std::vector<double> minimizer_;
  double noise_, l2_;
  std::uint64_t seed_;
};

/// f(x) = 1/n sum_j phi(a_j . x, y_j) + l2/2 ||x||^2 over n stored samples, with phi the squared loss
/// 1/2 (m - y)^2 (least squares) or the logistic loss log(1 + exp(-y m)), y in {-1, +1}. The micro-batch
/// gradient averages batch_size samples drawn with replacement: index j of the batch is output j of the
/// SplitMix64 stream keyed (seed, replica, micro-batch), modulo n; or with `cyclic` batches, samples b * batch_size
/// ... (b + 1) * batch_size - 1 for b = micro-batch mod (n / batch_size).
class FiniteSumObjective final : public Objective {
 public:
  enum class Loss { Squared, Logistic };
  /// `features` row-major n x d, `targets` size n.
  FiniteSumObjective(Loss loss, int dimension, std::vector<double> features, std::vector<double> targets,
                     int batch_size, double l2, std::uint64_t seed, double gradient_noise = 0, bool cyclic = false);
  std::string name() const override { return loss_ == Loss::Squared ? "least_squares" : "logistic"; }
  int dimension() const override { return dimension_; }
  double evaluate(std::span<const double> x, std::span<double> gradient) const override;
  MicrobatchState prepare(std::span<const double> x, SampleKey key) const override;
  void block_gradient(std::span<const double> x, SampleKey key, const MicrobatchState& state, int begin, int end,
                      std::span<double> out) const override;

 private:
  /// The samples are stored twice. By rows, for the few random ones of a micro-batch; and in panels of kPanel for
  /// the full objective: feature k of samples 8g .. 8g+7 is contiguous, so that the margins of a panel are vector
  /// operations whose lanes still sum each sample's terms in increasing k.
  static constexpr std::size_t kPanel = 8;
  const double* row(std::size_t j) const { return features_.data() + j * dimension_; }
  const double* panel(std::size_t g) const { return panels_.data() + g * kPanel * dimension_; }
  void panel_margins(const double* panel, std::span<const double> x, double* margins) const;
  double phi(double margin, double target) const;
  double phi_slope(double margin, double target) const;

  Loss loss_;
  int dimension_;
  std::vector<double> features_;  ///< row-major n x d
  std::vector<double> panels_;    ///< panels of kPanel samples (the last padded with zeros)
  std::vector<double> targets_;
  int batch_size_;
  double l2_;
  std::uint64_t seed_;
  double gradient_noise_;  ///< std of the noise added to each coordinate of a micro-batch gradient
  bool cyclic_;            ///< contiguous batches in order (ObjectiveSpec::Batches::Cyclic)
};

/// Determinism: data and noise come from SplitMix64 streams and use only +, -, *, / and sqrt, so they are the same
/// bits on every platform; so are the quadratic and least squares runs built on them (with this compiler's default
/// of no fused multiply-add on x86-64). The logistic loss calls exp and log1p, whose last bit may differ between
/// math libraries (glibc even picks a variant by CPU): logistic runs are reproducible bit for bit on one machine.
///
/// Builds the seeded objective `spec` describes (see ObjectiveSpec; data generation in sim/converge/SyntheticData.hpp;
/// char_lm in sim/converge/CharLm.hpp, whose text is read here: InputError when spec.text cannot be read):
/// - quadratic: A = Q diag(linear_spectrum(d, kappa)) Q^T (Q the ButterflyRotation of the seed's Rotation
///   stream), x* with mean-0 variance-1 coordinates;
/// - least squares: features of covariance Q diag(spectrum) Q^T, y_j = a_j . w* + noise * eps_j;
/// - logistic: the same features, y_j = sign(a_j . w*) flipped with probability `noise`;
/// where w* has mean-0 coordinates of variance 4/d (so ||w*|| is about 2 and margins are of order 1);
/// - char_lm: CharLmObjective on load_char_lm_text(spec.text) with spec's context, E, H, batch size and seed.
std::unique_ptr<Objective> make_objective(const ObjectiveSpec& spec);

}  // namespace placesim
