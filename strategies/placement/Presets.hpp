#pragma once
#include <map>
#include <optional>
#include <string>

#include "strategies/placement/Condition.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// A strategy preset: a data file (strategies/placement/presets/<name>.json) that patches the experiment's strategy
/// section before it is parsed (the experiment's own fields win). Code reads its fields, never its name.
struct StrategyPreset {
  std::string name, description, source;
  Json strategy;  ///< the patch over the strategy section
  /// The training stack assumed when the experiment names none ("" = placesim's default stack).
  std::string stack;
  /// A mesh the preset's name promises ("tp > 1"): otherwise it would silently be another strategy.
  struct Requirement {
    Condition rule;
    std::string needs;           ///< what the rule asks, for the refusal
    std::string otherwise;       ///< the preset the layout is without it (verify's miniature takes it)
    std::string otherwise_text;  ///< the refusal's last words
  };
  std::optional<Requirement> requirement;
};

/// Every built-in strategy preset, by name (loaded once from the embedded data files).
const std::map<std::string, StrategyPreset>& strategy_presets();
/// The preset `name`; refused as "<field>=<name> is not a strategy preset (did you mean ...)".
const StrategyPreset& strategy_preset(const std::string& name, const std::string& field);
/// Reads one preset file's JSON; `origin` names it in errors.
StrategyPreset parse_strategy_preset(const Json& value, const std::string& origin);

}  // namespace placesim
