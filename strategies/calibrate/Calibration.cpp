#include "strategies/calibrate/Calibration.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include "strategies/analytic/TpLayerTimes.hpp"
#include "strategies/calibrate/LeastSquares.hpp"
#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

// The fabrics a calibration names: its fabric_scope and each interference point's fabric.
constexpr EnumName<FabricScope> kFabricScopeNames[] = {{FabricScope::IntraNode, "intra_node"},
                                                       {FabricScope::InterNode, "inter_node"}};

// A measured number and how to compute the model's value of it.
struct Point {
  std::string group, name, unit;
  double measured = 0;
  std::function<double()> model;
  std::string source = {};  ///< the label of the file's source it was measured by ("" = none named)
  std::string where = {};   ///< its field, for errors
};

// A point's "source": the label of one of the file's sources (checked once every point is read).
void read_source(ObjectReader& r, Point& p) {
  p.source = r.get_string("source", "");
  p.where = r.path();
}

struct Param {
  const char* name;
  double* slot;
  double start = 0;  ///< where the fit starts; 0: the slot's current value
};

// The measured value of a point given either as a rate (`rate_key`, converted by `rate_scale`) or a time.
void measured_value(ObjectReader& r, const char* rate_key, Point& p) {
  if (r.has(rate_key) == r.has("time_s"))
    throw InputError(r.path() + " needs exactly one of " + rate_key + " and time_s");
  p.measured = r.require_positive(r.has(rate_key) ? rate_key : "time_s");
  if (!r.has(rate_key)) p.unit = "s";
}

const Json& list(ObjectReader& r, const char* key) {
  const Json& v = *r.child(key);
  if (!v.is_array()) throw InputError(r.field(key) + " must be a list of measured points");
  return v;
}

// A GEMM point's shape, dtype and measured value (TFLOP/s, or time_s), named m x n x k; the caller reads its own keys,
// finishes `r` and sets the point's model.
struct GemmPoint {
  GemmShape shape;
  DType dtype = DType::BF16;
  Point point;
};

GemmPoint read_gemm_point(ObjectReader& r, const std::string& group) {
  GemmShape g{r.require_positive("m"), r.require_positive("n"), r.require_positive("k"), r.get_positive("batch", 1)};
  for (const char* key : {"m", "n", "k", "batch"})
    if (r.has(key))
      r.check(r.get_number(key, 0) <= kMaxGemmDim, key, "is more than the 16777216 (2^24) a GEMM dimension may be");
  std::string dt = r.get_choice("dtype", {"bf16", "fp16", "fp32"}, "bf16");
  DType dtype = dt == "fp32" ? DType::FP32 : dt == "fp16" ? DType::FP16 : DType::BF16;
  Point p{
      group, format_significant(g.m) + "x" + format_significant(g.n) + "x" + format_significant(g.k), "TFLOP/s", 0, {}};
  measured_value(r, "tflops", p);
  return {g, dtype, p};
}

// Refuses a measured rate above the peak it ran at: nothing runs faster than its peak.
void require_below_peak(const std::string& where, const std::string& point, double tflops, double peak_flops,
                        const std::string& peak) {
  if (tflops * 1e12 <= peak_flops) return;
  throw InputError(where + ": " + point + " at " + format_significant(tflops, 4) + " TFLOP/s is above " + peak +
                   " of " + format_significant(peak_flops / 1e12, 4) +
                   " TFLOP/s; nothing runs faster than its peak (a unit mistake? a point measured in another "
                   "precision gives that precision's peak_tflops)");
}

std::string dtype_name(DType d) {
  return d == DType::FP32 ? "fp32" : d == DType::FP16 ? "fp16" : "bf16";
}

// The measured rate of a GEMM point in TFLOP/s (given, or its FLOPs over its time_s).
double measured_tflops(const GemmPoint& m) {
  const GemmShape& g = m.shape;
  return m.point.unit == "s" ? 2 * g.m * g.n * g.k * g.batch / m.point.measured / 1e12 : m.point.measured;
}

// The model's value of a GEMM point on accelerator `a`: its time, or its TFLOP/s when it was measured as a rate.
double gemm_point_value(const GemmPoint& m, const AcceleratorSpec& a) {
  const GemmShape& g = m.shape;
  const double t = gemm_time_s(g, m.dtype, a);
  return m.point.unit == "s" ? t : 2 * g.m * g.n * g.k * g.batch / t / 1e12;
}

// A GEMM point measured relative to another accelerator ("relative_to": {"accelerator", "tflops", "peak_tflops"?}):
// the same method, shape and dtype timed on both, so its bias (a best-shape search, a benchmark tool) cancels. The
// model's value is the reference's measured rate times this accelerator's model over the reference's model.
struct RelativeTo {
  std::shared_ptr<const AcceleratorSpec> accelerator;
  double tflops = 0;
};

