#include "strategies/sweep/Search.hpp"

#include <algorithm>
#include <optional>

#include "strategies/placement/Presets.hpp"
#include "strategies/placement/Strategy.hpp"
#include "workloads/model/Model.hpp"
#include "workloads/stack/Stack.hpp"

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

// The base's strategy section as an object (a preset name becomes {"preset": name}).
Json base_strategy(const Json& experiment) {
  if (!experiment.contains("strategy")) return Json::object();
  const Json& s = experiment["strategy"];
  if (s.is_string()) return Json{{"preset", s}};
  return s.is_object() ? s : Json::object();
}

std::int64_t model_layers(const Json& experiment, const std::string& base_dir, std::int64_t* experts) {
  if (!experiment.contains("model")) return 0;
  const ModelSpec m = parse_model(experiment["model"], base_dir);
  *experts = m.experts;
  return m.opaque() ? 0 : m.layers;
}

// One candidate's strategy fields over the base's (whose mesh, schedule and preset the candidate replaces).
struct Shape {
  std::int64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 0, chunks = 1;
  bool moe = false;
  bool ep_overlap = false;  ///< Megatron-Core's combined 1F1B (strategy.ep_overlap)
};

// The shard group of a hybrid data-parallel layout: the data-parallel ranks inside one node (FSDP's HYBRID_SHARD and
// ZeRO++'s hpZ as their papers run them), replicated across nodes.
std::int64_t node_shard(const Shape& c, std::int64_t gpus_per_node) {
  std::int64_t shard = std::max<std::int64_t>(1, gpus_per_node / (c.tp * c.cp));
  while (shard > 1 && c.dp % shard != 0) --shard;
  return shard;
}

// How a preset lays out the data-parallel ranks of a shape: over one axis (dp), or split into shard groups inside a
// node replicated across nodes when the preset's requirement asks for both axes; nullopt when neither meets it.
std::optional<std::int64_t> preset_shard(const StrategyPreset& preset, const Shape& c, std::int64_t gpus_per_node) {
  if (!preset.requirement) return c.dp;
  StrategySpec s;
  s.dp = c.dp;
  s.tp = c.tp;
  s.pp = c.pp;
  s.cp = c.cp;
  s.ep = std::max<std::int64_t>(1, c.ep);
  const TrainingSpec t;
  for (std::int64_t shard : {c.dp, node_shard(c, gpus_per_node)}) {
    s.dp_shard = shard;
    s.dp_replicate = c.dp / shard;
    if (preset.requirement->rule.holds(s, t)) return shard;
  }
  return std::nullopt;
}

Json candidate_strategy(Json strategy, const std::string& preset, const Shape& c, std::int64_t shard) {
  for (const char* key : {"preset", "dp", "tp", "pp", "cp", "ep", "mesh", "schedule", "chunks", "microbatches"})
    strategy.erase(key);
  strategy["preset"] = preset;
  strategy["tp"] = c.tp;
  strategy["pp"] = c.pp;
  if (c.cp > 1) strategy["cp"] = c.cp;
  if (shard == c.dp)
    strategy["dp"] = c.dp;
  else
    strategy["mesh"] = Json{{"dp_shard", shard}, {"dp_replicate", c.dp / shard}};
  if (c.moe) {
    strategy["ep"] = c.ep;
    strategy["sp"] = c.tp > 1;
  }
  strategy["schedule"] = c.chunks > 1 ? "interleaved" : "1f1b";
  if (c.chunks > 1) strategy["chunks"] = c.chunks;
  strategy.erase("ep_overlap");
  if (c.ep_overlap) {
    strategy["ep_overlap"] = true;
    if (c.pp > 1) strategy["p2p"] = "async";  // the combined step receives both inputs before it runs
  }
  return strategy;
}

std::vector<Shape> candidate_shapes(const SearchSpace& space, const std::vector<std::int64_t>& cps, std::int64_t layers,
                                    std::int64_t experts) {
  std::vector<Shape> shapes;
  for (std::int64_t cp : cps) {
    if (space.devices % cp != 0) continue;
    for (const CandidateMesh& m : enumerate_meshes(space.devices / cp, space.gpus_per_node)) {
      if (layers > 0 && m.pp > layers) continue;
      std::vector<std::int64_t> chunk_choices = {1};
      if (m.pp > 1 && layers > 0 && layers % m.pp == 0)
        for (std::int64_t v = 2; v <= space.max_chunks && v <= layers / m.pp; ++v)
          if ((layers / m.pp) % v == 0) chunk_choices.push_back(v);
      const std::vector<std::int64_t> eps = experts > 0 ? divisors(experts) : std::vector<std::int64_t>{0};
      for (std::int64_t ep : eps) {
        if (experts > 0 && (m.tp * cp * m.dp) % ep != 0) continue;
        for (std::int64_t v : chunk_choices) {
          shapes.push_back({m.dp, m.tp, m.pp, cp, ep, v, experts > 0});
          // Megatron-Core's combined 1F1B where it runs: expert parallelism, interleaved stages or none.
          if (ep > 1 && (m.pp == 1 || v > 1)) shapes.push_back({m.dp, m.tp, m.pp, cp, ep, v, true, true});
        }
      }
    }
  }
  return shapes;
}

