#include "strategies/sweep/Sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

// A sweep is enumerated, not stored; the cap keeps a typo such as {"from": 1, "to": 1e12, "step": 1} from
// allocating the universe.
constexpr std::uint64_t kMaxAxisValues = 10'000'000;
constexpr std::uint64_t kMaxPoints = std::uint64_t{1} << 53;

Json plain(const OrderedJson& value) {
  return Json::parse(value.dump());
}

std::vector<std::string> split_paths(const std::string& key, const std::string& field) {
  std::vector<std::string> paths;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = key.find(',', start);
    std::string path = key.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    path.erase(0, path.find_first_not_of(' '));
    path.erase(path.find_last_not_of(' ') + 1);
    if (path.empty() || path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos)
      throw InputError(field + ": '" + key + "' is not a dotted field path (or comma-separated paths)");
    paths.push_back(path);
    if (comma == std::string::npos) return paths;
    start = comma + 1;
  }
}

std::uint64_t checked_count(double count, const std::string& field) {
  if (!(count <= static_cast<double>(kMaxAxisValues)))
    throw InputError(field + " has more than " + std::to_string(kMaxAxisValues) + " values");
  return static_cast<std::uint64_t>(count);
}

// Values of the arithmetic range from, from + step, ... up to `to` (inclusive within rounding), step > 0.
double arithmetic_count(double from, double to, double step) {
  return std::floor((to - from) / step * (1 + 1e-12) + 1e-9) + 1;
}

std::vector<Json> arithmetic_range(const Json& spec, double from, double to, const std::string& field) {
  const Json& step_json = spec["step"];
  double step = step_json.get<double>();
  if (!(step > 0))
    throw InputError(field + ".step=" + show(step_json) + " must be positive: the range would never end");
  std::uint64_t count = checked_count(arithmetic_count(from, to, step), field);
  std::vector<Json> values;
  values.reserve(count);
  bool integral = spec["from"].is_number_integer() && step_json.is_number_integer();
  for (const Json* v : {&spec["from"], &step_json})
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      throw InputError(field + ": " + show(*v) + " is beyond 64-bit signed integers");
  for (std::uint64_t k = 0; k < count; ++k) {
    if (integral) {
      std::int64_t offset = 0, value = 0;
      if (__builtin_mul_overflow(static_cast<std::int64_t>(k), step_json.get<std::int64_t>(), &offset) ||
          __builtin_add_overflow(spec["from"].get<std::int64_t>(), offset, &value))
        throw InputError(field + ": value " + std::to_string(k + 1) + " of the range (from " + show(spec["from"]) +
                         " by " + show(step_json) + ") is beyond 64-bit integers");
      values.emplace_back(value);
    } else
      values.emplace_back(from + static_cast<double>(k) * step);  // from + k*step does not accumulate rounding
  }
  return values;
}

std::vector<Json> geometric_range(const Json& spec, double from, double to, const std::string& field) {
  const Json& times_json = spec["times"];
  double times = times_json.get<double>();
  if (!(times > 1))
    throw InputError(field + ".times=" + show(times_json) + " must be greater than 1: the range would never end");
  if (!(from > 0))
    throw InputError(field + ".from=" + show(spec["from"]) +
                     " must be positive with times: the range would never grow");
  bool integral = spec["from"].is_number_integer() && times_json.is_number_integer();
  std::vector<Json> values;
  for (double v = from; v <= to * (1 + 1e-12); v *= times) {
    checked_count(static_cast<double>(values.size()) + 1, field);
    if (integral && !(v < 9.2e18))
      throw InputError(field + ": value " + std::to_string(values.size() + 1) +
                       " of the range is beyond 64-bit integers");
    if (integral)
      values.emplace_back(static_cast<std::int64_t>(std::llround(v)));
    else
      values.emplace_back(v);
  }
  return values;
}

std::vector<Json> range_values(const Json& spec, const std::string& field) {
  ObjectReader r(spec, field);
  for (const char* key : {"from", "to"})
    if (!r.has(key)) throw InputError(r.field(key) + " is required in a range");
  double from = r.get_number("from", 0), to = r.get_number("to", 0);
  bool step = r.has("step"), times = r.has("times");
  if (step == times)
    throw InputError(field + " needs exactly one of \"step\" (arithmetic range) or \"times\" (geometric range)");
  double increment = r.get_number(step ? "step" : "times", 0);
  r.finish();
  if (step && increment > 0 && from > to)
    throw InputError(field + ": from=" + show(spec["from"]) + " is above to=" + show(spec["to"]) +
                     " with a positive step: the range would never reach to");
  if (times && increment > 1 && from > to)
    throw InputError(field + ": from=" + show(spec["from"]) + " is above to=" + show(spec["to"]) +
                     ": the range would never reach to");
  return step ? arithmetic_range(spec, from, to, field) : geometric_range(spec, from, to, field);
}

