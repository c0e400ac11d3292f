#include "traces/profiler/TraceCalibration.hpp"

#include <cmath>
#include <sstream>

#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/analytic/TaskClasses.hpp"
#include "strategies/expand/Expand.hpp"
#include "topology/hardware/CommProfile.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

struct Measured {
  double gemm = 0, attention = 0, memory = 0;
};

// The trace's seconds per class as they would have run alone: the time a compute kernel overlapped a collective ran
// `slowdown` times slower (overlap interference), so it counts 1 / slowdown of it.
Measured measured_classes(const TraceSummary& s, double slowdown) {
  const auto at = [&](KernelClass c) {
    const auto i = static_cast<int>(c);
    return s.class_s[i] - s.overlapped_s[i] * (1 - 1 / slowdown);
  };
  return {at(KernelClass::Gemm), at(KernelClass::Attention),
          at(KernelClass::Normalization) + at(KernelClass::Elementwise) + at(KernelClass::Optimizer)};
}

// The compute profile's three efficiencies such that device 0's modelled class seconds equal the measured ones.
struct ComputeFit {
  double gemm = 0, attention = 0, memory = 0;  ///< fitted efficiencies
  TaskClassSeconds before, after;              ///< the model's classes per step at the profile's and the fitted
};

ComputeFit fit_compute(const Measured& m, const Experiment& e, const AcceleratorSpec& acc, const TaskGraph& g) {
  const TaskClassifier base(e, acc);
  ComputeFit f{acc.profile.gemm_peak_efficiency, acc.profile.flash_attention_efficiency, acc.profile.memory_efficiency};
  f.before = device_class_seconds(g, 0, base);
  AcceleratorSpec now = acc;
  for (int i = 0; i < 200; ++i) {
    now.profile.gemm_peak_efficiency = f.gemm;
    now.profile.flash_attention_efficiency = f.attention;
    now.profile.memory_efficiency = f.memory;
    f.after = device_class_seconds(g, 0, base, TaskClassifier(e, now));
    double worst = 0;
    auto step = [&](double& eff, double model, double measured) {
      if (!(model > 0) || !(measured > 0)) return;
      eff *= model / measured;
      worst = std::max(worst, std::abs(model / measured - 1));
    };
    step(f.gemm, f.after.passes.gemm, m.gemm);
    step(f.attention, f.after.passes.attention, m.attention);
    step(f.memory, f.after.passes.memory + f.after.optimizer, m.memory);
    if (worst < 1e-9) break;
  }
  return f;
}

CollectiveKind kind_of(const std::string& op, bool* known) {
  *known = true;
  if (op == "allreduce") return CollectiveKind::AllReduce;
  if (op == "allgather") return CollectiveKind::AllGather;
  if (op == "reduce_scatter") return CollectiveKind::ReduceScatter;
  if (op == "broadcast") return CollectiveKind::Broadcast;
  *known = false;
  return CollectiveKind::AllReduce;
}

FabricProfile scaled_fabric(FabricProfile f, double s) {
  f.bus_efficiency *= s;
  f.ll_bus_efficiency *= s;
  f.nvls_bus_efficiency *= s;
  return f;
}

// The factor on the fabric's bus efficiencies at which the trace's sized intra-node collectives take their time.
struct NcclFit {
  double factor = 0;  ///< 0: no collective of known size inside a node
  double measured_s = 0, model_s = 0;
  int collectives = 0;
};

