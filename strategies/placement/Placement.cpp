#include "strategies/placement/Placement.hpp"

#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

constexpr EnumName<Mode> kModeNames[] = {{Mode::Replicated, "replicated"},
                                         {Mode::Sharded, "sharded"},
                                         {Mode::ShardedWithGather, "sharded-with-gather"},
                                         {Mode::Materialized, "materialized"},
                                         {Mode::Offloaded, "offloaded"}};

// The tables' short forms (R, S, SG, M, Off), which parse_mode accepts too.
constexpr EnumName<Mode> kModeShortNames[] = {{Mode::Replicated, "R"},
                                              {Mode::Sharded, "S"},
                                              {Mode::ShardedWithGather, "SG"},
                                              {Mode::Materialized, "M"},
                                              {Mode::Offloaded, "Off"}};

constexpr EnumName<State> kStateNames[] = {{State::Parameters, "parameters"},
                                           {State::Gradients, "gradients"},
                                           {State::Optimizer, "optimizer"},
                                           {State::Activations, "activations"}};

}  // namespace

std::string to_string(Mode m) {
  return name_of(kModeNames, m);
}

std::string to_string(State s) {
  return name_of(kStateNames, s);
}

Mode parse_mode(const std::string& text, const std::string& field) {
  if (auto m = value_named(kModeNames, text)) return *m;
  if (auto m = value_named(kModeShortNames, text)) return *m;
  std::string guess = nearest(text, enum_names(kModeNames));
  throw InputError(field + "=" + text + " is not a placement mode (" + joined_names(kModeNames, ", ") + ")" +
                   (guess.empty() ? "" : "; did you mean '" + guess + "'?"));
}

std::string short_name(Mode m) {
  return name_of(kModeShortNames, m);
}

std::string axes_name(AxisSet axes) {
  if (axes == kDataAxes) return "dp_shard+dp_replicate";
  if (axes == kShardAxis) return "dp_shard";
  if (axes == kReplicateAxis) return "dp_replicate";
  return "none";
}

Mode Placement::mode(State s, AxisSet axis) const {
  const bool across = axis == kReplicateAxis;
  switch (s) {
    case State::Parameters:
      return across ? replicate.parameters : parameters;
    case State::Gradients:
      return across ? replicate.gradients : gradients;
    case State::Optimizer:
      return across ? replicate.optimizer : optimizer;
    case State::Activations:
      return activations;
  }
  return Mode::Replicated;
}

bool Placement::same_along_data_axes() const {
  return replicate.parameters == parameters && replicate.gradients == gradients && replicate.optimizer == optimizer;
}

bool Placement::uniform() const {
  return !secondary && same_along_data_axes();
}

AxisSet Placement::sharded_axes(State s) const {
  AxisSet out = kNoAxes;
  for (AxisSet axis : {kShardAxis, kReplicateAxis}) {
    Mode m = mode(s, axis);
    if (m == Mode::Sharded || m == Mode::ShardedWithGather || m == Mode::Offloaded) out |= axis;
  }
  return out;
}

std::string short_form(const Placement& p) {
  const std::string hpz = p.secondary ? "+hpZ" : "";
  std::string inner = short_name(p.parameters) + hpz + "/" + short_name(p.optimizer) + "/" + short_name(p.gradients) +
                      "/" + short_name(p.activations);
  if (p.same_along_data_axes()) return inner;
  return inner + " x " + short_name(p.replicate.parameters) + "/" + short_name(p.replicate.optimizer) + "/" +
         short_name(p.replicate.gradients) + "/" + short_name(p.activations);
}

}  // namespace placesim
