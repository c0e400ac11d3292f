#include "sim/backend/Simulate.hpp"

#include <cstdio>

#include "strategies/analytic/LayerTimes.hpp"
#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/placement/ClusterFit.hpp"
#include "strategies/placement/Mesh.hpp"
#include "strategies/placement/Validity.hpp"
#include "traces/report/SimReport.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

SimulationInput resolve_simulation(Experiment e) {
  if (e.cluster.is_null())
    throw InputError("cluster is required to simulate: add e.g. \"cluster\": {\"preset\": \"dgx-a100\", \"nodes\": 2}");
  ClusterSpec c = parse_cluster(e.cluster);
  check_cluster_mesh(e, cluster_fit(c));
  if (e.device_memory_bytes <= 0) e.device_memory_bytes = c.accelerator.hbm_bytes;
  return SimulationInput{std::move(e), std::move(c)};
}

namespace {

// Schedules the expansion supports for model experiments beyond validity: asynchronous pipelines update weights per
// micro-batch on one pipeline replica; LocalSGD's replicas are an abstract-pipeline study.
void check_simulatable(const Experiment& e) {
  const auto& s = e.strategy;
  if (s.schedule == Schedule::LocalSGD)
    throw InputError(
        "strategy.schedule=localsgd is simulated for abstract pipelines only (an experiment with a "
        "\"pipeline\" section instead of model and cluster)");
  bool async = s.schedule == Schedule::PipeDream || s.schedule == Schedule::PipeDream2BW;
  if (!async) return;
  if (s.dp > 1)
    throw InputError("strategy.schedule=" + to_string(s.schedule) +
                     " is simulated with strategy.dp=1 only (got dp=" + std::to_string(s.dp) +
                     "): its weights update after every micro-batch, without a data-parallel sync");
  if (e.model.tied_embeddings && s.pp > 1)
    throw InputError("strategy.schedule=" + to_string(s.schedule) +
                     " with model.tied_embeddings=true and strategy.pp > 1: "
                     "the tied copies on the first and last stage would diverge; set model.tied_embeddings=false");
  if (s.placement.optimizer == Mode::Offloaded)
    throw InputError("strategy.schedule=" + to_string(s.schedule) +
                     " with strategy.placement.optimizer=offloaded is not simulated");
}

// Refuses, before expanding, a step whose graph would take minutes to build and simulate.
void check_task_count(const Experiment& e, const SimulateSettings& settings) {
  const double tasks = estimated_compute_tasks(e, settings.expand);
  if (settings.force || tasks <= kMaxComputeTasks) return;
  char count[64];
  std::snprintf(count, sizeof count, "%.3g", tasks);
  throw InputError("the step would expand to about " + std::string(count) + " compute tasks (" +
                   std::to_string(e.strategy.devices()) + " devices x " + std::to_string(e.strategy.microbatches) +
                   " micro-batches x " + std::to_string(e.strategy.chunks) + " chunks x passes x layer groups of " +
                   std::to_string(layer_group_size(e, settings.expand)) +
                   " layers), more than the limit of 2e+07; that takes minutes and gigabytes. Use --force to "
                   "simulate anyway, or analyze it instead");
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
    out.push_back(
        DeviceInfo{static_cast<int>(x / c.gpus_per_node), static_cast<int>(x % c.gpus_per_node), m.dp, m.tp, m.pp});
  }
  return out;
}

std::vector<char> recorded_devices(const Experiment& e, const std::vector<int>& traced) {
  std::vector<char> record(static_cast<std::size_t>(e.strategy.devices()), 0);
  for (int x : traced) record[static_cast<std::size_t>(x)] = 1;
  for (std::int64_t s = 0; s < e.strategy.pp; ++s)
    record[static_cast<std::size_t>(mesh_rank(e.strategy, {0, 0, s}))] = 1;
  return record;
}

SimulatedStep simulate_experiment(const SimulationInput& in, const SimulateSettings& settings) {
  const Experiment& e = in.experiment;
  check_validity(e);
  check_simulatable(e);
  check_task_count(e, settings);
  SimulatedStep step;
  step.experiment = e;
  step.cluster = in.cluster;
  step.analysis = analyze(e);
  check_fits(e, step.analysis);
  const ClusterSpec network = simulated_network(in.cluster);
  const TaskGraph g = expand(e, network, settings.expand);
  SimOptions options = settings.sim;
  options.record = recorded_devices(e, settings.traced_devices);
  step.result = simulate(g, network, options);
  step.result.record.devices = device_infos(e, in.cluster);
  if (settings.reproducible) step.result.wall_time_s = 0;
  step.fidelity = settings.sim.fidelity;
  step.layer_group = layer_group_size(e, settings.expand);
  const SimulationRecord pipeline = pipeline_records(e, step.result.record);
  step.layer_times = measure_layer_times(pipeline);
  if (e.strategy.pp > 1)
    step.pipeline = measure_pipeline(make_schedule(shape_of(e.strategy, 1), strategy_shape_fields()), pipeline);
  step.figures = sim_figures(e, in.cluster, step.analysis, step.result);
  step.validation = validation_rows(e, step.analysis, step.result, step.figures);
  return step;
}

}  // namespace placesim
