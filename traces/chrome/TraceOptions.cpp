#include "traces/chrome/TraceOptions.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>

#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

const char* const kSelectionHelp =
    " (use all, N, N-M, stageN, ppN, dpN, tpN, cpN, nodeN, ranges like dp0-3; ',' for union, '+' for "
    "intersection)";

/// Which coordinate an atom selects on.
enum class Axis { Device, Pp, Dp, Tp, Cp, Node };

struct Atom {
  Axis axis = Axis::Device;
  std::int64_t first = 0, last = 0;
};

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(trim(s.substr(begin, i - begin)));
      begin = i + 1;
    }
  }
  return parts;
}

/// A decimal number of at most 9 digits, or nothing.
std::optional<std::int64_t> parse_index(const std::string& s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::nullopt;
  return std::stoll(s);
}

std::optional<Axis> parse_axis(const std::string& word) {
  if (word.empty()) return Axis::Device;
  if (word == "stage" || word == "pp") return Axis::Pp;
  if (word == "dp") return Axis::Dp;
  if (word == "tp") return Axis::Tp;
  if (word == "cp") return Axis::Cp;
  if (word == "node") return Axis::Node;
  return std::nullopt;
}

std::optional<Atom> parse_atom(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isalpha(static_cast<unsigned char>(text[digits]))) ++digits;
  auto axis = parse_axis(text.substr(0, digits));
  if (!axis) return std::nullopt;
  std::string range = text.substr(digits);
  auto dash = range.find('-');
  auto first = parse_index(range.substr(0, dash));
  auto last = dash == std::string::npos ? first : parse_index(range.substr(dash + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  return Atom{*axis, *first, *last};
}

std::int64_t coordinate(const DeviceInfo& d, int index, Axis axis) {
  switch (axis) {
    case Axis::Device:
      return index;
    case Axis::Pp:
      return d.pp;
    case Axis::Dp:
      return d.dp;
    case Axis::Tp:
      return d.tp;
    case Axis::Cp:
      return d.cp < 0 ? 0 : d.cp;
    case Axis::Node:
      return d.node;
  }
  return -1;
}

class SelectionParser {
 public:
  SelectionParser(const std::string& text, const std::vector<DeviceInfo>& devices) : text_(text), devices_(devices) {}

  std::vector<bool> atom(const std::string& word) const {
    if (word == "all") return std::vector<bool>(devices_.size(), true);
    auto atom = parse_atom(word);
    if (!atom) fail("'" + word + "' is not a device selection" + kSelectionHelp);
    if (atom->axis == Axis::Device && atom->last >= static_cast<std::int64_t>(devices_.size()))
      fail("device " + std::to_string(atom->last) + " does not exist (devices 0-" +
           std::to_string(static_cast<std::int64_t>(devices_.size()) - 1) + ")");
    std::vector<bool> chosen(devices_.size(), false);
    bool any = false;
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      auto c = coordinate(devices_[i], static_cast<int>(i), atom->axis);
      chosen[i] = c >= atom->first && c <= atom->last;
      any = any || chosen[i];
    }
    if (!any) fail("'" + word + "' selects no device");
    return chosen;
  }

  std::vector<bool> term(const std::string& term) const {
    std::vector<bool> chosen(devices_.size(), true);
    for (const auto& word : split(term, '+')) {
      auto part = atom(word);
      for (std::size_t i = 0; i < chosen.size(); ++i) chosen[i] = chosen[i] && part[i];
    }
    if (std::find(chosen.begin(), chosen.end(), true) == chosen.end()) fail("'" + term + "' selects no device");
    return chosen;
  }

  [[noreturn]] void fail(const std::string& why) const { throw InputError("--trace-devices=" + text_ + ": " + why); }

 private:
  const std::string& text_;
  const std::vector<DeviceInfo>& devices_;
};

}  // namespace

std::vector<int> parse_device_selection(const std::string& text, const std::vector<DeviceInfo>& devices) {
  SelectionParser parser(text, devices);
  if (devices.empty()) parser.fail("the simulation has no devices");
  std::vector<bool> chosen(devices.size(), false);
  for (const auto& term : split(text, ',')) {
    auto part = parser.term(term);
    for (std::size_t i = 0; i < chosen.size(); ++i) chosen[i] = chosen[i] || part[i];
  }
  std::vector<int> selected;
  for (std::size_t i = 0; i < chosen.size(); ++i)
    if (chosen[i]) selected.push_back(static_cast<int>(i));
  return selected;
}

namespace {

constexpr EnumName<TraceDetail> kTraceDetailNames[] = {{TraceDetail::Coarse, "coarse"}, {TraceDetail::Fine, "fine"}};

}  // namespace

TraceDetail parse_trace_detail(const std::string& text) {
  if (auto d = value_named(kTraceDetailNames, text)) return *d;
  throw InputError("--trace-detail=" + text + " is not a detail level (use " + joined_names(kTraceDetailNames, " or ") +
                   ")");
}

const char* to_string(TraceDetail d) {
  return name_of(kTraceDetailNames, d, "fine");
}

}  // namespace placesim
