#include "workloads/json/JsonReader.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>

#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Line and column of a byte offset, for syntax errors.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// A value as the user wrote it: a string keeps its quotes ("0Gbps"), so that a unit string reads as one.
std::string as_written(const Json& value) {
  return value.is_string() ? value.dump() : show(value);
}

}  // namespace

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  // A name the word begins (h100 -> h100-sxm) is a better guess than one a letter away (h200): the shortest such.
  std::string prefixed;
  if (word.size() >= 2)
    for (const auto& candidate : candidates)
      if (candidate.size() > word.size() && candidate.compare(0, word.size(), word) == 0 &&
          (prefixed.empty() || candidate.size() < prefixed.size()))
        prefixed = candidate;
  if (!prefixed.empty()) return prefixed;
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(3, word.size() / 2) + 1;
  for (const auto& candidate : candidates) {
    std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string show(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  // Replacement characters for invalid UTF-8: a message about a bad value must never fail itself.
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

namespace {

// Appends code point `cp` to `out` as UTF-8.
void append_utf8(std::uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The 4 hex digits at text[i], or nullopt.
std::optional<std::uint32_t> hex4(std::string_view text, std::size_t i) {
  if (i + 4 > text.size()) return std::nullopt;
  std::uint32_t v = 0;
  for (std::size_t k = i; k < i + 4; ++k) {
    const char c = text[k];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<std::uint32_t>(d);
  }
  return v;
}

// Decodes the \u escape whose 'u' is at text[j] (a surrogate pair takes two) into `out`; returns the offset of its
// last digit. One the parser refuses (bad digits, a lone surrogate) is kept as written: it never gets that far.
std::size_t decode_unicode_escape(std::string_view text, std::size_t j, std::string& out) {
  auto cp = hex4(text, j + 1);
  if (!cp || (*cp >= 0xDC00 && *cp <= 0xDFFF)) {
    out += "\\u";
    return j;
  }
  if (*cp < 0xD800 || *cp > 0xDBFF) {
    append_utf8(*cp, out);
    return j + 4;
  }
  auto low = text.substr(j + 5, 2) == "\\u" ? hex4(text, j + 7) : std::nullopt;
  if (!low || *low < 0xDC00 || *low > 0xDFFF) {
    out += "\\u";
    return j;
  }
  append_utf8(0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00), out);
  return j + 10;
}

// Reads the string starting at the quote text[i]; returns its end (one past the closing quote) or npos when it does
// not close, with its escapes decoded as the parser decodes them, so that "l\u0061yers" and "layers" are one key.
std::size_t scan_string(std::string_view text, std::size_t i, std::string& out) {
  out.clear();
  for (std::size_t j = i + 1; j < text.size(); ++j) {
    char c = text[j];
    if (c == '"') return j + 1;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++j >= text.size()) return std::string::npos;
    switch (text[j]) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u':
        j = decode_unicode_escape(text, j, out);
        break;
      default:
        out += text[j];
    }
  }
  return std::string::npos;
}

std::string where(std::string_view text, std::size_t offset) {
  auto [line, column] = line_column(text, offset);
  return std::to_string(line) + ":" + std::to_string(column);
}

// A key for a message: as decoded, unless that has control characters (then as written).
std::string shown_key(const std::string& key, std::string_view written) {
  for (unsigned char c : key)
    if (c < 0x20) return std::string(written);
  return key;
}

}  // namespace

std::optional<JsonStructureIssue> json_structure_issue(std::string_view text) {
  struct Frame {
    bool object = false;
    std::map<std::string, std::size_t> keys;  // key -> offset of its first occurrence
  };
  std::vector<Frame> stack;
  std::string key;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t end = scan_string(text, i, key);
      if (end == std::string::npos) return std::nullopt;  // unterminated: the parser reports it
      std::size_t next = end;
      while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next]))) ++next;
      if (next < text.size() && text[next] == ':' && !stack.empty() && stack.back().object) {
        auto [it, fresh] = stack.back().keys.try_emplace(key, i);
        if (!fresh) return JsonStructureIssue{i, it->second, key};
      }
      i = end;
      continue;
    }
    if (c == '{' || c == '[') {
      if (stack.size() >= kMaxJsonDepth) return JsonStructureIssue{i, i, ""};
      stack.push_back(Frame{c == '{', {}});
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    }
    ++i;
  }
  return std::nullopt;
}

