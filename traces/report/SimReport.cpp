#include "traces/report/SimReport.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>

#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/placement/Mesh.hpp"
#include "strategies/placement/Routing.hpp"
#include "strategies/placement/Strategy.hpp"
#include "topology/cluster/Fabric.hpp"
#include "traces/report/Interval.hpp"
#include "traces/report/Report.hpp"
#include "traces/report/StackReport.hpp"
#include "traces/report/TimeToTrainReport.hpp"
#include "traces/report/Warnings.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

const State kStates[] = {State::Parameters, State::Gradients, State::Optimizer, State::Activations};

double total_sent(const DeviceStats& d) {
  double sum = 0;
  for (double b : d.bytes_sent) sum += b;
  return sum;
}

// Raises each byte and memory figure of `max` to the device's.
void raise_to(DeviceStats& max, const DeviceStats& d) {
  for (std::size_t k = 0; k < max.bytes_sent.size(); ++k)
    max.bytes_sent[k] = std::max(max.bytes_sent[k], d.bytes_sent[k]);
  for (std::size_t s = 0; s < max.peak.size(); ++s) max.peak[s] = std::max(max.peak[s], d.peak[s]);
  max.peak_buffers = std::max(max.peak_buffers, d.peak_buffers);
  if (d.peak_total > max.peak_total) max.at_peak = d.at_peak;  // the composition of the highest peak
  max.peak_total = std::max(max.peak_total, d.peak_total);
  max.h2d_bytes = std::max(max.h2d_bytes, d.h2d_bytes);
  max.d2h_bytes = std::max(max.d2h_bytes, d.d2h_bytes);
}

// The FLOP rates over the step time; all zero when the step took no time.
void set_rates(SimFigures& f, const Experiment& e, const ClusterSpec& c, const Analysis& a, std::size_t devices) {
  const double step = f.step_time_s;
  if (!(step > 0)) return;
  // Utilization against the rated peak, as MFU is quoted, also under a power limit (whose scaled peak the compute
  // model runs at).
  const double peak = c.accelerator.peak_flops(e.training.dtype) / c.accelerator.compute_scale;
  const auto n = static_cast<double>(devices);
  f.mfu = a.model_flops_per_step / (step * n * peak);
  f.hfu = a.hardware_flops_per_step / (step * n * peak);
  f.tokens_per_s = a.tokens_per_step / step;
  f.model_tflops_per_gpu = a.model_flops_per_step / step / n / 1e12;
  f.hardware_tflops_per_gpu = a.hardware_flops_per_step / step / n / 1e12;
}

Json by_class(const std::array<double, kCommClasses>& bytes, bool moe) {
  Json j = Json::object();
  for (int k = 0; k < kCommClasses; ++k)
    if (reported_class(static_cast<CommClass>(k), moe))
      j[to_string(static_cast<CommClass>(k))] = number(bytes[static_cast<std::size_t>(k)]);
  return j;
}

Json peak_memory(const DeviceStats& d) {
  Json j = Json::object();
  for (State s : kStates) j[to_string(s)] = number(d.peak[static_cast<std::size_t>(s)]);
  j["buffers"] = number(d.peak_buffers);
  j["total"] = number(d.peak_total);
  Json at = Json::object();
  for (State s : kStates) at[to_string(s)] = number(d.at_peak[static_cast<std::size_t>(s)]);
  at["buffers"] = number(d.at_peak[4]);
  j["at_peak"] = at;
  return j;
}

// The ep-comm stream only for mixture-of-experts models.
Json busy(const DeviceStats& d, bool moe) {
  Json j = Json::object();
  for (int s = 0; s < kStreams; ++s)
    if (moe || static_cast<Stream>(s) != Stream::EpComm)
      j[to_string(static_cast<Stream>(s))] = d.busy_s(static_cast<Stream>(s));
  return j;
}

Json offload(const DeviceStats& d) {
  return Json{{"h2d_bytes", number(d.h2d_bytes)}, {"d2h_bytes", number(d.d2h_bytes)}};
}

Json device_rows(const Experiment& e, const SimResult& r) {
  Json devices = Json::array();
  const std::vector<double> exposed = exposed_communication(r);
  for (std::size_t x = 0; x < r.devices.size(); ++x) {
    const DeviceStats& d = r.devices[x];
    MeshCoord mc = mesh_coord(e.strategy, static_cast<std::int64_t>(x));
    devices.push_back(
        Json{{"device", x},
             {"dp", mc.dp},
             {"tp", mc.tp},
             {"pp", mc.pp},
             {"bytes_sent", {{"total", number(total_sent(d))}, {"by_class", by_class(d.bytes_sent, e.model.moe())}}},
             {"offload", offload(d)},
             {"peak_memory_bytes", peak_memory(d)},
             {"busy_s", busy(d, e.model.moe())},
             {"exposed_communication_s", exposed[x]}});
    if (e.strategy.cp > 1) devices.back()["cp"] = mc.cp;
  }
  return devices;
}

