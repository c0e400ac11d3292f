#include "workloads/stack/Stack.hpp"

#include <filesystem>
#include <map>

#include "workloads/json/Embedded.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

constexpr const char* kStackFolder = "workloads/stack/stacks";

// A setting may set a field of the training or the strategy section; placement and mesh are the preset's and the
// experiment's to say.
void check_setting_field(const std::string& field, const std::string& where) {
  const bool section = field.rfind("training.", 0) == 0 || field.rfind("strategy.", 0) == 0;
  const bool layout = field.rfind("strategy.placement", 0) == 0 || field.rfind("strategy.mesh", 0) == 0 ||
                      field == "strategy.preset" || field == "strategy.dp" || field == "strategy.tp" ||
                      field == "strategy.pp" || field == "strategy.cp" || field == "strategy.ep";
  if (!section || layout)
    throw InputError(where + "=" + field +
                     " is not a field a stack sets: a stack sets training.* and strategy.* defaults, not the "
                     "placement, the mesh or the preset");
}

StackMemory parse_memory(const Json& value, const std::string& field) {
  ObjectReader r(value, field);
  StackMemory m;
  m.context_bytes = r.get_non_negative("context", 0, parse_bytes);
  m.communicator_bytes = r.get_non_negative("communicators", 0, parse_bytes);
  m.fragmentation = r.get_non_negative("fragmentation", 0);
  r.check(m.fragmentation < 1, "fragmentation", "must be a fraction of the peak below 1");
  r.check(m.reserve_bytes() <= 64e9, "communicators", "with context is over 64 GB: not a reserve");
  m.source = r.require_string("source");
  r.finish();
  return m;
}

// The built-in stacks, read once; find_stack hands out pointers into this table (aliasing its ownership).
const std::shared_ptr<const std::map<std::string, StackSpec>>& builtin() {
  static const auto table = std::make_shared<const std::map<std::string, StackSpec>>(
      read_named_files(kStackFolder, [](const Json& j, const std::string& path) {
        StackSpec s = parse_stack(j, path);
        s.file = path;
        return s;
      }));
  return table;
}

}  // namespace

StackSpec parse_stack(const Json& value, const std::string& origin) {
  ObjectReader r(value, origin);
  StackSpec s;
  s.name = r.require_string("name");
  s.family = r.require_string("family");
  s.title = r.require_string("title");
  s.version = r.require_string("version");
  const Json& settings = r.require("settings");
  if (!settings.is_array()) throw InputError(r.field("settings") + " must be a list of settings");
  for (std::size_t i = 0; i < settings.size(); ++i) {
    ObjectReader q(settings[i], r.field("settings") + "[" + std::to_string(i) + "]");
    StackSetting set;
    set.field = q.require_string("field");
    check_setting_field(set.field, q.field("field"));
    set.value = q.require("value");
    set.when = q.get_string("when", "");
    set.source = q.require_string("source");
    q.finish();
    for (const StackSetting& other : s.settings)
      if (other.field == set.field && other.when.empty())
        throw InputError(q.field("field") + "=" + set.field +
                         " is set again after an unconditional setting of it, which always applies first");
    s.settings.push_back(std::move(set));
  }
  if (const Json* words = r.child("words")) {
    if (!words->is_array()) throw InputError(r.field("words") + " must be a list");
    for (std::size_t i = 0; i < words->size(); ++i) {
      ObjectReader q((*words)[i], r.field("words") + "[" + std::to_string(i) + "]");
      StackWord w{q.require_string("field"), q.require_string("word"), q.require_string("means"),
                  q.require_string("source")};
      check_setting_field(w.field, q.field("field"));
      q.finish();
      s.words.push_back(std::move(w));
    }
  }
  if (const Json* limits = r.child("cannot_run")) {
    if (!limits->is_array()) throw InputError(r.field("cannot_run") + " must be a list");
    for (std::size_t i = 0; i < limits->size(); ++i) {
      ObjectReader q((*limits)[i], r.field("cannot_run") + "[" + std::to_string(i) + "]");
      s.cannot_run.push_back({q.require_string("when"), q.require_string("why")});
      q.finish();
    }
  }
  if (const Json* presets = r.child("presets")) {
    ObjectReader q(*presets, r.field("presets"));
    s.presets = q.get_strings("names", {});
    if (s.presets.empty()) throw InputError(q.field("names") + " must list at least one strategy preset");
    s.presets_source = q.require_string("source");
    q.finish();
  }
  s.caveats = r.get_strings("caveats", {});
  s.memory = parse_memory(r.require("memory"), r.field("memory"));
  r.finish();
  return s;
}

std::vector<std::string> builtin_stack_names() {
  return names_of(*builtin());
}

std::shared_ptr<const StackSpec> find_stack(const std::string& name, const std::string& field,
                                            const std::string& base_dir) {
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
    std::filesystem::path p(name);
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    StackSpec s = parse_stack(read_json_file(p.string()), p.string());
    s.file = p.string();
    return std::make_shared<const StackSpec>(std::move(s));
  }
  auto it = builtin()->find(name);
  if (it == builtin()->end())
    refuse_name(field, name, "a training stack", builtin_stack_names(),
                " (see `placesim stacks`; or give a stack file ending in .json)");
  return std::shared_ptr<const StackSpec>(builtin(), &it->second);
}

}  // namespace placesim
