#pragma once
#include <string>

#include "strategies/placement/Experiment.hpp"
#include "topology/cluster/Cluster.hpp"
#include "workloads/json/Error.hpp"

namespace placesim::test {

/// Parses an experiment from JSON text (base dir: the source tree).
inline Experiment experiment(const std::string& text) {
  return parse_experiment(Json::parse(text), PLACESIM_SOURCE_DIR);
}

/// A cluster of `nodes` default nodes (8 GPUs each) of a preset accelerator.
inline ClusterSpec nodes_of(const std::string& accelerator, int nodes) {
  ClusterSpec c;
  c.accelerator = accelerator_preset(accelerator, "cluster.accelerator");
  c.nodes = nodes;
  return c;
}

/// The message `attempt()` is refused with (an InputError), or "(no error)" when it returns.
template <class Attempt>
std::string refusal_message(Attempt&& attempt) {
  try {
    attempt();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

/// Path of a reference data file (tests/data/reference: copies of the workplace's shared/reference tables, each
/// citing its paper).
inline std::string reference(const std::string& name) {
  return std::string(PLACESIM_SOURCE_DIR) + "/tests/data/reference/" + name;
}

/// Runs the placesim binary with a shell command line; returns the exit code and fills stdout+stderr.
int run_placesim(const std::string& arguments, std::string* output);

/// Writes `experiment` (JSON text) to a temporary file, simulates it with placesim and `arguments`, requires it to
/// succeed, and returns the report.
Json simulate_report(const std::string& experiment, const std::string& arguments = "");

/// Writes `experiment` (JSON text) to a file named after `name`, simulates it with placesim, requires it to succeed
/// with every exact figure of the analytic model identical (the report's validation rows but the bounds differing
/// by 0), and returns the report.
Json simulate_exact(const std::string& name, const std::string& experiment);

}  // namespace placesim::test