std::vector<std::vector<Json>> joint_values(const Json& spec, std::size_t arity, const std::string& field) {
  if (!spec.is_array())
    throw InputError(field + "=" + show(spec) + " must be a list of [" + std::to_string(arity) +
                     " values] (a joint axis takes no range)");
  if (spec.empty()) throw InputError(field + " is an empty axis: give at least one value");
  std::vector<std::vector<Json>> values;
  for (std::size_t k = 0; k < spec.size(); ++k) {
    const Json& v = spec[k];
    if (!v.is_array() || v.size() != arity)
      throw InputError(field + "[" + std::to_string(k) + "]=" + show(v) + " must be a list of " +
                       std::to_string(arity) + " values, one per path");
    values.emplace_back(v.begin(), v.end());
  }
  return values;
}

SweepAxis parse_axis(const std::string& key, const OrderedJson& spec) {
  const std::string field = "axes." + key;
  SweepAxis axis;
  axis.paths = split_paths(key, field);
  Json values = plain(spec);
  if (axis.paths.size() > 1) {
    axis.values = joint_values(values, axis.paths.size(), field);
    return axis;
  }
  for (auto& v : axis_values(values, field)) axis.values.push_back({std::move(v)});
  return axis;
}

// How many values an axis will have, counted from its list or range bounds without building them; 1 for a malformed
// range (parse_axis refuses it with the precise reason).
template <class J>
double axis_count(const J& spec) {
  if (spec.is_array()) return static_cast<double>(spec.size());
  if (!spec.is_object()) return 1;
  auto number = [&](const char* key) {
    auto it = spec.find(key);
    return it != spec.end() && it->is_number() ? it->template get<double>() : std::nan("");
  };
  const double from = number("from"), to = number("to"), step = number("step"), times = number("times");
  if (step > 0 && to >= from) return arithmetic_count(from, to, step);
  if (times > 1 && from > 0 && to >= from) return std::floor(std::log(to * (1 + 1e-12) / from) / std::log(times)) + 1;
  return 1;
}

std::vector<SweepAxis> parse_axes(const OrderedJson& axes) {
  if (!axes.is_object() || axes.empty())
    throw InputError("axes=" + show(plain(axes)) +
                     " must be an object of \"field.path\": values with at least one axis");
  // Counted before any value is built: a sweep too large to enumerate is refused without allocating it.
  double points = 1, values = 0;
  std::string sizes;
  for (const auto& [key, spec] : axes.items()) {
    const double n = axis_count(spec);
    points *= n;
    values += n;
    sizes += (sizes.empty() ? "" : " x ") + format_significant(n, 3);
  }
  if (!(points <= static_cast<double>(kMaxPoints)))
    throw InputError("axes: the sweep has " + sizes + " = " + format_significant(points, 3) +
                     " points, more than the 2^53 that can be enumerated");
  if (!(values <= static_cast<double>(kMaxAxisValues)))
    throw InputError("axes: the axes hold " + format_significant(values, 3) + " values together, more than the " +
                     std::to_string(kMaxAxisValues) + " placesim builds");
  std::vector<SweepAxis> out;
  std::set<std::string> seen;
  for (const auto& [key, spec] : axes.items()) {
    out.push_back(parse_axis(key, spec));
    for (const auto& path : out.back().paths)
      if (!seen.insert(path).second) throw InputError("axes: the field " + path + " is swept by two axes");
  }
  return out;
}

