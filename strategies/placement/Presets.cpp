#include "strategies/placement/Presets.hpp"

#include "workloads/json/Embedded.hpp"

namespace placesim {

namespace {

constexpr const char* kPresetFolder = "strategies/placement/presets";

}  // namespace

StrategyPreset parse_strategy_preset(const Json& value, const std::string& origin) {
  ObjectReader r(value, origin);
  StrategyPreset p;
  p.name = r.require_string("name");
  p.description = r.require_string("description");
  p.source = r.require_string("source");
  p.stack = r.get_string("stack", "");
  const Json& strategy = r.require("strategy");
  if (!strategy.is_object()) throw InputError(r.field("strategy") + "=" + show(strategy) + " must be an object");
  p.strategy = strategy;
  if (const Json* req = r.child("requires")) {
    ObjectReader q(*req, r.field("requires"));
    p.requirement =
        StrategyPreset::Requirement{Condition(q.require_string("rule"), q.field("rule")), q.require_string("needs"),
                                    q.require_string("otherwise"), q.require_string("otherwise_text")};
    q.finish();
  }
  r.finish();
  return p;
}

const std::map<std::string, StrategyPreset>& strategy_presets() {
  static const std::map<std::string, StrategyPreset> table = read_named_files(kPresetFolder, parse_strategy_preset);
  return table;
}

const StrategyPreset& strategy_preset(const std::string& name, const std::string& field) {
  auto it = strategy_presets().find(name);
  if (it == strategy_presets().end())
    refuse_name(field, name, "a strategy preset", names_of(strategy_presets()), " (see `placesim presets`)");
  return it->second;
}

}  // namespace placesim