std::string JsonStructureIssue::describe(std::string_view text) const {
  if (key.empty()) return "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels is refused";
  // The spellings as written, between the quotes: named when escapes make them differ ("l\u0061yers", "layers").
  auto written = [&](std::size_t quote) {
    std::string ignored;
    const std::size_t end = scan_string(text, quote, ignored);
    return std::string(text.substr(quote + 1, end - quote - 2));
  };
  const std::string here = written(offset), first = written(first_offset);
  return "key \"" + shown_key(key, here) + "\" appears twice in one object (first at " + where(text, first_offset) +
         (here == first ? "" : " as \"" + first + "\", here as \"" + here + "\"") +
         "); JSON parsers keep only the last, so say it once";
}

void check_json_structure(const std::string& text, const std::string& origin) {
  if (auto issue = json_structure_issue(text))
    throw InputError(origin + ":" + where(text, issue->offset) + ": " + issue->describe(text));
}

Json parse_json_text(const std::string& text, const std::string& origin) {
  check_json_structure(text, origin);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string what = e.what();
    auto colon = what.rfind(": ");
    std::string reason = colon == std::string::npos ? what : what.substr(colon + 2);
    throw InputError(origin + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": malformed JSON: " + reason);
  } catch (const Json::out_of_range& e) {
    // A number literal beyond double range (1e309): the parser refuses it without a position.
    std::string what = e.what();
    auto colon = what.rfind("] ");
    throw InputError(origin + ": " + (colon == std::string::npos ? what : what.substr(colon + 2)) +
                     " (a number beyond the range of a double)");
  }
}

void refuse_name(const std::string& field, const std::string& name, const std::string& what,
                 const std::vector<std::string>& known, const std::string& otherwise) {
  std::string guess = nearest(name, known);
  throw InputError(field + "=" + name + " is not " + what +
                   (guess.empty() ? otherwise : " (did you mean '" + guess + "'?)"));
}

std::string known_names(const std::vector<std::string>& known) {
  std::string out = " (known:";
  for (std::size_t i = 0; i < known.size(); ++i) out += (i ? ", " : " ") + known[i];
  return out + ")";
}

namespace {

// What a file that is not a regular one is, for the refusal.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a file of an unknown kind";
}

InputError not_regular(const std::string& path, mode_t mode) {
  return InputError("'" + path + "' is " + file_kind(mode) + ", not a regular file: an input must be a file");
}

[[noreturn]] void refuse_size(const std::string& name, const std::string& size, std::uint64_t limit) {
  const std::string mib = limit >= (1 << 20) ? " (" + std::to_string(limit >> 20) + " MiB)" : "";
  throw InputError(name + " " + size + "; an input read whole may hold at most " + std::to_string(limit) + " bytes" +
                   mib + ": is it the input you meant?");
}

// Reads `fd` to its end, refusing (naming `name`) past `limit` bytes: reading stops one chunk after it.
std::string read_bounded(int fd, const std::string& name, std::uint64_t limit) {
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (true) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {  // a non-blocking standard input: wait until it has data
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    if (n < 0) throw InputError("cannot read " + name + ": " + std::strerror(errno));
    if (n == 0) return text;
    text.append(chunk.data(), static_cast<std::size_t>(n));
    if (text.size() > limit) refuse_size(name, "gives more than " + std::to_string(limit) + " bytes", limit);
  }
}

}  // namespace

int open_input_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw not_regular(path, st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  // Checked again on what was opened: the path may have been replaced in between.
  const bool opened = ::fstat(fd, &st) == 0;
  const int error = errno;
  if (opened && S_ISREG(st.st_mode)) return fd;
  ::close(fd);
  if (!opened) throw InputError("cannot open '" + path + "': " + std::strerror(error));
  throw not_regular(path, st.st_mode);
}

