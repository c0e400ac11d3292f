#pragma once
#include <string>

#include "sim/cli/Cli.hpp"
#include "strategies/analytic/Validity.hpp"

namespace placesim {

/// `refusal` (a plan `e` that does not fit its device memory) with the one-field changes that would make it fit
/// appended, each judged by the analytic bound (every transient buffer live at once) of the experiment the arguments
/// name with that field changed: training.recompute=full when the plan recomputes less, and
/// strategy.placement.optimizer=sharded when the optimizer state is replicated over data-parallel ranks; both
/// together when neither fits alone. Nothing is appended when no such change fits.
DoesNotFit with_fit_hint(const DoesNotFit& refusal, const Experiment& e, const Args& args, bool allow_default);

}  // namespace placesim