NcclFit fit_nccl(const TraceSummary& s, const ClusterSpec& c, double slowdown) {
  NcclFit fit;
  const FabricProfile& f = c.comm.intra_node;
  const CollectiveAlgorithm algo = f.has_nvls() ? CollectiveAlgorithm::Nvls : CollectiveAlgorithm::Ring;
  struct Point {
    CollectiveKind kind;
    double bytes, count;
    int ranks;
  };
  std::vector<Point> points;
  for (const CollectiveSummary& x : s.collectives) {
    bool known = false;
    const CollectiveKind kind = kind_of(x.op, &known);
    if (!known || x.group_size < 2 || x.group_size > c.gpus_per_node || !(x.bytes > 0)) continue;
    const double per_step = x.count / static_cast<double>(std::max<std::size_t>(1, s.steps.size()));
    points.push_back({kind, x.bytes, per_step, x.group_size});
    fit.measured_s += x.time_s - x.overlapped_s * (1 - 1 / slowdown);
    fit.collectives += x.count;
  }
  if (points.empty() || !(fit.measured_s > 0)) return fit;
  auto model = [&](double factor) {
    const FabricProfile g = scaled_fabric(f, factor);
    double t = 0;
    for (const Point& p : points) t += p.count * collective_time_s(p.kind, algo, p.bytes, p.ranks, g);
    return t;
  };
  fit.model_s = model(1);
  double lo = 1e-4, hi = 1e4;  // model time falls as the factor grows
  for (int i = 0; i < 200 && hi / lo > 1 + 1e-12; ++i) {
    const double mid = std::sqrt(lo * hi);
    (model(mid) > fit.measured_s ? lo : hi) = mid;
  }
  fit.factor = std::sqrt(lo * hi);
  return fit;
}

}  // namespace

