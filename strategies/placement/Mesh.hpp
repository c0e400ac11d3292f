#pragma once
#include <cstdint>

#include "strategies/placement/Strategy.hpp"

namespace placesim {

/// A device's coordinates in the dp x cp x tp x pp mesh. Ranks follow Megatron-LM's order: tp fastest (inside an
/// NVLink domain), then cp, dp, pp: rank = tp + tp_size * (cp + cp_size * (dp + dp_size * pp)).
struct MeshCoord {
  std::int64_t dp = 0, tp = 0, pp = 0, cp = 0;
};

inline MeshCoord mesh_coord(const StrategySpec& s, std::int64_t rank) {
  const std::int64_t lane = rank / s.tp;  // data lane: cp + cp_size * dp within the stage
  return {(lane / s.cp) % s.dp, rank % s.tp, rank / (s.tp * s.cp * s.dp), lane % s.cp};
}

inline std::int64_t mesh_rank(const StrategySpec& s, MeshCoord c) {
  return c.tp + s.tp * (c.cp + s.cp * (c.dp + s.dp * c.pp));
}

}  // namespace placesim
