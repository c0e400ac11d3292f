#include "workloads/model/ModelPresets.hpp"

#include <map>

#include "workloads/json/Embedded.hpp"
#include "workloads/model/Model.hpp"

namespace placesim {

namespace {

constexpr const char* kPresetFolder = "workloads/model/presets";

// One built-in model (workloads/model/presets/<name>.json): {"name", "description", "sources": [...], "model": {the
// model fields a user would write}}.
struct ModelPresetFile {
  std::string name;
  std::string description;
  Json model;
};

ModelPresetFile read_preset_file(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  ModelPresetFile f{r.require_string("name"), r.require_string("description"), r.require("model")};
  if (r.get_strings("sources", {}).empty()) throw InputError(r.field("sources") + " must cite the model's shape");
  r.finish();
  if (!f.model.is_object() || f.model.value("name", "") != f.name)
    throw InputError(r.field("model") + " must be an object whose name is " + f.name);
  return f;
}

const std::map<std::string, ModelPresetFile>& presets() {
  static const auto table = read_named_files(kPresetFolder, read_preset_file);
  return table;
}

}  // namespace

Json model_preset(const std::string& name, const std::string& field) {
  auto it = presets().find(name);
  if (it == presets().end())
    refuse_name(field, name, "a model preset", names_of(presets()), " (see `placesim presets`)");
  return it->second.model;
}

std::vector<std::pair<std::string, std::string>> model_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : presets()) out.emplace_back(name, p.description);
  return out;
}

}  // namespace placesim
