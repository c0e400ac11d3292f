#include <cmath>

#include "topology/hardware/Accelerator.hpp"

namespace placesim {

// Every field of a profile is required: a profile that silently fell back to a default would no longer say what was
// measured.
ComputeProfile parse_compute_profile(const Json& value, const std::string& field) {
  ObjectReader r(value, field);
  ComputeProfile p;
  p.gemm_peak_efficiency = r.require_fraction("gemm_peak_efficiency");
  p.gemm_latency_s = r.require_non_negative("gemm_latency_s");
  p.gemm_k_overhead = r.require_non_negative("gemm_k_overhead");
  p.gemm_tile = r.require_non_negative("gemm_tile");
  r.check(p.gemm_tile >= 1, "gemm_tile", "must be >= 1");
  // Optional (profiles written before it existed have no wave quantization): a whole number of SMs, 0 = off.
  p.gemm_sms = r.get_non_negative("gemm_sms", p.gemm_sms);
  r.check(p.gemm_sms == std::floor(p.gemm_sms), "gemm_sms", "must be a whole number of SMs");
  p.gemm_roofline_p = r.require_non_negative("gemm_roofline_p");
  r.check(p.gemm_roofline_p >= 1, "gemm_roofline_p", "must be >= 1");
  p.memory_efficiency = r.require_fraction("memory_efficiency");
  p.kernel_latency_s = r.require_non_negative("kernel_latency_s");
  p.flash_attention_efficiency = r.require_fraction("flash_attention_efficiency");
  p.overlap_penalty = r.require_non_negative("overlap_penalty");
  r.finish();
  return p;
}

ProfileFile load_profile_file(const std::string& path) {
  Json j = read_json_file(path);
  ObjectReader r(j, path);
  r.skip("accelerator");
  r.skip("fit");
  r.skip("description");
  const Json* compute = r.child("compute");
  if (!compute) throw InputError(path + ": compute is required but missing");
  ProfileFile file;
  ComputeProfile& p = file.compute;
  p = parse_compute_profile(*compute, path + ": compute");
  if (const Json* comm = r.child("comm")) {
    ObjectReader c(*comm, path + ": comm");
    if (c.has("fabric"))
      throw InputError(c.field("fabric") +
                       ": a profile's fabric names where it runs, intra_node or inter_node "
                       "(re-run placesim calibrate, or rename the key)");
    if (const Json* f = c.child("intra_node")) file.intra_node = parse_fabric_profile(*f, c.field("intra_node"));
    if (const Json* f = c.child("inter_node")) file.inter_node = parse_fabric_profile(*f, c.field("inter_node"));
    c.finish();
  }
  p.sources = r.get_strings("sources", p.sources);
  r.finish();
  return file;
}

Json compute_profile_to_json(const ComputeProfile& p) {
  return Json{{"gemm_peak_efficiency", p.gemm_peak_efficiency},
              {"gemm_latency_s", p.gemm_latency_s},
              {"gemm_k_overhead", p.gemm_k_overhead},
              {"gemm_tile", p.gemm_tile},
              {"gemm_sms", p.gemm_sms},
              {"gemm_roofline_p", p.gemm_roofline_p},
              {"memory_efficiency", p.memory_efficiency},
              {"kernel_latency_s", p.kernel_latency_s},
              {"flash_attention_efficiency", p.flash_attention_efficiency},
              {"overlap_penalty", p.overlap_penalty}};
}

}  // namespace placesim
