#include "topology/Accelerator.hpp"

#include <map>

#include "topology/Units.hpp"

namespace placesim {

namespace {

// Dense (non-sparse) tensor-core peaks from NVIDIA's data sheets: A100 (312 TFLOP/s bf16/fp16, 19.5 fp32 without
// TF32), H100 SXM5 (989.4), H200 (989.4, 141 GB HBM3e at 4.8 TB/s), B200 (2.25 PFLOP/s bf16 dense, 8 TB/s).
// Memory as reported by the driver (GiB) where NVIDIA quotes "80GB".
const std::map<std::string, std::pair<AcceleratorSpec, std::string>>& presets() {
  static const std::map<std::string, std::pair<AcceleratorSpec, std::string>> table = {
      {"a100-40gb", {{"a100-40gb", 312e12, 312e12, 19.5e12, 40.0 * (1ull << 30), 1555e9}, "NVIDIA A100 SXM4 40GB"}},
      {"a100-80gb", {{"a100-80gb", 312e12, 312e12, 19.5e12, 80.0 * (1ull << 30), 2039e9}, "NVIDIA A100 SXM4 80GB"}},
      {"h100-sxm", {{"h100-sxm", 989.4e12, 989.4e12, 66.9e12, 80.0 * (1ull << 30), 3350e9}, "NVIDIA H100 SXM5 80GB"}},
      {"h200", {{"h200", 989.4e12, 989.4e12, 66.9e12, 141e9, 4800e9}, "NVIDIA H200 SXM 141GB"}},
      {"b200", {{"b200", 2250e12, 2250e12, 80e12, 180e9, 8000e9}, "NVIDIA B200 (DGX B200, 180GB usable)"}},
  };
  return table;
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
  return it->second.first;
}

std::vector<std::pair<std::string, std::string>> accelerator_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : presets()) out.emplace_back(name, p.second);
  return out;
}

AcceleratorSpec parse_accelerator(const Json& value, const std::string& field) {
  if (value.is_string()) return accelerator_preset(value.get<std::string>(), field);
  ObjectReader r(value, field);
  AcceleratorSpec a;
  if (r.has("preset")) a = accelerator_preset(r.get_string("preset", ""), r.field("preset"));
  a.name = r.get_string("name", a.name);
  auto flops = [&](const char* key, double& target) {
    if (!r.has(key)) return;
    const Json& v = *r.child(key);
    target = v.is_string() ? parse_flops(v.get<std::string>(), r.field(key)) : r.get_number(key, 0);
    if (!(target > 0)) throw InputError(r.field(key) + "=" + show(v) + " must be positive");
  };
  flops("peak_bf16_flops", a.peak_bf16_flops);
  flops("peak_fp16_flops", a.peak_fp16_flops);
  flops("peak_fp32_flops", a.peak_fp32_flops);
  if (r.has("hbm_bytes")) {
    const Json& v = *r.child("hbm_bytes");
    a.hbm_bytes = v.is_string() ? parse_bytes(v.get<std::string>(), r.field("hbm_bytes")) : r.get_number("hbm_bytes", 0);
    if (!(a.hbm_bytes > 0)) throw InputError(r.field("hbm_bytes") + "=" + show(v) + " must be positive");
  }
  if (r.has("hbm_bw")) {
    const Json& v = *r.child("hbm_bw");
    a.hbm_bw_Bps = v.is_string() ? parse_bandwidth(v.get<std::string>(), r.field("hbm_bw")) : r.get_number("hbm_bw", 0);
    if (!(a.hbm_bw_Bps > 0)) throw InputError(r.field("hbm_bw") + "=" + show(v) + " must be positive");
  }
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
