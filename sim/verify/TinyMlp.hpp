#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "sim/converge/Objectives.hpp"

namespace placesim {

/// The numeric executor's model: a stack of `layers` square layers of width kWidth, z = tanh(W x + b) except the
/// last (z = W x + b), trained on the squared error 1/2 ||z - t||^2 averaged over a micro-batch of kBatch samples.
/// fp64 throughout. Each layer is one gather unit of kUnitElems parameters, W row-major (out x in) then b.
namespace tiny_mlp {

inline constexpr int kWidth = 5;
inline constexpr int kUnitElems = kWidth * kWidth + kWidth;  ///< 30: not a multiple of 4, so units are padded
inline constexpr int kBatch = 2;                             ///< samples per micro-batch
inline constexpr int kActElems = kBatch * kWidth;            ///< one unit's input activation

/// tanh from +, -, *, / and exact scalings only (the same bits on every platform); within 1e-15 of std::tanh.
double tanh_portable(double y);

/// The initial parameters of all layers (layers x kUnitElems), from the seed.
std::vector<double> initial_parameters(int layers, std::uint64_t seed);

/// Inputs and targets of micro-batch `microbatch` of data rank `rank` and replica `replica` (kActElems each).
struct Sample {
  std::vector<double> input, target;
};
Sample sample(std::uint64_t seed, int replica, std::int64_t rank, std::int64_t microbatch);

/// z = act(W x + b) for the kBatch samples of x (kActElems); `unit` holds kUnitElems parameters.
void forward(std::span<const double> unit, std::span<const double> x, bool last, std::span<double> z);

/// Backward through one unit whose input was x: from dL/dz, writes dL/dunit (kUnitElems, overwritten) and dL/dx.
void backward(std::span<const double> unit, std::span<const double> x, std::span<const double> dz, bool last,
              std::span<double> dunit, std::span<double> dx);

/// dL/dz of the last layer's output for the micro-batch loss (the mean over its samples).
void loss_gradient(std::span<const double> z, std::span<const double> target, std::span<double> dz);
double loss(std::span<const double> z, std::span<const double> target);

/// Forward and backward of the whole model at `theta` on one sample: the gradient (size theta), the loss returned.
double full_gradient(std::span<const double> theta, int layers, const Sample& s, std::span<double> gradient);

}  // namespace tiny_mlp

/// The tiny MLP as an Objective of the stale-SGD executor (sim/converge): x is the offset from the initial
/// parameters (the executor starts from x = 0), micro-batch (replica r, i) the sample of data rank 0. evaluate()
/// averages the loss over the first 8 micro-batches of replica 0.
class TinyMlpObjective final : public Objective {
 public:
  TinyMlpObjective(int layers, std::uint64_t seed);
  std::string name() const override { return "tiny_mlp"; }
  int dimension() const override { return static_cast<int>(theta0_.size()); }
  double evaluate(std::span<const double> x, std::span<double> gradient) const override;
  MicrobatchState prepare(std::span<const double> x, SampleKey key) const override;
  void block_gradient(std::span<const double> x, SampleKey key, const MicrobatchState& state, int begin, int end,
                      std::span<double> out) const override;
  const std::vector<double>& initial() const { return theta0_; }

 private:
  int layers_;
  std::uint64_t seed_;
  std::vector<double> theta0_;
};

}  // namespace placesim