RelativeTo read_relative_to(ObjectReader& r, const std::string& base_dir) {
  RelativeTo rel;
  const Json* v = r.child("relative_to");
  if (!v) return rel;
  ObjectReader q(*v, r.field("relative_to"));
  AcceleratorSpec a = parse_accelerator(q.require("accelerator"), q.field("accelerator"), base_dir);
  const double peak = q.get_positive("peak_tflops", 0) * 1e12;
  if (peak > 0) a.peak_bf16_flops = a.peak_fp16_flops = a.peak_fp32_flops = peak;
  rel.tflops = q.require_positive("tflops");
  q.finish();
  rel.accelerator = std::make_shared<const AcceleratorSpec>(a);
  return rel;
}

std::vector<Point> gemm_points(const Json& items, const std::string& field, const AcceleratorSpec& acc,
                               const std::string& base_dir) {
  std::vector<Point> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    ObjectReader r(items[i], field + "[" + std::to_string(i) + "]");
    GemmPoint m = read_gemm_point(r, "gemm");
    // A sweep measured in another precision (FP8) carries its own peak: the fit then uses its efficiency curve.
    double peak = r.get_positive("peak_tflops", 0) * 1e12;
    const RelativeTo rel = read_relative_to(r, base_dir);
    if (rel.accelerator && m.point.unit == "s")
      throw InputError(r.field("relative_to") + " needs the point as a rate (tflops), not time_s");
    const std::string dtype = dtype_name(m.dtype);
    require_below_peak(r.path(), m.point.name, measured_tflops(m), peak > 0 ? peak : acc.peak_flops(m.dtype),
                       peak > 0 ? "its peak_tflops" : acc.name + "'s " + dtype + " peak");
    if (rel.accelerator)
      require_below_peak(r.field("relative_to"), m.point.name, rel.tflops, rel.accelerator->peak_flops(m.dtype),
                         rel.accelerator->name + "'s " + dtype + " peak");
    if (rel.accelerator) m.point.name += " vs " + rel.accelerator->name;
    read_source(r, m.point);
    r.finish();
    m.point.model = [m, &acc, peak, rel] {
      AcceleratorSpec a = acc;
      if (peak > 0) a.peak_bf16_flops = a.peak_fp16_flops = a.peak_fp32_flops = peak;
      const double value = gemm_point_value(m, a);
      return rel.accelerator ? rel.tflops * value / gemm_point_value(m, *rel.accelerator) : value;
    };
    out.push_back(m.point);
  }
  return out;
}

// GEMMs timed under a power limit below the rated power ("power_limit_w"): one compute scale per limit, the factor
// on the rated peaks that makes the fitted GEMM model match them (fitted after the rated GEMM points). `scales`
// holds the fitted values, shared with the points' models (which outlive this group's fit: the residual table);
// `watts` receives each point's limit.
std::vector<Point> power_limited_gemm_points(const Json& items, const std::string& field, const AcceleratorSpec& acc,
                                             const std::shared_ptr<std::map<double, double>>& scales,
                                             std::vector<double>& watts) {
  std::vector<Point> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    ObjectReader r(items[i], field + "[" + std::to_string(i) + "]");
    const double w = r.require_positive("power_limit_w");
    if (!(acc.tdp_w > 0))
      throw InputError(r.field("power_limit_w") + ": the accelerator has no rated power (tdp_w) to scale from");
    r.check(w < acc.tdp_w, "power_limit_w",
            "must be below the rated " + format_significant(acc.tdp_w, 4) + " W (tdp_w) the other points hold at");
    GemmPoint m = read_gemm_point(r, "power_limited_gemm");
    require_below_peak(r.path(), m.point.name, measured_tflops(m), acc.peak_flops(m.dtype),
                       acc.name + "'s rated " + dtype_name(m.dtype) + " peak");
    m.point.name += " at " + format_significant(w, 4) + " W";
    read_source(r, m.point);
    r.finish();
    scales->try_emplace(w, w / acc.tdp_w);
    watts.push_back(w);
    m.point.model = [m, &acc, scales, w] {
      AcceleratorSpec a = acc;
      const double scale = scales->at(w);
      for (double* peak : {&a.peak_bf16_flops, &a.peak_fp16_flops, &a.peak_fp32_flops}) *peak *= scale;
      return gemm_point_value(m, a);
    };
    out.push_back(m.point);
  }
  return out;
}

