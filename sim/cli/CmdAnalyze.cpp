#include <array>
#include <iomanip>
#include <iostream>
#include <optional>

#include "sim/cli/Commands.hpp"
#include "sim/cli/FitHint.hpp"
#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/pipeline/Equivalence.hpp"
#include "strategies/placement/ClusterFit.hpp"
#include "strategies/placement/Strategy.hpp"
#include "topology/cluster/Cluster.hpp"
#include "traces/report/Report.hpp"
#include "traces/report/Warnings.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kCheckHelp = R"(
check EXPERIMENT.json [options]
validate an experiment (integrity, consistency, fit): exit 0 valid, 3 not equivalent to one device, 2 invalid
)";

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kAnalyzeHelp = R"(
analyze [EXPERIMENT.json] [--out FILE] [--table] [options]
memory, communication and FLOPs per device derived from the placement (no simulation)
--out FILE                write the JSON report here (default: stdout)
--table                   print a readable table (the JSON report then goes only to --out)
)";

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kPresetsHelp = R"(
presets [--json]
list the model, strategy, cluster and accelerator presets
--json                    print the presets as JSON
)";

namespace {

// Validity, and with a cluster: the mesh must use its GPUs and the memory fit its accelerator (unless
// --device-memory says otherwise).
void check_with_cluster(Experiment& e) {
  check_validity(e);
  if (e.cluster.is_null()) return;
  ClusterFit fit = cluster_fit(e.cluster);
  check_cluster_mesh(e, fit);
  if (e.device_memory_bytes <= 0) e.device_memory_bytes = fit.device_memory_bytes;
}

int run_analyze(const Args& args) {
  Experiment e = experiment_from_args(args, true);
  refuse_abstract_pipeline(e, "analyze", "a model and a placement to derive memory, communication and FLOPs from");
  check_with_cluster(e);
  const Analysis a = analyze(e);
  std::optional<ClusterSpec> cluster;
  if (!e.cluster.is_null()) cluster = parse_cluster(e.cluster);
  if (cluster) check_calibration_accelerator(e, cluster->accelerator.name);
  const std::vector<std::string> warnings = analysis_warnings(e, a, cluster ? &*cluster : nullptr);
  const std::string out = args.value("--out").value_or("");
  // A plan that does not fit is when the breakdown matters most: print the table even without --table (to stderr),
  // write the report only where --out asks, marked with the refusal, then refuse.
  std::optional<DoesNotFit> refusal;
  try {
    check_fits(e, a);
  } catch (const DoesNotFit& error) {
    refusal = with_fit_hint(error, e, args, true);
  }
  std::ostream& text = args.has("--table") ? std::cout : std::cerr;
  if (args.has("--table") || refusal) text << analysis_table(e, a);
  text << warning_lines(warnings);
  if ((!args.has("--table") && !refusal) || !out.empty()) {
    Json report = analysis_report(e, a);
    report["warnings"] = warnings;
    if (refusal) report["error"] = refusal->what();
    write_output(out, dump(report));
  }
  if (refusal) throw *refusal;
  return 0;
}

int run_check(const Args& args) {
  Experiment e = experiment_from_args(args, false);
  refuse_abstract_pipeline(e, "check",
                           "a placement to check (an abstract pipeline's staleness is in its simulate report)");
  check_with_cluster(e);
  try {
    check_fits(e, analyze(e));
  } catch (const DoesNotFit& error) {
    throw with_fit_hint(error, e, args, false);
  }
  const Equivalence eq = training_equivalence(e.strategy);
  if (!eq.equivalent) {
    char delay[256];
    if (e.strategy.schedule == Schedule::LocalSGD)
      std::snprintf(delay, sizeof delay, "%lld local step(s) between averagings of %lld replica(s)",
                    static_cast<long long>(e.strategy.local_steps), static_cast<long long>(e.strategy.replicas));
    else
      std::snprintf(delay, sizeof delay,
                    "max %lld, mean %.3g block updates between a gradient's read and its apply (steady state, "
                    "balanced stages, backward = 2 x forward)",
                    static_cast<long long>(eq.delay.max), eq.delay.mean);
    std::cout << "not equivalent: " << e.name << ": strategy.schedule=" << to_string(e.strategy.schedule)
              << " is a valid strategy but does not train the same model as one device: " << eq.given_up
              << ".\n  delay: " << delay << "\n";
    return 3;
  }
  std::cout << "valid: " << e.name << ": " << e.model.name << " with " << e.strategy.preset << " "
            << short_form(e.strategy.placement) << " on " << mesh_string(e.strategy) << "\n";
  return 0;
}

using PresetSections = std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>;

constexpr std::array<const char*, 4> kStateNames = {"parameters", "gradients", "optimizer", "activations"};
constexpr std::array<const char*, 4> kAxisNames = {"dp_shard", "dp_replicate", "tp", "pp"};

int run_presets(const Args& args) {
  const PresetSections sections = {{"models", model_preset_list()},
                                   {"strategies", strategy_preset_list()},
                                   {"clusters", cluster_preset_list()},
                                   {"accelerators", accelerator_preset_list()}};
  if (args.has("--json")) {
    Json j = Json::object();
    for (const auto& [section, presets] : sections) {
      j[section] = Json::object();
      for (const auto& [n, d] : presets) j[section][n] = d;
    }
    // Each strategy preset's placement table: per state, its mode along each mesh axis.
    j["strategy_placements"] = Json::object();
    for (const PresetTable& t : strategy_preset_tables()) {
      Json table = Json::object();
      for (std::size_t i = 0; i < kStateNames.size(); ++i)
        for (std::size_t k = 0; k < kAxisNames.size(); ++k) table[kStateNames[i]][kAxisNames[k]] = t.modes[i][k];
      j["strategy_placements"][t.name] = table;
    }
    std::cout << dump(j);
    return 0;
  }
  for (const auto& [section, presets] : sections) {
    std::cout << section << ":\n";
    for (const auto& [n, d] : presets)
      std::cout << "  " << n << std::string(n.size() < 16 ? 16 - n.size() : 1, ' ') << d << "\n";
  }
  std::cout
      << "\nstrategy placements (R replicated, S sharded, SG sharded-with-gather, M materialized, Off offloaded;\n"
         "+hpZ: a secondary shard along dp_shard; tp shards activations only with sp; pp places whole layers):\n";
  for (const PresetTable& t : strategy_preset_tables()) {
    std::cout << "  " << t.name << "\n    " << std::left << std::setw(13) << "";
    for (const char* axis : kAxisNames) std::cout << std::setw(14) << axis;
    std::cout << "\n";
    for (std::size_t i = 0; i < kStateNames.size(); ++i) {
      std::cout << "    " << std::setw(13) << kStateNames[i];
      for (const auto& mode : t.modes[i]) std::cout << std::setw(14) << mode;
      std::cout << "\n";
    }
    std::cout << std::right;
  }
  return 0;
}

}  // namespace

Command command_analyze() {
  return command_from_help(kAnalyzeHelp, run_analyze, experiment_flags());
}

Command command_check() {
  return command_from_help(kCheckHelp, run_check, experiment_flags());
}

Command command_presets() {
  return command_from_help(kPresetsHelp, run_presets);
}

}  // namespace placesim
