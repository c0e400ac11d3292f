#include "workloads/json/Units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

#include "workloads/json/Error.hpp"

namespace placesim {

namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

// Splits "80 GiB" into 80 and "GiB"; the number must be finite and >= 0.
std::pair<double, std::string> split_number(const std::string& text, const std::string& field) {
  std::size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (...) {
    throw InputError(field + "=\"" + text + "\" does not start with a number");
  }
  if (!std::isfinite(value)) throw InputError(field + "=\"" + text + "\" is not finite");
  std::string unit;
  for (std::size_t i = pos; i < text.size(); ++i)
    if (!std::isspace(static_cast<unsigned char>(text[i]))) unit += text[i];
  return {value, unit};
}

double parse_with(const std::string& text, const std::string& field, const std::vector<Suffix>& suffixes,
                  const char* what) {
  auto [value, unit] = split_number(text, field);
  if (unit.empty()) return value;
  for (const auto& s : suffixes)
    if (unit == s.text) return value * s.factor;
  std::string message = field + "=\"" + text + "\": unknown " + what + " unit '" + unit + "' (use";
  for (const auto& s : suffixes) message += " " + std::string(s.text);
  throw InputError(message + ")");
}

}  // namespace

double parse_bytes(const std::string& text, const std::string& field) {
  static const std::vector<Suffix> suffixes = {
      {"B", 1},     {"kB", 1e3},     {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
      {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  return parse_with(text, field, suffixes, "size");
}

double parse_bandwidth(const std::string& text, const std::string& field) {
  static const std::vector<Suffix> suffixes = {
      {"B/s", 1},     {"kB/s", 1e3},   {"MB/s", 1e6},    {"GB/s", 1e9},    {"TB/s", 1e12},
      {"Bps", 1},     {"kBps", 1e3},   {"MBps", 1e6},    {"GBps", 1e9},    {"TBps", 1e12},
      {"bps", 0.125}, {"kbps", 125.0}, {"Mbps", 1.25e5}, {"Gbps", 1.25e8}, {"Tbps", 1.25e11},
      {"b/s", 0.125}, {"kb/s", 125.0}, {"Mb/s", 1.25e5}, {"Gb/s", 1.25e8}, {"Tb/s", 1.25e11}};
  return parse_with(text, field, suffixes, "bandwidth");
}

double parse_time(const std::string& text, const std::string& field) {
  static const std::vector<Suffix> suffixes = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  return parse_with(text, field, suffixes, "time");
}

double parse_flops(const std::string& text, const std::string& field) {
  static const std::vector<Suffix> suffixes = {{"FLOPS", 1},  {"GFLOPS", 1e9},  {"TFLOPS", 1e12},  {"PFLOPS", 1e15},
                                               {"FLOP/s", 1}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}};
  return parse_with(text, field, suffixes, "FLOP/s");
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