std::vector<Point> memory_points(const Json& items, const std::string& field, const AcceleratorSpec& acc) {
  std::vector<Point> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    ObjectReader r(items[i], field + "[" + std::to_string(i) + "]");
    double bytes = r.require_positive("bytes");
    Point p{"memory", r.get_string("name", format_bytes(bytes)), "GB/s", 0, {}};
    measured_value(r, "bw_GBps", p);
    read_source(r, p);
    r.finish();
    bool time = p.unit == "s";
    const double bw = time ? bytes / p.measured : p.measured * 1e9;
    if (bw > acc.hbm_bw_Bps)
      throw InputError(r.path() + ": " + p.name + " at " + format_significant(bw / 1e9, 4) + " GB/s is above " +
                       acc.name + "'s memory bandwidth of " + format_significant(acc.hbm_bw_Bps / 1e9, 4) +
                       " GB/s (hbm_bw); a unit mistake, or a size that fits in a cache?");
    p.model = [bytes, &acc, time] {
      double t = elementwise_time_s(bytes, acc);
      return time ? t : bytes / t / 1e9;
    };
    out.push_back(p);
  }
  return out;
}

// Overlap interference: a kernel timed alone and beside the other kind ("compute": a GEMM beside an NCCL collective;
// "comm": the collective beside a GEMM) on one fabric. Each (fabric, kind) factor is the geometric mean of its points'
// ratios overlapped / alone (the least-squares fit of log(model / measured) with one parameter).
std::vector<Point> interference_points(const Json& items, const std::string& field, ComputeProfile& p,
                                       std::vector<std::string>* fitted) {
  std::vector<Point> out;
  std::map<std::pair<std::string, std::string>, std::vector<double>> ratios;
  std::vector<std::tuple<std::string, std::string, double>> alone;
  for (std::size_t i = 0; i < items.size(); ++i) {
    ObjectReader r(items[i], field + "[" + std::to_string(i) + "]");
    std::string fabric = r.get_choice("fabric", enum_names(kFabricScopeNames), "intra_node");
    std::string kind = r.get_choice("kind", {"compute", "comm"}, "");
    if (kind.empty()) throw InputError(r.field("kind") + " is required: compute or comm");
    double a = r.require_positive("alone_s"), o = r.require_positive("overlapped_s");
    r.check(o >= a, "overlapped_s", "must be >= alone_s (interference slows, never speeds up)");
    std::string name = r.get_string("name", kind + " " + fabric + " " + std::to_string(i));
    Point point{"interference", name, "s", o, {}};
    read_source(r, point);
    r.finish();
    ratios[{fabric, kind}].push_back(std::log(o / a));
    out.push_back(point);
    alone.emplace_back(fabric, kind, a);
  }
  for (const auto& [key, logs] : ratios) {
    double mean = 0;
    for (double l : logs) mean += l / static_cast<double>(logs.size());
    OverlapInterference& target = key.first == "intra_node" ? p.intra_node_interference : p.inter_node_interference;
    const double factor = std::exp(mean);
    // The same bound a profile file is read with: a fit outside it could not be loaded.
    if (factor > 4)
      throw InputError(field + ": the " + key.first + " " + key.second + " points give a slowdown of " +
                       format_significant(factor, 4) + ", beyond the 4x a profile accepts");
    (key.second == "compute" ? target.compute_slowdown : target.comm_slowdown) = factor;
    fitted->push_back(key.first + "." + key.second + "_slowdown");
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto [fabric, kind, a] = alone[i];
    const OverlapInterference* target =
        fabric == "intra_node" ? &p.intra_node_interference : &p.inter_node_interference;
    const bool compute = kind == "compute";
    out[i].model = [target, compute, a = a] {
      return a * (compute ? target->compute_slowdown : target->comm_slowdown);
    };
  }
  return out;
}

// The profile's attention data ("attention_model"): as a profile writes it, its benchmarks given inline or as paths
// of benchmark files (topology/profiles/attention/) relative to the measurement file.
AttentionData read_attention_model(const Json& value, const std::string& field, const std::string& base_dir) {
  Json inlined = value;
  if (inlined.is_object() && inlined.contains("benchmarks") && inlined["benchmarks"].is_array())
    for (Json& b : inlined["benchmarks"])
      if (b.is_string()) {
        std::filesystem::path path(b.get<std::string>());
        if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
        b = read_json_file(path.string());
      }
  return parse_attention_data(inlined, field);
}

