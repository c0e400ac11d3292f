#include "traces/svg/TimeWindow.hpp"

#include <charconv>
#include <cmath>

#include "workloads/json/Error.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

constexpr const char* kForm = " (want A:B in seconds of simulated time, e.g. 10.5:12, or with units, e.g. 200ms:350ms)";

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

// A bare number is seconds here, unlike parse_time's bare latencies (at most 10 ms), so it is read first.
double seconds(const std::string& whole, const std::string& part) {
  const std::string p = trimmed(part);
  double value = 0;
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (p.empty() || ec != std::errc() || end != p.data() + p.size()) {
    try {
      value = parse_time(p, "--time-window");
    } catch (const InputError&) {
      throw InputError("--time-window=" + whole + ": '" + p + "' is not a time" + kForm);
    }
  }
  if (!std::isfinite(value)) throw InputError("--time-window=" + whole + ": '" + p + "' is not finite" + kForm);
  return value;
}

}  // namespace

TimeWindow parse_time_window(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    throw InputError("--time-window=" + text + " is not two times parted by one ':'" + kForm);
  TimeWindow w{seconds(text, text.substr(0, colon)), seconds(text, text.substr(colon + 1)), text};
  if (w.start_s < 0) throw InputError("--time-window=" + text + ": the start must not be negative");
  if (!(w.end_s > w.start_s)) throw InputError("--time-window=" + text + ": the end must be after the start");
  // Simulated time is kept in nanoseconds, up to 9e9 s (TraceLayout's to_ns).
  if (w.end_s > 9e9) throw InputError("--time-window=" + text + ": the end lies beyond 9e9 s of simulated time");
  if (std::llround(w.end_s * 1e9) - std::llround(w.start_s * 1e9) < 1)
    throw InputError("--time-window=" + text + ": the window must span at least 1 ns (simulated time is in ns)");
  return w;
}

std::string shown_window(const TimeWindow& w) {
  return w.text.empty() ? format_significant(w.start_s) + ":" + format_significant(w.end_s) : w.text;
}

}  // namespace placesim
