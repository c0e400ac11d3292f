#pragma once
#include <string>

#include "strategies/placement/Experiment.hpp"
#include "workloads/json/ErrorList.hpp"

namespace placesim {

/// parse_experiment reporting every error of the experiment at once, as InputErrors (ErrorList::throw_if_any): each
/// section's field errors and unknown keys, the cluster section's, then the checks across fields whose inputs parsed
/// (resolve(); and when there are errors already, check_validity and the mesh against the cluster, which the commands
/// run next). One error reads as a single InputError does.
Experiment parse_experiment(const Json& value, const std::string& base_dir, ErrorList& errors);
/// Reads and parses an experiment file, reporting every error at once (named after `path`).
Experiment load_experiment(const std::string& path);

}  // namespace placesim
