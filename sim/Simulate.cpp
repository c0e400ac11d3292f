#include "sim/Simulate.hpp"

#include <cstdio>
#include <sstream>

#include "sim/SimReport.hpp"
#include "strategies/Validity.hpp"
#include "topology/Units.hpp"
#include "traces/Report.hpp"

namespace placesim {

ClusterSpec resolve_cluster(Experiment& e) {
  if (e.cluster.is_null())
    throw InputError("cluster is required to simulate: add e.g. \"cluster\": {\"preset\": \"dgx-a100\", \"nodes\": 2}");
  ClusterSpec c = parse_cluster(e.cluster);
  if (e.strategy.devices() != c.devices())
    throw InputError("strategy mesh dp x tp x pp = " + std::to_string(e.strategy.dp) + " x " + std::to_string(e.strategy.tp) +
                     " x " + std::to_string(e.strategy.pp) + " = " + std::to_string(e.strategy.devices()) +
                     " devices, but the cluster has " + std::to_string(c.devices()) + " GPUs (cluster.nodes=" +
                     std::to_string(c.nodes) + " x cluster.gpus_per_node=" + std::to_string(c.gpus_per_node) + ")");
  if (e.device_memory_bytes <= 0) e.device_memory_bytes = c.accelerator.hbm_bytes;
  return c;
}

SimulateOutcome simulate_experiment(Experiment& e, const SimulateSettings& settings) {
  ClusterSpec c = resolve_cluster(e);
  check_validity(e);
  Analysis a = analyze(e);
  check_fits(e, a);
  TaskGraph g = expand(e, c, settings.expand);
  SimulateOutcome out;
  out.result = simulate(g, c, settings.sim);
  if (settings.reproducible) out.result.wall_time_s = 0;
  out.report = analysis_report(e, a);
  out.report["cluster"] = cluster_to_json(c);
  out.report["simulation"] = simulation_section(e, c, a, out.result);
  out.report["simulation"]["fidelity"] = settings.sim.flow ? "flow" : "fast";
  out.report["simulation"]["layer_group"] = layer_group_size(e, settings.expand);
  out.report["validation"] = validation_section(e, a, out.result);
  return out;
}

std::string simulation_table(const Json& r) {
  const Json& sim = r["simulation"];
  std::ostringstream out;
  char line[256];
  out << "placesim simulate: " << r["model"]["name"].get<std::string>() << " on " << r["cluster"]["name"].get<std::string>()
      << " (" << r["strategy"]["devices"].get<std::int64_t>() << " GPUs), " << r["strategy"]["preset"].get<std::string>()
      << " dp " << r["strategy"]["dp"].get<std::int64_t>() << " x tp " << r["strategy"]["tp"].get<std::int64_t>() << " x pp "
      << r["strategy"]["pp"].get<std::int64_t>() << ", " << r["strategy"]["schedule"].get<std::string>() << ", "
      << r["strategy"]["microbatches"].get<std::int64_t>() << " micro-batches\n\n";
  std::snprintf(line, sizeof line, "  step time            %s\n  MFU                  %.1f %%\n  model TFLOP/s / GPU  %.1f\n"
                "  tokens / s           %.0f\n  exposed comm         %s\n",
                format_seconds(sim["step_time_s"].get<double>()).c_str(), 100 * sim["mfu"].get<double>(),
                sim["model_tflops_per_gpu"].get<double>(), sim["tokens_per_s"].get<double>(),
                format_seconds(sim["exposed_communication_s"].get<double>()).c_str());
  out << line;
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
  std::snprintf(line, sizeof line, "  simulated %llu SimGrid activities in %.2f s\n",
                static_cast<unsigned long long>(sim["activities"].get<std::uint64_t>()), sim["wall_time_s"].get<double>());
  out << line;
  return out.str();
}

}  // namespace placesim