// Fused attention throughput as flash-attention's benchmark reports it: forward FLOPs 4 b h s^2 d (halved when
// causal), forward + backward 3.5 times that.
std::vector<Point> attention_points(const Json& items, const std::string& field, const AcceleratorSpec& acc) {
  std::vector<Point> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    ObjectReader r(items[i], field + "[" + std::to_string(i) + "]");
    double b = r.require_positive("batch"), heads = r.require_positive("heads");
    double s = r.require_positive("seq"), d = r.require_positive("head_dim");
    bool causal = r.get_bool("causal", false);
    bool both = r.get_choice("pass", {"fwd", "fwd+bwd"}, "fwd+bwd") == "fwd+bwd";
    std::string dt = r.get_choice("dtype", {"bf16", "fp16"}, "bf16");
    DType dtype = dt == "fp16" ? DType::FP16 : DType::BF16;
    Point p{"attention",
            "b" + format_significant(b) + " h" + format_significant(heads) + " s" + format_significant(s) + " d" +
                format_significant(d) + (both ? " fwd+bwd" : " fwd"),
            "TFLOP/s",
            0,
            {}};
    p.measured = r.require_positive("tflops");
    read_source(r, p);
    r.finish();
    require_below_peak(r.path(), p.name, p.measured, acc.peak_flops(dtype), acc.name + "'s " + dt + " peak");
    const double fwd = 4 * b * heads * s * s * d * (causal ? 0.5 : 1.0);
    p.model = [fwd, both, dtype, s, d, &acc] {
      double t = flash_attention_time_s(fwd, dtype, acc, s, d) +
                 (both ? flash_attention_time_s(2.5 * fwd, dtype, acc, s, d) : 0);
      return fwd * (both ? 3.5 : 1.0) / t / 1e12;
    };
    out.push_back(p);
  }
  return out;
}

std::vector<Point> collective_points(const Json& items, const std::string& field, const FabricProfile& fabric,
                                     bool* nvls) {
  std::vector<Point> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    ObjectReader r(items[i], field + "[" + std::to_string(i) + "]");
    CollectiveKind kind = parse_collective_kind(r.require_string("kind"), r.field("kind"));
    CollectiveAlgorithm algorithm = parse_collective_algorithm(r.get_string("algorithm", "ring"), r.field("algorithm"));
    int ranks = static_cast<int>(r.get_positive_int("ranks", 0));
    if (ranks < 2) throw InputError(r.field("ranks") + " is required and must be at least 2");
    double bytes = r.require_positive("bytes");
    bool this_nvls = algorithm == CollectiveAlgorithm::Nvls;
    if (i > 0 && this_nvls != *nvls)
      throw InputError(r.field("algorithm") +
                       ": nvls and ring/tree points fit different parameters; use one file each");
    *nvls = this_nvls;
    Point p{
        "collectives",
        to_string(kind) + " " + to_string(algorithm) + " " + std::to_string(ranks) + " ranks " + format_bytes(bytes),
        "GB/s",
        0,
        {}};
    measured_value(r, "busbw_GBps", p);
    read_source(r, p);
    r.finish();
    bool time = p.unit == "s";
    p.model = [=, &fabric] {
      double t = collective_time_s(kind, algorithm, bytes, ranks, fabric);
      return time ? t : bus_bandwidth_Bps(kind, bytes, ranks, t) / 1e9;
    };
    out.push_back(p);
  }
  return out;
}

// A layer as Megatron-LM times it: compute plus exposed TP collectives; the backward includes any recompute.
std::vector<Point> layer_points(const Json& items, const std::string& field, const AcceleratorSpec& acc,
                                const FabricProfile& fabric, const std::string& base_dir) {
  std::vector<Point> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    ObjectReader r(items[i], field + "[" + std::to_string(i) + "]");
    std::string name = r.get_string("case", "layer " + std::to_string(i));
    const Json* ej = r.child("experiment");
    if (!ej) throw InputError(r.field("experiment") + " is required but missing");
    auto e = std::make_shared<Experiment>(parse_experiment(*ej, base_dir));
    double forward = r.require_positive("forward_ms"), backward = r.require_positive("backward_ms");
    Point fwd{"layers", name + " forward", "ms", forward,
              [e, &acc, &fabric] { return layer_times_with_tp_comm(*e, acc, fabric).forward_s * 1e3; }};
    read_source(r, fwd);
    r.finish();
    Point bwd{"layers", name + " backward", "ms", backward, [e, &acc, &fabric] {
                PassTimes t = layer_times_with_tp_comm(*e, acc, fabric);
                return (t.backward_s + t.recompute_s) * 1e3;
              }};
    bwd.source = fwd.source;
    bwd.where = fwd.where;
    out.push_back(fwd);
    out.push_back(bwd);
  }
  return out;
}

std::vector<double> log_residuals(const std::vector<Point>& points) {
  std::vector<double> r;
  for (const auto& p : points) r.push_back(std::log(p.model() / p.measured));
  return r;
}

// The most a fitted efficiency may be: 1, as nothing runs faster than its peak or its links; 2 for NVLS, whose
// in-switch reduction has each GPU send and receive its data once, so its bus bandwidth reaches 2(N-1)/N of a link.
// 0: not an efficiency.
double efficiency_limit(const std::string& name) {
  if (name == "nvls_bus_efficiency") return 2;
  return name.ends_with("efficiency") ? 1 : 0;
}