ValueFilter parse_value_filter(const std::string& path, const Json& spec, const SweepSpec& sweep) {
  const std::string field = "filters." + path;
  std::vector<std::string> paths = sweep.paths();
  if (std::find(paths.begin(), paths.end(), path) == paths.end()) {
    std::string guess = nearest(path, paths);
    throw InputError(field + ": " + path + " is not an axis of this sweep" +
                     (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
  }
  ObjectReader r(spec, field);
  ValueFilter f;
  f.path = path;
  if (r.has("min")) f.min = r.get_number("min", 0);
  if (r.has("max")) f.max = r.get_number("max", 0);
  for (auto [key, target] : {std::pair{"in", &f.in}, {"not_in", &f.not_in}}) {
    const Json* list = r.child(key);
    if (!list) continue;
    if (!list->is_array()) throw InputError(r.field(key) + "=" + show(*list) + " must be a list of values");
    target->assign(list->begin(), list->end());
  }
  r.finish();
  if (!f.min && !f.max && !r.has("in") && !r.has("not_in"))
    throw InputError(field + " needs a condition: min, max, in or not_in");
  return f;
}

SweepFilters parse_filters(const Json& value, const SweepSpec& sweep) {
  if (!value.is_object()) throw InputError("filters=" + show(value) + " must be an object");
  SweepFilters filters;
  for (const auto& [key, spec] : value.items()) {
    if (key == "mesh_matches_cluster") {
      if (!spec.is_boolean()) throw InputError("filters.mesh_matches_cluster=" + show(spec) + " must be true or false");
      filters.mesh_matches_cluster = spec.get<bool>();
    } else if (key == "stack_can_run") {
      if (!spec.is_boolean()) throw InputError("filters.stack_can_run=" + show(spec) + " must be true or false");
      filters.stack_can_run = spec.get<bool>();
    } else {
      filters.values.push_back(parse_value_filter(key, spec, sweep));
    }
  }
  return filters;
}

std::vector<std::string> parse_figures(const Json& value) {
  if (!value.is_array() || value.empty())
    throw InputError("figures=" + show(value) + " must be a non-empty list of dotted report paths");
  std::vector<std::string> out;
  for (const auto& f : value) {
    if (!f.is_string() || f.get<std::string>().empty())
      throw InputError("figures: " + show(f) + " must be a dotted report path such as \"memory.total_bytes\"");
    out.push_back(f.get<std::string>());
  }
  return out;
}

}  // namespace

std::string SweepAxis::name() const {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : ",") + p;
  return out;
}

bool ValueFilter::accepts(const Json& value) const {
  if (min || max) {
    if (!value.is_number()) return false;
    double v = value.get<double>();
    if ((min && v < *min) || (max && v > *max)) return false;
  }
  if (!in.empty() && std::find(in.begin(), in.end(), value) == in.end()) return false;
  return std::find(not_in.begin(), not_in.end(), value) == not_in.end();
}

std::uint64_t SweepSpec::points() const {
  std::uint64_t n = 1;
  for (const auto& a : axes) n *= a.size();
  return n;
}

std::vector<std::string> SweepSpec::paths() const {
  std::vector<std::string> out;
  for (const auto& a : axes) out.insert(out.end(), a.paths.begin(), a.paths.end());
  return out;
}

std::vector<Json> axis_values(const Json& spec, const std::string& field) {
  if (spec.is_array()) {
    if (spec.empty()) throw InputError(field + " is an empty axis: give at least one value");
    return {spec.begin(), spec.end()};
  }
  if (spec.is_object()) return range_values(spec, field);
  throw InputError(field + "=" + show(spec) +
                   " must be a list of values or a range {\"from\", \"to\", \"step\"} / {\"from\", \"to\", \"times\"}");
}

std::vector<std::string> default_figures(SweepMode mode) {
  std::vector<std::string> f = {"memory.total_bytes", "memory.model_states_bytes", "communication.bytes_per_step",
                                "compute.model_flops_per_step", "device_memory_bytes"};
  if (mode == SweepMode::Simulate)
    f.insert(f.end(), {"simulation.step_time_s", "simulation.mfu", "simulation.tokens_per_s",
                       "simulation.interval.step_time_low_s", "simulation.interval.step_time_high_s"});
  return f;
}

std::vector<std::size_t> point_coords(const SweepSpec& spec, std::uint64_t index) {
  std::vector<std::size_t> coords(spec.axes.size());
  for (std::size_t a = spec.axes.size(); a-- > 0;) {
    coords[a] = static_cast<std::size_t>(index % spec.axes[a].size());
    index /= spec.axes[a].size();
  }
  return coords;
}

std::vector<std::pair<std::size_t, std::size_t>> application_order(const SweepSpec& spec) {
  std::vector<std::pair<std::size_t, std::size_t>> order;
  for (std::size_t a = 0; a < spec.axes.size(); ++a)
    for (std::size_t p = 0; p < spec.axes[a].paths.size(); ++p) order.emplace_back(a, p);
  auto depth = [&](const std::pair<std::size_t, std::size_t>& ap) {
    const std::string& path = spec.axes[ap.first].paths[ap.second];
    return std::count(path.begin(), path.end(), '.');
  };
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) { return depth(x) < depth(y); });
  return order;
}

Json point_experiment(const SweepSpec& spec, const std::vector<std::size_t>& coords) {
  Json j = spec.base;
  for (auto [a, p] : application_order(spec)) set_path(j, spec.axes[a].paths[p], spec.axes[a].values[coords[a]][p]);
  return j;
}

bool sweep_has_cluster(const SweepSpec& spec) {
  if (spec.base.contains("cluster") && !spec.base["cluster"].is_null()) return true;
  for (const auto& path : spec.paths())
    if (path.substr(0, path.find('.')) == "cluster") return true;
  return false;
}

std::uint64_t Shard::size(std::uint64_t points) const {
  return points / count + (points % count > index ? 1 : 0);
}

