#include "topology/CalibratedProfiles.hpp"

namespace placesim {

ComputeProfile calibrated_profile(const std::string& name) {
  ComputeProfile p;
  p.gemm_peak_efficiency = 0.82;
  p.gemm_latency_s = 9e-6;
  p.gemm_k_overhead = 64;
  p.gemm_tile = 128;
  p.gemm_roofline_p = 2;
  p.memory_efficiency = 0.82;
  p.kernel_latency_s = 4e-6;
  p.flash_attention_efficiency = 0.57;
  (void)name;
  return p;
}

}  // namespace placesim
