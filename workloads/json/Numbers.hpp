#pragma once
#include <charconv>
#include <string>

namespace placesim {

/// Shortest text that reads back as exactly `v` ("0.1", "2", "1e-07", "inf", "nan"), whatever the locale.
inline std::string format_shortest(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "nan";
}

}  // namespace placesim
