#include "strategies/analytic/ExperimentFile.hpp"

#include <filesystem>
#include <optional>

#include "strategies/analytic/Validity.hpp"
#include "strategies/placement/ClusterFit.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

namespace {

// The checks the commands run after parsing (check_validity, the mesh against the cluster's GPUs), joined to a file's
// other errors so that one run shows them all. A file without other errors leaves them to the commands, in their
// order and exception types (a command that checks no validity, such as verify, then runs). check_validity names a
// placement's states by their modes ("gradients=sharded"), not their fields, so a failed placement skips it.
void join_command_checks(const Experiment& e, const std::optional<ClusterSpec>& cluster, ErrorList& errors) {
  if (!errors.failed_within("strategy.placement")) errors.attempt([&] { check_validity(e); });
  if (cluster) errors.attempt([&] { check_cluster_mesh(e, cluster_fit(*cluster)); });
}

}  // namespace

Experiment parse_experiment(const Json& value, const std::string& base_dir, ErrorList& errors) {
  Experiment e;
  std::optional<ClusterSpec> cluster;
  if (read_experiment(value, base_dir, errors, e, cluster)) join_command_checks(e, cluster, errors);
  errors.throw_if_any();
  return e;
}

Experiment load_experiment(const std::string& path) {
  Json j = read_json_file(path);
  ErrorList errors(path);
  return parse_experiment(j, std::filesystem::path(path).parent_path().string(), errors);
}

}  // namespace placesim
