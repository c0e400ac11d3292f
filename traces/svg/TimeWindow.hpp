#pragma once
#include <string>

namespace placesim {

/// A span of simulated time that a timeline shows.
struct TimeWindow {
  double start_s = 0;  ///< >= 0
  double end_s = 0;    ///< > start_s; may lie past the end of the step
  std::string text;    ///< the value as the user wrote it ("10.5:12"), named in messages; may be empty
};

/// Parses the `--time-window A:B` value: A and B are seconds of simulated time ("10.5:12") or numbers with a unit
/// (s, ms, us, ns: "200ms:350ms", "1.5s:2s"). Throws InputError naming `--time-window` and the value when it is not
/// two numbers parted by ':', A is negative, A >= B, the window spans less than 1 ns or B lies past 9e9 s. Whether A
/// lies within the step is checked where the step is known (write_timeline_svg).
TimeWindow parse_time_window(const std::string& text);

/// How a message names the window: its text as written, else "A:B" in seconds.
std::string shown_window(const TimeWindow& w);

}  // namespace placesim
