#include "topology/hardware/Accelerator.hpp"

#include <filesystem>
#include <map>

#include "workloads/json/Embedded.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

constexpr const char* kAcceleratorFolder = "topology/hardware/accelerators";
constexpr const char* kProfileFolder = "topology/profiles";

std::string resolve_path(const std::string& path, const std::string& base_dir) {
  std::filesystem::path p(path);
  if (p.is_relative() && !base_dir.empty() && !std::filesystem::exists(p)) p = std::filesystem::path(base_dir) / p;
  return p.string();
}

// The built-in accelerators: topology/hardware/accelerators/<name>.json, each the accelerator object a user would
// write plus its title and sources, parsed by the same reader.
AcceleratorSpec parse_builtin_accelerator(const Json& value, const std::string& path) {
  AcceleratorSpec a = parse_accelerator(value, path);
  if (a.title.empty() || a.sources.empty() || a.generation.empty() || !a.intra_node_fabric || !a.inter_node_fabric)
    throw InputError(path + ": a built-in accelerator needs title, generation, fabrics and sources");
  return a;
}

const std::map<std::string, AcceleratorSpec>& builtin() {
  static const auto table = read_named_files(kAcceleratorFolder, parse_builtin_accelerator);
  return table;
}

// A built-in profile by name (topology/profiles/<name>.json), or a profile file by path.
ProfileFile read_profile(const std::string& value, const std::string& base_dir, bool* builtin_profile) {
  const std::string path = std::string(kProfileFolder) + "/" + value + ".json";
  *builtin_profile = value.find('/') == std::string::npos && embedded_file(path).has_value();
  if (*builtin_profile) return parse_profile_file(embedded_json(path), path);
  return load_profile_file(resolve_path(value, base_dir));
}

}  // namespace

AcceleratorSpec accelerator_preset(const std::string& name, const std::string& field) {
  auto it = builtin().find(name);
  if (it == builtin().end())
    refuse_name(field, name, "a known accelerator", names_of(builtin()), known_names(names_of(builtin())));
  return it->second;
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> out;
  for (const std::string& path : embedded_folder(kProfileFolder))
    out.push_back(std::filesystem::path(path).stem().string());
  return out;
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
  for (const auto& [name, a] : builtin()) out.emplace_back(name, a.title);
  return out;
}

AcceleratorSpec parse_accelerator(const Json& value, const std::string& field, const std::string& base_dir) {
  if (value.is_string()) return accelerator_preset(value.get<std::string>(), field);
  ObjectReader r(value, field);
  AcceleratorSpec a;
  if (r.has("preset")) a = accelerator_preset(r.get_string("preset", ""), r.field("preset"));
  if (r.has("profile")) {
    bool builtin_profile = false;
    ProfileFile file = read_profile(r.require_string("profile"), base_dir, &builtin_profile);
    a.profile = file.compute;
    a.profile_name = builtin_profile ? r.require_string("profile") : "";
    // A built-in profile's "comm" records its fit; the fabrics an accelerator runs on are named in "fabrics".
    if (!builtin_profile) {
      if (file.intra_node) a.intra_node_fabric = file.intra_node;
      if (file.inter_node) a.inter_node_fabric = file.inter_node;
    }
    a.gemm_efficiency = a.profile.gemm_peak_efficiency;
  }
  a.name = r.get_string("name", a.name);
  a.title = r.get_string("title", a.title);
  a.generation = r.get_string("generation", a.generation);
  a.peak_bf16_flops = r.get_positive("peak_bf16_flops", a.peak_bf16_flops, parse_flops);
  a.peak_fp16_flops = r.get_positive("peak_fp16_flops", a.peak_fp16_flops, parse_flops);
  a.peak_fp32_flops = r.get_positive("peak_fp32_flops", a.peak_fp32_flops, parse_flops);
  a.peak_fp8_flops = r.get_positive("peak_fp8_flops", a.peak_fp8_flops, parse_flops);
  a.mxfp8_gemm_factor = r.get_fraction("mxfp8_gemm_factor", a.mxfp8_gemm_factor);
  a.hbm_bytes = r.get_positive("hbm_bytes", a.hbm_bytes, parse_bytes);
  a.hbm_bw_Bps = r.get_positive("hbm_bw", a.hbm_bw_Bps, parse_bandwidth);
  a.gemm_efficiency = r.get_fraction("gemm_efficiency", a.gemm_efficiency);
  a.tdp_w = r.get_non_negative("tdp_w", a.tdp_w);
  if (const Json* fabrics = r.child("fabrics")) {
    ObjectReader f(*fabrics, r.field("fabrics"));
    if (f.has("intra_node")) a.intra_node_fabric = parse_fabric_profile(f.require("intra_node"), f.field("intra_node"));
    if (f.has("inter_node")) a.inter_node_fabric = parse_fabric_profile(f.require("inter_node"), f.field("inter_node"));
    f.finish();
  }
  a.sources = r.get_strings("sources", a.sources);
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