namespace {

// A sweep object's fields, without its hash (the callers hash what they read).
SweepSpec parse_sweep_fields(const OrderedJson& value, const std::string& base_dir) {
  if (!value.is_object()) throw InputError("a sweep must be a JSON object with \"base\" and \"axes\"");
  Json top = plain(value);
  ObjectReader r(top, "");
  r.finish({"description", "base", "axes", "filters", "mode", "fidelity", "figures"});
  SweepSpec spec;
  spec.base_dir = base_dir;
  const Json* base = r.child("base");
  if (!base) throw InputError("base is required but missing (the experiment every point starts from)");
  if (!base->is_object()) throw InputError("base=" + show(*base) + " must be an experiment object");
  spec.base = *base;
  if (!r.has("axes")) throw InputError("axes is required but missing (\"field.path\": [values] or a range)");
  spec.axes = parse_axes(value["axes"]);
  double points = 1;
  for (const auto& a : spec.axes) points *= static_cast<double>(a.size());
  if (points > static_cast<double>(kMaxPoints))
    throw InputError("axes: the sweep has " + show(Json(points)) + " points, more than can be enumerated");
  spec.mode =
      r.get_choice("mode", {"analyze", "simulate"}, "analyze") == "analyze" ? SweepMode::Analyze : SweepMode::Simulate;
  if (r.has("fidelity")) {
    if (spec.mode != SweepMode::Simulate)
      throw InputError("fidelity=" + show(top["fidelity"]) + " applies to \"mode\": \"simulate\" only");
    spec.fidelity = parse_fidelity(r.get_choice("fidelity", {"analytic", "flow", "full"}, "flow"), "fidelity");
  }
  if (const Json* f = r.child("filters")) spec.filters = parse_filters(*f, spec);
  if (spec.filters.mesh_matches_cluster && !sweep_has_cluster(spec))
    throw InputError("filters.mesh_matches_cluster=true needs a cluster: give base.cluster or sweep a cluster field");
  spec.figures = r.has("figures") ? parse_figures(*r.child("figures")) : default_figures(spec.mode);
  // An abstract pipeline (stage times, no model) has no memory or traffic: analyze mode would write rows of zeros.
  if (spec.mode == SweepMode::Analyze && spec.base.contains("pipeline"))
    throw InputError(
        "mode: base.pipeline is an abstract pipeline (stage times, no model or placement), which has no "
        "memory, communication or FLOPs to analyze; sweep it with \"mode\": \"simulate\" (its figures: "
        "simulation.step_time_s, pipeline.schedule_bubble_fraction_mean, ...)");
  validate_axis_paths(spec);
  validate_axis_values(spec);
  validate_batch_axes(spec);
  return spec;
}

}  // namespace

SweepSpec parse_sweep(const OrderedJson& value, const std::string& base_dir) {
  SweepSpec spec = parse_sweep_fields(value, base_dir);
  spec.hash = fnv1a_hex(value.dump());
  return spec;
}

std::string fnv1a_hex(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

SweepSpec parse_sweep_text(const std::string& text, const std::string& origin, const std::string& base_dir) {
  parse_json_text(text, origin);  // for its syntax errors with line and column
  SweepSpec spec = parse_sweep_fields(OrderedJson::parse(text), base_dir);
  spec.hash = fnv1a_hex(text);
  return spec;
}

SweepSpec load_sweep(const std::string& path) {
  // A regular file of at most kMaxJsonInputBytes: /dev/zero or a FIFO is refused, not read forever.
  return parse_sweep_text(read_input_file(path, kMaxJsonInputBytes), path,
                          std::filesystem::path(path).parent_path().string());
}

Shard parse_shard(const std::string& text) {
  auto fail = [&](const std::string& why) { return InputError("--shard=" + text + ": " + why); };
  auto slash = text.find('/');
  if (slash == std::string::npos) throw fail("expected i/N, e.g. --shard 3/16");
  auto number = [&](const std::string& part, const char* name) {
    if (part.empty() || part.size() > 18 || part.find_first_not_of("0123456789") != std::string::npos)
      throw fail(std::string(name) + " must be a non-negative integer");
    return std::stoull(part);
  };
  Shard s;
  s.index = number(text.substr(0, slash), "i");
  s.count = number(text.substr(slash + 1), "N");
  if (s.count == 0) throw fail("N must be at least 1");
  if (s.index >= s.count) throw fail("i must be below N (shards are numbered 0 to N-1)");
  return s;
}

double count_axis_values(const Json& sweep) {
  if (!sweep.is_object() || !sweep.contains("axes") || !sweep["axes"].is_object()) return 0;
  double values = 0;
  for (const auto& [key, spec] : sweep["axes"].items()) values += axis_count(spec);
  return values;
}

}  // namespace placesim
