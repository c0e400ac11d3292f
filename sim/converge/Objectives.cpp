#include "sim/converge/Objectives.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "sim/converge/CharLm.hpp"
#include "sim/converge/DenseKernels.hpp"
#include "sim/converge/Random.hpp"
#include "sim/converge/SyntheticData.hpp"

namespace placesim {

namespace {

std::uint64_t stream_key(std::uint64_t seed, RandomStream stream, SampleKey key) {
  return derive_key(seed, static_cast<std::uint64_t>(stream), static_cast<std::uint64_t>(key.replica),
                    static_cast<std::uint64_t>(key.microbatch));
}

// log(1 + e^t) without overflow for large |t|.
double softplus(double t) {
  return t > 0 ? t + std::log1p(std::exp(-t)) : std::log1p(std::exp(t));
}

// 1 / (1 + e^-t) without overflow for large |t|.
double sigmoid(double t) {
  if (t >= 0) return 1.0 / (1.0 + std::exp(-t));
  double e = std::exp(t);
  return e / (1.0 + e);
}

}  // namespace

std::vector<std::uint32_t> draw_batch(std::uint64_t seed, SampleKey key, int size, std::uint64_t n) {
  std::vector<std::uint32_t> batch(size);
  SplitMix64 rng(stream_key(seed, RandomStream::Batch, key));
  for (std::uint32_t& i : batch) i = static_cast<std::uint32_t>(rng.below(n));
  return batch;
}

BlockSplit::BlockSplit(int dimension, int blocks) : dimension_(dimension), blocks_(blocks), begins_(blocks + 1) {
  const int base = dimension / blocks, extra = dimension % blocks;
  for (int s = 0; s <= blocks; ++s) begins_[s] = s * base + std::min(s, extra);
}

QuadraticObjective::QuadraticObjective(std::vector<double> hessian, std::vector<double> minimizer, double noise,
                                       double l2, std::uint64_t seed)
    : dense_(std::move(hessian)), minimizer_(std::move(minimizer)), noise_(noise), l2_(l2), seed_(seed) {
  const std::size_t d = minimizer_.size();
  if (dense_.size() != d * d) throw std::invalid_argument("QuadraticObjective: the Hessian must be d x d");
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (dense_[i * d + j] != dense_[j * d + i])
        throw std::invalid_argument("QuadraticObjective: the Hessian must be exactly symmetric");
}

QuadraticObjective::QuadraticObjective(ButterflyRotation rotation, std::vector<double> spectrum,
                                       std::vector<double> minimizer, double noise, double l2, std::uint64_t seed)
    : rotation_(std::move(rotation)),
      spectrum_(std::move(spectrum)),
      minimizer_(std::move(minimizer)),
      noise_(noise),
      l2_(l2),
      seed_(seed) {}

void QuadraticObjective::hessian_times(const std::vector<double>& u, std::span<double> out) const {
  const std::size_t d = minimizer_.size();
  if (!rotation_) {
    dot_rows([&](std::size_t j) { return dense_.data() + j * d; }, d, u.data(), d, out.data());
    return;
  }
  std::copy(u.begin(), u.end(), out.begin());
  rotation_->apply_transpose(out.data());
  for (std::size_t k = 0; k < d; ++k) out[k] *= spectrum_[k];
  rotation_->apply(out.data());
}

std::vector<double> QuadraticObjective::offset(std::span<const double> x) const {
  std::vector<double> u(minimizer_.size());
  for (std::size_t k = 0; k < u.size(); ++k) u[k] = x[k] - minimizer_[k];
  return u;
}

double QuadraticObjective::evaluate(std::span<const double> x, std::span<double> gradient) const {
  std::vector<double> u = offset(x);
  hessian_times(u, gradient);
  double value = 0;
  for (std::size_t k = 0; k < u.size(); ++k) {
    value += 0.5 * u[k] * gradient[k] + 0.5 * l2_ * x[k] * x[k];
    gradient[k] += l2_ * x[k];
  }
  return value;
}

MicrobatchState QuadraticObjective::prepare(std::span<const double> x, SampleKey) const {
  MicrobatchState state;
  state.values.resize(minimizer_.size());
  hessian_times(offset(x), state.values);
  return state;
}

void QuadraticObjective::block_gradient(std::span<const double> x, SampleKey key, const MicrobatchState& state,
                                        int begin, int end, std::span<double> out) const {
  std::uint64_t noise_key = stream_key(seed_, RandomStream::Noise, key);
  for (int k = begin; k < end; ++k) {
    double xi = SplitMix64::to_standard(SplitMix64::at(noise_key, k));
    out[k - begin] = state.values[k] + noise_ * xi + l2_ * x[k];
  }
}

FiniteSumObjective::FiniteSumObjective(Loss loss, int dimension, std::vector<double> features,
                                       std::vector<double> targets, int batch_size, double l2, std::uint64_t seed,
                                       double gradient_noise, bool cyclic)
    : loss_(loss),
      dimension_(dimension),
      features_(std::move(features)),
      panels_((targets.size() + kPanel - 1) / kPanel * kPanel * dimension, 0.0),
      targets_(std::move(targets)),
      batch_size_(batch_size),
      l2_(l2),
      seed_(seed),
      gradient_noise_(gradient_noise),
      cyclic_(cyclic) {
  const std::size_t n = targets_.size(), d = dimension_;
  if (cyclic_ && (batch_size_ <= 0 || n % static_cast<std::size_t>(batch_size_) != 0))
    throw std::invalid_argument("FiniteSumObjective: cyclic batches need samples a multiple of batch_size");
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t k = 0; k < d; ++k)
      panels_[j / kPanel * kPanel * d + k * kPanel + j % kPanel] = features_[j * d + k];
}

