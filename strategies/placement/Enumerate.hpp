#pragma once
#include <string>
#include <vector>

#include "strategies/placement/Placement.hpp"

namespace placesim {

/// Every placement of parameters, gradients and optimizer state (five modes each) along dp_shard and along
/// dp_replicate, with one activation mode for both axes: 5^3 x 5^3 x 5 = 78,125 placements. (The 5^4 x 5^4 = 390,625
/// placements over two axes also include activations placed differently along the two axes, which the parser
/// refuses by the rule activations-per-replica whatever the other states.) In a fixed order.
std::vector<Placement> data_axis_placements();

/// The placement as `strategy.placement` JSON text (a state's modes per axis as an object).
std::string placement_json_text(const Placement& p);

/// The name of the rule an InvalidStrategy message cites ("gradient-owner"), or "" when it cites none.
std::string cited_rule(const std::string& message);

}  // namespace placesim
