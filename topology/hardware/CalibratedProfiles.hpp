#pragma once
#include <string>

#include "topology/hardware/Accelerator.hpp"

namespace placesim {

/// The fitted compute profile of a built-in accelerator (the same numbers as topology/profiles/<name>.json).
/// Precondition: `name` is one of the accelerator presets.
ComputeProfile calibrated_profile(const std::string& name);

}  // namespace placesim
