#include "workloads/json/Units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

#include "workloads/json/Error.hpp"
#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

// Splits "80 GiB" into 80 and "GiB"; the number must be finite and >= 0.
// `hint` (when not null) follows the refusal of text without a number, e.g. "(write e.g. \"10min\" or \"2h\")".
std::pair<double, std::string> split_number(const std::string& text, const std::string& field,
                                            const char* hint = nullptr) {
  std::size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (...) {
    throw InputError(field + "=\"" + text + "\" does not start with a number" + (hint ? std::string(" ") + hint : ""));
  }
  if (!std::isfinite(value)) throw InputError(field + "=\"" + text + "\" is not finite");
  std::string unit;
  for (std::size_t i = pos; i < text.size(); ++i)
    if (!std::isspace(static_cast<unsigned char>(text[i]))) unit += text[i];
  return {value, unit};
}

// How far a number without a unit, read in SI, may go before it is surely a value meant in another unit: 400 for
// "400Gbps" would be 400 B/s, 80 for "80GB" 80 bytes, 2 for "2us" two seconds. Zero and negative values pass, for the
// reader's own sign rule to refuse with its usual message.
struct BareRule {
  double low;            ///< positive bare values below this are refused (0: no lower bound)
  double high;           ///< bare values above this are refused (infinity: no upper bound)
  const char* si;        ///< the SI unit a bare number is read in
  const char* examples;  ///< two units to suggest, the number written before each
  const char* bound;     ///< the bound, as the message states it
};

const BareRule kBareSize{1e6, INFINITY, "B", "GB GiB", "must be at least 1e6 B = 1 MB"};
const BareRule kBareBandwidth{1e6, INFINITY, "B/s", "Gbps GB/s", "must be at least 1e6 B/s = 1 MB/s"};
const BareRule kBareTime{0, 1e-2, "s", "us ms", "must be at most 0.01 s = 10 ms, as every time read so is a latency"};
const BareRule kBareFlops{1e9, INFINITY, "FLOP/s", "TFLOPS GFLOPS", "must be at least 1e9 FLOP/s = 1 GFLOP/s"};
// Durations of a run (an interval between checkpoints, a restart, an MTBF) are not latencies: a bare number has no
// bound.
const BareRule kBareDuration{0, INFINITY, "s", "min h", "has no bound"};

// Refuses a bare `value` out of `bare`'s bounds; `shown` is the field and the value as written ("x.bw=400").
void check_bare(double value, const BareRule& bare, const char* what, const std::string& shown) {
  if (!((value > 0 && value < bare.low) || value > bare.high)) return;
  const std::string v = format_significant(value, 10);
  const std::string examples = bare.examples;
  const std::size_t sep = examples.find(' ');
  throw InputError(shown + " is a bare number read as " + v + " " + bare.si + ": give a unit, e.g. \"" + v +
                   examples.substr(0, sep) + "\" or \"" + v + examples.substr(sep + 1) + "\" (a " + what +
                   " without a unit is in " + bare.si + " and " + bare.bound + ")");
}

double parse_with(const std::string& text, const std::string& field, const std::vector<Suffix>& suffixes,
                  const char* what, const BareRule& bare, const char* hint = nullptr) {
  auto [value, unit] = split_number(text, field, hint);
  if (unit.empty()) {
    check_bare(value, bare, what, field + "=\"" + text + "\"");
    return value;
  }
  for (const auto& s : suffixes)
    if (unit == s.text) return value * s.factor;
  std::string message = field + "=\"" + text + "\": unknown " + what + " unit '" + unit + "' (use";
  for (const auto& s : suffixes) message += " " + std::string(s.text);
  throw InputError(message + ")");
}

}  // namespace

double read_bare_number(double (*unit)(const std::string& text, const std::string& field), double value,
                        const std::string& shown) {
  const auto rule = [unit]() -> std::pair<const BareRule*, const char*> {
    if (unit == parse_bytes) return {&kBareSize, "size"};
    if (unit == parse_bandwidth) return {&kBareBandwidth, "bandwidth"};
    if (unit == parse_time) return {&kBareTime, "time"};
    if (unit == parse_flops) return {&kBareFlops, "FLOP/s"};
    if (unit == parse_duration) return {&kBareDuration, "duration"};
    return {nullptr, nullptr};
  }();
  if (rule.first) check_bare(value, *rule.first, rule.second, shown);
  return value;
}

double parse_bytes(const std::string& text, const std::string& field) {
  static const std::vector<Suffix> suffixes = {
      {"B", 1},     {"kB", 1e3},     {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
      {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  return parse_with(text, field, suffixes, "size", kBareSize);
}

double parse_bandwidth(const std::string& text, const std::string& field) {
  static const std::vector<Suffix> suffixes = {
      {"B/s", 1},     {"kB/s", 1e3},   {"MB/s", 1e6},    {"GB/s", 1e9},    {"TB/s", 1e12},
      {"Bps", 1},     {"kBps", 1e3},   {"MBps", 1e6},    {"GBps", 1e9},    {"TBps", 1e12},
      {"bps", 0.125}, {"kbps", 125.0}, {"Mbps", 1.25e5}, {"Gbps", 1.25e8}, {"Tbps", 1.25e11},
      {"b/s", 0.125}, {"kb/s", 125.0}, {"Mb/s", 1.25e5}, {"Gb/s", 1.25e8}, {"Tb/s", 1.25e11}};
  return parse_with(text, field, suffixes, "bandwidth", kBareBandwidth);
}

double parse_time(const std::string& text, const std::string& field) {
  static const std::vector<Suffix> suffixes = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  return parse_with(text, field, suffixes, "time", kBareTime);
}

double parse_duration(const std::string& text, const std::string& field) {
  static const std::vector<Suffix> suffixes = {{"s", 1}, {"min", 60}, {"h", 3600}, {"d", 86400}};
  return parse_with(text, field, suffixes, "duration", kBareDuration, "(write e.g. \"10min\" or \"2h\")");
}

double parse_flops(const std::string& text, const std::string& field) {
  static const std::vector<Suffix> suffixes = {{"FLOPS", 1},  {"GFLOPS", 1e9},  {"TFLOPS", 1e12},  {"PFLOPS", 1e15},
                                               {"FLOP/s", 1}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}};
  return parse_with(text, field, suffixes, "FLOP/s", kBareFlops);
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1000.0 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f B", v);
  else
    std::snprintf(buf, sizeof buf,
                  std::fabs(v) >= 100  ? "%.0f %s"
                  : std::fabs(v) >= 10 ? "%.1f %s"
                                       : "%.2f %s",
                  v, units[u]);
  return buf;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s >= 1.0)
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  return buf;
}

}  // namespace placesim