double max_interference_s(const SimResult& r) {
  double most = 0;
  for (const DeviceStats& d : r.devices) most = std::max(most, d.interference_s);
  return most;
}

std::string interference_text(const OverlapInterference& i) {
  if (!i.active()) return "off (not measured)";
  char text[96];
  std::snprintf(text, sizeof text, "compute x%.3g, communication x%.3g", i.compute_slowdown, i.comm_slowdown);
  return text;
}

// The collectives that span nodes with NVLink hops: the share of their transfer inside nodes and their factors.
std::string spanning_text(const SimResult& r) {
  if (r.spanning_interference.empty()) return "";
  std::string out = "; collectives spanning nodes, on the share of their transfer over NVLink:";
  for (const SpanningInterference& sp : r.spanning_interference) {
    char pace[64] = "";
    if (sp.pace < 1) std::snprintf(pace, sizeof pace, " at %.3g %% of NVLink's pace", 100 * sp.pace);
    char text[224];
    std::snprintf(text, sizeof text, "%s %s %.3g %%%s -> compute x%.3g, communication x%.3g",
                  &sp == &r.spanning_interference.front() ? "" : ",", sp.alltoall ? "all-to-all" : "ring",
                  100 * sp.nvlink_share, pace, sp.compute_slowdown, sp.comm_slowdown);
    out += text;
  }
  return out;
}

// The interference the simulation applied, as the profile gives it, and the compute time it cost.
Json interference_json(const SimulatedStep& s) {
  const ComputeProfile& p = s.cluster.accelerator.profile;
  Json j = interference_to_json(p);
  Json spanning = Json::array();
  for (const SpanningInterference& sp : s.result.spanning_interference)
    spanning.push_back({{"kind", sp.alltoall ? "all-to-all" : "ring"},
                        {"nvlink_share", sp.nvlink_share},
                        {"pace", sp.pace},
                        {"compute_slowdown", sp.compute_slowdown},
                        {"comm_slowdown", sp.comm_slowdown}});
  j["spanning_nodes"] = spanning;
  j["compute_time_lost_s"] = max_interference_s(s.result);
  return j;
}

// Symmetry folding: how many devices the simulation ran, and why it ran them all when it did.
Json symmetry_json(const SimResult& r) {
  const Folding& f = r.folding;
  const auto devices = static_cast<std::int64_t>(r.devices.size());
  Json j{{"folded", f.active()},
         {"simulated_devices", f.active() ? devices / f.blocks() * f.window : devices},
         {"blocks", f.active() ? f.blocks() : 1}};
  if (!f.reason.empty()) j["not_folded_because"] = f.reason;
  if (f.active() && !f.note.empty()) j["approximation"] = f.note;
  if (f.active() && !f.apart.empty()) {
    j["simulated_apart"] = f.apart;
    j["simulated_blocks"] = f.window;
  }
  return j;
}

std::string symmetry_text(const SimResult& r) {
  const Folding& f = r.folding;
  const auto devices = static_cast<long long>(r.devices.size());
  char text[256];
  if (f.active() && !f.apart.empty()) {
    std::snprintf(text, sizeof text, "%lld of %lld devices (%d of %d congruent data-parallel blocks; simulated apart: ",
                  devices / f.blocks() * f.window, devices, f.window, f.blocks());
    return text + f.apart + "; the others take an untouched block's figures)" +
           (f.note.empty() ? std::string() : "; " + f.note);
  }
  if (f.active()) {
    std::snprintf(text, sizeof text,
                  "%lld of %lld devices (%d congruent data-parallel blocks; the others take their figures)",
                  devices / f.blocks(), devices, f.blocks());
    return text + (f.note.empty() ? std::string() : "; " + f.note);
  }
  std::snprintf(text, sizeof text, "all %lld devices", devices);
  return text + (f.reason.empty() ? std::string() : " (not folded: " + f.reason + ")");
}

Json experts_sim_json(const SimulatedStep& s);

// The slowest GPU of those cluster.speed_spread draws for (cluster.slow names the others) and its speed (the first
// of the slowest).
std::pair<int, double> slowest_drawn_gpu(const ClusterSpec& c) {
  std::pair<int, double> out{0, 1.0};
  for (int x = 0; x < c.devices(); ++x) {
    const bool named =
        c.slow.count("gpu " + std::to_string(x)) + c.slow.count("node " + std::to_string(x / c.gpus_per_node)) > 0;
    if (const double v = c.straggler_speed(x); !named && v < out.second) out = {x, v};
  }
  return out;
}

