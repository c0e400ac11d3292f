#include "topology/hardware/Accelerator.hpp"

#include <filesystem>
#include <map>

#include "topology/hardware/CalibratedProfiles.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

struct Preset {
  AcceleratorSpec spec;
  std::string description;
};

AcceleratorSpec make(const std::string& name, const std::string& generation, double peak, double fp32, double fp8,
                     double hbm_bytes, double hbm_bw_Bps, const ComputeProfile& profile, double tdp_w) {
  AcceleratorSpec a;
  a.generation = generation;
  a.peak_fp8_flops = fp8;
  a.tdp_w = tdp_w;
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
// TF32, 400 W), H100 SXM5 (989.4, 700 W), H200 (989.4, 141 GB HBM3e at 4.8 TB/s, 700 W), B200 (2.25 PFLOP/s bf16
// dense, 8 TB/s, 1,000 W). H800 SXM5: the H100 SXM5 die and memory with NVLink cut to 400 GB/s bidirectional (989
// TFLOP/s dense: deepseek-ai/FlashMLA#75; NVLink 400 GB/s as papers' testbeds state it, no NVIDIA document found);
// its profile is h100-sxm's. A800 SXM4 80GB: the A100 SXM4 80GB with NVLink cut from 600 to 400 GB/s bidirectional
// (Reuters, 2022-11-08, "Nvidia offers new advanced chip for China that meets U.S. export controls": NVIDIA's
// statement, and a Chinese distributor's data sheet giving 400 GB/s chip to chip against the A100's 600); compute,
// 80 GB HBM2e and the 400 W SXM TDP as the A100's (Tweakers, 2022-11, from the same data sheets); its profile is
// a100-80gb's. GB200 (NVL72 product page: 360 PFLOP/s bf16 per 72 GPUs with sparsity, dense one half =
// 2.5 PFLOP/s per GPU; 186 GB HBM3e (MLPerf system files); 8 TB/s; 1,200 W): the Blackwell die of B200 at a higher
// power limit, so the b200 profile (fitted at 1,000 W) applied to GB200's own peak.
// docs/research/issue17-accelerators.md lists the sources. Memory is what the driver reports as the device's total
// (nvidia-smi): 80 GiB for the A100 80GB; 81,559 MiB for the H100 80GB and H800 (Modal, "Why does an NVIDIA H100 80GB
// card offer 85.52 GB?", its nvidia-smi table); 183,359 MiB for the B200 and 189,471 MiB for the GB200 (the totals
// public nvidia-smi outputs of DGX B200 and GB200 NVL72 nodes print), where NVIDIA's data sheets say 180 GB and
// 186 GB. Dense FP8 peaks from the same data sheets: none on A100; 1,979 TFLOP/s on H100 SXM5, H200 and H800 (twice
// bf16); B200 4.5 PFLOP/s and GB200 5 PFLOP/s per GPU (twice bf16). The compute profiles are the fits of
// topology/profiles/measurements/*.json by `placesim calibrate` (see topology/hardware/CalibratedProfiles.cpp).
const std::map<std::string, Preset>& presets() {
  static const std::map<std::string, Preset> table = {
      {"a100-40gb",
       {make("a100-40gb", "ampere", 312e12, 19.5e12, 0, 40.0 * (1ull << 30), 1555e9, calibrated_profile("a100-40gb"),
             400),
        "NVIDIA A100 SXM4 40GB"}},
      {"a100-80gb",
       {make("a100-80gb", "ampere", 312e12, 19.5e12, 0, 80.0 * (1ull << 30), 2039e9, calibrated_profile("a100-80gb"),
             400),
        "NVIDIA A100 SXM4 80GB"}},
      {"a800",
       {make("a800", "ampere", 312e12, 19.5e12, 0, 80.0 * (1ull << 30), 2039e9, calibrated_profile("a100-80gb"), 400),
        "NVIDIA A800 SXM4 80GB (A100 die, NVLink 400 GB/s bidirectional; a100-80gb profile)"}},
      {"h100-sxm",
       {make("h100-sxm", "hopper", 989.4e12, 66.9e12, 1979e12, 81559.0 * (1ull << 20), 3350e9,
             calibrated_profile("h100-sxm"), 700),
        "NVIDIA H100 SXM5 80GB"}},
      {"h200",
       {make("h200", "hopper", 989.4e12, 66.9e12, 1979e12, 141e9, 4800e9, calibrated_profile("h200"), 700),
        "NVIDIA H200 SXM 141GB"}},
      {"h800",
       {make("h800", "hopper", 989.4e12, 66.9e12, 1979e12, 81559.0 * (1ull << 20), 3350e9,
             calibrated_profile("h100-sxm"), 700),
        "NVIDIA H800 SXM5 80GB (H100 die, NVLink 400 GB/s bidirectional; h100-sxm profile)"}},
      {"b200",
       {make("b200", "blackwell", 2250e12, 80e12, 4500e12, 183359.0 * (1ull << 20), 8000e9, calibrated_profile("b200"),
             1000),
        "NVIDIA B200 (DGX B200, 183,359 MiB = 192 GB visible)"}},
      {"gb200",
       {make("gb200", "blackwell", 2500e12, 80e12, 5000e12, 189471.0 * (1ull << 20), 8000e9, calibrated_profile("b200"),
             1200),
        "NVIDIA GB200 GPU (NVL72, 1,200 W, 189,471 MiB = 199 GB visible; b200 profile on its own peak)"}},
  };
  return table;
}

std::string resolve_path(const std::string& path, const std::string& base_dir) {
  std::filesystem::path p(path);
  if (p.is_relative() && !base_dir.empty() && !std::filesystem::exists(p)) p = std::filesystem::path(base_dir) / p;
  return p.string();
}

}  // namespace