std::string read_input_file(const std::string& path, std::uint64_t limit_bytes) {
  const int fd = open_input_file(path);
  try {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) > limit_bytes)
      refuse_size("'" + path + "'", "holds " + std::to_string(st.st_size) + " bytes", limit_bytes);
    std::string text = read_bounded(fd, "'" + path + "'", limit_bytes);
    ::close(fd);
    return text;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::string read_standard_input(std::uint64_t limit_bytes) {
  return read_bounded(STDIN_FILENO, "standard input", limit_bytes);
}

Json read_json_file(const std::string& path) {
  return parse_json_text(read_input_file(path, kMaxJsonInputBytes), path);
}

ObjectReader::ObjectReader(const Json& object, std::string path, ErrorList* errors)
    : object_(object), path_(std::move(path)), errors_(errors) {
  if (!object_.is_object()) throw InputError(path_ + " must be a JSON object, got " + show(object_));
}

bool ObjectReader::has(std::string_view key) {
  seen_.emplace(key);  // asking for a key makes it part of the schema
  return object_.contains(key);
}

std::string ObjectReader::field(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void ObjectReader::skip(std::string_view key) {
  seen_.emplace(key);
}

const Json& ObjectReader::json_at(std::string_view key) {
  seen_.emplace(key);
  return object_.find(key).value();
}

const Json* ObjectReader::child(std::string_view key) {
  if (!has(key)) return nullptr;
  return &json_at(key);
}

const Json& ObjectReader::need(std::string_view key) {
  if (!has(key)) {
    // A misspelt required key is missing and unknown at once: name the key that was probably meant for it.
    // Keys the parser already asked for are known ones, not misspellings; a guess is at most two edits away.
    std::vector<std::string> given;
    for (auto it = object_.begin(); it != object_.end(); ++it)
      if (!seen_.count(it.key()) && edit_distance(key, it.key()) <= 2) given.push_back(it.key());
    const std::string guess = nearest(key, given);
    throw InputError(field(key) + " is required but missing" +
                     (guess.empty() ? "" : " (" + field(guess) + " is given: a misspelling?)"));
  }
  return json_at(key);
}

const Json& ObjectReader::require(std::string_view key) {
  static const Json absent;
  return *read_field(key, &absent, [&] { return &need(key); });
}

void ObjectReader::check(bool ok, std::string_view key, const std::string& rule) {
  if (ok) return;
  auto it = object_.find(key);
  refuse(key, field(key) + "=" + (it == object_.end() ? std::string("null") : as_written(*it)) + " " + rule);
}

void ObjectReader::refuse(std::string_view key, const std::string& message) {
  if (errors_ == nullptr || guarding_) throw InputError(message);
  record(key, message, true);
}

void ObjectReader::record(std::string_view key, const std::string& message, bool as_check) {
  if (as_check)
    errors_->add_check(message);
  else
    errors_->add(message);
  errors_->fail(field(key));
}

bool ObjectReader::ok(std::initializer_list<std::string_view> keys) const {
  if (errors_ == nullptr) return true;
  for (std::string_view key : keys)
    if (errors_->failed(field(key))) return false;
  return true;
}

bool ObjectReader::clean() const {
  return errors_ == nullptr || !errors_->failed_within(path_);
}

void ObjectReader::abandon() {
  if (errors_ != nullptr) errors_->fail(path_);
}

std::string ObjectReader::get_string(std::string_view key, std::string fallback) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] {
    const Json& v = json_at(key);
    if (!v.is_string()) throw InputError(field(key) + "=" + show(v) + " must be a string");
    return v.get<std::string>();
  });
}

std::string ObjectReader::require_string(std::string_view key) {
  return read_field(key, std::string(), [&] {
    need(key);
    return get_string(key, "");
  });
}

bool ObjectReader::get_bool(std::string_view key, bool fallback) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] {
    const Json& v = json_at(key);
    if (!v.is_boolean()) throw InputError(field(key) + "=" + as_written(v) + " must be true or false");
    return v.get<bool>();
  });
}

