#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "sim/cli/Commands.hpp"
#include "sim/cli/SweepCli.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/placement/Strategy.hpp"
#include "strategies/sweep/Search.hpp"
#include "strategies/sweep/SweepPoint.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "traces/sweep/SweepRows.hpp"
#include "workloads/json/JsonReader.hpp"
#include "workloads/json/Units.hpp"
#include "workloads/model/Training.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
search EXPERIMENT.json [--top K] [--out RESULTS.jsonl] [--mode analyze|simulate] [options]
find the fastest runnable plan: mesh (dp, tp, pp, cp, ep) x preset x schedule x micro-batch x recompute, pruned by a bound
--gpus N                  GPU count when the experiment has no cluster section
--gpus-per-node N         with --gpus: GPUs per node, the largest tp (default 8)
--presets LIST            strategy presets to try (default: the experiment's stack's presets, else every preset)
--micro-batches LIST      micro-batch sizes to try (default 1,2,4,8)
--cp LIST                 context-parallel degrees to try (default: the experiment's strategy.cp, else 1,2,4,8)
--recompute LIST          recompute modes to try (default none,selective,full)
--max-chunks N            interleaved schedules with up to N model chunks per stage (default 8; 1: 1F1B only)
--mode MODE               simulate (default: analyse every candidate, then simulate in the order of a lower bound on
                          the step time until no candidate left can beat the best) or analyze (no step time: ranked by
                          bytes sent, a proxy)
--exhaustive              simulate every candidate that fits (no pruning by the bound)
--fidelity F              simulate mode: analytic, flow (default) or full, as for simulate
--rank-by PATH            report figure to rank by, '-' first for highest first (default: see output)
--top K                   rows of the table (default 10)
--out FILE                write every candidate's row, invalid and pruned ones with their reason, as JSONL
)";

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

std::int64_t positive(const std::string& text, const std::string& flag) {
  Json v = parse_cli_value(text);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
    throw InputError(flag + "=" + text + " must be a positive integer");
  return v.get<std::int64_t>();
}

SearchSpace search_space(const Args& args, const Json& experiment, const std::string& base_dir,
                         std::string* presets_from_out) {
  SearchSpace space;
  const bool has_cluster = experiment.contains("cluster") && !experiment["cluster"].is_null();
  if (auto gpus = args.value("--gpus")) {
    space.devices = positive(*gpus, "--gpus");
    space.gpus_per_node = positive(args.value("--gpus-per-node").value_or("8"), "--gpus-per-node");
  } else if (has_cluster) {
    ClusterFit fit = cluster_fit(experiment["cluster"]);
    space.devices = fit.devices;
    space.gpus_per_node = fit.gpus_per_node;
  } else {
    throw InputError("search needs the GPU count: give the experiment a cluster section, or --gpus N");
  }
  if (space.devices > kMaxSearchGpus)
    throw InputError((args.value("--gpus") ? "--gpus=" + std::to_string(space.devices) + " is"
                                           : "the cluster's " + std::to_string(space.devices) + " GPUs (" +
                                                 cluster_fit(experiment["cluster"]).summary + ") are") +
                     " more than the " + std::to_string(kMaxSearchGpus) +
                     " (2^20) GPUs a search enumerates meshes for");
  std::string presets_from;
  space.presets = search_presets(experiment, base_dir, &presets_from);
  if (auto presets = args.value("--presets")) {
    space.presets = split_list(*presets);
    presets_from = "--presets";
  }
  std::vector<std::string> known;
  for (const auto& [name, description] : strategy_preset_list()) known.push_back(name);
  for (const auto& p : space.presets)
    if (std::find(known.begin(), known.end(), p) == known.end())
      refuse_name(presets_from == "--presets" ? "--presets" : "the stack's presets", p, "a strategy preset", known);
  if (presets_from_out) *presets_from_out = presets_from;
  if (auto mbs = args.value("--micro-batches")) {
    space.micro_batches.clear();
    for (const auto& m : split_list(*mbs)) space.micro_batches.push_back(positive(m, "--micro-batches"));
  }
  if (auto cps = args.value("--cp"))
    for (const auto& c : split_list(*cps)) space.cps.push_back(positive(c, "--cp"));
  if (auto rcs = args.value("--recompute")) {
    space.recomputes = split_list(*rcs);
    const std::vector<std::string>& names = recompute_names();
    for (const auto& r : space.recomputes)
      if (std::find(names.begin(), names.end(), r) == names.end()) {
        std::string list;
        for (const auto& n : names) list += " " + n;
        throw InputError("--recompute=" + r + " is not one of:" + list);
      }
  }
  if (auto v = args.value("--max-chunks")) space.max_chunks = positive(*v, "--max-chunks");
  // Simulating needs a cluster; with --gpus alone the default falls back to analyze (the output says so).
  std::string mode = args.value("--mode").value_or(has_cluster ? "simulate" : "analyze");
  if (mode != "analyze" && mode != "simulate") throw InputError("--mode=" + mode + " is not one of: analyze simulate");
  if (mode == "simulate" && !has_cluster)
    throw InputError(
        "--mode simulate needs the experiment's cluster section (--gpus only sizes the analyze mode's "
        "meshes)");
  space.mode = mode == "analyze" ? SweepMode::Analyze : SweepMode::Simulate;
  if (auto f = args.value("--fidelity")) {
    if (space.mode != SweepMode::Simulate) throw InputError("--fidelity=" + *f + " applies to --mode simulate only");
    space.fidelity = parse_fidelity(*f, "--fidelity");
  }
  return space;
}

