#pragma once
#include <string>
#include <vector>

#include "strategies/graph/Record.hpp"

namespace placesim {

/// How much a trace shows of each collective.
enum class TraceDetail {
  Coarse,  ///< the consecutive steps of one collective on one device become one event
  Fine,    ///< every step is an event, and flows link each step to the step it feeds on the receiver
};

/// What a trace (Chrome JSON or SVG overview) contains. The defaults keep a large run's trace small.
struct TraceOptions {
  std::vector<int> devices;  ///< selected device indices, ascending; empty selects every device
  TraceDetail detail = TraceDetail::Coarse;
};

/// Parses the `--trace-devices` value against the devices of a record.
///
/// Grammar: `selection := term ("," term)*` (union), `term := atom ("+" atom)*` (intersection),
/// `atom := "all" | [axis] N ["-" M]` with axis one of `stage`/`pp`, `dp`, `tp`, `node`; no axis means device
/// indices. Examples: `0-15`, `3,5,7`, `stage0`, `dp0+tp0` (one pipeline), `stage0-1+dp0,stage3`.
/// Throws InputError naming `--trace-devices` and the value for a malformed atom, an index past the last device,
/// or an atom or term that selects no device. Returns ascending, distinct device indices (never empty).
std::vector<int> parse_device_selection(const std::string& text, const std::vector<DeviceInfo>& devices);

/// Parses the `--trace-detail` value: "coarse" or "fine"; anything else throws InputError naming the flag.
TraceDetail parse_trace_detail(const std::string& text);
const char* to_string(TraceDetail d);

}  // namespace placesim