std::int64_t ObjectReader::to_int(std::string_view key, const Json& v) const {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) return static_cast<std::int64_t>(d);
  }
  throw InputError(field(key) + "=" + as_written(v) + " must be an integer");
}

std::int64_t ObjectReader::get_int(std::string_view key, std::int64_t fallback) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] { return to_int(key, json_at(key)); });
}

std::int64_t ObjectReader::require_int(std::string_view key) {
  return read_field(key, std::int64_t{0}, [&] { return to_int(key, need(key)); });
}

int ObjectReader::get_int_in(std::string_view key, int fallback, std::int64_t low, std::int64_t high) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] { return require_int_in(key, low, high); });
}

int ObjectReader::require_int_in(std::string_view key, std::int64_t low, std::int64_t high) {
  // A failed read gives `low`: a value in range, so that what follows computes nothing impossible.
  return read_field(key, static_cast<int>(low), [&] {
    const Json& v = need(key);
    const std::string rule = high == INT_MAX
                                 ? " must be an integer >= " + std::to_string(low)
                                 : " must be an integer from " + std::to_string(low) + " to " + std::to_string(high);
    std::int64_t n = 0;
    try {
      n = to_int(key, v);
    } catch (const InputError&) {
      throw InputError(field(key) + "=" + as_written(v) + rule);
    }
    if (n < low || n > high) throw InputError(field(key) + "=" + as_written(v) + rule);
    return static_cast<int>(n);
  });
}

std::int64_t ObjectReader::get_positive_int(std::string_view key, std::int64_t fallback) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] {
    const Json& v = json_at(key);
    std::int64_t n = 0;
    try {
      n = to_int(key, v);
    } catch (const InputError&) {
      throw InputError(field(key) + "=" + as_written(v) + " must be a positive integer");
    }
    if (n < 1) throw InputError(field(key) + "=" + as_written(v) + " must be a positive integer");
    return n;
  });
}

double ObjectReader::to_number(std::string_view key, UnitParser unit) {
  const Json& v = json_at(key);
  if (unit && v.is_string()) {
    double d = unit(v.get<std::string>(), field(key));
    check(std::isfinite(d), key, "must be finite");
    return d;
  }
  if (!v.is_number()) throw InputError(field(key) + "=" + as_written(v) + " must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d)) throw InputError(field(key) + "=" + show(v) + " must be finite");
  // A bare number is read in SI units by the unit's parser, which refuses one no value in SI could plausibly be.
  if (unit) return read_bare_number(unit, d, field(key) + "=" + show(v));
  return d;
}

double ObjectReader::get_number(std::string_view key, double fallback, UnitParser unit) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] { return to_number(key, unit); });
}

double ObjectReader::require_number(std::string_view key, UnitParser unit) {
  return read_field(key, 0.0, [&] {
    need(key);
    return to_number(key, unit);
  });
}

double ObjectReader::get_positive(std::string_view key, double fallback, UnitParser unit) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] {
    double d = to_number(key, unit);
    check(d > 0, key, "must be positive");
    return d;
  });
}

// A required value that fails to read gives the smallest it may be (1 where it must be positive), so that what follows
// divides by nothing that is zero.
double ObjectReader::require_positive(std::string_view key, UnitParser unit) {
  return read_field(key, 1.0, [&] {
    need(key);
    return get_positive(key, 0, unit);
  });
}

double ObjectReader::get_non_negative(std::string_view key, double fallback, UnitParser unit) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] {
    double d = to_number(key, unit);
    check(d >= 0, key, "must not be negative");
    return d;
  });
}

double ObjectReader::require_non_negative(std::string_view key, UnitParser unit) {
  return read_field(key, 0.0, [&] {
    need(key);
    return get_non_negative(key, 0, unit);
  });
}

double ObjectReader::get_fraction(std::string_view key, double fallback) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] {
    double d = to_number(key, nullptr);
    check(d > 0 && d <= 1, key, "must be in (0, 1]");
    return d;
  });
}

double ObjectReader::require_fraction(std::string_view key) {
  return read_field(key, 1.0, [&] {
    need(key);
    return get_fraction(key, 0);
  });
}

