#include "sim/Objectives.hpp"

#include <cmath>

#include "sim/DenseKernels.hpp"
#include "sim/Random.hpp"
#include "sim/SyntheticData.hpp"

namespace placesim {

namespace {

std::uint64_t stream_key(std::uint64_t seed, Stream stream, SampleKey key) {
  return derive_key(seed, static_cast<std::uint64_t>(stream), static_cast<std::uint64_t>(key.replica),
                    static_cast<std::uint64_t>(key.microbatch));
}

// log(1 + e^t) without overflow for large |t|.
double softplus(double t) { return t > 0 ? t + std::log1p(std::exp(-t)) : std::log1p(std::exp(t)); }

// 1 / (1 + e^-t) without overflow for large |t|.
double sigmoid(double t) {
  if (t >= 0) return 1.0 / (1.0 + std::exp(-t));
  double e = std::exp(t);
  return e / (1.0 + e);
}

}  // namespace

BlockSplit::BlockSplit(int dimension, int blocks) : dimension_(dimension), blocks_(blocks) {}

int BlockSplit::begin(int block) const {
  int base = dimension_ / blocks_, extra = dimension_ % blocks_;
  return block * base + (block < extra ? block : extra);
}

QuadraticObjective::QuadraticObjective(std::vector<double> hessian, std::vector<double> minimizer, double noise,
                                       double l2, std::uint64_t seed)
    : hessian_(std::move(hessian)), minimizer_(std::move(minimizer)), noise_(noise), l2_(l2), seed_(seed) {}

double QuadraticObjective::evaluate(std::span<const double> x, std::span<double> gradient) const {
  const std::size_t d = minimizer_.size();
  std::vector<double> u(d);
  for (std::size_t k = 0; k < d; ++k) u[k] = x[k] - minimizer_[k];
  dot_rows([&](std::size_t j) { return hessian_.data() + j * d; }, d, u.data(), d, gradient.data());
  double value = 0;
  for (std::size_t k = 0; k < d; ++k) {
    value += 0.5 * u[k] * gradient[k] + 0.5 * l2_ * x[k] * x[k];
    gradient[k] += l2_ * x[k];
  }
  return value;
}

void QuadraticObjective::sample_gradient(std::span<const double> x, SampleKey key, int begin, int end,
                                         std::span<double> out) const {
  const std::size_t d = minimizer_.size();
  std::vector<double> u(d);
  for (std::size_t k = 0; k < d; ++k) u[k] = x[k] - minimizer_[k];
  const double* rows = hessian_.data() + static_cast<std::size_t>(begin) * d;
  dot_rows([&](std::size_t j) { return rows + j * d; }, end - begin, u.data(), d, out.data());
  std::uint64_t noise_key = stream_key(seed_, Stream::Noise, key);
  for (int k = begin; k < end; ++k) {
    double xi = SplitMix64::to_standard(SplitMix64::at(noise_key, k));
    out[k - begin] += noise_ * xi + l2_ * x[k];
  }
}

FiniteSumObjective::FiniteSumObjective(Loss loss, int dimension, std::vector<double> features,
                                       std::vector<double> targets, int batch_size, double l2, std::uint64_t seed)
    : loss_(loss),
      dimension_(dimension),
      features_(std::move(features)),
      targets_(std::move(targets)),
      batch_size_(batch_size),
      l2_(l2),
      seed_(seed) {}

double FiniteSumObjective::phi(double margin, double target) const {
  if (loss_ == Loss::Squared) return 0.5 * (margin - target) * (margin - target);
  return softplus(-target * margin);
}

double FiniteSumObjective::phi_slope(double margin, double target) const {
  if (loss_ == Loss::Squared) return margin - target;
  return -target * sigmoid(-target * margin);
}

double FiniteSumObjective::evaluate(std::span<const double> x, std::span<double> gradient) const {
  const std::size_t n = targets_.size(), d = dimension_;
  std::vector<double> margins(n);
  dot_rows([&](std::size_t j) { return row(j); }, n, x.data(), d, margins.data());
  double sum = 0;
  std::fill(gradient.begin(), gradient.end(), 0.0);
  for (std::size_t j = 0; j < n; ++j) {
    sum += phi(margins[j], targets_[j]);
    double slope = phi_slope(margins[j], targets_[j]);
    const double* a = row(j);
    for (std::size_t k = 0; k < d; ++k) gradient[k] += slope * a[k];
  }
  double norm2 = 0;
  for (std::size_t k = 0; k < d; ++k) {
    norm2 += x[k] * x[k];
    gradient[k] = gradient[k] / static_cast<double>(n) + l2_ * x[k];
  }
  return sum / static_cast<double>(n) + 0.5 * l2_ * norm2;
}

void FiniteSumObjective::sample_gradient(std::span<const double> x, SampleKey key, int begin, int end,
                                         std::span<double> out) const {
  const std::size_t batch = batch_size_;
  std::vector<std::size_t> index(batch);
  SplitMix64 rng(stream_key(seed_, Stream::Batch, key));
  for (std::size_t& i : index) i = rng.below(targets_.size());
  std::vector<double> margins(batch);
  dot_rows([&](std::size_t j) { return row(index[j]); }, batch, x.data(), dimension_, margins.data());
  std::fill(out.begin(), out.end(), 0.0);
  for (std::size_t j = 0; j < batch; ++j) {
    double slope = phi_slope(margins[j], targets_[index[j]]);
    const double* a = row(index[j]);
    for (int k = begin; k < end; ++k) out[k - begin] += slope * a[k];
  }
  for (int k = begin; k < end; ++k) out[k - begin] = out[k - begin] / static_cast<double>(batch) + l2_ * x[k];
}

namespace {

std::unique_ptr<Objective> make_finite_sum(const ObjectiveSpec& spec, const std::vector<double>& spectrum) {
  const int d = spec.dimension, n = spec.samples;
  std::vector<double> features = rotated_features(n, spectrum, spec.seed);
  std::vector<double> truth =
      standard_vector(d, 2.0 / std::sqrt(static_cast<double>(d)), derive_key(spec.seed, std::uint64_t(Stream::Truth)));
  std::vector<double> margins(n);
  dot_rows([&](std::size_t j) { return features.data() + j * d; }, n, truth.data(), d, margins.data());
  SplitMix64 rng(derive_key(spec.seed, static_cast<std::uint64_t>(Stream::Targets)));
  std::vector<double> targets(n);
  bool logistic = spec.kind == ObjectiveKind::Logistic;
  for (int j = 0; j < n; ++j) {
    double draw = logistic ? rng.uniform() : rng.standard();
    if (!logistic) targets[j] = margins[j] + spec.noise * draw;
    else targets[j] = (margins[j] >= 0) == (draw >= spec.noise) ? 1.0 : -1.0;  // flipped when draw < noise
  }
  auto loss = logistic ? FiniteSumObjective::Loss::Logistic : FiniteSumObjective::Loss::Squared;
  return std::make_unique<FiniteSumObjective>(loss, d, std::move(features), std::move(targets), spec.batch_size,
                                              spec.l2, spec.seed);
}

}  // namespace

std::unique_ptr<Objective> make_objective(const ObjectiveSpec& spec) {
  std::vector<double> spectrum = linear_spectrum(spec.dimension, spec.condition_number);
  if (spec.kind != ObjectiveKind::Quadratic) return make_finite_sum(spec, spectrum);
  std::vector<double> minimizer =
      standard_vector(spec.dimension, 1.0, derive_key(spec.seed, static_cast<std::uint64_t>(Stream::Minimizer)));
  return std::make_unique<QuadraticObjective>(rotated_matrix(spectrum, spec.seed), std::move(minimizer), spec.noise,
                                              spec.l2, spec.seed);
}

}  // namespace placesim
