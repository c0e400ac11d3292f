#include "traces/report/StackReport.hpp"

#include <cmath>

#include "workloads/json/Units.hpp"

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

double stack_reserve_bytes(const Experiment& e) {
  return e.stack ? e.stack->memory.reserve_bytes() : 0;
}

double spare_bytes(const Experiment& e, double peak_bytes) {
  return e.device_memory_bytes - peak_bytes - stack_reserve_bytes(e);
}

MemoryHeadroom memory_headroom(const Experiment& e, double peak_bytes) {
  MemoryHeadroom h;
  h.device_bytes = e.device_memory_bytes;
  h.peak_bytes = peak_bytes;
  if (!e.stack) {
    h.source = "no training stack: no reserve";
    return h;
  }
  h.reserve_bytes = e.stack->memory.reserve_bytes();
  h.fragmentation_bytes = e.stack->memory.fragmentation * peak_bytes;
  h.source = "the " + e.stack->name + " stack's: " + e.stack->memory.source;
  return h;
}

Json headroom_json(const MemoryHeadroom& h) {
  if (h.device_bytes <= 0) return nullptr;
  return Json{{"device_bytes", h.device_bytes},
              {"peak_bytes", h.peak_bytes},
              {"reserve_bytes", h.reserve_bytes},
              {"spare_bytes", h.spare_bytes()},
              {"fragmentation_bytes", h.fragmentation_bytes},
              {"source", h.source}};
}

std::string headroom_summary(const MemoryHeadroom& h) {
  if (h.device_bytes <= 0) return "";
  const double spare = h.spare_bytes();
  return "  headroom             " + std::string(spare < 0 ? "-" : "") + format_bytes(std::abs(spare)) +
         " of the device's " + format_bytes(h.device_bytes) + " left after the peak and a reserve of " +
         format_bytes(h.reserve_bytes) + " (CUDA context and communicators" +
         (h.fragmentation_bytes > 0 ? "; fragmentation may take up to " + format_bytes(h.fragmentation_bytes) : "") +
         ")\n";
}

std::vector<std::string> headroom_warnings(const MemoryHeadroom& h) {
  std::vector<std::string> w;
  if (h.device_bytes <= 0 || h.peak_bytes > h.device_bytes) return w;  // over the device: refused or warned apart
  if (h.spare_bytes() < 0)
    w.push_back("memory: the peak " + format_bytes(h.peak_bytes) + " and the stack's reserve " +
                format_bytes(h.reserve_bytes) + " (the CUDA context and the communicators' buffers, " + h.source +
                ") exceed device memory " + format_bytes(h.device_bytes) + " by " + format_bytes(-h.spare_bytes()) +
                ": the run may not fit; if it ran, the reserve or placesim's count of the peak is too high");
  else if (h.fragmentation_bytes > h.spare_bytes())
    w.push_back("memory: " + format_bytes(h.spare_bytes()) +
                " spare after the peak and the stack's reserve, but its "
                "allocator may lose up to " +
                format_bytes(h.fragmentation_bytes) + " of the peak to fragmentation (" + h.source + ")");
  return w;
}

}  // namespace placesim
