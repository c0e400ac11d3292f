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
    const std::optional<CollectiveKind> kind = collective_kind(x.op);
    if (!kind || x.group_size < 2 || x.group_size > c.gpus_per_node || !(x.bytes > 0)) continue;
    const double per_step = x.count / static_cast<double>(std::max<std::size_t>(1, s.steps.size()));
    points.push_back({*kind, x.bytes, per_step, x.group_size});
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

namespace {

// One calibration's steps, each a function of the trace summary, the experiment and what the steps before fitted.
class TraceFit {
 public:
  TraceFit(const TraceSummary& measured, const Experiment& e, const ClusterSpec& c)
      : t_(measured), e_(e), c_(c), acc_(c.accelerator), g_(expand(e, simulated_network(c))) {
    // Overlap interference: the trace's own measure where it has one (the same kernels alone and overlapped, with
    // shapes), else the profile's.
    slowdown_measured_ = t_.overlap.kernels_compared >= 3 && t_.gemms_with_shape > 0 && t_.overlap.slowdown > 1;
    slowdown_ = slowdown_measured_ ? t_.overlap.slowdown : acc_.profile.intra_node_interference.compute_slowdown;
    m_ = measured_classes(t_, slowdown_);
    profile_ = acc_.profile;
    fabric_ = c.comm.intra_node;
  }

  TraceCalibration run(const std::vector<std::string>& sources) {
    compute();
    nccl();
    host();
    interference();
    gemm_shapes();
    out_.file = file(sources);
    return std::move(out_);
  }

 private:
  // A trace of another run than the experiment's cannot calibrate it: refused when a class is off by more than 5x
  // (against the model at the profile's values, fit_.before).
  void check_same_run() const {
    const TaskClassSeconds& model = fit_.before;
    const std::pair<const char*, std::pair<double, double>> classes[] = {
        {"GEMM", {m_.gemm, model.passes.gemm}},
        {"attention", {m_.attention, model.passes.attention}},
        {"memory-bound", {m_.memory, model.passes.memory + model.optimizer}}};
    for (const auto& [what, pair] : classes) {
      const auto [trace_s, model_s] = pair;
      if (trace_s > 0 && model_s > 0 && (trace_s > 5 * model_s || model_s > 5 * trace_s))
        throw InputError("the trace's " + std::string(what) + " kernels take " + format_seconds(trace_s) +
                         " per step, experiment " + e_.name + "'s model " + format_seconds(model_s) +
                         ": more than 5x apart, so the trace did not run this experiment (check its model, "
                         "sequence length, micro-batch size, micro-batches per step and parallelism against the run)");
    }
  }

  // One compute figure, or a warning when only one side has the class or the fit is above 1.
  void figure(const std::string& field, double model, double fitted, const std::string& what, double trace_s,
              double model_s) {
    if (!(trace_s > 0) || !(model_s > 0)) {
      if (trace_s > 0 || model_s > 0)
        out_.warnings.push_back(
            field + " kept at " + format_significant(model) + ": the " +
            (trace_s > 0 ? "model has no " + what + " (the trace " + format_seconds(trace_s) + " per step)"
                         : "trace has no " + what + " (the model " + format_seconds(model_s) + " per step)"));
      return;
    }
    const std::string alone =
        slowdown_ > 1
            ? " as run alone (the time beside a collective counted at 1/" + format_significant(slowdown_, 4) +
                  (slowdown_measured_ ? ", the trace's own overlap slowdown)" : ", the profile's interference)")
            : "";
    out_.figures.push_back({field, model, fitted,
                            what + " " + format_seconds(trace_s) + " per step in the trace" + alone + ", " +
                                format_seconds(model_s) + " in the model"});
    if (fitted > 1)
      out_.warnings.push_back(field + " = " + format_significant(fitted) + " is above 1: the trace ran less " + what +
                              " work than the experiment describes (check its model, micro-batch size, "
                              "micro-batches and parallelism against the run)");
  }

  void compute() {
    fit_ = fit_compute(m_, e_, acc_, g_);
    check_same_run();
    const ComputeProfile& p = acc_.profile;
    figure("compute.gemm_peak_efficiency", p.gemm_peak_efficiency, fit_.gemm, "GEMM kernels", m_.gemm,
           fit_.before.passes.gemm);
    figure("compute.flash_attention_efficiency", p.flash_attention_efficiency, fit_.attention, "attention kernels",
           m_.attention, fit_.before.passes.attention);
    figure("compute.memory_efficiency", p.memory_efficiency, fit_.memory,
           "memory-bound kernels (element-wise, normalization, optimizer)", m_.memory,
           fit_.before.passes.memory + fit_.before.optimizer);
    profile_.gemm_peak_efficiency = fit_.gemm;
    profile_.flash_attention_efficiency = fit_.attention;
    profile_.memory_efficiency = fit_.memory;
  }

  void nccl() {
    nccl_ = fit_nccl(t_, c_, acc_.profile.intra_node_interference.comm_slowdown);
    if (!(nccl_.factor > 0)) return;
    fabric_ = scaled_fabric(fabric_, nccl_.factor);
    out_.figures.push_back({"comm.intra_node.bus_efficiency", c_.comm.intra_node.bus_efficiency, fabric_.bus_efficiency,
                            std::to_string(nccl_.collectives) + " collectives of known size " +
                                format_seconds(nccl_.measured_s) + " per step in the trace, " +
                                format_seconds(nccl_.model_s) + " in the model (every protocol's bus efficiency " +
                                "scaled by " + format_significant(nccl_.factor) + ")"});
  }

