#pragma once
#include <cstdint>

#include "strategies/placement/Strategy.hpp"

namespace placesim {

/// A device's coordinates in the dp x tp x pp mesh. Ranks follow Megatron-LM's order: tp fastest (inside an
/// NVLink domain), then dp, then pp: rank = tp + tp_size * (dp + dp_size * pp).
struct MeshCoord {
  std::int64_t dp = 0, tp = 0, pp = 0;
};

inline MeshCoord mesh_coord(const StrategySpec& s, std::int64_t rank) {
  return {(rank / s.tp) % s.dp, rank % s.tp, rank / (s.tp * s.dp)};
}

inline std::int64_t mesh_rank(const StrategySpec& s, MeshCoord c) {
  return c.tp + s.tp * (c.dp + s.dp * c.pp);
}

}  // namespace placesim