double FiniteSumObjective::phi(double margin, double target) const {
  if (loss_ == Loss::Squared) return 0.5 * (margin - target) * (margin - target);
  return softplus(-target * margin);
}

double FiniteSumObjective::phi_slope(double margin, double target) const {
  if (loss_ == Loss::Squared) return margin - target;
  return -target * sigmoid(-target * margin);
}

namespace {

// Two doubles operated on lane by lane (GCC/Clang vector extension): exactly the scalar IEEE operations, so the
// results do not depend on the instruction set, while SSE2 already does two at once.
using Lanes = double __attribute__((vector_size(16)));
constexpr std::size_t kLanes = 2;

Lanes load(const double* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void store(double* p, Lanes v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace

// margins[j] = a_j . x summed in increasing k, for the kPanel samples of panel p.
void FiniteSumObjective::panel_margins(const double* p, std::span<const double> x, double* margins) const {
  Lanes m[kPanel / kLanes] = {};
  for (std::size_t k = 0; k < static_cast<std::size_t>(dimension_); ++k) {
    const Lanes xk = Lanes{} + x[k];
    for (std::size_t v = 0; v < kPanel / kLanes; ++v) m[v] += xk * load(p + k * kPanel + v * kLanes);
  }
  for (std::size_t v = 0; v < kPanel / kLanes; ++v) store(margins + v * kLanes, m[v]);
}

// One pass over the data: each panel gives its margins and, while still in cache, its part of the gradient. The
// gradient is gathered per panel lane (lane j of every panel in increasing panel order), then the lanes are added
// in increasing j: a fixed order that keeps every operation a contiguous vector one.
double FiniteSumObjective::evaluate(std::span<const double> x, std::span<double> gradient) const {
  const std::size_t n = targets_.size(), d = dimension_;
  std::vector<double> by_lane(d * kPanel, 0.0);
  double sum = 0;
  for (std::size_t first = 0; first < n; first += kPanel) {
    const double* p = panel(first / kPanel);
    double margins[kPanel], slopes[kPanel] = {};
    panel_margins(p, x, margins);
    for (std::size_t j = 0; j < std::min(kPanel, n - first); ++j) {
      sum += phi(margins[j], targets_[first + j]);
      slopes[j] = phi_slope(margins[j], targets_[first + j]);
    }
    Lanes slope[kPanel / kLanes];
    for (std::size_t v = 0; v < kPanel / kLanes; ++v) slope[v] = load(slopes + v * kLanes);
    for (std::size_t k = 0; k < d; ++k)
      for (std::size_t v = 0; v < kPanel / kLanes; ++v) {
        double* g = by_lane.data() + k * kPanel + v * kLanes;
        store(g, load(g) + slope[v] * load(p + k * kPanel + v * kLanes));
      }
  }
  double norm2 = 0;
  for (std::size_t k = 0; k < d; ++k) {
    double g = 0;
    for (std::size_t j = 0; j < kPanel; ++j) g += by_lane[k * kPanel + j];
    norm2 += x[k] * x[k];
    gradient[k] = g / static_cast<double>(n) + l2_ * x[k];
  }
  return sum / static_cast<double>(n) + 0.5 * l2_ * norm2;
}

MicrobatchState FiniteSumObjective::prepare(std::span<const double> x, SampleKey key) const {
  MicrobatchState state;
  if (cyclic_) {
    const std::int64_t batches = static_cast<std::int64_t>(targets_.size()) / batch_size_;
    const std::int64_t first = (key.microbatch % batches) * batch_size_;
    state.samples.resize(batch_size_);
    for (int j = 0; j < batch_size_; ++j) state.samples[j] = static_cast<std::uint32_t>(first + j);
  } else {
    state.samples = draw_batch(seed_, key, batch_size_, targets_.size());
  }
  const std::size_t d = dimension_;
  std::vector<double> margins(state.samples.size());
  dot_rows([&](std::size_t j) { return row(state.samples[j]); }, state.samples.size(), x.data(), d, margins.data());
  state.values.resize(batch_size_);
  for (int j = 0; j < batch_size_; ++j) state.values[j] = phi_slope(margins[j], targets_[state.samples[j]]);
  return state;
}

void FiniteSumObjective::block_gradient(std::span<const double> x, SampleKey key, const MicrobatchState& state,
                                        int begin, int end, std::span<double> out) const {
  const std::size_t width = end - begin;
  std::fill(out.begin(), out.begin() + width, 0.0);
  for (std::size_t j = 0; j < state.samples.size(); ++j) {
    const double slope = state.values[j];
    const double* a = row(state.samples[j]) + begin;
    for (std::size_t k = 0; k < width; ++k) out[k] += slope * a[k];
  }
  for (std::size_t k = 0; k < width; ++k) out[k] = out[k] / static_cast<double>(batch_size_) + l2_ * x[begin + k];
  if (gradient_noise_ > 0) {
    // Coordinate k's noise: an approximately Gaussian draw (Irwin-Hall: 12 uniforms - 6, variance 1) at positions
    // 12k .. 12k + 11 of the micro-batch's Noise stream, so a block is the slice of the full vector.
    const std::uint64_t noise_key = stream_key(seed_, RandomStream::Noise, key);
    for (std::size_t k = 0; k < width; ++k) {
      double z = -6;
      for (std::uint64_t i = 0; i < 12; ++i) z += SplitMix64::to_unit(SplitMix64::at(noise_key, 12 * (begin + k) + i));
      out[k] += gradient_noise_ * z;
    }
  }
}

namespace {

// Mean 0, variance 1, approximately Gaussian: the Irwin-Hall sum of 12 uniforms minus 6 (+ and - only: the same bits
// everywhere).
double gaussian_like(SplitMix64& rng) {
  double z = -6;
  for (int i = 0; i < 12; ++i) z += rng.uniform();
  return z;
}

// The logistic regression of the authors' code (src/objectives/logistic.py): X with independent N(0, 1) entries, w*
// ~ N(0, I), y = +1 with probability sigma(a . w*).
std::unique_ptr<Objective> make_gaussian_logistic(const ObjectiveSpec& spec) {
  const int d = spec.dimension, n = spec.samples;
  SplitMix64 features_rng(derive_key(spec.seed, static_cast<std::uint64_t>(RandomStream::Features)));
  std::vector<double> features(static_cast<std::size_t>(n) * d);
  for (double& v : features) v = gaussian_like(features_rng);
  SplitMix64 truth_rng(derive_key(spec.seed, static_cast<std::uint64_t>(RandomStream::Truth)));
  std::vector<double> truth(static_cast<std::size_t>(d));
  for (double& v : truth) v = gaussian_like(truth_rng);
  std::vector<double> margins(n);
  dot_rows([&](std::size_t j) { return features.data() + j * d; }, n, truth.data(), d, margins.data());
  SplitMix64 rng(derive_key(spec.seed, static_cast<std::uint64_t>(RandomStream::Targets)));
  std::vector<double> targets(n);
  for (int j = 0; j < n; ++j) targets[j] = rng.uniform() < 1 / (1 + std::exp(-margins[j])) ? 1.0 : -1.0;
  return std::make_unique<FiniteSumObjective>(FiniteSumObjective::Loss::Logistic, d, std::move(features),
                                              std::move(targets), spec.batch_size, spec.l2, spec.seed,
                                              spec.gradient_noise, spec.batches == ObjectiveSpec::Batches::Cyclic);
}

std::unique_ptr<Objective> make_finite_sum(const ObjectiveSpec& spec, const std::vector<double>& spectrum) {
  const int d = spec.dimension, n = spec.samples;
  if (spec.data == ObjectiveSpec::Data::Gaussian && spec.kind == ObjectiveKind::Logistic)
    return make_gaussian_logistic(spec);
  std::vector<double> features = rotated_features(n, spectrum, spec.seed);
  std::vector<double> truth = standard_vector(d, 2.0 / std::sqrt(static_cast<double>(d)),
                                              derive_key(spec.seed, std::uint64_t(RandomStream::Truth)));
  std::vector<double> margins(n);
  dot_rows([&](std::size_t j) { return features.data() + j * d; }, n, truth.data(), d, margins.data());
  SplitMix64 rng(derive_key(spec.seed, static_cast<std::uint64_t>(RandomStream::Targets)));
  std::vector<double> targets(n);
  bool logistic = spec.kind == ObjectiveKind::Logistic;
  for (int j = 0; j < n; ++j) {
    double draw = logistic ? rng.uniform() : rng.standard();
    if (!logistic)
      targets[j] = margins[j] + spec.noise * draw;
    else
      targets[j] = (margins[j] >= 0) == (draw >= spec.noise) ? 1.0 : -1.0;  // flipped when draw < noise
  }
  auto loss = logistic ? FiniteSumObjective::Loss::Logistic : FiniteSumObjective::Loss::Squared;
  return std::make_unique<FiniteSumObjective>(loss, d, std::move(features), std::move(targets), spec.batch_size,
                                              spec.l2, spec.seed, spec.gradient_noise,
                                              spec.batches == ObjectiveSpec::Batches::Cyclic);
}

}  // namespace

std::unique_ptr<Objective> make_objective(const ObjectiveSpec& spec) {
  if (spec.kind == ObjectiveKind::CharLm)
    return std::make_unique<CharLmObjective>(
        load_char_lm_text(spec.text),
        CharLmShape{spec.context, spec.embedding, spec.hidden, spec.batch_size, kCharLmEvalPositions}, spec.seed);
  std::vector<double> spectrum = linear_spectrum(spec.dimension, spec.condition_number);
  if (spec.kind != ObjectiveKind::Quadratic) return make_finite_sum(spec, spectrum);
  std::vector<double> minimizer =
      standard_vector(spec.dimension, 1.0, derive_key(spec.seed, static_cast<std::uint64_t>(RandomStream::Minimizer)));
  ButterflyRotation rotation(spec.dimension, derive_key(spec.seed, static_cast<std::uint64_t>(RandomStream::Rotation)));
  return std::make_unique<QuadraticObjective>(std::move(rotation), std::move(spectrum), std::move(minimizer),
                                              spec.noise, spec.l2, spec.seed);
}

}  // namespace placesim