// Refuses a fitted efficiency above its limit, naming the points measured faster than the model allows at the limit
// (the other parameters as fitted), fastest first: they drive the fit past it.
void check_efficiencies(const std::string& group, const std::vector<Param>& params, const std::vector<Point>& points) {
  for (const Param& p : params) {
    const double limit = efficiency_limit(p.name), fitted = *p.slot;
    if (limit == 0 || fitted <= limit) continue;
    *p.slot = limit;
    std::vector<std::pair<double, std::string>> fast;
    for (const Point& q : points) {
      const double model = q.model();
      const double speedup = q.unit == "s" || q.unit == "ms" ? model / q.measured : q.measured / model;
      if (speedup > 1)
        fast.emplace_back(speedup, q.where + " " + q.name + " (" + format_significant(q.measured, 4) + " " + q.unit +
                                       ", the model at most " + format_significant(model, 4) + ")");
    }
    *p.slot = fitted;
    std::sort(fast.rbegin(), fast.rend());
    std::string names;
    for (std::size_t i = 0; i < fast.size() && i < 3; ++i) names += (i ? "; " : "") + fast[i].second;
    const std::string at = format_significant(limit);
    throw InputError(group + ": the fit gives " + p.name + "=" + format_significant(fitted, 4) + ", above " + at +
                     " (faster than the hardware can run); " +
                     (fast.empty() ? "no point alone is faster than the model at " + at +
                                         ": the other parameters trade against it, give points that separate them"
                                   : std::to_string(fast.size()) + " point(s) measured faster than the model at " + at +
                                         " allows: " + names + (fast.size() > 3 ? "; ..." : "") +
                                         "; check their units and the accelerator's peak"));
  }
}

void fit_group(const std::string& group, const std::vector<Param>& all_params, const std::vector<Point>& points,
               Calibration& c) {
  if (points.empty()) return;
  // Parameters the file holds fixed keep the accelerator profile's values.
  std::vector<Param> params;
  for (const Param& p : all_params)
    if (std::none_of(c.fixed.begin(), c.fixed.end(), [&](const FixedFields& f) {
          return std::find(f.fields.begin(), f.fields.end(), p.name) != f.fields.end();
        }))
      params.push_back(p);
  if (params.empty()) return;
  if (points.size() < params.size()) {
    std::string names;
    for (const auto& p : params) names += (names.empty() ? "" : ", ") + std::string(p.name);
    throw InputError(group + ": " + std::to_string(points.size()) + " measured value(s) cannot determine " +
                     std::to_string(params.size()) + " parameters (" + names + "); give at least " +
                     std::to_string(params.size()));
  }
  std::vector<double> start;
  for (const auto& p : params) start.push_back(p.start > 0 ? p.start : *p.slot > 0 ? *p.slot : 1e-6);
  auto residuals = [&](const std::vector<double>& x) {
    for (std::size_t i = 0; i < params.size(); ++i) *params[i].slot = x[i];
    return log_residuals(points);
  };
  LeastSquaresFit fit = fit_positive(residuals, start);
  for (std::size_t i = 0; i < params.size(); ++i) *params[i].slot = fit.params[i];
  check_efficiencies(group, params, points);
  for (const auto& p : params) c.fitted_parameters.push_back(p.name);
}

// "fixed": [{"fields": [...], "why"}]: compute-profile parameters held at the accelerator profile's values.
void read_fixed(const Json& value, const std::string& field, Calibration& c) {
  static const std::vector<std::string> known = fitted_profile_fields();
  if (!value.is_array()) throw InputError(field + " must be a list of {fields, why}");
  for (std::size_t i = 0; i < value.size(); ++i) {
    ObjectReader r(value[i], field + "[" + std::to_string(i) + "]");
    FixedFields f;
    f.fields = r.get_strings("fields", {});
    if (f.fields.empty()) throw InputError(r.field("fields") + " is required: the parameters held fixed");
    for (std::size_t k = 0; k < f.fields.size(); ++k)
      if (std::find(known.begin(), known.end(), f.fields[k]) == known.end())
        refuse_name(r.field("fields") + "[" + std::to_string(k) + "]", f.fields[k], "a compute-profile parameter",
                    known, known_names(known));
    f.why = r.require_string("why");
    r.finish();
    c.fixed.push_back(f);
  }
}

// "excluded": [{"what", "source"?, "why"}]: published measurements the file leaves out of the fit, and why.
Json read_excluded(const Json& value, const std::string& field) {
  if (!value.is_array()) throw InputError(field + " must be a list of {what, source, why}");
  Json out = Json::array();
  for (std::size_t i = 0; i < value.size(); ++i) {
    ObjectReader r(value[i], field + "[" + std::to_string(i) + "]");
    Json item{{"what", r.require_string("what")}};
    if (r.has("source")) item["source"] = r.require_string("source");
    item["why"] = r.require_string("why");
    r.finish();
    out.push_back(item);
  }
  return out;
}

