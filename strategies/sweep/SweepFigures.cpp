#include "strategies/sweep/SweepFigures.hpp"

namespace placesim {

namespace {

bool is_index(const std::string& key) {
  return !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
}

// Every node path of `node` below `prefix`; of a list, its first element only (the candidates a guess picks from).
void collect_paths(const Json& node, const std::string& prefix, std::vector<std::string>& out) {
  auto child = [&](const std::string& key, const Json& value) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    out.push_back(path);
    collect_paths(value, path, out);
  };
  if (node.is_object())
    for (const auto& [key, value] : node.items()) child(key, value);
  else if (node.is_array() && !node.empty())
    child("0", node.front());
}

// " (did you mean 'memory.total_bytes'?)", or the report's top-level fields when no known path is near.
std::string hint(const std::string& figure, const std::vector<std::string>& known) {
  const std::string guess = nearest(figure, known);
  if (!guess.empty()) return " (did you mean '" + guess + "'?)";
  std::string sections;
  for (const auto& path : known)
    if (path.find('.') == std::string::npos && sections.find(" " + path + ",") == std::string::npos)
      sections += " " + path + ",";
  if (sections.empty()) return "";
  sections.pop_back();
  return " (its top-level fields:" + sections + ")";
}

}  // namespace

std::vector<Json> figure_reference_experiments() {
  return {Json::parse(R"({"name": "figure reference: dense", "stack": "megatron-core-0.9",
      "model": {"layers": 2, "hidden": 64, "heads": 4, "vocab": 128, "seq_len": 16},
      "training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "dp": 2, "tp": 1, "pp": 2, "cp": 2},
      "cluster": {"preset": "dgx-h100", "nodes": 1}})"),
          Json::parse(R"({"name": "figure reference: mixture of experts",
      "model": {"layers": 2, "hidden": 64, "heads": 4, "vocab": 128, "seq_len": 16, "experts": 4, "top_k": 2,
                "moe_ffn": 128},
      "training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "zero1", "dp": 4, "tp": 1, "ep": 4, "pp": 2},
      "cluster": {"preset": "dgx-h100", "nodes": 1}})")};
}

bool report_has(const Json& report, const std::string& figure) {
  const Json* node = &report;
  for (std::size_t start = 0;;) {
    const std::size_t dot = figure.find('.', start);
    const std::string key = figure.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (node->is_object() && node->contains(key)) {
      node = &(*node)[key];
    } else if (node->is_array() && is_index(key) && !node->empty()) {
      const bool inside = key.size() < 10 && std::stoul(key) < node->size();
      node = &(*node)[inside ? std::stoul(key) : node->size() - 1];
    } else {
      return false;
    }
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

void check_figures_in_reports(const SweepSpec& spec, const std::vector<Json>& reports) {
  const bool simulate = spec.mode == SweepMode::Simulate;
  std::vector<std::string> known, unknown;
  for (const Json& report : reports) collect_paths(report, "", known);
  for (const auto& figure : spec.figures) {
    bool found = false;
    for (const Json& report : reports) found = found || report_has(report, figure);
    if (found) continue;
    if (!simulate && figure.rfind("simulation.", 0) == 0)
      throw InputError("figures: " + figure + " is a simulated figure; it needs \"mode\": \"simulate\"");
    unknown.push_back(figure);
  }
  if (unknown.empty()) return;
  const std::string report = simulate ? "the simulate report" : "the analyze report";
  if (unknown.size() == 1)
    throw InputError("figures: " + unknown.front() + " is not a field of " + report + hint(unknown.front(), known));
  std::string message = "figures: " + std::to_string(unknown.size()) + " paths are not fields of " + report + ":";
  for (const auto& figure : unknown) message += "\n  " + figure + hint(figure, known);
  throw InputError(message);
}

}  // namespace placesim
