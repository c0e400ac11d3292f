#include "sim/verify/TinyMlp.hpp"

#include <cmath>

#include "sim/converge/Random.hpp"

namespace placesim {

namespace tiny_mlp {

namespace {

constexpr std::uint64_t kInitPurpose = 0x1a17, kDataPurpose = 0xda7a;

// exp and tanh from +, -, *, / and exact scalings only, so that every platform computes the same bits (libm's tanh
// may differ in the last bit between math libraries and CPU variants): the verify command's output is reproducible.
double exp_portable(double x) {
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  const double k = std::nearbyint(x / 0.6931471805599453);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= 0.35
  double sum = 1;
  for (int i = 18; i >= 1; --i) sum = 1 + sum * r / i;  // Taylor series by Horner's rule
  return std::ldexp(sum, static_cast<int>(k));
}

}  // namespace

double tanh_portable(double y) {
  if (y > 20) return 1;
  if (y < -20) return -1;
  const double e = exp_portable(2 * y);
  return (e - 1) / (e + 1);
}

std::vector<double> initial_parameters(int layers, std::uint64_t seed) {
  SplitMix64 rng(derive_key(seed, kInitPurpose));
  std::vector<double> theta(static_cast<std::size_t>(layers) * kUnitElems);
  // Weights of variance 1 / width (LeCun), biases of variance 1/16: every unit's gradient is non-zero.
  for (int l = 0; l < layers; ++l)
    for (int k = 0; k < kUnitElems; ++k)
      theta[static_cast<std::size_t>(l * kUnitElems + k)] =
          rng.standard() * (k < kWidth * kWidth ? 1 / std::sqrt(double(kWidth)) : 0.25);
  return theta;
}

Sample sample(std::uint64_t seed, int replica, std::int64_t rank, std::int64_t microbatch) {
  SplitMix64 rng(derive_key(seed, kDataPurpose, static_cast<std::uint64_t>(rank) * 65536 + std::uint64_t(replica),
                            static_cast<std::uint64_t>(microbatch)));
  Sample s{std::vector<double>(kActElems), std::vector<double>(kActElems)};
  for (double& v : s.input) v = rng.standard();
  for (double& v : s.target) v = 0.5 * rng.standard();
  return s;
}

void forward(std::span<const double> unit, std::span<const double> x, bool last, std::span<double> z) {
  for (int n = 0; n < kBatch; ++n)
    for (int o = 0; o < kWidth; ++o) {
      double y = unit[kWidth * kWidth + o];
      for (int i = 0; i < kWidth; ++i) y += unit[o * kWidth + i] * x[n * kWidth + i];
      z[n * kWidth + o] = last ? y : tanh_portable(y);
    }
}

void backward(std::span<const double> unit, std::span<const double> x, std::span<const double> dz, bool last,
              std::span<double> dunit, std::span<double> dx) {
  double z[kActElems], dy[kActElems];
  forward(unit, x, last, z);
  for (int k = 0; k < kActElems; ++k) dy[k] = last ? dz[k] : dz[k] * (1 - z[k] * z[k]);
  for (int o = 0; o < kWidth; ++o) {
    for (int i = 0; i < kWidth; ++i) {
      double g = 0;
      for (int n = 0; n < kBatch; ++n) g += dy[n * kWidth + o] * x[n * kWidth + i];
      dunit[o * kWidth + i] = g;
    }
    double gb = 0;
    for (int n = 0; n < kBatch; ++n) gb += dy[n * kWidth + o];
    dunit[kWidth * kWidth + o] = gb;
  }
  for (int n = 0; n < kBatch; ++n)
    for (int i = 0; i < kWidth; ++i) {
      double g = 0;
      for (int o = 0; o < kWidth; ++o) g += unit[o * kWidth + i] * dy[n * kWidth + o];
      dx[n * kWidth + i] = g;
    }
}

void loss_gradient(std::span<const double> z, std::span<const double> target, std::span<double> dz) {
  for (int k = 0; k < kActElems; ++k) dz[k] = (z[k] - target[k]) / kBatch;
}

double loss(std::span<const double> z, std::span<const double> target) {
  double sum = 0;
  for (int k = 0; k < kActElems; ++k) sum += 0.5 * (z[k] - target[k]) * (z[k] - target[k]);
  return sum / kBatch;
}

double full_gradient(std::span<const double> theta, int layers, const Sample& s, std::span<double> gradient) {
  std::vector<std::vector<double>> inputs(static_cast<std::size_t>(layers) + 1, std::vector<double>(kActElems));
  inputs[0] = s.input;
  auto unit = [&](int l) { return theta.subspan(static_cast<std::size_t>(l) * kUnitElems, kUnitElems); };
  for (int l = 0; l < layers; ++l)
    forward(unit(l), inputs[static_cast<std::size_t>(l)], l == layers - 1, inputs[static_cast<std::size_t>(l) + 1]);
  std::vector<double> dz(kActElems), dx(kActElems);
  loss_gradient(inputs.back(), s.target, dz);
  for (int l = layers - 1; l >= 0; --l) {
    backward(unit(l), inputs[static_cast<std::size_t>(l)], dz, l == layers - 1,
             gradient.subspan(static_cast<std::size_t>(l) * kUnitElems, kUnitElems), dx);
    dz.swap(dx);
  }
  return loss(inputs.back(), s.target);
}

}  // namespace tiny_mlp

TinyMlpObjective::TinyMlpObjective(int layers, std::uint64_t seed)
    : layers_(layers), seed_(seed), theta0_(tiny_mlp::initial_parameters(layers, seed)) {}

double TinyMlpObjective::evaluate(std::span<const double> x, std::span<double> gradient) const {
  std::vector<double> theta(theta0_.size()), g(theta0_.size());
  for (std::size_t k = 0; k < theta.size(); ++k) theta[k] = theta0_[k] + x[k];
  for (double& v : gradient) v = 0;
  double total = 0;
  constexpr int kEval = 8;
  for (int i = 0; i < kEval; ++i) {
    total += tiny_mlp::full_gradient(theta, layers_, tiny_mlp::sample(seed_, 0, 0, i), g);
    for (std::size_t k = 0; k < g.size(); ++k) gradient[k] += g[k] / kEval;
  }
  return total / kEval;
}

MicrobatchState TinyMlpObjective::prepare(std::span<const double> x, SampleKey key) const {
  MicrobatchState state;
  std::vector<double> theta(theta0_.size());
  for (std::size_t k = 0; k < theta.size(); ++k) theta[k] = theta0_[k] + x[k];
  state.values.assign(theta.size(), 0);
  tiny_mlp::full_gradient(theta, layers_, tiny_mlp::sample(seed_, key.replica, 0, key.microbatch), state.values);
  return state;
}

void TinyMlpObjective::block_gradient(std::span<const double>, SampleKey, const MicrobatchState& state, int begin,
                                      int end, std::span<double> out) const {
  for (int k = begin; k < end; ++k)
    out[static_cast<std::size_t>(k - begin)] = state.values[static_cast<std::size_t>(k)];
}

}  // namespace placesim
