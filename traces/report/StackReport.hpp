#pragma once
#include <string>

#include "strategies/placement/Experiment.hpp"

namespace placesim {

/// The stack an experiment runs with and every default it (and the strategy preset) supplied: the report's "stack"
/// section (name, family, how it was chosen, supplied fields with their sources, words read its way, caveats).
Json stack_json(const Experiment& e);
/// The same for the text summary: one line naming the stack and the fields it supplied, then its caveats; "" for
/// an experiment without a stack (built in code).
std::string stack_summary(const Experiment& e);

}  // namespace placesim
