#include "topology/hardware/Accelerator.hpp"

#include <filesystem>
#include <map>

#include "topology/hardware/CalibratedProfiles.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

struct Preset {
  AcceleratorSpec spec;
  std::string description;
};

AcceleratorSpec make(const std::string& name, double peak, double fp32, double hbm_bytes, double hbm_bw_Bps,
                     const ComputeProfile& profile) {
  AcceleratorSpec a;
  a.name = name;
  a.peak_bf16_flops = a.peak_fp16_flops = peak;
  a.peak_fp32_flops = fp32;
  a.hbm_bytes = hbm_bytes;
  a.hbm_bw_Bps = hbm_bw_Bps;
  a.profile = profile;
  a.gemm_efficiency = profile.gemm_peak_efficiency;
  return a;
}

// Dense (non-sparse) tensor-core peaks from NVIDIA's data sheets: A100 (312 TFLOP/s bf16/fp16, 19.5 fp32 without
// TF32), H100 SXM5 (989.4), H200 (989.4, 141 GB HBM3e at 4.8 TB/s), B200 (2.25 PFLOP/s bf16 dense, 8 TB/s).
// Memory as reported by the driver (GiB) where NVIDIA quotes "80GB". The compute profiles are the fits of
// topology/profiles/measurements/*.json by `placesim calibrate` (see topology/hardware/CalibratedProfiles.cpp).
const std::map<std::string, Preset>& presets() {
  static const std::map<std::string, Preset> table = {
      {"a100-40gb", {make("a100-40gb", 312e12, 19.5e12, 40.0 * (1ull << 30), 1555e9, calibrated_profile("a100-40gb")),
                     "NVIDIA A100 SXM4 40GB"}},
      {"a100-80gb", {make("a100-80gb", 312e12, 19.5e12, 80.0 * (1ull << 30), 2039e9, calibrated_profile("a100-80gb")),
                     "NVIDIA A100 SXM4 80GB"}},
      {"h100-sxm", {make("h100-sxm", 989.4e12, 66.9e12, 80.0 * (1ull << 30), 3350e9, calibrated_profile("h100-sxm")),
                    "NVIDIA H100 SXM5 80GB"}},
      {"h200", {make("h200", 989.4e12, 66.9e12, 141e9, 4800e9, calibrated_profile("h200")), "NVIDIA H200 SXM 141GB"}},
      {"b200", {make("b200", 2250e12, 80e12, 180e9, 8000e9, calibrated_profile("b200")),
                "NVIDIA B200 (DGX B200, 180GB usable)"}},
  };
  return table;
}

double positive_quantity(ObjectReader& r, const char* key, double fallback,
                         double (*parse)(const std::string&, const std::string&)) {
  if (!r.has(key)) return fallback;
  const Json& v = *r.child(key);
  double x = v.is_string() ? parse(v.get<std::string>(), r.field(key)) : r.get_number(key, 0);
  if (!(x > 0)) throw InputError(r.field(key) + "=" + show(v) + " must be positive");
  return x;
}

std::string resolve_path(const std::string& path, const std::string& base_dir) {
  std::filesystem::path p(path);
  if (p.is_relative() && !base_dir.empty() && !std::filesystem::exists(p)) p = std::filesystem::path(base_dir) / p;
  return p.string();
}

}  // namespace

AcceleratorSpec accelerator_preset(const std::string& name, const std::string& field) {
  auto it = presets().find(name);
  if (it == presets().end()) {
    std::vector<std::string> names;
    for (const auto& [n, p] : presets()) names.push_back(n);
    std::string guess = nearest(name, names);
    throw InputError(field + "=" + name + " is not a known accelerator" +
                     (guess.empty() ? std::string(" (known: a100-40gb, a100-80gb, h100-sxm, h200, b200)")
                                    : " (did you mean '" + guess + "'?)"));
  }
  return it->second.spec;
}

std::vector<std::pair<std::string, std::string>> accelerator_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : presets()) out.emplace_back(name, p.description);
  return out;
}

AcceleratorSpec parse_accelerator(const Json& value, const std::string& field, const std::string& base_dir) {
  if (value.is_string()) return accelerator_preset(value.get<std::string>(), field);
  ObjectReader r(value, field);
  AcceleratorSpec a;
  if (r.has("preset")) a = accelerator_preset(r.get_string("preset", ""), r.field("preset"));
  if (r.has("profile")) {
    ProfileFile file = load_profile_file(resolve_path(r.require_string("profile"), base_dir));
    a.profile = file.compute;
    a.profile_intra_node = file.intra_node;
    a.profile_inter_node = file.inter_node;
    a.gemm_efficiency = a.profile.gemm_peak_efficiency;
  }
  a.name = r.get_string("name", a.name);
  a.peak_bf16_flops = positive_quantity(r, "peak_bf16_flops", a.peak_bf16_flops, parse_flops);
  a.peak_fp16_flops = positive_quantity(r, "peak_fp16_flops", a.peak_fp16_flops, parse_flops);
  a.peak_fp32_flops = positive_quantity(r, "peak_fp32_flops", a.peak_fp32_flops, parse_flops);
  a.hbm_bytes = positive_quantity(r, "hbm_bytes", a.hbm_bytes, parse_bytes);
  a.hbm_bw_Bps = positive_quantity(r, "hbm_bw", a.hbm_bw_Bps, parse_bandwidth);
  a.gemm_efficiency = r.get_number("gemm_efficiency", a.gemm_efficiency);
  if (!(a.gemm_efficiency > 0 && a.gemm_efficiency <= 1))
    throw InputError(r.field("gemm_efficiency") + "=" + std::to_string(a.gemm_efficiency) + " must be in (0, 1]");
  r.finish();
  for (auto [v, name] : {std::pair{a.peak_bf16_flops, "peak_bf16_flops"}, {a.hbm_bytes, "hbm_bytes"}})
    if (!(v > 0)) throw InputError(field + "." + name + " is required for a custom accelerator");
  if (a.peak_fp16_flops == 0) a.peak_fp16_flops = a.peak_bf16_flops;
  if (a.peak_fp32_flops == 0) a.peak_fp32_flops = a.peak_bf16_flops / 16;
  return a;
}

}  // namespace placesim