// cluster.slow and its cost (SimulatedStep::step_without_slow_s).
Json stragglers_json(const SimulatedStep& s) {
  Json out{{"slow", s.cluster.slow}, {"step_time_without_s", nullptr}, {"cost_fraction", nullptr}};
  if (s.cluster.speed_spread.sigma > 0)
    out["speed_spread"] = {{"sigma", s.cluster.speed_spread.sigma},
                           {"seed", s.cluster.speed_spread.seed},
                           {"slowest_speed", slowest_drawn_gpu(s.cluster).second}};
  if (s.step_without_slow_s && *s.step_without_slow_s > 0) {
    out["step_time_without_s"] = *s.step_without_slow_s;
    out["cost_fraction"] = s.figures.step_time_s / *s.step_without_slow_s - 1;
  }
  return out;
}

Json simulation_json(const SimulatedStep& s) {
  const SimFigures& f = s.figures;
  const SimResult& r = s.result;
  Json out{{"step_time_s", f.step_time_s},
           {"mfu", f.mfu},
           {"hfu", f.hfu},
           {"tokens_per_s", f.tokens_per_s},
           {"model_tflops_per_gpu", f.model_tflops_per_gpu},
           {"hardware_tflops_per_gpu", f.hardware_tflops_per_gpu},
           {"exposed_communication_s", f.exposed_communication_s},
           {"idle_fraction", f.idle_fraction},
           {"bytes_sent",
            {{"total", number(f.bytes_sent)}, {"by_class", by_class(f.max.bytes_sent, s.experiment.model.moe())}}},
           {"offload", offload(f.max)},
           {"peak_memory_bytes", peak_memory(f.max)},
           {"activities", r.activities},
           {"timers", r.timers},
           {"tasks", r.record.tasks.size()},
           {"wall_time_s", r.wall_time_s},
           {"devices", device_rows(s.experiment, r)},
           {"fidelity", to_string(s.fidelity)},
           {"symmetry", symmetry_json(r)},
           {"analytic_nic_overlap_s", r.nic_overlap_s},
           {"overlap_interference", interference_json(s)},
           {"layer_group", s.layer_group},
           {"layer_times", layer_times_json(s.layer_times)}};
  if (s.experiment.model.moe()) out["experts"] = experts_sim_json(s);
  if (s.cluster.has_stragglers()) out["stragglers"] = stragglers_json(s);
  if (s.cluster.mixed()) out["mixed_hardware"] = s.cluster.mixed_note;
  out["interval"] = interval_json(prediction_interval(s.experiment, s.cluster.accelerator, f.step_time_s));
  out["memory_headroom"] = headroom_json(memory_headroom(s.experiment, f.max.peak_total));
  // What the accelerator's profile has no public measurement of, and how it is costed instead.
  if (!s.cluster.accelerator.profile.not_measured.empty())
    out["not_measured"] = not_measured_to_json(s.cluster.accelerator.profile.not_measured);
  return out;
}

// Mixture of experts: where a GPU's step goes, as means over the GPUs.
struct ExpertBreakdown {
  double expert_compute_s = 0, dense_compute_s = 0, alltoall_s = 0, alltoall_exposed_s = 0;
};

ExpertBreakdown expert_breakdown(const SimResult& r) {
  ExpertBreakdown b;
  if (r.devices.empty()) return b;
  for (const DeviceStats& d : r.devices) {
    const auto& compute = d.busy[static_cast<std::size_t>(Stream::Compute)];
    const auto& a2a = d.busy[static_cast<std::size_t>(Stream::EpComm)];
    b.expert_compute_s += d.expert_compute_s;
    b.dense_compute_s += compute.total() - d.expert_compute_s;
    b.alltoall_s += a2a.total();
    b.alltoall_exposed_s += uncovered(a2a.intervals(), compute.intervals());
  }
  const double n = static_cast<double>(r.devices.size());
  b.expert_compute_s /= n;
  b.dense_compute_s /= n;
  b.alltoall_s /= n;
  b.alltoall_exposed_s /= n;
  return b;
}

Json experts_sim_json(const SimulatedStep& s) {
  const ExpertBreakdown b = expert_breakdown(s.result);
  const ExpertRouting r = expert_routing(s.experiment);
  Json j{{"expert_compute_s", b.expert_compute_s},
         {"dense_compute_s", b.dense_compute_s},
         {"all_to_all_s", b.alltoall_s},
         {"all_to_all_exposed_s", b.alltoall_exposed_s},
         {"routing", to_string(s.experiment.training.routing)},
         {"busiest_rank_factor", r.imbalance()}};
  if (s.pipeline) j["schedule_bubble_fraction"] = stage_mean(s.pipeline->schedule_bubble_fraction);
  return j;
}

