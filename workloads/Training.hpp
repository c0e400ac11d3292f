#pragma once
#include <cstdint>
#include <string>

#include "workloads/JsonReader.hpp"

namespace placesim {

enum class DType { BF16, FP16, FP32 };
enum class Optimizer { Adam, SGD };
enum class Recompute { None, Selective, Full };

/// How a step is trained. Bytes per parameter follow mixed-precision practice (ZeRO §3): 16-bit parameters and
/// gradients with fp32 optimizer state (Adam: master weights, momentum, variance = 12 bytes).
struct TrainingSpec {
  std::int64_t global_batch = 0;  ///< samples per step; 0 = micro_batch * dp * microbatches
  std::int64_t micro_batch = 1;
  DType dtype = DType::BF16;
  Optimizer optimizer = Optimizer::Adam;
  double optimizer_bytes_per_param = 12;  ///< K of the ZeRO paper
  Recompute recompute = Recompute::None;
  bool recompute_given = false;  ///< training.recompute was written by the user (it then wins over a preset)
  /// Weight-gradient GEMMs accumulate into the gradient buffer themselves (Megatron-LM since 2022-02,
  /// --gradient-accumulation-fusion); false: each writes a fresh gradient that a separate kernel adds in (earlier
  /// Megatron-LM, e.g. the April 2021 code of Narayanan et al.; plain PyTorch autograd)
  bool grad_accumulation_fusion = true;

  int param_bytes() const { return dtype == DType::FP32 ? 4 : 2; }
  int grad_bytes() const { return param_bytes(); }
  int activation_bytes() const { return param_bytes(); }
};

/// Optimizer state bytes per parameter: Adam 12 (mixed) / 8 (fp32); SGD with momentum 8 (mixed) / 4 (fp32).
double default_optimizer_bytes(Optimizer optimizer, DType dtype);

TrainingSpec parse_training(const Json& value);

std::string to_string(DType d);
std::string to_string(Optimizer o);
std::string to_string(Recompute r);

}  // namespace placesim