// "collective_protocols": 2 (default) fits NCCL's bandwidth and low-latency protocols, 1 the first alone.
int collective_protocols(ObjectReader& r) {
  if (!r.has("collective_protocols")) return 2;
  const double n = r.get_number("collective_protocols", 0);
  r.check(n == 1 || n == 2, "collective_protocols",
          "must be 1 (bandwidth protocol) or 2 (bandwidth and low-latency protocols)");
  return static_cast<int>(n);
}

// Ring and tree points fit the bandwidth protocol (and the low-latency one); NVLS points fit NVLS (and the
// low-latency ring that NCCL prefers for small messages), the bandwidth-protocol ring staying at the base fabric's.
void fit_collectives(const std::vector<Point>& points, bool nvls, int protocols, FabricProfile& f, Calibration& c) {
  std::vector<Param> params =
      nvls ? std::vector<Param>{{"nvls_bus_efficiency", &f.nvls_bus_efficiency}, {"nvls_latency_s", &f.nvls_latency_s}}
           : std::vector<Param>{{"bus_efficiency", &f.bus_efficiency}, {"step_latency_s", &f.step_latency_s}};
  if (protocols == 2) {
    // Started below the bandwidth protocol: lower latency, lower bandwidth, as NCCL's LL and LL128 are.
    if (!f.has_low_latency_protocol()) f.ll_bus_efficiency = f.bus_efficiency / 2;
    if (!(f.ll_step_latency_s > 0)) f.ll_step_latency_s = f.step_latency_s / 2;
    params.push_back({"ll_bus_efficiency", &f.ll_bus_efficiency});
    params.push_back({"ll_step_latency_s", &f.ll_step_latency_s});
  } else if (!nvls) {
    f.ll_bus_efficiency = f.ll_step_latency_s = 0;
  }  // NVLS points of one protocol leave the base fabric's low-latency ring as it is
  fit_group("collectives", params, points, c);
  // The two ring protocols are interchangeable in the model: the bandwidth protocol is the one that is faster for
  // large messages.
  if (!nvls && protocols == 2 && f.ll_bus_efficiency > f.bus_efficiency) {
    std::swap(f.ll_bus_efficiency, f.bus_efficiency);
    std::swap(f.ll_step_latency_s, f.step_latency_s);
  }
}

}  // namespace

std::string to_string(FabricScope s) {
  return name_of(kFabricScopeNames, s, "intra_node");
}