std::string cell(const std::string& text, std::size_t width) {
  return text.size() >= width ? text + " " : std::string(width - text.size(), ' ') + text;
}

// Spare memory below this share of the device is flagged under the table.
constexpr double kThinHeadroom = 0.05;

double row_number(const Json& row, const std::string& path, double fallback) {
  return row.contains(path) && row[path].is_number() ? row[path].get<double>() : fallback;
}

// The figures of a run's length the table shows when the experiment gives one (training.tokens or steps).
constexpr const char* kDays = "time_to_train.days_with_failures";
constexpr const char* kDaysLow = "time_to_train.days_with_failures_low";
constexpr const char* kDaysHigh = "time_to_train.days_with_failures_high";
constexpr const char* kCost = "time_to_train.cost_with_failures_usd";
constexpr const char* kEnergy = "time_to_train.energy_with_failures_kwh";

std::string figure_text(const Json& row, const std::string& path) {
  if (!row.contains(path) || !row[path].is_number()) return "-";
  double v = row[path].get<double>();
  char buf[64];
  if (path == kDays) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
    if (row.contains(kDaysLow) && row[kDaysLow].is_number() && row.contains(kDaysHigh) && row[kDaysHigh].is_number())
      std::snprintf(buf, sizeof buf, "%.1f (%.1f-%.1f)", v, row[kDaysLow].get<double>(), row[kDaysHigh].get<double>());
    // No step-time interval (no published runs of the stack's family on this generation): interruptions alone.
    const char* interval = "simulation.interval.step_time_low_s";
    return std::string(buf) + (row.contains(interval) && row[interval].is_number() ? "" : "*");
  }
  if (path == kCost) {
    std::snprintf(buf, sizeof buf, "$%.3g M", v / 1e6);
    return buf;
  }
  if (path == kEnergy) {
    std::snprintf(buf, sizeof buf, "%.4g MWh", v / 1e3);
    return buf;
  }
  if (path.find("bytes") != std::string::npos) return format_bytes(v);
  if (path.find("_s") == path.size() - 2) return format_seconds(v);
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A candidate's layout in the table's columns, from its row's point.
std::vector<std::string> layout_cells(const Json& point) {
  const Json& st = point["strategy"];
  auto get = [&](const char* key, std::int64_t fallback) {
    return st.contains(key) ? st[key].get<std::int64_t>() : fallback;
  };
  std::int64_t dp = get("dp", 0);
  if (st.contains("mesh")) dp = st["mesh"].value("dp_shard", 1) * st["mesh"].value("dp_replicate", 1);
  const std::string schedule =
      st.value("schedule", std::string("1f1b")) == "interleaved" ? "int x" + std::to_string(get("chunks", 1)) : "1f1b";
  return {st["preset"].get<std::string>(),
          std::to_string(dp),
          std::to_string(get("tp", 1)),
          std::to_string(get("pp", 1)),
          std::to_string(get("cp", 1)),
          !st.contains("ep")              ? "-"
          : st.value("ep_overlap", false) ? std::to_string(get("ep", 1)) + " ov"
                                          : std::to_string(get("ep", 1)),
          get("pp", 1) > 1 ? schedule : "-",
          point["training.micro_batch"].dump(),
          point["training.recompute"].get<std::string>()};
}

