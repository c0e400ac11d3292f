#include "traces/report/StackReport.hpp"

namespace placesim {

namespace {

std::string chosen_by(const Experiment& e) {
  if (e.stack_from == "experiment") return "named by the experiment";
  if (e.stack_from == "preset") return "the " + e.strategy.preset + " preset's; \"stack\" names another";
  return "placesim's default: no stack named; \"stack\" names one";
}

}  // namespace

Json stack_json(const Experiment& e) {
  if (!e.stack) return nullptr;
  Json supplied = Json::array(), words = Json::array();
  for (const Provenance::Entry& p : e.provenance.entries) {
    if (p.origin == Provenance::Origin::Stack)
      supplied.push_back(Json{{"field", p.field}, {"value", Json::parse(p.value)}, {"source", p.source}});
    if (p.origin == Provenance::Origin::Word)
      words.push_back(
          Json{{"field", p.field}, {"means", Json::parse(p.value)}, {"note", p.note}, {"source", p.source}});
  }
  Json j{{"name", e.stack->name},       {"family", e.stack->family}, {"title", e.stack->title},
         {"version", e.stack->version}, {"chosen", chosen_by(e)},    {"supplied", supplied}};
  if (!words.empty()) j["words"] = words;
  if (!e.stack->caveats.empty()) j["caveats"] = e.stack->caveats;
  return j;
}

std::string stack_summary(const Experiment& e) {
  if (!e.stack) return "";
  const std::string indent(23, ' ');
  std::string out = "  stack                " + e.stack->name + " (" + chosen_by(e) +
                    "; its sources: placesim stacks " + e.stack->name + ")\n";
  std::string line = indent + "supplied";
  bool first = true;
  for (const Provenance::Entry& p : e.provenance.entries) {
    if (p.origin != Provenance::Origin::Stack) continue;
    const Json value = Json::parse(p.value);
    const std::string item =
        (first ? " " : ", ") + p.field + "=" + (value.is_string() ? value.get<std::string>() : p.value);
    if (line.size() + item.size() > 118) {
      out += line + (first ? "" : ",") + "\n";
      line = indent + item.substr(first ? 1 : 2);
    } else {
      line += item;
    }
    first = false;
  }
  if (!first) out += line + "\n";
  for (const Provenance::Entry& p : e.provenance.entries)
    if (p.origin == Provenance::Origin::Word) out += "  stack word           " + p.field + ": " + p.note + "\n";
  for (const std::string& caveat : e.stack->caveats) out += "  stack caveat         " + caveat + "\n";
  return out;
}

}  // namespace placesim
