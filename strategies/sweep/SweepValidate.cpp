// Checks a sweep's axis paths against the experiment schema. The schema lives in the strict parsers (ObjectReader
// refuses keys it never asked for), so a path is checked by setting it and parsing.
#include "strategies/placement/ClusterFit.hpp"
#include "strategies/sweep/Sweep.hpp"

namespace placesim {

namespace {

// The dotted key named by an "unknown key K (did you mean ...)" message, or "" for any other message.
std::string unknown_key(const std::string& message) {
  const std::string marker = "unknown key ";
  if (message.rfind(marker, 0) != 0) return "";
  std::string rest = message.substr(marker.size());
  return rest.substr(0, rest.find(' '));
}

// True when `prefix` is `path` or one of its leading components ("strategy" of "strategy.tp").
bool leads(const std::string& prefix, const std::string& path) {
  return path == prefix ||
         (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 && path[prefix.size()] == '.');
}

// Parses only the section of `point` that `path` lies in, so that an error in another section (a model given by
// another axis, say) cannot hide an unknown key in this one. Returns the InputError's message, or "".
std::string section_error(const Json& point, const std::string& path, const std::string& base_dir) {
  const std::string section = path.substr(0, path.find('.'));
  try {
    if (section == "model")
      parse_model(point["model"], base_dir);
    else if (section == "training")
      parse_training(point["training"]);
    else if (section == "strategy")
      parse_strategy(point["strategy"]);
    else if (section == "cluster")
      cluster_fit(point["cluster"]);
    else
      parse_experiment(point, base_dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The field an error message starts with ("training.micro_batch={...} must be ..." -> "training.micro_batch").
std::string field_named(const std::string& message) {
  auto end = message.find_first_of("= ");
  return end == std::string::npos || message[end] != '=' ? "" : message.substr(0, end);
}

std::string first_value_text(const SweepAxis& axis, std::size_t p) {
  return show(axis.values.front()[p]);
}

Json first_point(const SweepSpec& spec) {
  Json point = spec.base;
  for (auto [a, p] : application_order(spec)) {
    const SweepAxis& axis = spec.axes[a];
    try {
      set_path(point, axis.paths[p], axis.values.front()[p]);
    } catch (const InputError& e) {
      throw InputError("axes." + axis.name() + ": " + e.what());
    }
  }
  return point;
}

}  // namespace

void validate_axis_paths(const SweepSpec& spec) {
  // The experiment's own sections first: parsing the first point below can stop at another error (a bad value of the
  // first point) before the parser reaches its unknown-key check, and later points would then meet the typo.
  try {
    ObjectReader(spec.base, "")
        .finish(
            {"name", "description", "model", "training", "strategy", "cluster", "pipeline", "convergence", "stack"});
  } catch (const InputError& e) {
    throw InputError(std::string("base: ") + e.what());
  }
  Json point = first_point(spec);
  for (const SweepAxis& axis : spec.axes) {
    for (std::size_t p = 0; p < axis.paths.size(); ++p) {
      const std::string& path = axis.paths[p];
      std::string message = section_error(point, path, spec.base_dir);
      std::string key = unknown_key(message);
      if (!key.empty() && leads(key, path))
        throw InputError("axes." + axis.name() + ": " + path + " is not a field of the experiment (" + message + ")");
      std::string field = field_named(message);
      if (!field.empty() && field != path && leads(field, path))
        throw InputError("axes." + axis.name() + ": " + path + " is not a field of the experiment: " + field +
                         " holds a value, not fields (" + message + ")");
      if (!key.empty() && leads(path, key))
        throw InputError("axes." + axis.name() + ": the value " + first_value_text(axis, p) + " of " + path +
                         " has an unknown field (" + message + ")");
    }
  }
  std::string message;
  try {
    parse_experiment(point, spec.base_dir);
  } catch (const InputError& e) {
    message = e.what();
  }
  std::string key = unknown_key(message);
  if (key.empty()) return;
  for (const SweepAxis& axis : spec.axes)
    for (const auto& path : axis.paths)
      if (leads(key, path) || leads(path, key)) throw InputError("axes." + axis.name() + ": " + message);
  throw InputError("base: " + message);
}

}  // namespace placesim