void print_table(const std::vector<Json>& ranked, const RankBy& by, std::size_t top, const SearchSpace& space) {
  std::vector<std::string> figures = {"memory.total_bytes", "memory.spare_bytes"};
  if (space.mode == SweepMode::Simulate)
    figures.insert(figures.end(), {"simulation.step_time_s", "compute.step_time_lower_bound_s", "simulation.mfu"});
  else
    figures.push_back("communication.bytes_per_step");
  if (std::find(figures.begin(), figures.end(), by.path) == figures.end()) figures.push_back(by.path);
  // With a run's length: days (with failures, and their 90 % range), cost when priced, energy.
  if (!ranked.empty() && ranked.front().contains(kDays) && ranked.front()[kDays].is_number())
    for (const char* f : {kDays, kCost, kEnergy})
      if (ranked.front().contains(f) && ranked.front()[f].is_number()) figures.push_back(f);
  const std::vector<std::pair<std::string, std::size_t>> columns = {{"preset", 14}, {"dp", 5}, {"tp", 4},
                                                                    {"pp", 4},      {"cp", 4}, {"ep", 6},
                                                                    {"sched", 7},   {"mb", 4}, {"recompute", 10}};
  std::cout << cell("rank", 5) << "  ";
  for (const auto& [name, width] : columns)
    std::cout << (name == "preset" ? name + std::string(width - name.size(), ' ') : cell(name, width));
  const std::map<std::string, std::string> short_names = {
      {"compute.step_time_lower_bound_s", "bound_s"}, {kDays, "days (90 %)"}, {kCost, "cost"}, {kEnergy, "energy"}};
  for (const auto& f : figures) {
    auto named = short_names.find(f);
    std::cout << cell(named != short_names.end() ? named->second : f.substr(f.find('.') + 1), f == kDays ? 20 : 14);
  }
  std::cout << "\n";
  for (std::size_t k = 0; k < ranked.size() && k < top; ++k) {
    const Json& r = ranked[k];
    const std::vector<std::string> cells = layout_cells(r["point"]);
    std::cout << cell(std::to_string(k + 1), 5) << "  ";
    for (std::size_t c = 0; c < columns.size(); ++c)
      std::cout << (c == 0 ? cells[c] + std::string(cells[c].size() < 14 ? 14 - cells[c].size() : 1, ' ')
                           : cell(cells[c], columns[c].second));
    for (const auto& f : figures) std::cout << cell(figure_text(r, f), f == kDays ? 20 : 14);
    std::cout << "\n";
  }
  // Thin headroom: the analytic total is a bound, but allocators lose memory to fragmentation.
  for (std::size_t k = 0; k < ranked.size() && k < top; ++k) {
    const double spare = row_number(ranked[k], "memory.spare_bytes", 1e300);
    const double device = row_number(ranked[k], "device_memory_bytes", 0);
    if (device > 0 && spare < kThinHeadroom * device)
      std::cout << "warning: rank " << k + 1 << " leaves " << format_bytes(spare) << " of " << format_bytes(device)
                << " spare after its stack's reserve, under " << static_cast<int>(kThinHeadroom * 100)
                << " %: allocator fragmentation (15 % on average for DeepSpeed and FSDP on A100, GMLake, arXiv "
                   "2401.08156) may not leave it room\n";
  }
  if (std::find(figures.begin(), figures.end(), kDays) != figures.end())
    std::cout << "days: wall-clock with interruptions, checkpoints and restarts; 90 % range from the stack's step-time "
                 "interval and the interruption count (* : no step-time interval for this stack and accelerator, the "
                 "interruptions alone); cost and energy with interruptions (time_to_train in each row)\n";
}

// With no valid candidate: why, as the rows say, the commonest reasons first.
void print_reasons(const std::vector<Json>& rows) {
  std::map<std::string, std::size_t> count;
  for (const Json& r : rows) {
    const std::string reason = r.value("reason", r.value("error", std::string("(no reason given)")));
    ++count[r.value("status", std::string("?")) + ": " + reason];
  }
  std::vector<std::pair<std::string, std::size_t>> reasons(count.begin(), count.end());
  std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::cout << "no valid candidate; " << (reasons.size() == 1 ? "every candidate's reason" : "the reasons") << ":\n";
  constexpr std::size_t kShown = 5;
  for (std::size_t k = 0; k < reasons.size() && k < kShown; ++k)
    std::cout << "  " << reasons[k].second << " x " << reasons[k].first << "\n";
  if (reasons.size() > kShown)
    std::cout << "  and " << reasons.size() - kShown << " other reasons (every row's in --out)\n";
}

