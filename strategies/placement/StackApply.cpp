#include "strategies/placement/StackApply.hpp"

#include "strategies/placement/Condition.hpp"
#include "strategies/placement/Presets.hpp"

namespace placesim {

namespace {

using Origin = Provenance::Origin;

// The fields an experiment section writes, as provenance entries: each top-level key (the placement and the mesh
// as one field each). Activations placed along tp say whether sequence parallelism is on: they write strategy.sp.
void record_written(const Json& section, const std::string& name, Provenance& p) {
  if (!section.is_object()) return;
  for (const auto& [key, value] : section.items())
    p.entries.push_back({name + "." + key, Origin::Experiment, value.dump(), "", "", ""});
  if (name == "strategy" && section.contains("placement") && section["placement"].is_object() &&
      section["placement"].contains("activations") && section["placement"]["activations"].is_object() &&
      section["placement"]["activations"].contains("tp") && !p.present("strategy.sp"))
    p.entries.push_back({"strategy.sp", Origin::Experiment, section["placement"]["activations"]["tp"].dump(), "", "",
                         "strategy.placement.activations.tp"});
}

// A stack word written in the experiment is read as the stack means it.
void apply_words(const StackSpec& stack, Json& training, Json& strategy, Provenance& p) {
  for (const StackWord& w : stack.words) {
    const std::string section = w.field.substr(0, w.field.find('.'));
    const std::string key = w.field.substr(section.size() + 1);
    Json& json = section == "training" ? training : strategy;
    if (!json.is_object() || !json.contains(key) || json[key] != Json(w.word)) continue;
    json[key] = w.means;
    for (Provenance::Entry& e : p.entries)
      if (e.field == w.field) {
        e.origin = Origin::Word;
        e.value = Json(w.means).dump();
        e.by = stack.name;
        e.source = w.source;
        e.note = "\"" + w.word + "\" under " + stack.name + " means " + w.means;
      }
  }
}

std::shared_ptr<const StackSpec> choose_stack(const Json* stack, const StrategyPreset* preset,
                                              const std::string& base_dir, std::string& from) {
  if (stack != nullptr && !stack->is_null()) {
    if (!stack->is_string())
      throw InputError("stack=" + show(*stack) +
                       " must be a training stack's name (see `placesim stacks`) or a stack file ending in .json");
    from = "experiment";
    return find_stack(stack->get<std::string>(), "stack", base_dir);
  }
  if (preset != nullptr && !preset->stack.empty()) {
    from = "preset";
    return find_stack(preset->stack, "strategy.preset " + preset->name + "'s stack", base_dir);
  }
  from = "default";
  return find_stack(kDefaultStack, "stack", base_dir);
}

// The strategy preset `user` names, or null; a name alone becomes {"preset": name}. With a list, a preset that is not
// found is recorded, the strategy section marked failed and the name dropped, so that its own fields are still read.
const StrategyPreset* find_preset(Json& user, ErrorList* errors) {
  const bool alone = user.is_string();
  if (alone) user = Json{{"preset", user}};
  if (!user.is_object() || !user.contains("preset") || !user["preset"].is_string()) return nullptr;
  const StrategyPreset* preset = nullptr;
  if (!read_section(errors, "strategy", [&] {
        preset = &strategy_preset(user["preset"].get<std::string>(), alone ? "strategy" : "strategy.preset");
      }))
    user.erase("preset");
  return preset;
}

// The stack's settings where nobody wrote the field and their condition holds on the layout so far.
void apply_settings(const StackSpec& st, Json& t, Json& s, Provenance& p, ErrorList* errors) {
  bool probed = false;
  TrainingSpec probe_t;
  StrategySpec probe_s;
  // With a list the probe reads past its errors (the final parse records them): a condition is then judged on the
  // fields that parsed and the fallbacks of the others.
  ErrorList probe_errors("");
  ErrorList* probe_list = errors != nullptr ? &probe_errors : nullptr;
  for (const StackSetting& set : st.settings) {
    if (p.present(set.field)) continue;
    const std::string section = set.field.substr(0, set.field.find('.'));
    if (!(section == "training" ? t : s).is_object()) continue;  // not an object: the parse below refuses it
    if (!set.when.empty()) {
      const Condition when(set.when, st.file + " " + set.field + " when");
      if (!probed) {
        probe_t = parse_training(t, probe_list);
        probe_s = parse_strategy(s, probe_list);
        probed = true;
      }
      if (!when.holds(probe_s, probe_t)) continue;
    }
    set_path(section == "training" ? t : s, set.field.substr(section.size() + 1), set.value);
    probed = false;
    p.entries.push_back({set.field, Origin::Stack, set.value.dump(), st.name, set.source, set.when});
  }
}

}  // namespace

RunSections parse_run_sections(const Json* training, const Json* strategy, const Json* stack,
                               const std::string& base_dir, ErrorList* errors) {
  RunSections out;
  Provenance& p = out.provenance;
  Json t = training != nullptr ? *training : Json::object();
  Json user = strategy != nullptr ? *strategy : Json();
  const StrategyPreset* preset = find_preset(user, errors);
  record_written(t, "training", p);
  record_written(user, "strategy", p);
  // Without its stack neither section has its defaults: their own fields are still read, no rule over them runs.
  if (!read_section(errors, "stack", [&] { out.stack = choose_stack(stack, preset, base_dir, out.stack_from); })) {
    errors->fail("training");
    errors->fail("strategy");
  }
  if (out.stack) apply_words(*out.stack, t, user, p);
  // The preset's fields under the experiment's.
  Json s = user;
  if (preset != nullptr && user.is_object()) {
    s = preset->strategy;
    s.merge_patch(user);
    for (const auto& [key, value] : preset->strategy.items())
      if (!p.present("strategy." + key))
        p.entries.push_back({"strategy." + key, Origin::Preset, value.dump(), preset->name, preset->source, ""});
  }
  if (out.stack) apply_settings(*out.stack, t, s, p, errors);
  read_section(errors, "training", [&] { out.training = parse_training(t, errors); });
  if (strategy != nullptr) read_section(errors, "strategy", [&] { out.strategy = parse_strategy(s, errors); });
  return out;
}

}  // namespace placesim
