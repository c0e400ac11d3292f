#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// Interruption rates of a job's parts, events per unit per second (the input and the data file give them per hour):
/// per GPU, per node, per inter-node link (a NIC port), and planned stops per node. A planned stop checkpoints first.
struct FailureRates {
  double per_gpu_s = 0;
  double per_node_s = 0;
  double per_link_s = 0;
  double planned_per_node_s = 0;
};

/// The experiment's "run" section: what turns one simulated step into a training run's days, energy, cost and
/// goodput. Every field is optional; a field not given takes its default from workloads/run/defaults.json
/// (run_defaults()), which the report names among its assumptions. SI units inside.
struct RunSpec {
  std::optional<double> gpu_hour_usd;        ///< price of one GPU for one hour; none: no cost figures
  std::optional<double> pue;                 ///< data-centre power usage effectiveness, >= 1
  std::optional<double> gpu_power_fraction;  ///< mean GPU draw / its rated (or limited) power, in (0, 1]
  std::optional<double> node_power_w;        ///< a node's power beyond its GPUs, watts
  /// run.failures: rates replacing the defaults of the units given (the others keep theirs), or the job's own MTBF
  /// (`mtbf_s`), which replaces every rate: each interruption unplanned.
  std::optional<double> per_gpu_hour, per_node_hour, per_link_hour, planned_per_node_hour;
  std::optional<double> mtbf_s;
  std::optional<double> interval_s;           ///< run.checkpoint.interval; none or "auto": Daly's optimum
  std::optional<double> write_bandwidth_Bps;  ///< aggregate bytes/s a checkpoint is written to storage at
  bool async = false;                         ///< training stalls only for the copy to host memory
  std::optional<double> host_bandwidth_Bps;   ///< per GPU, the copy to host memory of an async checkpoint
  std::optional<double> restart_s;            ///< from an interruption to training again
};

/// A default with its source.
struct SourcedValue {
  double value = 0;
  std::string source;
};

/// A vendor's system power specification: its maximum power, its GPUs and their rated power.
struct SystemPower {
  double system_power_w = 0;
  int gpus = 8;
  double gpu_power_w = 0;
  std::string source;
};

/// One root-cause row of the failure data: its count over the observation and the part it scales with.
struct FailureCategory {
  std::string cause;
  double count = 0;
  std::string per;  ///< "gpu", "node" or "link"
  bool planned = false;
};

/// The interruptions observed on one cluster over `hours`, by root cause.
struct FailureObservation {
  double gpus = 0, nodes = 0, links = 0, hours = 0;
  std::vector<FailureCategory> categories;
  std::string source;
  /// Each unit's rate: the counts of the categories it scales with over its unit-hours (GPU-hours, node-hours,
  /// link-hours).
  FailureRates rates() const;
};

/// workloads/run/defaults.json, parsed.
struct RunDefaults {
  SourcedValue pue, gpu_power_fraction, node_power_fraction, write_bandwidth_per_node_Bps, restart_s;
  std::string interval_source, host_bandwidth_source, node_power_description;
  std::map<std::string, SystemPower, std::less<>> node_power;  ///< by accelerator name
  FailureObservation failures;
};

/// The built-in defaults (embedded workloads/run/defaults.json), read once.
const RunDefaults& run_defaults();
/// Parses a defaults file's JSON; `origin` names it in errors.
RunDefaults parse_run_defaults(const Json& value, const std::string& origin);

/// Parses the "run" section; with `errors`, field errors are collected there (see ObjectReader).
RunSpec parse_run(const Json& value, ErrorList* errors = nullptr);

}  // namespace placesim