std::vector<Json> parse_rows(std::string text) {
  sort_rows(text);
  std::vector<Json> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) rows.push_back(Json::parse(line));
  return rows;
}

// What the analysis left: candidates by the class of their reason (layout, stack, memory) and those that fit. A
// candidate that fits only without its stack's reserve (CUDA context, communicators) is marked invalid here.
struct Tally {
  std::size_t layout = 0, stack = 0, memory = 0, fit = 0, simulated = 0, pruned = 0, same = 0;
  std::size_t retried = 0;  ///< simulations killed beside others (SIGKILL: out of memory) and run again alone
};

Tally tally_analysis(std::vector<Json>& rows) {
  Tally t;
  for (Json& r : rows) {
    if (r["status"] == "ok" && row_number(r, "memory.spare_bytes", 0) < 0) {
      r["status"] = "invalid";
      r["reason"] = "memory: fits the device only without the stack's reserve of " +
                    format_bytes(row_number(r, "memory.reserve_bytes", 0)) +
                    " (CUDA context and communicators): " + format_bytes(-row_number(r, "memory.spare_bytes", 0)) +
                    " short";
    }
    const std::string reason = r.value("reason", "");
    if (r["status"] == "ok")
      ++t.fit;
    else if (reason.find("stack cannot run") != std::string::npos)
      ++t.stack;
    else if (reason.rfind("memory:", 0) == 0)
      ++t.memory;
    else
      ++t.layout;
  }
  return t;
}

// Does the strategy's schedule pair any forward with a backward (combined 1F1B with a steady state)?
bool runs_pairs(const StrategySpec& s) {
  const PipelineShape shape = shape_of(s, 1);
  for (int stage = 0; stage < shape.stages; ++stage)
    for (const PipeOp& op : stage_order(shape, strategy_shape_fields(), stage))
      if (op.pairs_next) return true;
  return false;
}

// The ok candidates worth simulating, each once: two presets that resolve to the same strategy and training (the
// megatron-core and megatron-3d presets under a stack that sets the same optimizer and recompute), or a recompute
// mode that changes nothing analysable (selective recompute where fused attention stores no scores), or combined 1F1B
// without a steady state to pair (one micro-batch), give the same candidate when their memory, traffic and bound
// agree too. The others are marked filtered, naming the one kept.
std::vector<std::size_t> distinct_candidates(const SweepSpec& spec, std::vector<Json>& rows, Tally& t) {
  struct Kept {
    StrategySpec strategy;
    TrainingSpec training;
    std::uint64_t index;
  };
  std::map<std::string, std::vector<Kept>> seen;  // by the point without preset and recompute, and the figures
  PointEvaluator evaluator(spec, 0);
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    Json& r = rows[k];
    if (r["status"] != "ok") continue;
    Json key = r["point"];
    key.erase("training.recompute");
    if (key.contains("strategy")) key["strategy"].erase("preset");
    for (const char* f : {"memory.total_bytes", "communication.bytes_per_step", "compute.step_time_lower_bound_s"})
      key[f] = r.value(f, Json());
    const auto index = r["index"].get<std::uint64_t>();
    evaluator.evaluate(index);
    Kept mine{evaluator.experiment().strategy, evaluator.experiment().training, index};
    mine.strategy.preset.clear();
    mine.training.recompute = Recompute::None;
    mine.training.recompute_layers = 0;
    if (mine.strategy.ep_overlap && !runs_pairs(mine.strategy)) {
      mine.strategy.ep_overlap = false;
      key["strategy"].erase("ep_overlap");
    }
    if (mine.strategy.placement.activations == Mode::Materialized)  // the placement's word for a recompute
      mine.strategy.placement.activations = Mode::Replicated;
    std::vector<Kept>& same_key = seen[key.dump()];
    const auto twin = std::find_if(same_key.begin(), same_key.end(), [&](const Kept& x) {
      return x.strategy == mine.strategy && x.training == mine.training;
    });
    if (twin == same_key.end()) {
      same_key.push_back(std::move(mine));
      order.push_back(k);
      continue;
    }
    r["status"] = "filtered";
    r["reason"] = "the same candidate as #" + std::to_string(twin->index) +
                  " (the same strategy and training once resolved, and the same memory, traffic and compute); "
                  "simulated once";
    ++t.same;
  }
  return order;
}

