#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "sim/cli/Commands.hpp"
#include "sim/cli/SweepCli.hpp"
#include "strategies/placement/Strategy.hpp"
#include "strategies/sweep/Search.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "traces/sweep/SweepRows.hpp"
#include "workloads/json/JsonReader.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
search EXPERIMENT.json [--top K] [--out RESULTS.jsonl] [--mode analyze|simulate] [options]
find the fastest valid strategy: meshes x presets x micro-batch sizes, ranked (top-k table + JSONL)
--gpus N                  GPU count when the experiment has no cluster section
--gpus-per-node N         with --gpus: GPUs per node, the largest tp (default 8)
--presets LIST            strategy presets to try (default megatron-3d,megatron-core,zero1,zero2,zero3,zero-offload)
--micro-batches LIST      micro-batch sizes to try (default 1,2,4,8)
--mode MODE               simulate (default: one simulator process per candidate, ranked by step time) or
                          analyze (instant, but it has no step time: ranked by bytes sent, a proxy)
--fidelity F              simulate mode: analytic, flow (default) or full, as for simulate
--rank-by PATH            report figure to rank by, '-' first for highest first (default: see output)
--top K                   rows of the table (default 10)
--out FILE                write every candidate's row, invalid ones with their reason, as JSONL
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

SearchSpace search_space(const Args& args, const Json& experiment) {
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
  if (auto presets = args.value("--presets")) {
    space.presets = split_list(*presets);
    std::vector<std::string> known;
    for (const auto& [name, description] : strategy_preset_list()) known.push_back(name);
    for (const auto& p : space.presets)
      if (std::find(known.begin(), known.end(), p) == known.end())
        refuse_name("--presets", p, "a strategy preset", known);
  }
  if (auto mbs = args.value("--micro-batches")) {
    space.micro_batches.clear();
    for (const auto& m : split_list(*mbs)) space.micro_batches.push_back(positive(m, "--micro-batches"));
  }
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

std::string figure_text(const Json& row, const std::string& path) {
  if (!row.contains(path) || !row[path].is_number()) return "-";
  double v = row[path].get<double>();
  char buf[32];
  if (path.find("bytes") != std::string::npos) return format_bytes(v);
  if (path.find("_s") == path.size() - 2) return format_seconds(v);
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

void print_table(const std::vector<Json>& ranked, const RankBy& by, std::size_t top, const SearchSpace& space) {
  std::vector<std::string> figures = {"memory.total_bytes", "communication.bytes_per_step"};
  if (space.mode == SweepMode::Simulate) figures.insert(figures.end(), {"simulation.step_time_s", "simulation.mfu"});
  if (std::find(figures.begin(), figures.end(), by.path) == figures.end()) figures.push_back(by.path);
  // MoE models: the expert-parallel degree is a candidate axis too.
  const bool ep = !ranked.empty() && ranked.front()["point"].contains("strategy.ep");
  std::cout << cell("rank", 5) << "  " << std::string("preset") + std::string(8, ' ') << cell("dp", 6) << cell("tp", 4)
            << cell("pp", 4) << (ep ? cell("ep", 4) : std::string()) << cell("mb", 4);
  for (const auto& f : figures) std::cout << cell(f.substr(f.find('.') + 1), 16);
  std::cout << "\n";
  for (std::size_t k = 0; k < ranked.size() && k < top; ++k) {
    const Json& r = ranked[k];
    const Json& p = r["point"];
    std::string preset = p["strategy.preset"].get<std::string>();
    std::cout << cell(std::to_string(k + 1), 5) << "  " << preset
              << std::string(preset.size() < 14 ? 14 - preset.size() : 1, ' ') << cell(p["strategy.dp"].dump(), 6)
              << cell(p["strategy.tp"].dump(), 4) << cell(p["strategy.pp"].dump(), 4)
              << (ep ? cell(p["strategy.ep"].dump(), 4) : std::string()) << cell(p["training.micro_batch"].dump(), 4);
    for (const auto& f : figures) std::cout << cell(figure_text(r, f), 16);
    std::cout << "\n";
  }
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

int run_search(const Args& args) {
  std::string base_dir;
  Json experiment = experiment_json_from_args(args, false, &base_dir);
  SearchSpace space = search_space(args, experiment);
  RankBy by = args.value("--rank-by") ? parse_rank_by(*args.value("--rank-by")) : default_rank_by(space.mode);
  space.figures.push_back(by.path);
  SweepSpec spec = search_sweep(experiment, base_dir, space);
  SweepRunOptions options = sweep_run_options(args);
  check_sweep_figures(spec, options.simulator);  // a misspelt --rank-by is refused in simulate mode too
  std::vector<std::uint64_t> todo(spec.points());
  for (std::uint64_t i = 0; i < todo.size(); ++i) todo[i] = i;
  auto progress = sweep_progress(args, "placesim search", todo.size());
  options.progress = progress.get();
  std::string text;
  SweepCounts counts = run_sweep(spec, todo, options, [&](std::string_view lines) { text += lines; });
  if (progress) progress->finish();
  sort_rows(text);
  if (auto out = args.value("--out")) write_file_atomically(*out, text);
  std::vector<Json> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) rows.push_back(Json::parse(line));
  std::vector<Json> ranked = rank_rows(rows, by);
  std::cout << "placesim search: " << space.devices << " GPUs (" << space.gpus_per_node << " per node), "
            << counts_summary(counts) << "\n";
  std::cout << "ranked by " << by.path << (by.descending ? " (highest first)" : " (lowest first)");
  if (!args.value("--rank-by") && space.mode == SweepMode::Analyze)
    std::cout << ": a proxy, the analyze mode has no step-time model; --mode simulate (the default when the "
                 "experiment has a cluster section) ranks by simulated step time";
  if (space.mode == SweepMode::Simulate) std::cout << ", simulated at " << to_string(space.fidelity) << " fidelity";
  std::cout << "\n\n";
  if (ranked.empty()) {
    print_reasons(rows);
    return 1;
  }
  print_table(ranked, by, static_cast<std::size_t>(positive(args.value("--top").value_or("10"), "--top")), space);
  return counts.error > 0 ? 1 : 0;
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