std::vector<std::string> ObjectReader::get_strings(std::string_view key, std::vector<std::string> fallback) {
  if (!has(key)) return fallback;
  return read_field(key, fallback, [&] {
    const Json& list = json_at(key);
    if (!list.is_array()) throw InputError(field(key) + "=" + show(list) + " must be a list of strings");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string())
        throw InputError(field(key) + "[" + std::to_string(i) + "]=" + show(list[i]) + " must be a string");
      out.push_back(list[i].get<std::string>());
    }
    return out;
  });
}

std::string ObjectReader::get_choice(std::string_view key, const std::vector<std::string>& allowed,
                                     std::string fallback) {
  return read_field(key, fallback, [&] {
    std::string value = get_string(key, fallback);
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return value;
    std::string message = field(key) + "=" + value + " is not one of:";
    for (const auto& a : allowed) message += " " + a;
    std::string guess = nearest(value, allowed);
    if (!guess.empty()) message += " (did you mean '" + guess + "'?)";
    throw InputError(message);
  });
}

void ObjectReader::finish(const std::vector<std::string>& also_known) {
  // seen_ holds every key the parser asked for, present or not: the schema of this object.
  std::vector<std::string> known(seen_.begin(), seen_.end());
  known.insert(known.end(), also_known.begin(), also_known.end());
  std::vector<std::string> unknown;
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    const std::string& key = it.key();
    if (seen_.count(key) || std::find(also_known.begin(), also_known.end(), key) != also_known.end()) continue;
    std::string message = field(key);
    std::string guess = nearest(key, known);
    if (!guess.empty()) message += " (did you mean '" + field(guess) + "'?)";
    unknown.push_back(message);
  }
  if (unknown.empty()) return;
  if (errors_ != nullptr) {
    for (const std::string& key : unknown) errors_->add("unknown key " + key);
    return;
  }
  std::string message = unknown.size() == 1 ? "unknown key " : "unknown keys ";
  for (std::size_t i = 0; i < unknown.size(); ++i) message += (i ? ", " : "") + unknown[i];
  throw InputError(message);
}

}  // namespace placesim

namespace placesim {

void set_path(Json& root, const std::string& path, Json value) {
  if (path.empty()) throw InputError("an empty field path cannot be set");
  // Its keys become JSON keys, which reports write back: they must be UTF-8 as the file's own keys are.
  if (std::size_t bad = invalid_utf8_at(path); bad != std::string::npos)
    throw InputError("--set field path: byte " + std::to_string(bad + 1) + " is not valid UTF-8");
  Json* node = &root;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw InputError("field path '" + path + "' has an empty component");
    if (node->is_null()) *node = Json::object();
    if (node->is_string()) *node = Json{{"preset", *node}};
    if (!node->is_object())
      throw InputError("field path '" + path + "': '" + path.substr(0, start ? start - 1 : 0) + "' is not an object");
    if (dot == std::string::npos) {
      (*node)[key] = std::move(value);
      return;
    }
    node = &(*node)[key];
    start = dot + 1;
  }
}

Json parse_cli_value(const std::string& text) {
  check_json_structure(text, "--set value");
  Json parsed = Json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  // Taken as a plain string: it must be text the reports can carry (JSON strings are UTF-8).
  if (std::size_t bad = invalid_utf8_at(text); bad != std::string::npos)
    throw InputError("--set value: byte " + std::to_string(bad + 1) + " is not valid UTF-8");
  return Json(text);
}

std::size_t invalid_utf8_at(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    // Continuation bytes after the lead: 0 (ASCII), 1, 2 or 3; C0, C1 and F5..FF never start a character.
    const std::size_t n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 4;
    if (n == 4 || c == 0xC0 || c == 0xC1 || c > 0xF4) return i;
    std::uint32_t cp = n == 0 ? c : c & (0x3F >> n);
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= text.size()) return i;
      const auto d = static_cast<unsigned char>(text[i + k]);
      if ((d >> 6) != 0x2) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += n + 1;
  }
  return std::string::npos;
}

}  // namespace placesim
