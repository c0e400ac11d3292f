#include "sim/backend/Simulate.hpp"

#include <cstdio>
#include <sstream>

#include "traces/report/SimReport.hpp"
#include "strategies/placement/ClusterFit.hpp"
#include "strategies/analytic/LayerTimes.hpp"
#include "strategies/placement/Mesh.hpp"
#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/placement/Validity.hpp"
#include "workloads/json/Units.hpp"
#include "traces/report/Report.hpp"

namespace placesim {

ClusterSpec resolve_cluster(Experiment& e) {
  if (e.cluster.is_null())
    throw InputError("cluster is required to simulate: add e.g. \"cluster\": {\"preset\": \"dgx-a100\", \"nodes\": 2}");
  ClusterSpec c = parse_cluster(e.cluster);
  check_cluster_mesh(e, cluster_fit(c));
  if (e.device_memory_bytes <= 0) e.device_memory_bytes = c.accelerator.hbm_bytes;
  return c;
}

namespace {

// Schedules the expansion supports for model experiments beyond validity: asynchronous pipelines update weights per
// micro-batch on one pipeline replica; LocalSGD's replicas are an abstract-pipeline study.
void check_simulatable(const Experiment& e) {
  const auto& s = e.strategy;
  if (s.schedule == Schedule::LocalSGD)
    throw InputError("strategy.schedule=localsgd is simulated for abstract pipelines only (an experiment with a "
                     "\"pipeline\" section instead of model and cluster)");
  bool async = s.schedule == Schedule::PipeDream || s.schedule == Schedule::PipeDream2BW;
  if (!async) return;
  if (s.dp > 1)
    throw InputError("strategy.schedule=" + to_string(s.schedule) + " is simulated with strategy.dp=1 only (got dp=" +
                     std::to_string(s.dp) + "): its weights update after every micro-batch, without a data-parallel sync");
  if (e.model.tied_embeddings && s.pp > 1)
    throw InputError("strategy.schedule=" + to_string(s.schedule) + " with model.tied_embeddings=true and strategy.pp > 1: "
                     "the tied copies on the first and last stage would diverge; set model.tied_embeddings=false");
  if (s.placement.optimizer == Mode::Offloaded)
    throw InputError("strategy.schedule=" + to_string(s.schedule) + " with strategy.placement.optimizer=offloaded is not simulated");
}

}  // namespace

SimulationRecord pipeline_records(const Experiment& e, const SimulationRecord& all) {
  SimulationRecord one;
  for (const auto& t : all.tasks) {
    MeshCoord c = mesh_coord(e.strategy, t.device);
    if (c.dp == 0 && c.tp == 0) one.tasks.push_back(t);
  }
  return one;
}

std::vector<DeviceInfo> device_infos(const Experiment& e, const ClusterSpec& c) {
  std::vector<DeviceInfo> out;
  for (std::int64_t x = 0; x < e.strategy.devices(); ++x) {
    MeshCoord m = mesh_coord(e.strategy, x);
    out.push_back(DeviceInfo{static_cast<int>(x / c.gpus_per_node), static_cast<int>(x % c.gpus_per_node), m.dp, m.tp, m.pp});
  }
  return out;
}

SimulateOutcome simulate_experiment(Experiment& e, const SimulateSettings& settings) {
  ClusterSpec c = resolve_cluster(e);
  check_validity(e);
  check_simulatable(e);
  Analysis a = analyze(e);
  check_fits(e, a);
  const ClusterSpec network = simulated_network(c);
  TaskGraph g = expand(e, network, settings.expand);
  SimulateOutcome out;
  SimOptions options = settings.sim;
  if (!options.record.empty())  // the pipeline metrics read the records of the pipeline at dp 0, tp 0
    for (std::int64_t s = 0; s < e.strategy.pp; ++s) options.record[static_cast<std::size_t>(mesh_rank(e.strategy, {0, 0, s}))] = 1;
  out.result = simulate(g, network, options);
  out.result.record.devices = device_infos(e, c);
  if (settings.reproducible) out.result.wall_time_s = 0;
  out.report = analysis_report(e, a);
  out.report["cluster"] = cluster_to_json(c);
  out.report["simulation"] = simulation_section(e, c, a, out.result);
  out.report["simulation"]["fidelity"] = to_string(settings.sim.fidelity);
  out.report["simulation"]["layer_group"] = layer_group_size(e, settings.expand);
  const SimulationRecord pipeline = pipeline_records(e, out.result.record);
  out.report["simulation"]["layer_times"] = layer_times_json(measure_layer_times(pipeline));
  out.report["validation"] = validation_section(e, a, out.result);
  if (e.strategy.pp > 1) {
    PipelineSchedule schedule = make_schedule(shape_of(e.strategy, 1), strategy_shape_fields());
    out.report["pipeline"] = pipeline_json(measure_pipeline(schedule, pipeline));
  }
  return out;
}

std::string simulation_table(const Json& r) {
  const Json& sim = r["simulation"];
  std::ostringstream out;
  char line[512];
  out << "simulated step: " << r["model"]["name"].get<std::string>() << " on " << r["cluster"]["name"].get<std::string>()
      << " (" << r["strategy"]["devices"].get<std::int64_t>() << " GPUs), " << r["strategy"]["preset"].get<std::string>()
      << " dp " << r["strategy"]["dp"].get<std::int64_t>() << " x tp " << r["strategy"]["tp"].get<std::int64_t>() << " x pp "
      << r["strategy"]["pp"].get<std::int64_t>() << ", " << r["strategy"]["schedule"].get<std::string>() << ", "
      << r["strategy"]["microbatches"].get<std::int64_t>() << " micro-batches\n\n";
  std::snprintf(line, sizeof line,
                "  step time            %s\n  MFU                  %.1f %%\n  model TFLOP/s / GPU  %.1f (hardware, "
                "recompute included: %.1f)\n  tokens / s           %.0f\n  exposed comm         %s\n",
                format_seconds(sim["step_time_s"].get<double>()).c_str(), 100 * sim["mfu"].get<double>(),
                sim["model_tflops_per_gpu"].get<double>(), sim["hardware_tflops_per_gpu"].get<double>(),
                sim["tokens_per_s"].get<double>(),
                format_seconds(sim["exposed_communication_s"].get<double>()).c_str());
  out << line;
  if (r.contains("pipeline")) {
    std::snprintf(line, sizeof line, "  pipeline bubble      %.1f %% (mean over stages, %s)\n",
                  100 * r["pipeline"]["bubble_fraction_mean"].get<double>(), r["strategy"]["schedule"].get<std::string>().c_str());
    out << line;
  }
  const Json& peak = sim["peak_memory_bytes"];
  out << "  peak memory / GPU    " << format_bytes(peak["total"].get<double>()) << " (parameters "
      << format_bytes(peak["parameters"].get<double>()) << ", gradients " << format_bytes(peak["gradients"].get<double>())
      << ", optimizer " << format_bytes(peak["optimizer"].get<double>()) << ", activations "
      << format_bytes(peak["activations"].get<double>()) << ")\n";
  out << "  sent / GPU / step    " << format_bytes(sim["bytes_sent"]["total"].get<double>()) << " (";
  bool first = true;
  for (const auto& [k, v] : sim["bytes_sent"]["by_class"].items()) {
    if (v.get<double>() == 0) continue;
    out << (first ? "" : ", ") << k << " " << format_bytes(v.get<double>());
    first = false;
  }
  out << ")\n";
  int exact = 0, total = 0;
  for (const auto& row : r["validation"]) {
    if (row["figure"].get<std::string>().find("bound") != std::string::npos) continue;
    ++total;
    exact += row["difference"].get<double>() == 0 ? 1 : 0;
  }
  std::snprintf(line, sizeof line, "  analytic vs simulated: %d of %d figures identical\n", exact, total);
  out << line;
  std::snprintf(line, sizeof line, "  simulated in %.2f s: %llu SimGrid activities (flows), %llu timers (compute, exact collectives)\n",
                sim["wall_time_s"].get<double>(), static_cast<unsigned long long>(sim["activities"].get<std::uint64_t>()),
                static_cast<unsigned long long>(sim["timers"].get<std::uint64_t>()));
  out << line;
  return out.str();
}

}  // namespace placesim
