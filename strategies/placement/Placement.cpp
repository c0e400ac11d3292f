#include "strategies/placement/Placement.hpp"

#include <vector>

#include "workloads/json/JsonReader.hpp"

namespace placesim {

std::string to_string(Mode m) {
  switch (m) {
    case Mode::Replicated:
      return "replicated";
    case Mode::Sharded:
      return "sharded";
    case Mode::ShardedWithGather:
      return "sharded-with-gather";
    case Mode::Materialized:
      return "materialized";
    case Mode::Offloaded:
      return "offloaded";
  }
  return "?";
}

std::string to_string(State s) {
  switch (s) {
    case State::Parameters:
      return "parameters";
    case State::Gradients:
      return "gradients";
    case State::Optimizer:
      return "optimizer";
    case State::Activations:
      return "activations";
  }
  return "?";
}

Mode parse_mode(const std::string& text, const std::string& field) {
  if (text == "replicated" || text == "R") return Mode::Replicated;
  if (text == "sharded" || text == "S") return Mode::Sharded;
  if (text == "sharded-with-gather" || text == "SG") return Mode::ShardedWithGather;
  if (text == "materialized" || text == "M") return Mode::Materialized;
  if (text == "offloaded" || text == "Off") return Mode::Offloaded;
  std::vector<std::string> names = {"replicated", "sharded", "sharded-with-gather", "materialized", "offloaded"};
  std::string guess = nearest(text, names);
  throw InputError(field + "=" + text + " is not a placement mode (replicated, sharded, sharded-with-gather, " +
                   "materialized, offloaded)" + (guess.empty() ? "" : "; did you mean '" + guess + "'?"));
}

std::string short_name(Mode m) {
  switch (m) {
    case Mode::Replicated:
      return "R";
    case Mode::Sharded:
      return "S";
    case Mode::ShardedWithGather:
      return "SG";
    case Mode::Materialized:
      return "M";
    case Mode::Offloaded:
      return "Off";
  }
  return "?";
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
