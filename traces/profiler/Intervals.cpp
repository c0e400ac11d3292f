#include "traces/profiler/Intervals.hpp"

#include <algorithm>

namespace placesim {

std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const Interval& x : v) {
    if (!out.empty() && x.start <= out.back().end)
      out.back().end = std::max(out.back().end, x.end);
    else
      out.push_back(x);
  }
  return out;
}

std::vector<Interval>::const_iterator first_ending_after(const std::vector<Interval>& v, double at) {
  return std::lower_bound(v.begin(), v.end(), at, [](const Interval& x, double t) { return x.end <= t; });
}

double covered(const std::vector<Interval>& v, double a, double b) {
  double t = 0;
  for (auto it = first_ending_after(v, a); it != v.end() && it->start < b; ++it)
    t += std::max(0.0, std::min(b, it->end) - std::max(a, it->start));
  return t;
}

}  // namespace placesim
