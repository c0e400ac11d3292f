// Checks a sweep's axis paths and values against the experiment schema. The schema lives in the strict parsers
// (ObjectReader refuses keys it never asked for, and values out of a field's words, type or range), so a path or a
// value is checked by setting it and parsing.
#include <algorithm>
#include <regex>
#include <sstream>

#include "strategies/pipeline/AbstractPipeline.hpp"
#include "strategies/placement/ClusterFit.hpp"
#include "strategies/placement/StackApply.hpp"
#include "strategies/sweep/Sweep.hpp"
#include "workloads/objective/ConvergenceSpec.hpp"
#include "workloads/run/RunSpec.hpp"

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
        .finish({"name", "description", "model", "training", "strategy", "cluster", "pipeline", "convergence", "stack",
                 "run"});
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

namespace {

// An axis with more values than this has its first and last kValuesChecked / 2 checked (a range of millions of
// numbers is uniform in type; its ends are where it leaves a field's range).
constexpr std::size_t kValuesChecked = 4096;

// The section named `name` of `point`, or null.
const Json* section_of(const Json& point, const char* name) {
  return point.contains(name) && !point[name].is_null() ? &point[name] : nullptr;
}

// Parses the unit of `point` that `path` lies in -- its section, or training, strategy and stack together (they
// resolve as one) -- so that an error elsewhere cannot hide one in this unit. Returns the InputError's message, or "".
std::string unit_error(const Json& point, const std::string& path, const std::string& base_dir) {
  const std::string section = path.substr(0, path.find('.'));
  try {
    if (section == "training" || section == "strategy" || section == "stack") {
      parse_run_sections(section_of(point, "training"), section_of(point, "strategy"), section_of(point, "stack"),
                         base_dir);
    } else if (section == "model" || section == "cluster" || section == "pipeline" || section == "convergence" ||
               section == "run") {
      const Json* value = section_of(point, section.c_str());
      if (!value) return "";
      if (section == "model") parse_model(*value, base_dir);
      if (section == "cluster") cluster_fit(*value);
      if (section == "pipeline") parse_abstract_pipeline(*value);
      if (section == "convergence") parse_convergence(*value);
      if (section == "run") parse_run(*value);
    } else {
      parse_experiment(point, base_dir);
    }
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The dotted field paths a message names ("strategy.tp", "model.heads"); a bare section word is prose, not a field.
std::vector<std::string> fields_in(const std::string& message) {
  static const std::regex path(R"((?:^|[^A-Za-z0-9_.'])((?:model|training|strategy|cluster|stack|pipeline|)"
                               R"(convergence|run)(?:\.[A-Za-z0-9_]+)+))");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), path); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

bool within(const std::vector<std::string>& roots, const std::string& field) {
  for (const auto& root : roots)
    if (leads(root, field)) return true;
  return false;
}

bool overlaps(const std::vector<std::string>& paths, const std::string& field) {
  for (const auto& p : paths)
    if (leads(p, field) || leads(field, p)) return true;
  return false;
}

// True when `message` refuses a value of the axis with paths `own` for itself: it names a field at or under one of
// them first (or an unknown key inside the value), and every field it names lies there and is set by no other axis
// (`others`). A message naming another field is about a combination, which other points may avoid.
bool refuses_alone(const std::string& message, const std::vector<std::string>& own,
                   const std::vector<std::string>& others) {
  const std::string key = unknown_key(message);
  if (!key.empty()) return within(own, key) && !overlaps(others, key);
  const std::string field = field_named(message);
  if (field.empty() || !within(own, field) || overlaps(others, field)) return false;
  for (const auto& named : fields_in(message))
    if (!within(own, named) || overlaps(others, named)) return false;
  return true;
}

// The first of the errors in `message` that refuses_alone(), or "". A parser that collects every error of its input
// throws them as one message, "N errors:" and a line "  <error>" each; any other message is one error.
std::string own_error(const std::string& message, const std::vector<std::string>& own,
                      const std::vector<std::string>& others) {
  std::vector<std::string> errors;
  std::istringstream lines(message);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("  ", 0) == 0) errors.push_back(line.substr(2));
  if (message.find('\n') == std::string::npos) errors = {message};
  for (const auto& error : errors)
    if (refuses_alone(error, own, others)) return error;
  return "";
}

// False when a value filter on one of the axis's paths skips the value: its points never run.
bool runs(const SweepSpec& spec, const SweepAxis& axis, std::size_t k) {
  for (const auto& f : spec.filters.values)
    for (std::size_t p = 0; p < axis.paths.size(); ++p)
      if (f.path == axis.paths[p] && !f.accepts(axis.values[k][p])) return false;
  return true;
}

std::vector<std::size_t> indices_checked(std::size_t size) {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < size; ++k) {
    if (size > kValuesChecked && k == kValuesChecked / 2) k = size - kValuesChecked / 2;
    out.push_back(k);
  }
  return out;
}