AcceleratorSpec accelerator_preset(const std::string& name, const std::string& field) {
  auto it = presets().find(name);
  if (it == presets().end())
    refuse_name(field, name, "a known accelerator", names_of(presets()),
                " (known: a100-40gb, a100-80gb, a800, b200, gb200, h100-sxm, h200, h800)");
  return it->second.spec;
}

double power_limited_scale(const ComputeProfile& profile, double tdp_w, double w, ScaleBasis* basis) {
  auto say = [basis](ScaleBasis b) {
    if (basis) *basis = b;
  };
  const std::vector<PowerScale>& m = profile.power_scales;
  if (m.empty() || !(tdp_w > 0)) {
    say(ScaleBasis::Linear);
    return w / tdp_w;
  }
  if (w < m.front().power_limit_w) {
    say(ScaleBasis::BelowMeasured);
    return m.front().compute_scale * w / m.front().power_limit_w;
  }
  // Between measured limits, and from the highest one to the rated power (scale 1), linearly.
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (w == m[i].power_limit_w) {
      say(ScaleBasis::Measured);
      return m[i].compute_scale;
    }
    const double hi_w = i + 1 < m.size() ? m[i + 1].power_limit_w : tdp_w;
    const double hi_s = i + 1 < m.size() ? m[i + 1].compute_scale : 1.0;
    if (w < hi_w) {
      say(ScaleBasis::Interpolated);
      return m[i].compute_scale + (hi_s - m[i].compute_scale) * (w - m[i].power_limit_w) / (hi_w - m[i].power_limit_w);
    }
  }
  say(ScaleBasis::Rated);
  return 1.0;
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
  a.peak_bf16_flops = r.get_positive("peak_bf16_flops", a.peak_bf16_flops, parse_flops);
  a.peak_fp16_flops = r.get_positive("peak_fp16_flops", a.peak_fp16_flops, parse_flops);
  a.peak_fp32_flops = r.get_positive("peak_fp32_flops", a.peak_fp32_flops, parse_flops);
  a.peak_fp8_flops = r.get_positive("peak_fp8_flops", a.peak_fp8_flops, parse_flops);
  a.hbm_bytes = r.get_positive("hbm_bytes", a.hbm_bytes, parse_bytes);
  a.hbm_bw_Bps = r.get_positive("hbm_bw", a.hbm_bw_Bps, parse_bandwidth);
  a.gemm_efficiency = r.get_fraction("gemm_efficiency", a.gemm_efficiency);
  a.tdp_w = r.get_non_negative("tdp_w", a.tdp_w);
  if (r.has("power_limit_w")) {
    const double w = r.get_positive("power_limit_w", 0);
    if (a.tdp_w <= 0)
      throw InputError(r.field("power_limit_w") + "=" + format_significant(w, 4) + " needs the rated power: give " +
                       r.field("tdp_w") + " for a custom accelerator");
    r.check(w <= a.tdp_w, "power_limit_w",
            "must not exceed the rated " + format_significant(a.tdp_w, 4) + " W (tdp_w) the peaks are quoted at");
    r.check(w >= 0.25 * a.tdp_w, "power_limit_w",
            "below a quarter of the rated " + format_significant(a.tdp_w, 4) +
                " W: the linear clock model is not supported by any measurement there");
    for (const PowerScale& m : a.profile.power_scales)
      if (!(m.power_limit_w < a.tdp_w))
        throw InputError(r.field("power_limit_w") + ": the profile's measured power limit " +
                         format_significant(m.power_limit_w, 4) + " W is not below the rated " +
                         format_significant(a.tdp_w, 4) + " W (tdp_w) it scales from");
    a.power_limit_w = w == a.tdp_w ? 0 : w;
    a.compute_scale = w == a.tdp_w ? 1.0 : power_limited_scale(a.profile, a.tdp_w, w, &a.compute_scale_basis);
    a.peak_bf16_flops *= a.compute_scale;
    a.peak_fp16_flops *= a.compute_scale;
    a.peak_fp32_flops *= a.compute_scale;
    a.peak_fp8_flops *= a.compute_scale;
  }
  if (const Json* i = r.child("interference")) parse_interference(*i, r.field("interference"), a.profile);
  r.finish();
  for (auto [v, name] : {std::pair{a.peak_bf16_flops, "peak_bf16_flops"}, {a.hbm_bytes, "hbm_bytes"}})
    if (!(v > 0)) throw InputError(field + "." + name + " is required for a custom accelerator");
  if (a.peak_fp16_flops == 0) a.peak_fp16_flops = a.peak_bf16_flops;
  if (a.peak_fp32_flops == 0) a.peak_fp32_flops = a.peak_bf16_flops / 16;
  return a;
}

}  // namespace placesim