Json validation_json(const std::vector<ValidationRow>& rows) {
  Json v = Json::array();
  for (const ValidationRow& row : rows)
    v.push_back(Json{{"figure", row.figure},
                     {"analytic", number(row.analytic)},
                     {"simulated", number(row.simulated)},
                     {"difference", number(row.simulated - row.analytic)}});
  return v;
}

}  // namespace

SimFigures sim_figures(const Experiment& e, const ClusterSpec& c, const Analysis& a, const SimResult& r) {
  SimFigures f;
  f.step_time_s = r.step_time_s;
  set_rates(f, e, c, a, r.devices.size());
  std::vector<double> stage_busy(static_cast<std::size_t>(e.strategy.pp), 0);
  std::vector<int> stage_count(static_cast<std::size_t>(e.strategy.pp), 0);
  const std::vector<double> exposed = exposed_communication(r);
  for (std::size_t x = 0; x < r.devices.size(); ++x) {
    const DeviceStats& d = r.devices[x];
    raise_to(f.max, d);
    f.exposed_communication_s = std::max(f.exposed_communication_s, exposed[x]);
    f.bytes_sent = std::max(f.bytes_sent, total_sent(d));
    const auto stage = static_cast<std::size_t>(mesh_coord(e.strategy, static_cast<std::int64_t>(x)).pp);
    stage_busy[stage] += d.busy_s(Stream::Compute);
    stage_count[stage] += 1;
  }
  const double step = f.step_time_s;
  for (std::size_t s = 0; s < stage_busy.size(); ++s)
    f.idle_fraction.push_back(step > 0 && stage_count[s] > 0 ? 1.0 - stage_busy[s] / stage_count[s] / step : 0.0);
  return f;
}

std::vector<ValidationRow> validation_rows(const Experiment& e, const Analysis& a, const SimResult& r,
                                           const SimFigures& f) {
  int mismatched = 0;
  for (std::size_t x = 0; x < r.devices.size(); ++x) {
    const DeviceStats& d = r.devices[x];
    const StageAnalysis& st =
        a.stages[static_cast<std::size_t>(mesh_coord(e.strategy, static_cast<std::int64_t>(x)).pp)];
    // Expert parallelism: each ep rank sends its own all-to-all bytes (a skewed routing makes them differ).
    auto expected = st.comm.by_class;
    if (!st.ep_rank_bytes.empty()) {
      const auto local = static_cast<std::int64_t>(x) % (e.strategy.tp * e.strategy.cp * e.strategy.dp);
      expected[static_cast<std::size_t>(CommClass::EpAllToAll)] =
          st.ep_rank_bytes[static_cast<std::size_t>(local % e.strategy.ep)];
    }
    const bool same = d.h2d_bytes == st.comm.h2d && d.d2h_bytes == st.comm.d2h && d.bytes_sent == expected;
    mismatched += same ? 0 : 1;
  }
  std::vector<ValidationRow> v;
  for (int k = 0; k < kCommClasses; ++k)
    if (reported_class(static_cast<CommClass>(k), e.model.moe()))
      v.push_back({std::string("communication.by_class.") + to_string(static_cast<CommClass>(k)),
                   a.comm.by_class[static_cast<std::size_t>(k)], f.max.bytes_sent[static_cast<std::size_t>(k)]});
  v.push_back({"communication.bytes_per_step", a.bytes_per_step, f.bytes_sent});
  v.push_back({"communication.offload.h2d_bytes", a.comm.h2d, f.max.h2d_bytes});
  v.push_back({"communication.offload.d2h_bytes", a.comm.d2h, f.max.d2h_bytes});
  v.push_back(
      {"devices whose bytes per class differ from their stage's analytic bytes", 0, static_cast<double>(mismatched)});
  v.push_back({"memory.parameters_bytes", a.memory.parameters, f.max.peak[0]});
  v.push_back({"memory.gradients_bytes", a.memory.gradients, f.max.peak[1]});
  v.push_back({"memory.optimizer_bytes", a.memory.optimizer, f.max.peak[2]});
  // Offloaded activations peak where copies and compute overlap: the analytic figure is their bound.
  v.push_back({e.strategy.placement.activations == Mode::Offloaded ? "memory.activations_bytes (analytic bound)"
                                                                   : "memory.activations_bytes",
               a.memory.activations, f.max.peak[3]});
  v.push_back({"memory.buffers_bytes (analytic bound)", a.memory.buffers, f.max.peak_buffers});
  v.push_back({"memory.total_bytes (analytic bound)", a.total_bytes, f.max.peak_total});
  return v;
}

