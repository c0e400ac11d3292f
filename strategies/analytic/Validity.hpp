#pragma once
#include <array>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/placement/Experiment.hpp"

namespace placesim {


/// Checks divisibility of the model by the mesh and the placement's gradient integrity and state consistency
/// (arXiv 2601.02311): every parameter's update sees the full sum of its gradient contributions exactly once, and
/// every replica of a state holds the same value wherever it is read. Throws InvalidStrategy on the first rule broken.
/// `disabled_rule` switches one placement rule off (by the name refusals cite): a planted checker bug, with which
/// tests show that the numeric executor (sim/verify) catches a wrong checker. Empty in every real use.
void check_validity(const Experiment& e, const std::string& disabled_rule = "");

/// A plan whose analysed memory exceeds the device memory: callers print its breakdown before the refusal.
struct DoesNotFit : InputError {
  using InputError::InputError;
};

/// Throws DoesNotFit when the analysed memory exceeds e.device_memory_bytes (if set).
void check_fits(const Experiment& e, const Analysis& a);
/// The simulation's test: refuses (DoesNotFit) when the simulated peak of some device, `peak` bytes of which
/// `at_peak` were parameters, gradients, optimizer state, activations and buffers at that moment, exceeds the device
/// memory. Called when the analytic bound (every transient buffer live at once) does not fit but the model states
/// do: whether the step fits is then what was live at one moment.
void check_peak_fits(const Experiment& e, const Analysis& a, double peak, const std::array<double, 5>& at_peak);

}  // namespace placesim