// Simulates the candidates that fit in the order of their lower bound, `jobs` at a time as slots free up, until (when
// pruning) the next bound is at least the best simulated step time; marks the rest as pruned. A simulation the kernel
// killed for memory beside others is run again alone.
void simulate_in_bound_order(const SweepSpec& spec, SweepRunOptions options, std::vector<Json>& rows, bool prune,
                             const Args& args, Tally& t) {
  std::vector<std::size_t> order = distinct_candidates(spec, rows, t);
  const std::string bound = "compute.step_time_lower_bound_s";
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return row_number(rows[x], bound, 0) < row_number(rows[y], bound, 0);
  });
  auto progress =
      sweep_progress(args, "placesim search: simulating (those whose bound is below the best so far)", order.size());
  options.progress = progress.get();
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::uint64_t> todo, killed;
  for (std::size_t k : order) todo.push_back(rows[k]["index"].get<std::uint64_t>());
  std::set<std::uint64_t> simulated;
  std::map<std::uint64_t, Json> analysed;  // the rows of the simulated candidates before their simulation
  options.stop_before = [&](std::uint64_t index) { return prune && row_number(rows[index], bound, 0) >= best; };
  // What is left to simulate: the candidates whose bound is below the best step so far (they are in bound order).
  auto update_total = [&] {
    if (!progress || !prune) return;
    std::size_t left = 0;
    for (std::uint64_t index : todo)
      if (!simulated.count(index) && row_number(rows[index], bound, 0) < best) ++left;
    progress->set_total(simulated.size() + left);
  };
  auto take = [&](std::string_view lines, bool retry) {
    for (Json& r : parse_rows(std::string(lines))) {
      const auto index = r["index"].get<std::uint64_t>();
      if (!retry && options.jobs > 1 && r["status"] == "error" &&
          r.value("reason", std::string()).find("killed by signal 9") != std::string::npos)
        killed.push_back(index);
      if (r["status"] == "ok") best = std::min(best, row_number(r, "simulation.step_time_s", best));
      if (simulated.insert(index).second) analysed[index] = rows[static_cast<std::size_t>(index)];
      rows[static_cast<std::size_t>(index)] = std::move(r);
    }
    update_total();
  };
  run_sweep(spec, todo, options, [&](std::string_view lines) { take(lines, false); });
  SweepRunOptions alone = options;
  alone.jobs = 1;
  alone.progress = nullptr;
  alone.stop_before = nullptr;
  for (std::uint64_t index : killed) run_sweep(spec, {index}, alone, [&](std::string_view l) { take(l, true); });
  t.retried += killed.size();
  if (progress) progress->finish();
  // Which candidates a slot started before the best was known depends on timing; the rows do not: a candidate whose
  // bound is at least the best step is pruned whether or not it ran (it could not have been the best), one below it
  // ran in any order.
  for (std::uint64_t index : todo) {
    const bool needed = !prune || row_number(rows[index], bound, 0) < best;
    if (simulated.count(index) && needed) {
      ++t.simulated;
      continue;
    }
    Json& r = rows[static_cast<std::size_t>(index)];
    if (simulated.count(index)) r = analysed.at(index);
    r["status"] = "filtered";
    r["reason"] = "pruned: its step time's lower bound " + format_seconds(row_number(r, bound, 0)) +
                  " is at least the best simulated step time " + format_seconds(best);
    ++t.pruned;
  }
}

// Candidates whose simulation failed are not ranked, and one of them may have been the best: said after the table,
// with the first one's reason. Returns the exit code: 1 when any failed.
int warn_failures(const std::vector<Json>& rows) {
  std::size_t failed = 0;
  const Json* first = nullptr;
  for (const Json& r : rows)
    if (r["status"] == "error" && failed++ == 0) first = &r;
  if (failed == 0) return 0;
  std::cout << "\nwarning: " << failed << " simulated candidate" << (failed == 1 ? "" : "s")
            << " failed and are not ranked (any of them could have been the best); the first, #"
            << (*first)["index"].get<std::uint64_t>() << " " << (*first)["point"].dump() << ": "
            << first->value("reason", std::string("(no reason given)")) << "\n";
  return 1;
}

