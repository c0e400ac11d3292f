#pragma once
#include <charconv>
#include <initializer_list>
#include <string>

namespace placesim {

/// Shortest text that reads back as exactly `v` ("0.1", "2", "1e-07", "inf", "nan"), whatever the locale.
inline std::string format_shortest(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "nan";
}

/// printf's "%.<digits>g": at most `digits` significant digits ("1e+06", "0.25", "1024").
std::string format_significant(double v, int digits = 6);

/// One step of a scale: a value from `from` up prints as printf's `format` applied to value / `unit`.
struct Scale {
  double from;
  double unit;
  const char* format;  ///< one double conversion, e.g. "%.2f TFLOP"
};

/// `v` printed by the first of `scales` (largest first) that it reaches; by the last one if it reaches none.
std::string format_scaled(double v, std::initializer_list<Scale> scales);

}  // namespace placesim
