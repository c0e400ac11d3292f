#pragma once
#include <string>
#include <utility>
#include <vector>

#include "workloads/JsonReader.hpp"
#include "workloads/Training.hpp"

namespace placesim {

/// One accelerator model. SI units: FLOP/s, bytes, bytes per second.
struct AcceleratorSpec {
  std::string name = "custom";
  double peak_bf16_flops = 0;
  double peak_fp16_flops = 0;
  double peak_fp32_flops = 0;
  double hbm_bytes = 0;
  double hbm_bw_Bps = 0;
  /// Fraction of peak a large GEMM sustains (placeholder until the calibrated compute model of issue 7).
  double gemm_efficiency = 0.6;

  double peak_flops(DType dtype) const {
    return dtype == DType::BF16 ? peak_bf16_flops : dtype == DType::FP16 ? peak_fp16_flops : peak_fp32_flops;
  }
};

/// A built-in accelerator (a100-40gb, a100-80gb, h100-sxm, h200, b200); unknown names are an InputError naming
/// `field` and the nearest known accelerator.
AcceleratorSpec accelerator_preset(const std::string& name, const std::string& field);
std::vector<std::pair<std::string, std::string>> accelerator_preset_list();
/// Parses an accelerator: a preset name, or an object with optional "preset" and overrides (units as strings).
AcceleratorSpec parse_accelerator(const Json& value, const std::string& field);

}  // namespace placesim
