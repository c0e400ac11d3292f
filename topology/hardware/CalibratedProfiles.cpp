#include "topology/hardware/CalibratedProfiles.hpp"

#include <map>

namespace placesim {

namespace {

// Fitted values, rounded to four significant digits, of topology/profiles/<name>.json, produced by
// scripts/refit_profiles.py (`placesim calibrate topology/profiles/measurements/<name>.json`; a100-40gb shares the
// a100-80gb die and fit; the Hopper and Blackwell files take memory_efficiency and overlap_penalty transferred from
// the A100 layer fit, see their "sources"). Field order: gemm_peak_efficiency, gemm_latency_s, gemm_k_overhead,
// gemm_tile, gemm_roofline_p, memory_efficiency, kernel_latency_s, flash_attention_efficiency, overlap_penalty, then
// the overlap interference: intra-node compute_slowdown, comm_slowdown, inter-node compute_slowdown, comm_slowdown (1 =
// not measured, off).
struct Fitted {
  double values[13];
};

const std::map<std::string, Fitted>& fitted() {
  static const std::map<std::string, Fitted> table = {
      {"a100-40gb", {0.8211, 8.621e-06, 180.8, 128.0, 64.55, 0.8275, 4e-06, 0.5755, 0.6308, 1.798, 1.422, 1.0, 1.0}},
      {"a100-80gb", {0.8211, 8.621e-06, 180.8, 128.0, 64.55, 0.8275, 4e-06, 0.5755, 0.6308, 1.798, 1.422, 1.0, 1.0}},
      {"h100-sxm", {0.6827, 5.838e-06, 1.671e-09, 128.0, 5.854, 0.8981, 4e-06, 0.3319, 0.6308, 1.35, 1.124, 1.0, 1.0}},
      {"h200", {0.6845, 7.033e-06, 40.78, 128.0, 55.96, 0.8747, 4e-06, 0.3333, 0.6308, 1.0, 1.0, 1.0, 1.0}},
      {"b200", {0.7472, 6.384e-06, 85.46, 128.0, 3.928, 0.8981, 4e-06, 0.1664, 0.6308, 1.0, 1.0, 1.0, 1.0}},
  };
  return table;
}

// Measured power limits (power_limit_w, compute_scale), from the same refit: the power_limited_gemm points of
// topology/profiles/measurements/<name>.json.
const std::map<std::string, std::vector<PowerScale>>& power_scales() {
  static const std::map<std::string, std::vector<PowerScale>> table = {
      {"h100-sxm", {{500.0, 0.8442}}},
  };
  return table;
}

}  // namespace

ComputeProfile calibrated_profile(const std::string& name) {
  const double* v = fitted().at(name).values;
  ComputeProfile p;
  p.gemm_peak_efficiency = v[0];
  p.gemm_latency_s = v[1];
  p.gemm_k_overhead = v[2];
  p.gemm_tile = v[3];
  p.gemm_roofline_p = v[4];
  p.memory_efficiency = v[5];
  p.kernel_latency_s = v[6];
  p.flash_attention_efficiency = v[7];
  p.overlap_penalty = v[8];
  p.intra_node_interference = {v[9], v[10]};
  p.inter_node_interference = {v[11], v[12]};
  if (auto it = power_scales().find(name); it != power_scales().end()) p.power_scales = it->second;
  p.sources = {"topology/profiles/" + name + ".json"};
  return p;
}

}  // namespace placesim