std::vector<std::int64_t> search_cps(const SearchSpace& space, const Json& experiment) {
  if (!space.cps.empty()) return space.cps;
  const std::int64_t fixed = base_cp(experiment);
  if (fixed > 1) return {fixed};
  return {1, 2, 4, 8};
}

}  // namespace

std::vector<std::string> search_figures(SweepMode mode, const std::vector<std::string>& extra) {
  std::vector<std::string> figures = default_figures(mode);
  for (const auto& f : extra)
    if (std::find(figures.begin(), figures.end(), f) == figures.end()) figures.push_back(f);
  return figures;
}

std::vector<std::string> search_presets(const Json& experiment, const std::string& base_dir, std::string* from) {
  if (experiment.contains("stack") && experiment["stack"].is_string()) {
    const auto stack = find_stack(experiment["stack"].get<std::string>(), "stack", base_dir);
    if (!stack->presets.empty()) {
      std::string names;
      for (const auto& p : stack->presets) names += (names.empty() ? "" : ", ") + p;
      *from = names + ", the " + stack->name + " stack's (placesim stacks " + stack->name + ")";
      return stack->presets;
    }
  }
  std::vector<std::string> all;
  for (const auto& [name, description] : strategy_preset_list()) all.push_back(name);
  *from = "every strategy preset (the experiment names no stack)";
  return all;
}

SweepSpec search_sweep(const Json& experiment, const std::string& base_dir, const SearchSpace& space) {
  require_fixed_batch(experiment);
  if (space.presets.empty()) throw InputError("search: the list of strategy presets is empty");
  if (space.micro_batches.empty()) throw InputError("search: the list of micro-batch sizes is empty");
  if (space.recomputes.empty()) throw InputError("search: the list of recompute modes is empty");
  SweepSpec spec;
  spec.base = experiment;
  spec.base_dir = base_dir;
  spec.mode = space.mode;
  spec.fidelity = space.fidelity;
  spec.filters.stack_can_run = true;
  std::int64_t experts = 0;
  const std::int64_t layers = model_layers(experiment, base_dir, &experts);
  const std::vector<Shape> shapes = candidate_shapes(space, search_cps(space, experiment), layers, experts);
  const Json strategy = base_strategy(experiment);
  SweepAxis axis{{"strategy", "training.micro_batch", "training.recompute"}, {}};
  // Per shape, each preset whose requirement the shape can meet, with its data-parallel split.
  std::vector<std::vector<std::pair<const StrategyPreset*, std::int64_t>>> layouts(shapes.size());
  std::uint64_t count = 0;
  for (std::size_t k = 0; k < shapes.size(); ++k)
    for (const auto& name : space.presets) {
      const StrategyPreset& preset = strategy_preset(name, "--presets");
      if (auto shard = preset_shard(preset, shapes[k], space.gpus_per_node)) {
        layouts[k].emplace_back(&preset, *shard);
        count += space.micro_batches.size() * space.recomputes.size();
      }
    }
  if (count > kMaxSearchCandidates)
    throw InputError("search: " + std::to_string(count) + " candidates (" + std::to_string(shapes.size()) +
                     " meshes and schedules x presets x micro-batch sizes x recompute modes) are more than the " +
                     std::to_string(kMaxSearchCandidates) +
                     " a search analyses; narrow --presets, --micro-batches, --cp, --recompute or --max-chunks");
  for (std::size_t k = 0; k < shapes.size(); ++k)
    for (const auto& [preset, shard] : layouts[k]) {
      const Json s = candidate_strategy(strategy, preset->name, shapes[k], shard);
      for (std::int64_t mb : space.micro_batches)
        for (const auto& rc : space.recomputes) axis.values.push_back({s, Json(mb), Json(rc)});
    }
  if (axis.values.empty())
    throw InputError("search: no candidate mesh: " + std::to_string(space.devices) +
                     " GPUs have no dp x tp x pp x cp layout with tp dividing the node's " +
                     std::to_string(space.gpus_per_node) + " GPUs and the --cp values given");
  spec.axes = {axis};
  spec.figures = search_figures(space.mode, space.figures);
  validate_axis_paths(spec);
  // Its rows name it as a sweep file's rows name theirs: a hash of everything that makes its points.
  Json identity = {{"search", experiment},
                   {"mode", spec.mode == SweepMode::Analyze ? "analyze" : "simulate"},
                   {"fidelity", to_string(spec.fidelity)},
                   {"figures", spec.figures}};
  identity["candidates"] = axis.values;
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

bool ranks_by_step_time(const RankBy& by) {
  static const std::vector<std::pair<std::string, bool>> monotone = {
      {"simulation.step_time_s", false},
      {"simulation.tokens_per_s", true},
      {"simulation.mfu", true},
      {"time_to_train.days", false},
      {"time_to_train.gpu_hours", false},
      {"time_to_train.cost_usd", false},
      {"time_to_train.cost_per_million_tokens_usd", false},
      {"time_to_train.energy_per_token_j", false},
      {"time_to_train.energy_kwh", false}};
  return std::find(monotone.begin(), monotone.end(), std::make_pair(by.path, by.descending)) != monotone.end();
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