TraceCalibration calibrate_from_trace(const TraceSummary& measured, const Experiment& e, const ClusterSpec& c,
                                      const std::vector<std::string>& sources) {
  if (measured.steps.empty()) throw InputError("the trace has no step with GPU kernels: nothing to calibrate against");
  TraceCalibration out;
  const AcceleratorSpec& acc = c.accelerator;
  const TaskGraph g = expand(e, simulated_network(c));
  // Overlap interference: the trace's own measure where it has one (the same kernels alone and overlapped, with
  // shapes), else the profile's.
  const bool slowdown_measured =
      measured.overlap.kernels_compared >= 3 && measured.gemms_with_shape > 0 && measured.overlap.slowdown > 1;
  const OverlapInterference& profile_interference = acc.profile.intra_node_interference;
  const double compute_slowdown = slowdown_measured ? measured.overlap.slowdown : profile_interference.compute_slowdown;
  const Measured m = measured_classes(measured, compute_slowdown);
  const std::string alone =
      compute_slowdown > 1
          ? " as run alone (the time beside a collective counted at 1/" + format_significant(compute_slowdown, 4) +
                (slowdown_measured ? ", the trace's own overlap slowdown)" : ", the profile's interference)")
          : "";
  // A trace of another run than the experiment's cannot calibrate it: refused when a class is off by more than 5x.
  {
    const TaskClassSeconds model = device_class_seconds(g, 0, TaskClassifier(e, acc));
    const std::pair<const char*, std::pair<double, double>> classes[] = {
        {"GEMM", {m.gemm, model.passes.gemm}},
        {"attention", {m.attention, model.passes.attention}},
        {"memory-bound", {m.memory, model.passes.memory + model.optimizer}}};
    for (const auto& [what, pair] : classes) {
      const auto [trace_s, model_s] = pair;
      if (trace_s > 0 && model_s > 0 && (trace_s > 5 * model_s || model_s > 5 * trace_s))
        throw InputError("the trace's " + std::string(what) + " kernels take " + format_seconds(trace_s) +
                         " per step, experiment " + e.name + "'s model " + format_seconds(model_s) +
                         ": more than 5x apart, so the trace did not run this experiment (check its model, "
                         "sequence length, micro-batch size, micro-batches per step and parallelism against the run)");
    }
  }
  const ComputeFit fit = fit_compute(m, e, acc, g);
  auto figure = [&](const std::string& field, double model, double fitted, const std::string& what, double trace_s,
                    double model_s) {
    if (!(trace_s > 0) || !(model_s > 0)) {
      if (trace_s > 0 || model_s > 0)
        out.warnings.push_back(
            field + " kept at " + format_significant(model) + ": the " +
            (trace_s > 0 ? "model has no " + what + " (the trace " + format_seconds(trace_s) + " per step)"
                         : "trace has no " + what + " (the model " + format_seconds(model_s) + " per step)"));
      return;
    }
    out.figures.push_back({field, model, fitted,
                           what + " " + format_seconds(trace_s) + " per step in the trace" + alone + ", " +
                               format_seconds(model_s) + " in the model"});
    if (fitted > 1)
      out.warnings.push_back(field + " = " + format_significant(fitted) + " is above 1: the trace ran less " + what +
                             " work than the experiment describes (check its model, micro-batch size, micro-batches "
                             "and parallelism against the run)");
  };
  figure("compute.gemm_peak_efficiency", acc.profile.gemm_peak_efficiency, fit.gemm, "GEMM kernels", m.gemm,
         fit.before.passes.gemm);
  figure("compute.flash_attention_efficiency", acc.profile.flash_attention_efficiency, fit.attention,
         "attention kernels", m.attention, fit.before.passes.attention);
  figure("compute.memory_efficiency", acc.profile.memory_efficiency, fit.memory,
         "memory-bound kernels (element-wise, normalization, optimizer)", m.memory,
         fit.before.passes.memory + fit.before.optimizer);
  ComputeProfile profile = acc.profile;
  profile.gemm_peak_efficiency = fit.gemm;
  profile.flash_attention_efficiency = fit.attention;
  profile.memory_efficiency = fit.memory;
  const NcclFit nccl = fit_nccl(measured, c, profile_interference.comm_slowdown);
  FabricProfile fabric = c.comm.intra_node;
  if (nccl.factor > 0) {
    fabric = scaled_fabric(fabric, nccl.factor);
    out.figures.push_back({"comm.intra_node.bus_efficiency", c.comm.intra_node.bus_efficiency, fabric.bus_efficiency,
                           std::to_string(nccl.collectives) + " collectives of known size " +
                               format_seconds(nccl.measured_s) + " per step in the trace, " +
                               format_seconds(nccl.model_s) +
                               " in the model (every protocol's "
                               "bus efficiency scaled by " +
                               format_significant(nccl.factor) + ")"});
  }
  // Host time: the wait before the step's first compute kernel (per step), and the GPU's other idle time, less the
  // model's launch floors, shared by the micro-batches (below a nanosecond: the trace's timestamp rounding, none).
  const double microbatches = static_cast<double>(std::max<std::int64_t>(1, e.strategy.microbatches));
  const double host_step = measured.host_start_s < 1e-9 ? 0 : measured.host_start_s;
  double rest = measured.idle_s - measured.idle_at_start_s - fit.after.passes.launch;
  if (rest < 1e-9) rest = 0;
  const double host_microbatch = rest / microbatches;
  out.figures.push_back({"training.host_time_per_step", e.training.host_time_per_step_s, host_step,
                         "the GPU's wait from the step's start to its first compute kernel " +
                             format_seconds(measured.host_start_s) + " (" + format_seconds(measured.idle_at_start_s) +
                             " of it idle, collectives running in the rest)"});
  out.figures.push_back({"training.host_time_per_microbatch", e.training.host_time_per_microbatch_s, host_microbatch,
                         "the rest of the idle GPU time " + format_seconds(measured.idle_s - measured.idle_at_start_s) +
                             " per step (" + format_seconds(measured.launch_gaps_s) +
                             " of all idle time in launch gaps, " + format_seconds(measured.host_stalls_s) +
                             " in longer stalls), less the model's launch "
                             "floors " +
                             format_seconds(fit.after.passes.launch) + ", over " + format_significant(microbatches) +
                             " micro-batches"});
  if (e.strategy.pp > 1)
    out.warnings.push_back("strategy.pp=" + std::to_string(e.strategy.pp) +
                           ": the trace's idle time includes the pipeline's bubbles, which the host time above "
                           "counts as host time too; calibrate on a run without pipeline parallelism");
  if (slowdown_measured) {
    out.figures.push_back({"compute.interference.intra_node.compute_slowdown",
                           profile.intra_node_interference.compute_slowdown, measured.overlap.slowdown,
                           std::to_string(measured.overlap.kernels_compared) +
                               " kernels (name and shape) timed alone and beside a collective"});
    profile.intra_node_interference.compute_slowdown = measured.overlap.slowdown;
  }
  // Each recorded GEMM shape against the fitted profile's model.
  AcceleratorSpec fitted = acc;
  fitted.profile = profile;
  Json shapes = Json::array();
  for (const GemmShapeSummary& g : measured.gemm_shapes) {
    if (out.gemms.size() == 20 || !(g.median_s > 0)) break;
    const DType dtype = g.elem_bytes == 4 ? DType::FP32 : DType::BF16;
    const GemmShape shape{g.m, g.n, g.k, g.batch};
    const double flops = 2 * g.m * g.n * g.k * g.batch;
    std::string name = format_significant(g.m) + "x" + format_significant(g.n) + "x" + format_significant(g.k);
    if (g.batch > 1) name += " x" + format_significant(g.batch);
    name += g.elem_bytes == 4 ? " fp32" : " 16-bit";
    out.gemms.push_back({name, g.count, flops / g.median_s / 1e12, flops / gemm_time_s(shape, dtype, fitted) / 1e12});
    shapes.push_back(Json{{"shape", name},
                          {"count", g.count},
                          {"achieved_tflops", out.gemms.back().achieved_tflops},
                          {"model_tflops", out.gemms.back().model_tflops}});
  }
  Json from = Json::array();
  for (const CalibratedFigure& f : out.figures)
    from.push_back(Json{{"field", f.field}, {"model", f.model}, {"fitted", f.fitted}, {"evidence", f.evidence}});
  Json src = Json::array();
  for (const std::string& s : sources) src.push_back("PyTorch profiler trace " + s);
  src.push_back("the rest: placesim's " + acc.name + " profile" +
                (acc.profile_name.empty() ? std::string() : " (" + acc.profile_name + ")"));
  out.file =
      Json{{"accelerator", acc.name},
           {"description", "calibrated by placesim calibrate --trace against experiment " + e.name},
           {"sources", src},
           {"compute", compute_profile_to_json(profile)},
           {"fit", Json{{"method", "profiler trace"},
                        {"experiment", e.name},
                        {"from_trace", from},
                        {"gemm_shapes", shapes},
                        {"warnings", out.warnings},
                        {"measured", summary_to_json(measured)}}},
           {"training", Json{{"host_time_per_step", format_significant(host_step * 1e3, 9) + "ms"},
                             {"host_time_per_microbatch", format_significant(host_microbatch * 1e3, 9) + "ms"}}}};
  if (!profile.not_measured.empty()) out.file["not_measured"] = not_measured_to_json(profile.not_measured);
  if (nccl.factor > 0) out.file["comm"] = Json{{"intra_node", fabric_profile_to_json(fabric)}};
  return out;
}

