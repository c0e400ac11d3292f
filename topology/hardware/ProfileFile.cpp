#include <cmath>
#include <cstdio>

#include "topology/hardware/Accelerator.hpp"

namespace placesim {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Every field of a profile is required: a profile that silently fell back to a default would no longer say what was
// measured.
double required_non_negative(ObjectReader& r, const char* key) {
  if (!r.has(key)) throw InputError(r.field(key) + " is required but missing");
  double v = r.get_number(key, 0);
  if (!(v >= 0) || !std::isfinite(v)) throw InputError(r.field(key) + "=" + number(v) + " must not be negative");
  return v;
}

double required_fraction(ObjectReader& r, const char* key) {
  double v = required_non_negative(r, key);
  if (!(v > 0 && v <= 1)) throw InputError(r.field(key) + "=" + number(v) + " must be in (0, 1]");
  return v;
}

}  // namespace

ComputeProfile parse_compute_profile(const Json& value, const std::string& field) {
  ObjectReader r(value, field);
  ComputeProfile p;
  p.gemm_peak_efficiency = required_fraction(r, "gemm_peak_efficiency");
  p.gemm_latency_s = required_non_negative(r, "gemm_latency_s");
  p.gemm_k_overhead = required_non_negative(r, "gemm_k_overhead");
  p.gemm_tile = required_non_negative(r, "gemm_tile");
  if (p.gemm_tile < 1) throw InputError(r.field("gemm_tile") + "=" + number(p.gemm_tile) + " must be >= 1");
  // Optional (profiles written before it existed have no wave quantization): a whole number of SMs, 0 = off.
  if (r.has("gemm_sms")) {
    p.gemm_sms = required_non_negative(r, "gemm_sms");
    if (p.gemm_sms != std::floor(p.gemm_sms))
      throw InputError(r.field("gemm_sms") + "=" + number(p.gemm_sms) + " must be a whole number of SMs");
  }
  p.gemm_roofline_p = required_non_negative(r, "gemm_roofline_p");
  if (p.gemm_roofline_p < 1)
    throw InputError(r.field("gemm_roofline_p") + "=" + number(p.gemm_roofline_p) + " must be >= 1");
  p.memory_efficiency = required_fraction(r, "memory_efficiency");
  p.kernel_latency_s = required_non_negative(r, "kernel_latency_s");
  p.flash_attention_efficiency = required_fraction(r, "flash_attention_efficiency");
  p.overlap_penalty = required_non_negative(r, "overlap_penalty");
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
  if (const Json* sources = r.child("sources")) {
    if (!sources->is_array()) throw InputError(r.field("sources") + " must be a list of strings");
    for (const auto& s : *sources) {
      if (!s.is_string()) throw InputError(r.field("sources") + " must be a list of strings, got " + show(s));
      p.sources.push_back(s.get<std::string>());
    }
  }
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
