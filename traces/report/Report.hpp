#pragma once
#include <string>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/placement/Experiment.hpp"

namespace placesim {

/// A byte/FLOP count as JSON: an integer when it is one (exactly representable), else a double.
Json number(double v);

/// The analyze report: placesim_version, experiment, model, training, strategy, memory, communication, compute
/// and, when one is set, device_memory_bytes (README "Report contract"). simulation_report() extends it.
Json analysis_report(const Experiment& e, const Analysis& a);

/// A human-readable table of the memory and bytes sent per device (first stage, last stage, maximum) and the
/// FLOPs per step: what `analyze --table` and `simulate` print.
std::string analysis_table(const Experiment& e, const Analysis& a);
/// How the layers' element-wise work is costed (training.kernels) and where that choice came from.
std::string kernels_text(const Experiment& e);
/// The attention: fused (and which kernel, training.attention_kernel) or unfused.
std::string attention_text(const Experiment& e);

/// JSON text as placesim writes it everywhere: two-space indent, trailing newline; byte-identical for equal input.
std::string dump(const Json& j);

}  // namespace placesim
