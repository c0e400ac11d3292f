// placesim stacks: the training stacks placesim knows, each default they run with and its source.
#include <iostream>

#include "sim/cli/Cli.hpp"
#include "sim/cli/Commands.hpp"
#include "traces/report/Report.hpp"
#include "workloads/json/Units.hpp"
#include "workloads/stack/Stack.hpp"

namespace placesim {

namespace {

constexpr const char* kStacksHelp = R"(
stacks [NAME|FILE.json] [--json]
list the training stacks (the defaults each runs with, and their sources); with a name or a stack file, that one
--json                    print them as JSON
)";

Json stack_to_json(const StackSpec& s) {
  Json settings = Json::array(), words = Json::array(), limits = Json::array();
  for (const StackSetting& set : s.settings) {
    Json j{{"field", set.field}, {"value", set.value}, {"source", set.source}};
    if (!set.when.empty()) j["when"] = set.when;
    settings.push_back(j);
  }
  for (const StackWord& w : s.words)
    words.push_back(Json{{"field", w.field}, {"word", w.word}, {"means", w.means}, {"source", w.source}});
  for (const StackLimit& l : s.cannot_run) limits.push_back(Json{{"when", l.when}, {"why", l.why}});
  return Json{{"name", s.name},
              {"family", s.family},
              {"title", s.title},
              {"version", s.version},
              {"file", s.file},
              {"settings", settings},
              {"words", words},
              {"cannot_run", limits},
              {"presets", Json{{"names", s.presets}, {"source", s.presets_source}}},
              {"caveats", s.caveats},
              {"memory",
               {{"context_bytes", s.memory.context_bytes},
                {"communicators_bytes", s.memory.communicator_bytes},
                {"fragmentation", s.memory.fragmentation},
                {"source", s.memory.source}}}};
}

void print_stack(const StackSpec& s, bool details) {
  std::cout << s.name << std::string(s.name.size() < 20 ? 20 - s.name.size() : 1, ' ') << s.title << "\n";
  if (!details) return;
  std::cout << "  family " << s.family << "; read from " << s.version << " (" << s.file << ")\n";
  for (const StackSetting& set : s.settings)
    std::cout << "  " << set.field << " = " << set.value.dump() << (set.when.empty() ? "" : " when " + set.when)
              << "\n      " << set.source << "\n";
  for (const StackWord& w : s.words)
    std::cout << "  word: " << w.field << " \"" << w.word << "\" means " << w.means << "\n      " << w.source << "\n";
  if (!s.presets.empty()) {
    std::cout << "  runs the presets:";
    for (const std::string& p : s.presets) std::cout << " " << p;
    std::cout << "\n      " << s.presets_source << "\n";
  }
  for (const StackLimit& l : s.cannot_run) std::cout << "  cannot run: " << l.when << "\n      " << l.why << "\n";
  for (const std::string& c : s.caveats) std::cout << "  caveat: " << c << "\n";
  std::cout << "  memory reserve " << format_bytes(s.memory.reserve_bytes()) << " (context "
            << format_bytes(s.memory.context_bytes) << ", communicators " << format_bytes(s.memory.communicator_bytes)
            << "), fragmentation " << s.memory.fragmentation << " of the peak\n      " << s.memory.source << "\n";
}

int run_stacks(const Args& args) {
  std::vector<std::shared_ptr<const StackSpec>> stacks;
  const bool one = !args.positional().empty();
  if (one) {
    if (args.positional().size() > 1)
      throw InputError("stacks takes one stack name or file, got " + std::to_string(args.positional().size()));
    stacks.push_back(find_stack(args.positional().front(), "stacks NAME", "."));
  } else {
    for (const std::string& name : builtin_stack_names()) stacks.push_back(find_stack(name, "stack", ""));
  }
  if (args.has("--json")) {
    Json j = Json::array();
    for (const auto& s : stacks) j.push_back(stack_to_json(*s));
    std::cout << dump(one ? j.front() : j);
    return 0;
  }
  for (const auto& s : stacks) print_stack(*s, one);
  if (!one)
    std::cout << "\nAn experiment names one with \"stack\": NAME (or a file of this form); a strategy preset names "
                 "one otherwise (`placesim presets`), else "
              << kDefaultStack << ". `placesim stacks NAME` lists its settings and their sources.\n";
  return 0;
}

}  // namespace

Command command_stacks() {
  return command_from_help(kStacksHelp, run_stacks);
}

}  // namespace placesim
