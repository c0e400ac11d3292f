#include "workloads/json/Numbers.hpp"

#include <cstdio>

namespace placesim {

std::string format_significant(double v, int digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string format_scaled(double v, std::initializer_list<Scale> scales) {
  const Scale* scale = scales.end() - 1;
  for (const Scale& s : scales) {
    if (v >= s.from) {
      scale = &s;
      break;
    }
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, scale->format, v / scale->unit);
  return buf;
}

}  // namespace placesim
