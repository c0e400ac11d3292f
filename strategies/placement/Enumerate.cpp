#include "strategies/placement/Enumerate.hpp"

#include <array>

namespace placesim {

std::vector<Placement> data_axis_placements() {
  constexpr std::array<Mode, 5> modes = {Mode::Replicated, Mode::Sharded, Mode::ShardedWithGather, Mode::Materialized,
                                         Mode::Offloaded};
  std::vector<Placement> out;
  out.reserve(78125);
  for (Mode a : modes)
    for (Mode p0 : modes)
      for (Mode p1 : modes)
        for (Mode g0 : modes)
          for (Mode g1 : modes)
            for (Mode o0 : modes)
              for (Mode o1 : modes) {
                Placement p;
                p.parameters = p0;
                p.replicate.parameters = p1;
                p.gradients = g0;
                p.replicate.gradients = g1;
                p.optimizer = o0;
                p.replicate.optimizer = o1;
                p.activations = a;
                out.push_back(p);
              }
  return out;
}

std::string placement_json_text(const Placement& p) {
  auto state = [&](State s) {
    return R"({"dp_shard": ")" + to_string(p.mode(s, kShardAxis)) + R"(", "dp_replicate": ")" +
           to_string(p.mode(s, kReplicateAxis)) + R"("})";
  };
  return R"({"parameters": )" + state(State::Parameters) + R"(, "gradients": )" + state(State::Gradients) +
         R"(, "optimizer": )" + state(State::Optimizer) + R"(, "activations": ")" + to_string(p.activations) + R"("})";
}

std::string cited_rule(const std::string& message) {
  const std::string tag = "rule ";
  auto at = message.find(tag);
  if (at == std::string::npos) return "";
  auto end = message.find(':', at);
  return message.substr(at + tag.size(), end == std::string::npos ? std::string::npos : end - at - tag.size());
}

}  // namespace placesim
