#pragma once
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/json/Error.hpp"
#include "workloads/json/ErrorList.hpp"

namespace placesim {

using Json = nlohmann::json;

/// Reads a number written with its unit ("400Gbps" -> bytes/s); throws InputError naming `field` (see Units.hpp).
using UnitParser = double (*)(const std::string& text, const std::string& field);

/// The candidate closest to `word` by edit distance, or "" when none is plausibly meant.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

/// Objects and arrays nested deeper than this are refused: no experiment, sweep or profile needs more than a
/// dozen levels, and unbounded nesting would exhaust the stack in the recursive steps after parsing (merge-patch of
/// presets, copies, dump).
inline constexpr std::size_t kMaxJsonDepth = 200;

/// What check_json_structure refuses: nesting deeper than kMaxJsonDepth (`key` empty), or `key` (its escapes decoded,
/// as a parser reads it: "l\u0061yers" is "layers") given twice in one object.
struct JsonStructureIssue {
  std::size_t offset = 0;        ///< byte of the bracket or of the second key's opening quote
  std::size_t first_offset = 0;  ///< byte of the first key's opening quote
  std::string key;
  /// "key \"dp\" appears twice in one object (first at 2:15); ...", and when escapes make the two spellings differ
  /// "(first at 1:2 as \"l\\u0061yers\", here as \"layers\")". Positions are line:column in `text`.
  std::string describe(std::string_view text) const;
};

/// Scans JSON text without recursion for the first JsonStructureIssue. Malformed text is left to the parser.
std::optional<JsonStructureIssue> json_structure_issue(std::string_view text);

/// Refuses, as InputError naming `origin`, line and column, the first json_structure_issue: too deep nesting, and a
/// key given twice in one object (JSON parsers silently keep the last).
void check_json_structure(const std::string& text, const std::string& origin);

/// Parses JSON text; a syntax error, too deep nesting or a duplicate key becomes an InputError naming `origin`, line
/// and column.
Json parse_json_text(const std::string& text, const std::string& origin);

/// The most bytes a JSON input read whole may hold (experiments, sweeps, clusters, profiles, stacks, calibrations,
/// Hugging Face configs, and standard input): the largest JSON the repository ships is 1.4 MB (a golden report), a
/// real config.json a few kB; 64 MiB leaves room for generated inputs while /dev/zero-like input is refused in well
/// under a second instead of being read until memory runs out.
inline constexpr std::uint64_t kMaxJsonInputBytes = std::uint64_t{64} << 20;

/// Opens `path` for reading and returns its descriptor (O_CLOEXEC; the caller closes it). Every input file is opened
/// here: anything but a regular file (a directory, FIFO, socket, character or block device) is refused as InputError
/// naming the path and what it is, checked with stat before opening and again on the descriptor, which is opened
/// O_NONBLOCK so that a FIFO put in its place meanwhile cannot block. A missing or unreadable file is
/// "cannot open '<path>': <reason>".
int open_input_file(const std::string& path);

/// The whole content of the regular file `path` (see open_input_file); one of more than `limit_bytes` is refused
/// naming its size and the limit, judged by its size before reading and by the bytes read (a file that grows, or one
/// whose size stat does not know, as in /proc).
std::string read_input_file(const std::string& path, std::uint64_t limit_bytes);

/// Standard input ("-" on a command line) read to its end; refused like read_input_file once it has given more than
/// `limit_bytes` (reading stops there).
std::string read_standard_input(std::uint64_t limit_bytes);

/// Reads a JSON file (read_input_file with kMaxJsonInputBytes, then parse_json_text).
Json read_json_file(const std::string& path);

/// Throws InputError "<field>=<name> is not <what>", then " (did you mean '<nearest>'?)", or `otherwise` when no
/// name in `known` is near.
[[noreturn]] void refuse_name(const std::string& field, const std::string& name, const std::string& what,
                              const std::vector<std::string>& known, const std::string& otherwise = "");

/// " (known: a, b, c)": refuse_name's `otherwise` listing every known name.
std::string known_names(const std::vector<std::string>& known);

/// The keys of a map of named things (presets), for refuse_name.
template <class Map>
std::vector<std::string> names_of(const Map& map) {
  std::vector<std::string> names;
  for (const auto& entry : map) names.push_back(entry.first);
  return names;
}

/// Reads one JSON object key by key. Every error names the dotted path of the field and its value;
/// finish() refuses keys that were never read, suggesting the nearest known one.
///
/// Given an ErrorList, the reader collects instead of throwing: a field that fails to parse (wrong type, out of
/// range, missing, or refused by the caller's refuse()/check()) is recorded and marked failed, and the read returns
/// its fallback; finish() records each unknown key. ok() then tells a cross-field rule whether its inputs parsed.
/// Without a list every error is thrown as an InputError, the first ending the read.
class ObjectReader {
 public:
  /// Throws InputError (with or without `errors`) when `object` is not an object.
  ObjectReader(const Json& object, std::string path, ErrorList* errors = nullptr);

  /// True if present; asking also declares `key` part of this object's schema (see finish()).
  bool has(std::string_view key);
  const std::string& path() const { return path_; }
  std::string field(std::string_view key) const;  ///< dotted path of `key`