namespace {

// Refuses, before any point is read, a group of more than kMaxGroupPoints points and more than kMaxCalibrationPoints
// in all.
void check_point_counts(const Json& measured) {
  std::size_t total = 0;
  for (const char* group :
       {"collectives", "memory", "gemm", "attention", "layers", "power_limited_gemm", "interference"}) {
    if (!measured.contains(group) || !measured[group].is_array()) continue;
    const std::size_t n = measured[group].size();
    if (n > kMaxGroupPoints)
      throw InputError("measured." + std::string(group) + " holds " + std::to_string(n) + " points, more than the " +
                       std::to_string(kMaxGroupPoints) + " a group may (a fit evaluates each point thousands of " +
                       "times); keep a representative subset");
    total += n;
  }
  if (total > kMaxCalibrationPoints)
    throw InputError("measured holds " + std::to_string(total) + " points, more than the " +
                     std::to_string(kMaxCalibrationPoints) + " a file may; keep a representative subset");
}

// The accelerator and fabric the fit starts from, and the file's sources, fixed fields and exclusions.
void read_starting_point(ObjectReader& r, const std::string& base_dir, Calibration& c) {
  const Json* acc = r.child("accelerator");
  if (!acc) throw InputError("measured.accelerator is required but missing (the preset or object to calibrate)");
  c.accelerator = parse_accelerator(*acc, r.field("accelerator"), base_dir);
  c.fabric_scope = get_enum(r, "fabric_scope", kFabricScopeNames, FabricScope::IntraNode);
  if (r.has("fabric")) {
    c.fabric = parse_fabric_profile(*r.child("fabric"), r.field("fabric"));
  } else {
    const std::optional<FabricProfile>& reference =
        c.fabric_scope == FabricScope::IntraNode ? c.accelerator.intra_node_fabric : c.accelerator.inter_node_fabric;
    if (!reference)
      throw InputError(r.field("fabric") + " is required: the accelerator " + c.accelerator.name + " names no " +
                       to_string(c.fabric_scope) + " fabric to start the fit from");
    c.fabric = *reference;
  }
  c.sources = parse_sources(r, &c.source_labels);
  if (const Json* fixed = r.child("fixed")) read_fixed(*fixed, r.field("fixed"), c);
  if (const Json* list = r.child("not_measured")) c.not_measured = parse_not_measured(*list, r.field("not_measured"));
  if (const Json* list = r.child("excluded")) c.excluded = read_excluded(*list, r.field("excluded"));
}

// The SM count for the GEMM model's wave quantization is the hardware's, given rather than fitted.
void read_gemm_sms(ObjectReader& r, ComputeProfile& p) {
  if (!r.has("gemm_sms")) return;
  const double sms = r.get_number("gemm_sms", 0);
  r.check(sms >= 1 && sms == std::floor(sms), "gemm_sms", "must be a whole number of SMs >= 1");
  r.check(sms <= kMaxGemmSms, "gemm_sms",
          "is more than the 1024 SMs an accelerator has at most (A100 108, H100 132, MI300X 304 compute units)");
  p.gemm_sms = sms;
}

// Fits one compute scale per power limit of the power_limited_gemm points (`where`), after the rated GEMM points:
// the scale is relative to the GEMM model they fitted.
std::vector<Point> fit_power_limited_gemm(const Json& items, const std::string& where, Calibration& c) {
  auto scales = std::make_shared<std::map<double, double>>();
  std::vector<double> watts;
  std::vector<Point> group = power_limited_gemm_points(items, where, c.accelerator, scales, watts);
  for (auto& [w, slot] : *scales) {
    std::vector<Point> at;
    for (std::size_t i = 0; i < group.size(); ++i)
      if (watts[i] == w) at.push_back(group[i]);
    const std::string name = "compute_scale at " + format_significant(w, 4) + " W";
    fit_group("power_limited_gemm", {{name.c_str(), &slot, slot}}, at, c);
    if (!(slot > 0 && slot <= 1))
      throw InputError(where + ": the points at " + format_significant(w, 4) + " W give a compute scale of " +
                       format_significant(slot, 4) + ", outside (0, 1]: faster than the rated profile");
  }
  for (const auto& [w, slot] : *scales) c.accelerator.profile.power_scales.push_back({w, slot});
  return group;
}

// Reads and fits the collectives points (`where`) and marks the fabric fitted when there are any.
std::vector<Point> fit_collective_group(const Json& items, const std::string& where, int protocols, Calibration& c) {
  FabricProfile& f = c.fabric;
  bool nvls = false;
  std::vector<Point> group = collective_points(items, where, f, &nvls);
  fit_collectives(group, nvls, protocols, f, c);
  c.fabric_fitted = !group.empty();
  if (c.fabric_fitted) f.sources = c.sources;  // the fitted figures come from these measurements, not the base's
  return group;
}

// Reads and fits every measured group, in an order where a group's model uses the groups fitted before it; returns
// all their points.
std::vector<Point> fit_groups(ObjectReader& r, const std::string& base_dir, Calibration& c) {
  ComputeProfile& p = c.accelerator.profile;
  // The compute groups start from fixed values, not from the base accelerator's (already fitted) ones: the GEMM
  // parameters trade off along a flat valley, so a fit started from its own result would drift, and refitting a
  // preset's measurements would not reproduce the preset.
  const ComputeProfile fresh;
  std::vector<Point> all, group;
  auto take = [&](const char* key) { return r.has(key) ? &list(r, key) : nullptr; };
  auto keep = [&] { all.insert(all.end(), group.begin(), group.end()); };
  const int protocols = collective_protocols(r);
  if (const Json* items = take("collectives")) {
    group = fit_collective_group(*items, r.field("collectives"), protocols, c);
    keep();
  }
  if (const Json* items = take("memory")) {
    group = memory_points(*items, r.field("memory"), c.accelerator);
    fit_group("memory", {{"memory_efficiency", &p.memory_efficiency, fresh.memory_efficiency}}, group, c);
    keep();
  }
  if (const Json* items = take("gemm")) {
    group = gemm_points(*items, r.field("gemm"), c.accelerator, base_dir);
    fit_group("gemm",
              {{"gemm_peak_efficiency", &p.gemm_peak_efficiency, fresh.gemm_peak_efficiency},
               {"gemm_latency_s", &p.gemm_latency_s, fresh.gemm_latency_s},
               {"gemm_k_overhead", &p.gemm_k_overhead, fresh.gemm_k_overhead},
               {"gemm_roofline_p", &p.gemm_roofline_p, fresh.gemm_roofline_p}},
              group, c);
    keep();
  }
  if (const Json* model = r.child("attention_model"))
    p.attention = read_attention_model(*model, r.field("attention_model"), base_dir);
  if (const Json* items = take("attention")) {
    group = attention_points(*items, r.field("attention"), c.accelerator);
    fit_group("attention",
              {{"flash_attention_efficiency", &p.flash_attention_efficiency, fresh.flash_attention_efficiency}}, group,
              c);
    keep();
  }
  if (const Json* items = take("layers")) {
    group = layer_points(*items, r.field("layers"), c.accelerator, c.fabric, base_dir);
    fit_group(
        "layers",
        {{"memory_efficiency", &p.memory_efficiency}, {"overlap_penalty", &p.overlap_penalty, fresh.overlap_penalty}},
        group, c);
    keep();
  }
  if (const Json* items = take("power_limited_gemm")) {
    group = fit_power_limited_gemm(*items, r.field("power_limited_gemm"), c);
    keep();
  }
  if (const Json* items = take("interference")) {
    group = interference_points(*items, r.field("interference"), p, &c.fitted_parameters);
    keep();
  }
  return all;
}

// Checks every point's source against the file's labels and records its residual.
void record_residuals(const std::vector<Point>& all, Calibration& c) {
  for (const auto& point : all) {
    if (!c.source_labels.empty() && point.source.empty())
      throw InputError(point.where + ".source is required: the file's sources are labelled" +
                       known_names(c.source_labels));
    // Unlabelled sources (a list): a point's "source" is its own citation. Labelled: it names one of them.
    if (!c.source_labels.empty() &&
        std::find(c.source_labels.begin(), c.source_labels.end(), point.source) == c.source_labels.end())
      refuse_name(point.where + ".source", point.source, "a label of the file's sources", c.source_labels,
                  known_names(c.source_labels));
    c.residuals.push_back({point.group, point.name, point.measured, point.model(), point.unit, point.source});
  }
}

}  // namespace

