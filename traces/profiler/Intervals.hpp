#pragma once
#include <vector>

namespace placesim {

/// A span of one timeline, in seconds: [start, end).
struct Interval {
  double start = 0, end = 0;
};

/// `v` sorted by start and merged into disjoint intervals (touching ones joined).
std::vector<Interval> merged(std::vector<Interval> v);
/// Seconds of [a, b) covered by the disjoint sorted intervals `v` (merged's).
double covered(const std::vector<Interval>& v, double a, double b);
/// The first of the disjoint sorted intervals `v` that ends after `at`.
std::vector<Interval>::const_iterator first_ending_after(const std::vector<Interval>& v, double at);

}  // namespace placesim