void print_tally(const Tally& t, std::size_t candidates, bool simulate, bool prune) {
  std::cout << "  " << candidates << " candidates: " << t.layout << " invalid layouts, " << t.stack
            << " the stack cannot run, " << t.memory << " do not fit in memory (with the stack's reserve), " << t.fit
            << " fit\n";
  if (simulate)
    std::cout << "  " << t.same << " the same as another (a preset, recompute mode or ep_overlap that changes nothing here), "
              << t.simulated
              << " simulated in the order of their step time's lower bound (compute, exposed TP collectives and "
                 "blocking pipeline sends: "
              << "strategies/analytic/StepBound.hpp), " << t.pruned
              << (prune ? " pruned: their bound is at least the best simulated step time\n"
                        : " pruned (--exhaustive, or a ranking not in step-time order, simulates every one)\n");
  if (t.retried > 0)
    std::cout << "  " << t.retried
              << " simulated again alone after the kernel killed them beside others (SIGKILL: out of memory)\n";
}

int run_search(const Args& args) {
  std::string base_dir, presets_from;
  Json experiment = experiment_json_from_args(args, false, &base_dir);
  SearchSpace space = search_space(args, experiment, base_dir, &presets_from);
  RankBy by = args.value("--rank-by") ? parse_rank_by(*args.value("--rank-by")) : default_rank_by(space.mode);
  const bool simulate = space.mode == SweepMode::Simulate;
  const bool prune = simulate && ranks_by_step_time(by) && !args.has("--exhaustive");
  SweepRunOptions options = sweep_run_options(args);
  SearchSpace first = space;
  first.mode = SweepMode::Analyze;
  first.figures = {"memory.spare_bytes", "memory.reserve_bytes"};
  first.figures.push_back(simulate ? "compute.step_time_lower_bound_s" : by.path);
  SweepSpec analysis = search_sweep(experiment, base_dir, first);
  // The same candidates simulated: only the mode and the figures differ; one search, so its rows carry one identity.
  SweepSpec simulation;
  if (simulate) {
    simulation = analysis;
    simulation.mode = SweepMode::Simulate;
    simulation.figures = search_figures(
        SweepMode::Simulate, {"memory.spare_bytes", "compute.step_time_lower_bound_s", kDays, kDaysLow, kDaysHigh,
                              kCost, kEnergy, "simulation.interval.step_time_low_s", by.path});
  }
  check_sweep_figures(simulate ? simulation : analysis, options.simulator);  // a misspelt --rank-by, in either mode
  std::vector<std::uint64_t> todo(analysis.points());
  for (std::uint64_t i = 0; i < todo.size(); ++i) todo[i] = i;
  auto progress = sweep_progress(args, "placesim search: analysing", todo.size());
  options.progress = progress.get();
  std::string text;
  run_sweep(analysis, todo, options, [&](std::string_view lines) { text += lines; });
  if (progress) progress->finish();
  options.progress = nullptr;
  std::vector<Json> rows = parse_rows(std::move(text));
  Tally t = tally_analysis(rows);
  if (simulate) simulate_in_bound_order(simulation, options, rows, prune, args, t);
  if (auto out = args.value("--out")) {
    std::string lines;
    for (const Json& r : rows) lines += r.dump() + "\n";
    write_file_atomically(*out, lines);
  }
  std::cout << "placesim search: " << space.devices << " GPUs (" << space.gpus_per_node
            << " per node); presets: " << presets_from << "\n";
  print_tally(t, rows.size(), simulate, prune);
  std::vector<Json> ranked = rank_rows(rows, by);
  std::cout << "ranked by " << by.path << (by.descending ? " (highest first)" : " (lowest first)");
  if (!args.value("--rank-by") && !simulate)
    std::cout << ": a proxy, the analyze mode has no step-time model; --mode simulate (the default when the "
                 "experiment has a cluster section) ranks by simulated step time";
  if (simulate) std::cout << ", simulated at " << to_string(space.fidelity) << " fidelity";
  std::cout << "\n\n";
  if (ranked.empty()) {
    print_reasons(rows);
    return 1;
  }
  print_table(ranked, by, static_cast<std::size_t>(positive(args.value("--top").value_or("10"), "--top")), space);
  return warn_failures(rows);
}

// The experiment flags but --device-memory, which the sweep flags carry for every candidate.
std::vector<FlagSpec> search_flags() {
  std::vector<FlagSpec> flags;
  for (auto& f : experiment_flags())
    if (f.name != "--device-memory") flags.push_back(f);
  return with_flags(flags, sweep_run_flags());
}

}  // namespace

Command command_search() {
  return command_from_help(kHelp, run_search, search_flags());
}

}  // namespace placesim