Calibration calibrate(const Json& measured, const std::string& base_dir) {
  ObjectReader r(measured, "measured");
  check_point_counts(measured);
  Calibration c;
  read_starting_point(r, base_dir, c);
  // Measured power limits come from this file's power_limited_gemm points alone, not from the base accelerator.
  c.accelerator.profile.power_scales.clear();
  read_gemm_sms(r, c.accelerator.profile);
  const std::vector<Point> all = fit_groups(r, base_dir, c);
  r.skip("description");
  r.finish();
  if (all.empty())
    throw InputError(
        "measured: no points (give gemm, memory, attention, collectives, layers, power_limited_gemm or interference)");
  c.accelerator.gemm_efficiency = std::min(1.0, c.accelerator.profile.gemm_peak_efficiency);
  record_residuals(all, c);
  c.accelerator.profile.not_measured = c.not_measured;
  return c;
}

Json calibration_profile_json(const Calibration& c) {
  Json j{{"accelerator", c.accelerator.name}, {"compute", compute_profile_to_json(c.accelerator.profile)}};
  if (c.fabric_fitted) j["comm"] = Json{{to_string(c.fabric_scope), fabric_profile_to_json(c.fabric)}};
  if (c.source_labels.empty()) {
    j["sources"] = c.sources;
  } else {
    j["sources"] = Json::object();
    for (std::size_t i = 0; i < c.sources.size(); ++i) j["sources"][c.source_labels[i]] = c.sources[i];
  }
  if (!c.not_measured.empty()) j["not_measured"] = not_measured_to_json(c.not_measured);
  if (!c.excluded.empty()) j["excluded"] = c.excluded;
  Json rows = Json::array();
  for (const auto& row : c.residuals) {
    rows.push_back(Json{{"group", row.group},
                        {"point", row.point},
                        {"unit", row.unit},
                        {"measured", row.measured},
                        {"fitted", row.fitted},
                        {"error_percent", std::round(row.error_percent() * 100) / 100}});
    if (!row.source.empty()) rows.back()["source"] = row.source;
  }
  j["fit"] = Json{{"parameters", c.fitted_parameters}, {"residuals", rows}};
  if (!c.fixed.empty()) {
    Json fixed = Json::array();
    for (const FixedFields& f : c.fixed) fixed.push_back(Json{{"fields", f.fields}, {"why", f.why}});
    j["fit"]["fixed"] = fixed;
  }
  return j;
}

std::string residual_table(const Calibration& c) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %-42s %12s %12s %9s  %s\n", "group", "point", "measured", "fitted", "error %",
                "unit");
  out += line;
  for (const auto& row : c.residuals) {
    std::snprintf(line, sizeof line, "%-12s %-42s %12.5g %12.5g %+9.2f  %s\n", row.group.c_str(), row.point.c_str(),
                  row.measured, row.fitted, row.error_percent(), row.unit.c_str());
    out += line;
  }
  return out;
}

}  // namespace placesim
