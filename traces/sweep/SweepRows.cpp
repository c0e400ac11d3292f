#include "traces/sweep/SweepRows.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "strategies/analytic/StepBound.hpp"
#include "traces/report/Report.hpp"
#include "traces/report/StackReport.hpp"

namespace placesim {

namespace {

using FigureFn = double (*)(const Experiment&, const Analysis&);

double stage_flops_max(const Analysis& a) {
  double m = 0;
  for (const auto& st : a.stages) m = std::max(m, st.hardware_flops);
  return m;
}

double by_class(const Analysis& a, CommClass c) {
  return a.comm.by_class[static_cast<std::size_t>(c)];
}

// The analyze report's figures that are one field of the Analysis (traces/report/Report.cpp builds them the same way);
// reading them here spares building the whole report for every point.
const std::map<std::string, FigureFn>& analytic_figures() {
  using E = const Experiment&;
  using A = const Analysis&;
  static const std::map<std::string, FigureFn> table = [] {
    std::map<std::string, FigureFn> t = {
        {"memory.parameters_bytes", [](E, A a) { return a.memory.parameters; }},
        {"memory.gradients_bytes", [](E, A a) { return a.memory.gradients; }},
        {"memory.optimizer_bytes", [](E, A a) { return a.memory.optimizer; }},
        {"memory.activations_bytes", [](E, A a) { return a.memory.activations; }},
        {"memory.buffers_bytes", [](E, A a) { return a.memory.buffers; }},
        {"memory.host_bytes", [](E, A a) { return a.memory.host; }},
        {"memory.model_states_bytes", [](E, A a) { return a.model_states_bytes; }},
        {"memory.total_bytes", [](E, A a) { return a.total_bytes; }},
        {"communication.bytes_per_step", [](E, A a) { return a.bytes_per_step; }},
        {"communication.offload.h2d_bytes", [](E, A a) { return a.comm.h2d; }},
        {"communication.offload.d2h_bytes", [](E, A a) { return a.comm.d2h; }},
        {"compute.model_flops_per_step", [](E, A a) { return a.model_flops_per_step; }},
        {"compute.hardware_flops_per_step", [](E, A a) { return a.hardware_flops_per_step; }},
        {"compute.hardware_flops_per_device_max", [](E, A a) { return stage_flops_max(a); }},
        {"compute.tokens_per_step", [](E, A a) { return a.tokens_per_step; }},
        {"compute.step_time_lower_bound_s",
         [](E e, A) { return e.pipeline.is_null() ? step_time_lower_bound(e) : std::nan(""); }},
        {"memory.reserve_bytes",
         [](E e, A) { return e.device_memory_bytes > 0 ? stack_reserve_bytes(e) : std::nan(""); }},
        {"memory.spare_bytes",
         [](E e, A a) { return e.device_memory_bytes > 0 ? spare_bytes(e, a.total_bytes) : std::nan(""); }},
        // Absent (NaN) when the point was checked against no capacity, as in the report.
        {"device_memory_bytes",
         [](E e, A) { return e.device_memory_bytes > 0 ? e.device_memory_bytes : std::nan(""); }},
    };
    t["communication.by_class.dp_grad_sync"] = [](E, A a) { return by_class(a, CommClass::DpGradSync); };
    t["communication.by_class.zero_gather"] = [](E, A a) { return by_class(a, CommClass::ZeroGather); };
    t["communication.by_class.tp_collective"] = [](E, A a) { return by_class(a, CommClass::TpCollective); };
    t["communication.by_class.pp_p2p"] = [](E, A a) { return by_class(a, CommClass::PpP2P); };
    t["communication.by_class.embedding_sync"] = [](E, A a) { return by_class(a, CommClass::EmbeddingSync); };
    t["communication.by_class.cp_kv"] = [](E, A a) { return by_class(a, CommClass::CpKv); };
    return t;
  }();
  return table;
}

std::string key_text(const std::string& key) {
  return Json(key).dump();
}

// A string as JSON: quoted as is when nothing in it needs escaping (most reasons), else through nlohmann.
std::string string_text(const std::string& text) {
  for (unsigned char c : text)
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return Json(text).dump();
  return '"' + text + '"';
}

// A small but complete experiment whose analyze report has every section and field a sweep's report can have.
Json reference_report() {
  Experiment e = parse_experiment(Json::parse(R"({"model": {"layers": 2, "hidden": 64, "heads": 4, "vocab": 128,
      "seq_len": 16}, "strategy": {"preset": "megatron-3d", "pp": 2}})"),
                                  "");
  e.device_memory_bytes = 1;
  return analysis_report(e, analyze(e));
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_cell(const Json* v) {
  if (!v || v->is_null()) return "";
  return csv_field(v->is_string() ? v->get<std::string>() : v->dump());
}

}  // namespace

const char* placesim_version() {
  return PLACESIM_VERSION;
}