namespace {

// What a trace calibration leaves to the model.
std::string calibration_from_model(const SimulatedStep& s) {
  return "every other figure: the inter-node fabric (" + s.cluster.comm.inter_node.name +
         "), the GEMM model's latency, tile and shape terms, attention's sequence-length curve, memory, and the "
         "parallel layout's own work, from placesim's " +
         s.cluster.accelerator.name + " profile and the experiment";
}

// The summary's lines on a trace calibration: each figure it set, and what stays the model's.
std::string calibration_summary(const SimulatedStep& s) {
  const Json& c = s.experiment.calibration;
  if (c.is_null()) return "";
  std::string out = "  calibration          " + c.value("file", "") + " (a profiler trace of one node): ";
  const Json applied = c.value("training", Json::array());
  bool first = true;
  for (const Json& f : c.value("from_trace", Json::array())) {
    if (!f.is_object()) continue;
    const std::string field = f.value("field", "");
    const bool training = field.rfind("training.", 0) == 0;
    auto shown = [&](double v) { return training ? format_seconds(v) : format_significant(v, 4); };
    out += std::string(first ? "" : ", ") + field + " " + shown(f.value("fitted", 0.0)) + " (model " +
           shown(f.value("model", 0.0)) + ")";
    if (training && std::find(applied.begin(), applied.end(), Json(field)) == applied.end())
      out += " not applied: the experiment sets it";
    first = false;
  }
  return out + "\n  from the model       " + calibration_from_model(s) + "\n";
}

}  // namespace

Json simulation_report(const SimulatedStep& s) {
  Json report = analysis_report(s.experiment, s.analysis);
  report["cluster"] = cluster_to_json(s.cluster);
  report["simulation"] = simulation_json(s);
  report["validation"] = validation_json(s.validation);
  if (s.pipeline) report["pipeline"] = pipeline_json(*s.pipeline);
  report["time_to_train"] = time_to_train_json(step_time_to_train(s));
  report["warnings"] = simulation_warnings(s);
  if (!s.experiment.calibration.is_null()) {
    report["calibration"] = s.experiment.calibration;
    report["calibration"]["from_model"] = calibration_from_model(s);
  }
  return report;
}

