#include "workloads/run/RunSpec.hpp"

#include <cmath>

#include "workloads/json/Embedded.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

constexpr const char* kDefaultsPath = "workloads/run/defaults.json";
constexpr double kHour = 3600;

// The unit-hours each rate divides its count by.
double exposure_hours(const FailureObservation& o, const std::string& per) {
  const double units = per == "gpu" ? o.gpus : per == "node" ? o.nodes : o.links;
  return units * o.hours;
}

SourcedValue read_sourced(ObjectReader& parent, const char* key, UnitParser unit) {
  ObjectReader r(parent.require(key), parent.field(key));
  SourcedValue v{r.require_positive("value", unit), r.require_string("source")};
  r.finish();
  return v;
}

SystemPower read_system_power(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  SystemPower p{r.require_positive("system_power_w"), r.require_int_in("gpus", 1), r.require_positive("gpu_power_w"),
                r.require_string("source")};
  r.finish();
  if (p.system_power_w < p.gpus * p.gpu_power_w)
    throw InputError(path + ".system_power_w=" + format_significant(p.system_power_w) +
                     " is below its GPUs' power: the system's maximum includes them");
  return p;
}

void read_node_power(ObjectReader& parent, RunDefaults& d) {
  ObjectReader r(parent.require("node_power"), "node_power");
  d.node_power_description = r.require_string("description");
  const Json& systems = r.require("by_accelerator");
  if (!systems.is_object()) throw InputError("node_power.by_accelerator must be an object of accelerator names");
  for (const auto& [name, spec] : systems.items())
    d.node_power.emplace(name, read_system_power(spec, "node_power.by_accelerator." + name));
  d.node_power_fraction = read_sourced(r, "fraction", nullptr);
  r.finish();
}

FailureCategory read_category(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  FailureCategory c;
  c.cause = r.require_string("cause");
  r.skip("kind");  // the paper's own grouping, kept for the reader
  c.count = r.require_non_negative("count");
  c.per = r.get_choice("per", {"gpu", "node", "link"}, "gpu");
  c.planned = r.get_bool("planned", false);
  r.finish();
  if (c.planned && c.per != "node") throw InputError(path + ".per=" + c.per + ": planned stops are counted per node");
  return c;
}

FailureObservation read_failures(ObjectReader& parent) {
  ObjectReader r(parent.require("failures"), "failures");
  FailureObservation o;
  o.source = r.require_string("source");
  r.skip("checked");
  r.skip("scaling");
  ObjectReader seen(r.require("observed"), "failures.observed");
  o.gpus = seen.require_positive("gpus");
  o.nodes = seen.require_positive("nodes");
  o.links = seen.require_positive("links");
  o.hours = seen.require_positive("hours");
  seen.finish();
  const Json& rows = r.require("categories");
  if (!rows.is_array()) throw InputError("failures.categories must be a list");
  for (std::size_t i = 0; i < rows.size(); ++i)
    o.categories.push_back(read_category(rows[i], "failures.categories[" + std::to_string(i) + "]"));
  r.finish();
  return o;
}

void read_checkpoint_defaults(ObjectReader& parent, RunDefaults& d) {
  ObjectReader r(parent.require("checkpoint"), "checkpoint");
  d.write_bandwidth_per_node_Bps = read_sourced(r, "write_bandwidth_per_node", parse_bandwidth);
  d.restart_s = read_sourced(r, "restart", parse_duration);
  ObjectReader interval(r.require("interval"), "checkpoint.interval");
  if (interval.require_string("value") != "auto")
    throw InputError("checkpoint.interval.value must be \"auto\": the default interval is Daly's optimum");
  d.interval_source = interval.require_string("source");
  interval.finish();
  ObjectReader host(r.require("host_bandwidth"), "checkpoint.host_bandwidth");
  d.host_bandwidth_source = host.require_string("source");
  host.finish();
  r.finish();
}

}  // namespace

FailureRates FailureObservation::rates() const {
  FailureRates out;
  for (const FailureCategory& c : categories) {
    const double per_s = c.count / exposure_hours(*this, c.per) / kHour;
    if (c.planned)
      out.planned_per_node_s += per_s;
    else if (c.per == "gpu")
      out.per_gpu_s += per_s;
    else if (c.per == "node")
      out.per_node_s += per_s;
    else
      out.per_link_s += per_s;
  }
  return out;
}

