#pragma once
#include <string>
#include <vector>

#include "strategies/placement/Experiment.hpp"

namespace placesim {

/// The stack an experiment runs with and every default it (and the strategy preset) supplied: the report's "stack"
/// section (name, family, how it was chosen, supplied fields with their sources, words read its way, caveats).
Json stack_json(const Experiment& e);
/// The same for the text summary: one line naming the stack and the fields it supplied, then its caveats; "" for
/// an experiment without a stack (built in code).
std::string stack_summary(const Experiment& e);

/// Device memory left over a step's peak: after the stack's reserve (the CUDA context and the communicators' buffers,
/// which placesim's per-device figures leave out) and set against the share of the peak the stack's allocator may
/// lose to fragmentation. Nothing when the device memory is not known.
struct MemoryHeadroom {
  double device_bytes = 0, peak_bytes = 0, reserve_bytes = 0, fragmentation_bytes = 0;
  std::string source;  ///< the stack's memory source, or why there is no reserve
  double spare_bytes() const { return device_bytes - peak_bytes - reserve_bytes; }
};
MemoryHeadroom memory_headroom(const Experiment& e, double peak_bytes);
/// The experiment's stack's memory reserve (CUDA context and communicators), 0 without a stack.
double stack_reserve_bytes(const Experiment& e);
/// What the device has left beside `peak_bytes` and that reserve (MemoryHeadroom::spare_bytes without building one).
double spare_bytes(const Experiment& e, double peak_bytes);
Json headroom_json(const MemoryHeadroom& h);
/// "  headroom             ..." for the summary; "" without device memory.
std::string headroom_summary(const MemoryHeadroom& h);
/// The warnings headroom gives: the peak and the reserve over the device, or less spare than fragmentation may take.
std::vector<std::string> headroom_warnings(const MemoryHeadroom& h);

}  // namespace placesim