std::string value_text(const SweepAxis& axis, std::size_t k) {
  return axis.paths.size() == 1 ? axis.values[k][0].dump() : Json(axis.values[k]).dump();
}

// "axes.strategy.tp: the value "x" can never be valid (strategy.tp="x" must be a positive integer)" per value of
// `a` that its own field refuses, the other axes at their first values.
void refused_values(const SweepSpec& spec, std::size_t a, std::vector<std::string>& out) {
  const SweepAxis& axis = spec.axes[a];
  std::vector<std::string> others;
  for (std::size_t b = 0; b < spec.axes.size(); ++b)
    if (b != a) others.insert(others.end(), spec.axes[b].paths.begin(), spec.axes[b].paths.end());
  std::vector<std::size_t> coords(spec.axes.size(), 0);
  for (std::size_t k : indices_checked(axis.size())) {
    if (!runs(spec, axis, k)) continue;
    coords[a] = k;
    Json point;
    try {
      point = point_experiment(spec, coords);
    } catch (const InputError&) {
      continue;  // a path another axis's value cannot hold: that combination's point is invalid, not this value
    }
    for (const auto& path : axis.paths) {
      const std::string message = own_error(unit_error(point, path, spec.base_dir), axis.paths, others);
      if (message.empty()) continue;
      out.push_back("axes." + axis.name() + ": the value " + value_text(axis, k) + " can never be valid (" + message +
                    ")");
      break;
    }
  }
}

// The value of `root` at the dotted `path` (through objects only), or null when it has none (or null).
const Json* json_at(const Json& root, const std::string& path) {
  const Json* node = &root;
  for (std::size_t start = 0;;) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    if (dot == std::string::npos) return node->is_null() ? nullptr : node;
    start = dot + 1;
  }
}

bool holds(const Json& root, const std::string& path) {
  return json_at(root, path) != nullptr;
}

}  // namespace

void validate_axis_values(const SweepSpec& spec) {
  std::vector<std::string> refused;
  for (std::size_t a = 0; a < spec.axes.size(); ++a) refused_values(spec, a, refused);
  if (refused.empty()) return;
  if (refused.size() == 1) throw InputError(refused.front() + ": fix or remove it");
  std::string message = std::to_string(refused.size()) + " axis values can never be valid; fix or remove them:";
  for (const auto& r : refused) message += "\n  " + r;
  throw InputError(message);
}

void validate_batch_axes(const SweepSpec& spec) {
  const std::string count = "strategy.microbatches", batch = "training.global_batch";
  for (const SweepAxis& axis : spec.axes) {
    auto sets = [&](const std::string& path) {
      return std::find(axis.paths.begin(), axis.paths.end(), path) != axis.paths.end();
    };
    if (sets(count) == sets(batch)) continue;  // neither, or both in one joint axis (consistent by construction)
    const std::string& other = sets(count) ? batch : count;
    // Given by another axis, or by the base unless another axis replaces a section above it (its values decide).
    bool by_axis = false, replaced = false;
    for (const SweepAxis& b : spec.axes)
      for (const auto& path : b.paths)
        if (&b != &axis && leads(path, other)) {
          by_axis = by_axis || path == other;
          replaced = replaced || path != other;
        }
    const bool by_base = !by_axis && !replaced && holds(spec.base, other);
    if (!by_axis && !by_base) continue;
    throw InputError(
        "axes." + axis.name() + ": " +
        (by_base ? "the base gives " + other + "=" + show(*json_at(spec.base, other)) : "another axis sets " + other) +
        ", and training.global_batch = strategy.microbatches x training.micro_batch x strategy.dp: at "
        "most one value of the axis agrees with it at each point. To sweep the micro-batch count, give no "
        "training.global_batch (each point then trains microbatches x micro_batch x dp samples); to keep "
        "the global batch, sweep training.micro_batch or strategy.dp and give no strategy.microbatches; "
        "to vary both, sweep \"strategy.microbatches,training.global_batch\" as one joint axis "
        "(docs/sweeps.md, \"The micro-batch count\")");
  }
}

}  // namespace placesim
