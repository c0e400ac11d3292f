#include "strategies/sweep/Search.hpp"

#include <algorithm>

#include "workloads/model/Model.hpp"

namespace placesim {

std::vector<CandidateMesh> enumerate_meshes(std::int64_t devices, std::int64_t gpus_per_node) {
  if (devices < 1) throw InputError("search: the GPU count " + std::to_string(devices) + " must be positive");
  if (devices > kMaxSearchGpus)
    throw InputError("search: the GPU count " + std::to_string(devices) + " is more than the " +
                     std::to_string(kMaxSearchGpus) + " (2^20) a search enumerates meshes for");
  if (gpus_per_node < 1)
    throw InputError("search: gpus per node " + std::to_string(gpus_per_node) + " must be positive");
  std::vector<CandidateMesh> meshes;
  // tp divides the GPU count, so no tp beyond it can be a candidate.
  for (std::int64_t tp = 1; tp <= std::min(gpus_per_node, devices); ++tp) {
    if (gpus_per_node % tp != 0 || devices % tp != 0) continue;
    for (std::int64_t pp = 1; pp <= devices / tp; ++pp)
      if ((devices / tp) % pp == 0) meshes.push_back({devices / tp / pp, tp, pp});
  }
  return meshes;
}

namespace {

void require_fixed_batch(const Json& experiment) {
  const Json* training = experiment.contains("training") ? &experiment["training"] : nullptr;
  if (!training || !training->is_object() || !training->contains("global_batch"))
    throw InputError("search: training.global_batch is required, so that every candidate trains the same batch");
  if (experiment.contains("strategy") && experiment["strategy"].is_object() &&
      experiment["strategy"].contains("microbatches"))
    throw InputError(
        "search: strategy.microbatches must not be fixed; it follows from training.global_batch, "
        "the micro-batch size and dp");
}

// The base's context-parallel degree (strategy.cp or strategy.mesh.cp): the candidates keep it, so the other axes
// share devices / cp.
std::int64_t base_cp(const Json& experiment) {
  if (!experiment.contains("strategy") || !experiment["strategy"].is_object()) return 1;
  const Json& s = experiment["strategy"];
  const Json* cp = s.contains("cp") ? &s["cp"] : nullptr;
  if (!cp && s.contains("mesh") && s["mesh"].is_object() && s["mesh"].contains("cp")) cp = &s["mesh"]["cp"];
  if (!cp) return 1;
  if (!cp->is_number_integer() || cp->get<std::int64_t>() < 1)
    throw InputError("strategy.cp=" + show(*cp) + " must be a positive integer");
  return cp->get<std::int64_t>();
}

// The divisors of n >= 1, ascending, found in O(sqrt(n)).
std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> low, high;
  for (std::int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d != n / d) high.push_back(n / d);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

void check_candidate_count(const SearchSpace& space, std::size_t meshes) {
  const bool simulate = space.mode == SweepMode::Simulate;
  const std::uint64_t limit = simulate ? kMaxSimulatedCandidates : kMaxSearchCandidates;
  const std::uint64_t candidates = meshes * space.presets.size() * space.micro_batches.size();
  if (candidates <= limit) return;
  throw InputError("search: " + std::to_string(candidates) + " candidates (" + std::to_string(meshes) + " meshes of " +
                   std::to_string(space.devices) + " GPUs x " + std::to_string(space.presets.size()) + " presets x " +
                   std::to_string(space.micro_batches.size()) + " micro-batch sizes) are more than the " +
                   std::to_string(limit) + " a search " + (simulate ? "simulates" : "analyses") +
                   "; narrow --presets or --micro-batches" + (simulate ? ", use --mode analyze" : "") +
                   ", or evaluate them as a sweep file (placesim sweep, which shards and resumes)");
}

}  // namespace

SweepSpec search_sweep(const Json& experiment, const std::string& base_dir, const SearchSpace& space) {
  require_fixed_batch(experiment);
  if (space.presets.empty()) throw InputError("search: the list of strategy presets is empty");
  if (space.micro_batches.empty()) throw InputError("search: the list of micro-batch sizes is empty");
  SweepSpec spec;
  spec.base = experiment;
  spec.base_dir = base_dir;
  spec.mode = space.mode;
  spec.fidelity = space.fidelity;
  SweepAxis mesh{{"strategy.dp", "strategy.tp", "strategy.pp"}, {}};
  const std::int64_t cp = base_cp(experiment);
  if (space.devices % cp != 0)
    throw InputError("search: the GPU count " + std::to_string(space.devices) + " is not a multiple of strategy.cp=" +
                     std::to_string(cp) + " (the candidates keep the base's context parallelism)");
  // A mixture-of-experts model: every expert-parallel degree that divides the experts and a stage's tp x cp x dp
  // ranks (experts not tensor-parallel: tp > 1 with sequence parallelism, as Megatron-Core requires).
  std::int64_t experts = 0;
  if (experiment.contains("model")) experts = parse_model(experiment["model"], base_dir).experts;
  if (experts > 0) mesh.paths = {"strategy.dp", "strategy.tp", "strategy.pp", "strategy.ep", "strategy.sp"};
  const std::vector<CandidateMesh> meshes = enumerate_meshes(space.devices / cp, space.gpus_per_node);
  const std::vector<std::int64_t> ep_choices = experts > 0 ? divisors(experts) : std::vector<std::int64_t>{1};
  auto fits = [&](const CandidateMesh& m, std::int64_t ep) { return (m.tp * cp * m.dp) % ep == 0; };
  std::size_t mesh_points = 0;
  for (const CandidateMesh& m : meshes)
    mesh_points += static_cast<std::size_t>(
        std::count_if(ep_choices.begin(), ep_choices.end(), [&](std::int64_t ep) { return fits(m, ep); }));
  check_candidate_count(space, mesh_points);
  for (const CandidateMesh& m : meshes) {
    if (experts == 0) {
      mesh.values.push_back({Json(m.dp), Json(m.tp), Json(m.pp)});
      continue;
    }
    for (std::int64_t ep : ep_choices)
      if (fits(m, ep)) mesh.values.push_back({Json(m.dp), Json(m.tp), Json(m.pp), Json(ep), Json(m.tp > 1)});
  }
  SweepAxis presets{{"strategy.preset"}, {}};
  for (const auto& p : space.presets) presets.values.push_back({Json(p)});
  SweepAxis micro{{"training.micro_batch"}, {}};
  for (auto b : space.micro_batches) micro.values.push_back({Json(b)});
  spec.axes = {mesh, presets, micro};
  spec.figures = default_figures(space.mode);
  for (const auto& f : space.figures)
    if (std::find(spec.figures.begin(), spec.figures.end(), f) == spec.figures.end()) spec.figures.push_back(f);
  validate_axis_paths(spec);
  // Its rows name it as a sweep file's rows name theirs: a hash of everything that makes its points.
  Json identity = {{"search", experiment},
                   {"mode", spec.mode == SweepMode::Analyze ? "analyze" : "simulate"},
                   {"fidelity", to_string(spec.fidelity)},
                   {"figures", spec.figures}};
  for (const SweepAxis& a : spec.axes) identity["axes"][a.name()] = a.values;
  spec.hash = fnv1a_hex(identity.dump());
  return spec;
}

RankBy parse_rank_by(const std::string& text) {
  RankBy by;
  by.descending = !text.empty() && text.front() == '-';
  by.path = by.descending ? text.substr(1) : text;
  if (by.path.empty())
    throw InputError("--rank-by=" + text + " must name a report figure, e.g. simulation.step_time_s");
  return by;
}

RankBy default_rank_by(SweepMode mode) {
  return mode == SweepMode::Simulate ? RankBy{"simulation.step_time_s", false}
                                     : RankBy{"communication.bytes_per_step", false};
}

std::vector<Json> rank_rows(const std::vector<Json>& rows, const RankBy& by) {
  std::vector<Json> ranked;
  for (const auto& row : rows)
    if (row.value("status", "") == "ok" && row.contains(by.path) && row[by.path].is_number()) ranked.push_back(row);
  std::stable_sort(ranked.begin(), ranked.end(), [&](const Json& x, const Json& y) {
    double a = x[by.path].get<double>(), b = y[by.path].get<double>();
    return by.descending ? a > b : a < b;
  });
  return ranked;
}

}  // namespace placesim