namespace {

std::string summary_heading(const Experiment& e, const ClusterSpec& c) {
  const StrategySpec& st = e.strategy;
  std::ostringstream out;
  out << "simulated step: " << e.model.name << " on " << c.name << " (" << st.devices() << " GPUs), " << st.preset
      << " " << mesh_string(st) << ", " << to_string(st.schedule) << ", " << st.microbatches << " micro-batches\n\n";
  return out.str();
}

// "sent / GPU / step" and "peak memory / GPU": the maxima over devices; the classes in alphabetical order.
std::string summary_bytes(const SimFigures& f) {
  std::ostringstream out;
  const DeviceStats& m = f.max;
  out << "  peak memory / GPU    " << format_bytes(m.peak_total) << " (at that moment: parameters "
      << format_bytes(m.at_peak[0]) << ", gradients " << format_bytes(m.at_peak[1]) << ", optimizer "
      << format_bytes(m.at_peak[2]) << ", activations " << format_bytes(m.at_peak[3]) << ", buffers "
      << format_bytes(m.at_peak[4]) << ")\n";
  std::map<std::string, double> sent;
  for (int k = 0; k < kCommClasses; ++k)
    sent[to_string(static_cast<CommClass>(k))] = m.bytes_sent[static_cast<std::size_t>(k)];
  out << "  sent / GPU / step    " << format_bytes(f.bytes_sent) << " (";
  bool first = true;
  for (const auto& [name, bytes] : sent) {
    if (bytes == 0) continue;
    out << (first ? "" : ", ") << name << " " << format_bytes(bytes);
    first = false;
  }
  out << ")\n";
  return out.str();
}

// How many exact figures (the analytic bounds left out) the simulation reproduced.
std::string summary_validation(const std::vector<ValidationRow>& rows) {
  int exact = 0, total = 0;
  for (const ValidationRow& row : rows) {
    if (row.figure.find("bound") != std::string::npos) continue;
    ++total;
    exact += row.simulated - row.analytic == 0 ? 1 : 0;
  }
  char line[128];
  std::snprintf(line, sizeof line, "  analytic vs simulated: %d of %d exact figures identical\n", exact, total);
  std::string text = line;
  // The analytic buffers assume every transient buffer live at once (two gathered units, two gradient buffers) beside
  // the activations' peak; the simulation's peak is what was live at one moment. Say so where they differ instead of
  // claiming them equal.
  for (const ValidationRow& row : rows)
    if (row.figure.find("bound") != std::string::npos && row.simulated != row.analytic) {
      const std::string name = row.figure.substr(0, row.figure.find(' '));
      text += "  " + name + ": analytic bound " + format_bytes(row.analytic) + ", simulated peak " +
              format_bytes(row.simulated) +
              (row.simulated < row.analytic
                   ? " (the bound assumes every transient buffer live at once; the peak is what was live at one "
                     "moment)\n"
                   : " (above the bound: the simulation gathers and reduces whole layer groups, the bound one "
                     "layer at a time; --layer-group 1 simulates the bound's unit)\n");
    }
  return text;
}

// The fixed cost per element-wise or fused-attention kernel: the profile's, and where the default comes from when
// the profile keeps it (no built-in profile fits it).
std::string kernel_latency_summary(const ComputeProfile& p) {
  const bool assumed = p.kernel_latency_s == ComputeProfile{}.kernel_latency_s;
  return "  kernel latency       " + format_seconds(p.kernel_latency_s) +
         " per element-wise or fused-attention kernel" +
         (assumed ? std::string(", assumed (the profile's kernel_latency_s, which no built-in profile fits): ") +
                        kKernelLatencySource
                  : std::string(" (the profile's kernel_latency_s)")) +
         "\n";
}

// Step time, MFU, throughput and exposed communication.
std::string summary_rates(const SimFigures& f) {
  char line[1024];
  std::snprintf(line, sizeof line,
                "  step time            %s\n  MFU                  %.1f %%\n  model TFLOP/s / GPU  %.1f (hardware, "
                "recompute included: %.1f)\n  tokens / s           %.0f\n  exposed comm         %s\n",
                format_seconds(f.step_time_s).c_str(), 100 * f.mfu, f.model_tflops_per_gpu, f.hardware_tflops_per_gpu,
                f.tokens_per_s, format_seconds(f.exposed_communication_s).c_str());
  return line;
}

std::string interval_summary(const SimulatedStep& s) {
  const PredictionInterval interval = prediction_interval(s.experiment, s.cluster.accelerator, s.figures.step_time_s);
  return "  90 % interval        " +
         (interval.available
              ? format_seconds(interval.low_s) + " to " + format_seconds(interval.high_s) + " per step, centred on " +
                    format_seconds(interval.centre_s) + " (" + interval.basis + ")\n"
              : interval.basis + "\n");
}

// The power limit and how its compute scale was found; empty without a limit.
std::string power_limit_summary(const AcceleratorSpec& acc) {
  if (!(acc.power_limit_w > 0)) return "";
  const char* why = "sustained clock taken as proportional to the limit, an estimate";
  switch (acc.compute_scale_basis) {
    case ScaleBasis::Measured:
      why = "the profile's GEMMs measured at this limit";
      break;
    case ScaleBasis::Interpolated:
      why = "interpolated between the profile's measured limits and the rated power";
      break;
    case ScaleBasis::BelowMeasured:
      why = "the lowest measured limit's scale, proportional to the limit below it: an estimate";
      break;
    case ScaleBasis::Linear:
    case ScaleBasis::Rated:
      break;
  }
  char line[1024];
  std::snprintf(line, sizeof line,
                "  power limit          %.0f W of the rated %.0f W: compute peaks x%.3f (%s; HBM bandwidth "
                "unchanged)\n",
                acc.power_limit_w, acc.tdp_w, acc.compute_scale, why);
  return line;
}

// What FP8 training changes and what it leaves out; empty without training.fp8 (refused on opaque models).
std::string fp8_summary(const Experiment& e, const AcceleratorSpec& acc) {
  const TrainingSpec& t = e.training;
  if (!t.fp8) return "";
  const std::string scaling =
      (t.fp8_scaling == Fp8Scaling::Tensorwise
           ? "tensorwise scaling, torchao's Float8Linear: amax and cast passes, the weights cast every forward, "
             "operand copies for the backward GEMMs"
       : t.fp8_scaling == Fp8Scaling::Current
           ? "current scaling, Transformer Engine's: an amax pass and a fused cast-transpose, the weights cast once "
             "per step"
       : t.fp8_scaling == Fp8Scaling::Mxfp8
           ? "MXFP8 block scaling, Transformer Engine's: one cast writes the rowwise and columnwise FP8 copies with "
             "an E8M0 scale per 32 elements, the weights cast once per step; the GEMMs at x" +
                 format_significant(acc.mxfp8_gemm_factor, 3) + " the per-tensor FP8 rate (" + acc.name +
                 "'s mxfp8_gemm_factor)"
           : "delayed scaling, Transformer Engine's: fused cast-transposes, the weights cast once per step") +
      std::string(e.provenance.written("training.fp8_scaling")
                      ? " (training.fp8_scaling)"
                      : " (training.fp8_scaling not given: " + e.provenance.who("training.fp8_scaling") + ")");
  char line[1024];
  std::snprintf(line, sizeof line,
                "  FP8                  the layers' linear GEMMs at the FP8 peak (%.0f TFLOP/s) with their casts "
                "(training.fp8; %s); attention, norms and the output layer in %s, every collective as without FP8; "
                "the weights' FP8 copies are not in the memory figures; MFU is of the %s peak (an FP8 MFU, NeMo's, "
                "divides by the FP8 peak)\n",
                acc.peak_fp8_flops / 1e12, scaling.c_str(), to_string(t.dtype).c_str(), to_string(t.dtype).c_str());
  return line;
}

// The profile's overlap interference, what it did not measure, and the kernels and attention the run costs.
std::string profile_summary(const SimulatedStep& s) {
  const AcceleratorSpec& acc = s.cluster.accelerator;
  const ComputeProfile& profile = acc.profile;
  const Experiment& e = s.experiment;
  std::string out = "  overlap interference inside a node: " + interference_text(profile.intra_node_interference) +
                    (s.result.spanning_interference.empty() ? "; across nodes: " : "; across nodes (NIC hops): ") +
                    interference_text(profile.inter_node_interference) + spanning_text(s.result) +
                    "; compute time lost " + format_seconds(max_interference_s(s.result)) + " (most of any GPU)\n";
  for (const NotMeasured& n : profile.not_measured)
    out += "  not measured on " + acc.name + ": " + n.component + " - " + n.treatment + "\n";
  if (e.model.opaque()) return out;
  out += "  kernels: " + kernels_text(e) + "\n";
  if (const AttentionStandIn* stand_in = attention_stand_in(e.training.attention_kernel, profile))
    out += "  attention: " + std::regex_replace(stand_in->why, std::regex("\\{accelerator\\}"), acc.name) + "\n";
  if (e.model.flash_attention && e.training.attention_kernel == AttentionKernel::Fused &&
      !profile.attention.note.empty())
    out += "  attention: " + profile.attention.note + "\n";
  return out;
}

// The host's time per kernel launch and outside the kernels.
std::string host_summary(const SimulatedStep& s) {
  const TrainingSpec& tr = s.experiment.training;
  std::string out =
      "  host launch overhead " +
      (tr.launch_overhead_s > 0
           ? format_seconds(tr.launch_overhead_s) + " per kernel (a layer's pass lasts at least its kernels x this)\n"
           : std::string("off (training.launch_overhead not given: no measurement is built in)\n"));
  out += kernel_latency_summary(s.cluster.accelerator.profile);
  if (!(tr.host_time_per_microbatch_s > 0 || tr.host_time_per_step_s > 0)) return out;
  std::string given;
  if (tr.host_time_per_microbatch_s > 0)
    given = format_seconds(tr.host_time_per_microbatch_s) + " per micro-batch (before its first forward)";
  if (tr.host_time_per_step_s > 0)
    given += (given.empty() ? "" : " and ") + format_seconds(tr.host_time_per_step_s) + " per step (at its start)";
  return out + "  host time outside the kernels: " + given +
         " on every GPU, whose compute waits for it (training.host_time_per_microbatch, host_time_per_step)" +
         (s.pipeline ? "; the pipeline idle below spans first to last compute: it leaves out the step's and the "
                       "first micro-batch's and counts the others under imbalance and waiting\n"
                     : "\n");
}

// The pipeline's idle time by cause and its schedule bubble; empty without a pipeline.
std::string pipeline_summary(const SimulatedStep& s) {
  if (!s.pipeline) return "";
  const PipelineMetrics& m = *s.pipeline;
  auto share = [&m](const std::vector<double>& seconds) {
    return m.span_s > 0 ? 100 * stage_mean(seconds) / m.span_s : 0.0;
  };
  char line[1024];
  std::snprintf(
      line, sizeof line,
      "  pipeline idle        %.1f %% (mean over stages, %s, all causes): schedule bubble %.1f %%, %s "
      "%.1f %%, imbalance and waiting %.1f %%, optimizer and step end %.1f %%, warm-up %.1f %%\n"
      "  schedule bubble      %.1f %% (mean over stages of the schedule re-timed with balanced stages and "
      "free communication)\n",
      100 * stage_mean(m.idle_fraction), to_string(s.experiment.strategy.schedule).c_str(), share(m.schedule_bubble_s),
      // Idle inside a pass: with experts it is also the wait for the busiest ep rank at each combine.
      s.experiment.model.moe() ? "inside passes (exposed comm, waiting for the busiest ep rank)" : "exposed comm",
      share(m.exposed_communication_s), share(m.imbalance_and_waiting_s), share(m.optimizer_and_step_end_s),
      share(m.warmup_s), 100 * stage_mean(m.schedule_bubble_fraction));
  return line;
}

// Where the experts' time went and how unevenly routing loads the ep ranks; empty without experts.
std::string experts_summary(const SimulatedStep& s) {
  if (!s.experiment.model.moe()) return "";
  const ExpertBreakdown b = expert_breakdown(s.result);
  const ExpertRouting r = expert_routing(s.experiment);
  char line[1024];
  std::snprintf(line, sizeof line,
                "  experts (GPU means)  expert compute %s, dense compute %s, all-to-all %s (exposed %s), schedule "
                "bubble %.1f %%; routing %s, busiest ep rank x%.2f the mean\n",
                format_seconds(b.expert_compute_s).c_str(), format_seconds(b.dense_compute_s).c_str(),
                format_seconds(b.alltoall_s).c_str(), format_seconds(b.alltoall_exposed_s).c_str(),
                s.pipeline ? 100 * stage_mean(s.pipeline->schedule_bubble_fraction) : 0.0,
                to_string(s.experiment.training.routing).c_str(), r.imbalance());
  return line;
}

// What the simulation took: wall time, SimGrid activities and timers, the symmetry it used.
std::string cost_summary(const SimulatedStep& s) {
  char line[1024];
  std::snprintf(line, sizeof line,
                "  simulated in %.2f s: %llu SimGrid activities (flows), %llu timers (compute, exact collectives); ",
                s.result.wall_time_s, static_cast<unsigned long long>(s.result.activities),
                static_cast<unsigned long long>(s.result.timers));
  return line + symmetry_text(s.result) + "\n";
}

// Degraded links (cluster.degraded) and other jobs' traffic on the switches above the leaves
// (cluster.background_load).
std::string neighbours_summary(const ClusterSpec& c) {
  std::string out;
  if (!c.degraded.empty()) {
    out = "  degraded links       ";
    bool first = true;
    for (const auto& [link, left] : c.degraded) {
      out += (first ? "" : ", ") + link + " at " + format_significant(100 * left) + " %";
      first = false;
    }
    out += " of its bandwidth (cluster.degraded)\n";
  }
  if (c.background_load <= 0) return out;
  char line[256];
  std::snprintf(line, sizeof line,
                "  neighbours           %.0f %% of each leaf uplink and spine port taken by other jobs "
                "(cluster.background_load)%s\n",
                100 * c.background_load,
                c.nodes > 1 && Fabric(c).leaves() > 1
                    ? ""
                    : "; no route of this job leaves its leaf switch, so none crosses them");
  return out + line;
}

// The stragglers (cluster.slow) and their cost: the step against the same step without them.
std::string straggler_summary(const SimulatedStep& s) {
  const ClusterSpec& c = s.cluster;
  if (!c.has_stragglers()) return "";
  std::string named;
  for (const auto& [where, speed] : c.slow)
    named += (named.empty() ? "" : ", ") + where + " x" + format_significant(speed);
  if (!c.slow.empty()) named += " (cluster.slow)";
  if (c.speed_spread.sigma > 0) {
    const auto [at, slowest] = slowest_drawn_gpu(c);
    named += std::string(named.empty() ? "" : "; ") + "speeds drawn per " + (c.speed_spread.per_node ? "node" : "GPU") +
             " as 1 - " + format_significant(c.speed_spread.sigma) + " |z|, seed " +
             std::to_string(c.speed_spread.seed) + ", slowest GPU " + std::to_string(at) + " x" +
             format_significant(std::round(slowest * 1000) / 1000) + " (cluster.speed_spread)";
  }
  std::string out = "  stragglers           " + named + ": ";
  if (!s.step_without_slow_s) return out + "the step without them was not simulated\n";
  const double without = *s.step_without_slow_s;
  char cost[96];
  std::snprintf(cost, sizeof cost, " (%+.1f %%)", without > 0 ? 100 * (s.figures.step_time_s / without - 1) : 0.0);
  return out + format_seconds(s.figures.step_time_s) + " a step against " + format_seconds(without) + " without them" +
         cost + "\n";
}

}  // namespace

std::string simulation_summary(const SimulatedStep& s) {
  const SimFigures& f = s.figures;
  std::string out = summary_heading(s.experiment, s.cluster) + stack_summary(s.experiment) + calibration_summary(s);
  out += summary_rates(f);
  out += straggler_summary(s);
  if (s.cluster.mixed()) out += "  accelerators         " + s.cluster.mixed_note + " (cluster.accelerators)\n";
  out += neighbours_summary(s.cluster);
  out += interval_summary(s);
  out += time_to_train_summary(step_time_to_train(s));
  out += power_limit_summary(s.cluster.accelerator);
  out += fp8_summary(s.experiment, s.cluster.accelerator);
  out += profile_summary(s);
  out += host_summary(s);
  out += pipeline_summary(s);
  out += experts_summary(s);
  out += summary_bytes(f) + headroom_summary(memory_headroom(s.experiment, f.max.peak_total)) +
         summary_validation(s.validation);
  return out + cost_summary(s) + warning_lines(simulation_warnings(s));
}

}  // namespace placesim