  /// Marks `key` as known without reading it (a field handled elsewhere).
  void skip(std::string_view key);
  const Json* child(std::string_view key);
  /// The value of `key`, which must be present: "<field> is required but missing" otherwise.
  const Json& require(std::string_view key);
  /// Throws "<field>=<value as written> <rule>" unless `ok`, for rules the readers below do not state.
  void check(bool ok, std::string_view key, const std::string& rule);
  /// A rule of the caller that `key` breaks, stated by `message` (which names the field): thrown as an InputError,
  /// or with a list recorded (unless it names a field that failed already) and `key` marked failed.
  void refuse(std::string_view key, const std::string& message);
  /// Reads the field `key` with `read` (custom code: a list, a nested object, a name). With a list an InputError it
  /// throws is recorded against `key`, which is marked failed, and `fallback` returned; without, it propagates.
  template <class T, class Read>
  T guarded(std::string_view key, T fallback, Read&& read) {
    return guard(key, std::move(fallback), read, true);
  }
  /// The list this reader records into (null when it throws), for the readers of nested objects.
  ErrorList* errors() const { return errors_; }
  /// Whether every one of `keys` parsed (always, without a list): a rule over them may run.
  bool ok(std::initializer_list<std::string_view> keys) const;
  /// Whether no field of this object failed.
  bool clean() const;
  /// Marks the whole object failed: a field that decides what the others mean (a model's kind) did not parse, so no
  /// rule over this object may run on the fallbacks.
  void abandon();

  std::string get_string(std::string_view key, std::string fallback);
  std::string require_string(std::string_view key);
  bool get_bool(std::string_view key, bool fallback);
  /// Integer-valued number (7.5e9 is accepted, 2.5 is not).
  std::int64_t get_int(std::string_view key, std::int64_t fallback);
  std::int64_t require_int(std::string_view key);
  /// Integer >= 1.
  std::int64_t get_positive_int(std::string_view key, std::int64_t fallback);
  /// Integer in [low, high] (a count that fits an int); refused as `field=value must be an integer from low to high`,
  /// or `... >= low` when high is INT_MAX.
  int get_int_in(std::string_view key, int fallback, std::int64_t low, std::int64_t high = INT_MAX);
  int require_int_in(std::string_view key, std::int64_t low, std::int64_t high = INT_MAX);
  /// Finite number. With `unit`, a string is read by it ("400Gbps" by parse_bandwidth) and a plain number is SI.
  double get_number(std::string_view key, double fallback, UnitParser unit = nullptr);
  double require_number(std::string_view key, UnitParser unit = nullptr);
  /// Number > 0 (see get_number for `unit`).
  double get_positive(std::string_view key, double fallback, UnitParser unit = nullptr);
  double require_positive(std::string_view key, UnitParser unit = nullptr);
  /// Number >= 0 (see get_number for `unit`).
  double get_non_negative(std::string_view key, double fallback, UnitParser unit = nullptr);
  double require_non_negative(std::string_view key, UnitParser unit = nullptr);
  /// Fraction in (0, 1]: an efficiency, where 0 would mean that nothing is ever done.
  double get_fraction(std::string_view key, double fallback);
  double require_fraction(std::string_view key);
  /// List of strings (source citations, say); a non-string item is refused naming its index and value.
  std::vector<std::string> get_strings(std::string_view key, std::vector<std::string> fallback);
  /// One of `allowed`; anything else names the field, the value and the nearest allowed word.
  std::string get_choice(std::string_view key, const std::vector<std::string>& allowed, std::string fallback);

  /// Throws InputError for any key never asked for (nor listed in `also_known`), naming the nearest asked one; with a
  /// list, records one error per such key.
  void finish(const std::vector<std::string>& also_known = {});

 private:
  const Json& json_at(std::string_view key);
  const Json& need(std::string_view key);
  std::int64_t to_int(std::string_view key, const Json& value) const;
  double to_number(std::string_view key, UnitParser unit);
  /// guarded(); `as_check` drops an error that names a failed field (ErrorList::add_check), which a field's own
  /// parse error never is.
  template <class T, class Read>
  T guard(std::string_view key, T fallback, Read&& read, bool as_check);
  template <class T, class Read>
  T read_field(std::string_view key, T fallback, Read&& read) {
    return guard(key, std::move(fallback), read, false);
  }
  void record(std::string_view key, const std::string& message, bool as_check);

  const Json& object_;
  std::string path_;
  std::set<std::string, std::less<>> seen_;
  ErrorList* errors_ = nullptr;
  bool guarding_ = false;  ///< inside guarded(): nested reads throw to it
};

template <class T, class Read>
T ObjectReader::guard(std::string_view key, T fallback, Read&& read, bool as_check) {
  if (errors_ == nullptr || guarding_) return read();
  guarding_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{guarding_};
  try {
    return read();
  } catch (const InputError& e) {
    record(key, e.what(), as_check);
    return fallback;
  }
}

/// Compact rendering of a JSON value for error messages.
std::string show(const Json& value);

}  // namespace placesim

namespace placesim {

/// Sets `value` at a dotted `path` ("strategy.placement.gradients") inside `root`, creating objects on the way.
/// A string met on the way (a preset name) becomes {"preset": name} so that its fields can be overridden.
void set_path(Json& root, const std::string& path, Json value);

/// Parses a command-line value: JSON when it is valid JSON (numbers, true, [..], {..}), else the plain string.
Json parse_cli_value(const std::string& text);
/// The offset of the first byte of `text` that does not belong to a valid UTF-8 character, or npos.
std::size_t invalid_utf8_at(std::string_view text);

}  // namespace placesim