SweepRows::SweepRows(const SweepSpec& spec, const Shard& shard, double device_memory_bytes) : spec_(spec) {
  if (shard.count > 1)
    identity_ = ",\"shard\":\"" + std::to_string(shard.index) + "/" + std::to_string(shard.count) + "\"";
  identity_ += ",\"sweep\":\"" + spec.hash + "\",\"version\":" + Json(placesim_version()).dump() +
               ",\"points\":" + std::to_string(spec.points());
  if (device_memory_bytes > 0) identity_ += ",\"device_memory\":" + number(device_memory_bytes).dump();
  identity_ += ",\"point\":{";
  for (const auto& axis : spec.axes) {
    std::vector<std::string> keys;
    for (const auto& path : axis.paths) keys.push_back(key_text(path) + ":");
    key_text_.push_back(std::move(keys));
  }
  for (const auto& f : spec.figures) figure_keys_.push_back("," + key_text(f) + ":");
}

std::string SweepRows::prefix(std::uint64_t index, const std::vector<std::size_t>& coords) const {
  std::string out = "{\"index\":" + std::to_string(index) + identity_;
  for (std::size_t a = 0; a < coords.size(); ++a) {
    const std::vector<Json>& value = spec_.axes[a].values[coords[a]];
    for (std::size_t p = 0; p < value.size(); ++p) {
      if (a || p) out += ',';
      out += key_text_[a][p];
      out += value[p].dump();
    }
  }
  // Simulate mode: the fidelity is part of every row's identity, so --resume refuses a file simulated at another.
  if (spec_.mode == SweepMode::Simulate)
    out += "},\"fidelity\":\"" + std::string(to_string(spec_.fidelity)) + '"';
  else
    out += '}';
  return out + ",\"status\":\"";
}

std::string SweepRows::line(std::uint64_t index, const std::vector<std::size_t>& coords, const PointOutcome& outcome,
                            const Experiment& e, const Analysis& a, const Json* simulated) const {
  std::string out = prefix(index, coords);
  out += to_string(outcome.status);
  out += '"';
  if (!outcome.reason.empty()) out += ",\"reason\":" + string_text(outcome.reason);
  Json report;  // built only for a figure the analysis does not hold directly
  for (std::size_t k = 0; k < spec_.figures.size(); ++k) {
    const std::string& path = spec_.figures[k];
    const Json* value = simulated ? find_path(*simulated, path) : nullptr;
    std::string text;
    if (value) {
      text = value->dump();
    } else if (outcome.analyzed && e.pipeline.is_null()) {  // an abstract pipeline has no analytic figures
      auto fn = analytic_figures().find(path);
      if (fn != analytic_figures().end()) {
        double v = fn->second(e, a);
        if (!std::isnan(v)) text = number(v).dump();
      } else {
        if (report.is_null()) report = analysis_report(e, a);
        if (const Json* v = find_path(report, path)) text = v->dump();
      }
    }
    if (!text.empty()) out += figure_keys_[k] + text;
  }
  return out + "}\n";
}

const Json* find_path(const Json& document, const std::string& path) {
  const Json* node = &document;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (node->is_object()) {
      auto it = node->find(key);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else if (node->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
               key.size() < 10 && std::stoul(key) < node->size()) {
      node = &(*node)[std::stoul(key)];
    } else {
      return nullptr;
    }
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

Json analytic_figure(const std::string& path, const Experiment& e, const Analysis& a) {
  auto fn = analytic_figures().find(path);
  if (fn != analytic_figures().end()) {
    double v = fn->second(e, a);
    return std::isnan(v) ? Json() : number(v);
  }
  Json report = analysis_report(e, a);
  const Json* v = find_path(report, path);
  return v ? *v : Json();
}

void check_figures(const SweepSpec& spec) {
  if (spec.mode == SweepMode::Simulate) return;  // the simulate report's paths are the simulator's to define
  Json report = reference_report();
  for (const auto& f : spec.figures) {
    if (f.rfind("simulation.", 0) == 0)
      throw InputError("figures: " + f + " is a simulated figure; it needs \"mode\": \"simulate\"");
    if (!find_path(report, f))
      throw InputError("figures: " + f + " is not a field of the analyze report (e.g. memory.total_bytes, " +
                       "communication.bytes_per_step, compute.model_flops_per_step)");
  }
}

std::string csv_header(const SweepSpec& spec) {
  std::string out = "index";
  for (const auto& p : spec.paths()) out += "," + csv_field(p);
  out += ",status,reason";
  for (const auto& f : spec.figures) out += "," + csv_field(f);
  return out + "\n";
}

std::string csv_row(const SweepSpec& spec, std::string_view line) {
  Json row = Json::parse(line);
  std::string out = row["index"].dump();
  const Json& point = row["point"];
  for (const auto& p : spec.paths()) out += "," + csv_cell(point.contains(p) ? &point[p] : nullptr);
  for (const char* key : {"status", "reason"}) out += "," + csv_cell(row.contains(key) ? &row[key] : nullptr);
  for (const auto& f : spec.figures) out += "," + csv_cell(row.contains(f) ? &row[f] : nullptr);
  return out + "\n";
}

}  // namespace placesim
