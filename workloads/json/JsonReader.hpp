#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/json/Error.hpp"

namespace placesim {

using Json = nlohmann::json;

/// The candidate closest to `word` by edit distance, or "" when none is plausibly meant.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

/// Parses JSON text; a syntax error becomes an InputError naming `origin`, line and column.
Json parse_json_text(const std::string& text, const std::string& origin);

/// Reads a JSON file (see parse_json_text).
Json read_json_file(const std::string& path);

/// Reads one JSON object key by key. Every error names the dotted path of the field and its value;
/// finish() refuses keys that were never read, suggesting the nearest known one.
class ObjectReader {
 public:
  ObjectReader(const Json& object, std::string path);

  /// True if present; asking also declares `key` part of this object's schema (see finish()).
  bool has(std::string_view key);
  const std::string& path() const { return path_; }
  std::string field(std::string_view key) const;  ///< dotted path of `key`

  /// Marks `key` as known without reading it (a field handled elsewhere).
  void skip(std::string_view key);
  const Json* child(std::string_view key);

  std::string get_string(std::string_view key, std::string fallback);
  std::string require_string(std::string_view key);
  bool get_bool(std::string_view key, bool fallback);
  /// Integer-valued number (7.5e9 is accepted, 2.5 is not).
  std::int64_t get_int(std::string_view key, std::int64_t fallback);
  std::int64_t require_int(std::string_view key);
  /// Integer >= 1.
  std::int64_t get_positive_int(std::string_view key, std::int64_t fallback);
  double get_number(std::string_view key, double fallback);
  /// One of `allowed`; anything else names the field, the value and the nearest allowed word.
  std::string get_choice(std::string_view key, const std::vector<std::string>& allowed, std::string fallback);

  /// Throws InputError for any key never asked for (nor listed in `also_known`), naming the nearest asked one.
  void finish(const std::vector<std::string>& also_known = {});

 private:
  const Json& json_at(std::string_view key);
  std::int64_t to_int(std::string_view key, const Json& value) const;

  const Json& object_;
  std::string path_;
  std::set<std::string, std::less<>> seen_;
};

/// Compact rendering of a JSON value for error messages.
std::string show(const Json& value);

}  // namespace placesim

namespace placesim {

/// Sets `value` at a dotted `path` ("strategy.placement.gradients") inside `root`, creating objects on the way.
/// A string met on the way (a preset name) becomes {"preset": name} so that its fields can be overridden.
void set_path(Json& root, const std::string& path, Json value);

/// Parses a command-line value: JSON when it is valid JSON (numbers, true, [..], {..}), else the plain string.
Json parse_cli_value(const std::string& text);

}  // namespace placesim
