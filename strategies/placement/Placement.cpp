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

std::string short_form(const Placement& p) {
  auto s = [](Mode m) -> std::string {
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
  };
  return s(p.parameters) + "/" + s(p.optimizer) + "/" + s(p.gradients) + "/" + s(p.activations);
}

}  // namespace placesim