std::string calibration_table(const TraceCalibration& t) {
  std::ostringstream o;
  o << "calibrated from the trace (model -> fitted):\n";
  for (const CalibratedFigure& f : t.figures) {
    const bool seconds = f.field.rfind("training.", 0) == 0;
    auto shown = [&](double v) { return seconds ? format_seconds(v) : format_significant(v); };
    o << "  " << f.field << ": " << shown(f.model) << " -> " << shown(f.fitted);
    if (f.model > 0 && !seconds) {
      const double change = 100 * (f.fitted / f.model - 1);
      o << " (" << (change >= 0 ? "+" : "") << (std::abs(change) < 1e-6 ? "0" : format_significant(change, 3)) << " %)";
    }
    o << "\n      " << f.evidence << "\n";
  }
  if (!t.gemms.empty()) o << "GEMM shapes in the trace (the largest total first): achieved TFLOP/s, the model's\n";
  for (const TraceCalibration::Gemm& g : t.gemms)
    o << "  " << g.shape << " (" << g.count << "x): " << format_significant(g.achieved_tflops, 4) << ", "
      << format_significant(g.model_tflops, 4) << "\n";
  for (const std::string& w : t.warnings) o << "  warning: " << w << "\n";
  return o.str();
}

}  // namespace placesim