RunDefaults parse_run_defaults(const Json& value, const std::string& origin) {
  try {
    ObjectReader r(value, "");
    r.skip("description");
    RunDefaults d;
    d.pue = read_sourced(r, "pue", nullptr);
    d.gpu_power_fraction = read_sourced(r, "gpu_power_fraction", nullptr);
    read_node_power(r, d);
    d.failures = read_failures(r);
    read_checkpoint_defaults(r, d);
    r.finish();
    return d;
  } catch (const InputError& e) {
    throw InputError(origin + ": " + e.what());
  }
}

const RunDefaults& run_defaults() {
  static const RunDefaults defaults = [] {
    const auto text = embedded_file(kDefaultsPath);
    if (!text) throw InputError(std::string(kDefaultsPath) + " was not compiled in (CMakeLists.txt lists data files)");
    return parse_run_defaults(parse_json_text(std::string(*text), kDefaultsPath), kDefaultsPath);
  }();
  return defaults;
}

namespace {

void read_failure_rates(const Json& value, RunSpec& out, ErrorList* errors) {
  ObjectReader r(value, "run.failures", errors);
  if (r.has("mtbf")) out.mtbf_s = r.get_positive("mtbf", 3600, parse_duration);
  for (auto [key, rate] : {std::pair{"per_gpu_hour", &out.per_gpu_hour},
                           {"per_node_hour", &out.per_node_hour},
                           {"per_link_hour", &out.per_link_hour},
                           {"planned_per_node_hour", &out.planned_per_node_hour}}) {
    if (!r.has(key)) continue;
    *rate = r.get_non_negative(key, 0);
    if (out.mtbf_s)
      r.refuse(key, r.field(key) + "=" + show(value[key]) +
                        " with run.failures.mtbf: the job's MTBF replaces every rate; give one or the other");
  }
  r.finish();
}

void read_checkpoint(const Json& value, RunSpec& out, ErrorList* errors) {
  ObjectReader r(value, "run.checkpoint", errors);
  if (r.has("interval") && !(value["interval"].is_string() && value["interval"].get<std::string>() == "auto")) {
    const double interval = r.get_number("interval", 0, parse_duration);
    r.check(interval > 0, "interval", "must be a positive time between checkpoints (e.g. \"30min\") or \"auto\"");
    if (interval > 0) out.interval_s = interval;
  }
  if (r.has("write_bandwidth")) out.write_bandwidth_Bps = r.get_positive("write_bandwidth", 1e9, parse_bandwidth);
  out.async = r.get_bool("async", false);
  if (r.has("host_bandwidth")) out.host_bandwidth_Bps = r.get_positive("host_bandwidth", 1e9, parse_bandwidth);
  if (r.has("restart")) out.restart_s = r.get_non_negative("restart", 0, parse_duration);
  if (out.host_bandwidth_Bps && !out.async)
    r.refuse("host_bandwidth", r.field("host_bandwidth") + "=" + show(value["host_bandwidth"]) +
                                   " is the copy to host memory of an asynchronous checkpoint: set "
                                   "run.checkpoint.async=true or leave it out");
  r.finish();
}

}  // namespace

RunSpec parse_run(const Json& value, ErrorList* errors) {
  ObjectReader r(value, "run", errors);
  RunSpec out;
  if (r.has("gpu_hour_usd")) out.gpu_hour_usd = r.get_positive("gpu_hour_usd", 1);
  if (r.has("pue")) {
    const double pue = r.get_number("pue", 1);
    r.check(pue >= 1, "pue",
            "must be at least 1: total facility power / IT power (1.1 for a hyperscale site, 1.58 the 2023 "
            "industry average)");
    if (pue >= 1) out.pue = pue;
  }
  if (r.has("gpu_power_fraction")) out.gpu_power_fraction = r.get_fraction("gpu_power_fraction", 1);
  if (r.has("node_power_w")) out.node_power_w = r.get_non_negative("node_power_w", 0);
  if (const Json* f = r.child("failures"))
    r.guarded("failures", 0, [&] {
      read_failure_rates(*f, out, errors);
      return 0;
    });
  if (const Json* c = r.child("checkpoint"))
    r.guarded("checkpoint", 0, [&] {
      read_checkpoint(*c, out, errors);
      return 0;
    });
  r.finish();
  return out;
}

}  // namespace placesim