  // Host time: the wait before the step's first compute kernel (per step), and the GPU's other idle time, less the
  // model's launch floors, shared by the micro-batches (below a nanosecond: the trace's timestamp rounding, none).
  void host() {
    const double microbatches = static_cast<double>(std::max<std::int64_t>(1, e_.strategy.microbatches));
    host_step_ = t_.host_start_s < 1e-9 ? 0 : t_.host_start_s;
    const double rest = t_.idle_s - t_.idle_at_start_s - fit_.after.passes.launch;
    host_microbatch_ = rest < 1e-9 ? 0 : rest / microbatches;
    out_.figures.push_back({"training.host_time_per_step", e_.training.host_time_per_step_s, host_step_,
                            "the GPU's wait from the step's start to its first compute kernel " +
                                format_seconds(t_.host_start_s) + " (" + format_seconds(t_.idle_at_start_s) +
                                " of it idle, collectives running in the rest)"});
    out_.figures.push_back(
        {"training.host_time_per_microbatch", e_.training.host_time_per_microbatch_s, host_microbatch_,
         "the rest of the idle GPU time " + format_seconds(t_.idle_s - t_.idle_at_start_s) + " per step (" +
             format_seconds(t_.launch_gaps_s) + " of all idle time in launch gaps, " +
             format_seconds(t_.host_stalls_s) + " in longer stalls), less the model's launch floors " +
             format_seconds(fit_.after.passes.launch) + ", over " + format_significant(microbatches) +
             " micro-batches"});
    if (e_.strategy.pp > 1)
      out_.warnings.push_back("strategy.pp=" + std::to_string(e_.strategy.pp) +
                              ": the trace's idle time includes the pipeline's bubbles, which the host time above "
                              "counts as host time too; calibrate on a run without pipeline parallelism");
  }

  void interference() {
    if (!slowdown_measured_) return;
    out_.figures.push_back({"compute.interference.intra_node.compute_slowdown",
                            profile_.intra_node_interference.compute_slowdown, t_.overlap.slowdown,
                            std::to_string(t_.overlap.kernels_compared) +
                                " kernels (name and shape) timed alone and beside a collective"});
    profile_.intra_node_interference.compute_slowdown = t_.overlap.slowdown;
  }

  // Each recorded GEMM shape (the 20 largest totals) against the fitted profile's model.
  void gemm_shapes() {
    AcceleratorSpec fitted = acc_;
    fitted.profile = profile_;
    for (const GemmShapeSummary& g : t_.gemm_shapes) {
      if (out_.gemms.size() == 20 || !(g.median_s > 0)) break;
      const DType dtype = g.elem_bytes == 4 ? DType::FP32 : DType::BF16;
      const double flops = 2 * g.m * g.n * g.k * g.batch;
      std::string name = format_significant(g.m) + "x" + format_significant(g.n) + "x" + format_significant(g.k);
      if (g.batch > 1) name += " x" + format_significant(g.batch);
      name += g.elem_bytes == 4 ? " fp32" : " 16-bit";
      out_.gemms.push_back({name, g.count, flops / g.median_s / 1e12,
                            flops / gemm_time_s({g.m, g.n, g.k, g.batch}, dtype, fitted) / 1e12});
    }
  }

  Json file(const std::vector<std::string>& sources) const {
    Json from = Json::array(), shapes = Json::array(), src = Json::array();
    for (const CalibratedFigure& f : out_.figures)
      from.push_back(Json{{"field", f.field}, {"model", f.model}, {"fitted", f.fitted}, {"evidence", f.evidence}});
    for (const TraceCalibration::Gemm& g : out_.gemms)
      shapes.push_back(Json{{"shape", g.shape},
                            {"count", g.count},
                            {"achieved_tflops", g.achieved_tflops},
                            {"model_tflops", g.model_tflops}});
    for (const std::string& s : sources) src.push_back("PyTorch profiler trace " + s);
    src.push_back("the rest: placesim's " + acc_.name + " profile" +
                  (acc_.profile_name.empty() ? std::string() : " (" + acc_.profile_name + ")"));
    Json out{{"accelerator", acc_.name},
             {"description", "calibrated by placesim calibrate --trace against experiment " + e_.name},
             {"sources", src},
             {"compute", compute_profile_to_json(profile_)},
             {"fit", Json{{"method", "profiler trace"},
                          {"experiment", e_.name},
                          {"from_trace", from},
                          {"gemm_shapes", shapes},
                          {"warnings", out_.warnings},
                          {"measured", summary_to_json(t_)}}},
             {"training", Json{{"host_time_per_step", format_significant(host_step_ * 1e3, 9) + "ms"},
                               {"host_time_per_microbatch", format_significant(host_microbatch_ * 1e3, 9) + "ms"}}}};
    if (!profile_.not_measured.empty()) out["not_measured"] = not_measured_to_json(profile_.not_measured);
    if (nccl_.factor > 0) out["comm"] = Json{{"intra_node", fabric_profile_to_json(fabric_)}};
    return out;
  }

  const TraceSummary& t_;
  const Experiment& e_;
  const ClusterSpec& c_;
  const AcceleratorSpec& acc_;
  const TaskGraph g_;
  bool slowdown_measured_ = false;
  double slowdown_ = 1;
  Measured m_;
  ComputeFit fit_;
  NcclFit nccl_;
  ComputeProfile profile_;
  FabricProfile fabric_;
  double host_step_ = 0, host_microbatch_ = 0;
  TraceCalibration out_;
};

}  // namespace

TraceCalibration calibrate_from_trace(const TraceSummary& measured, const Experiment& e, const ClusterSpec& c,
                                      const std::vector<std::string>& sources) {
  if (measured.steps.empty()) throw InputError("the trace has no step with GPU kernels: nothing to calibrate against");
  return TraceFit(measured, e, c).run(sources);
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
