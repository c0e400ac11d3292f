#include "traces/sweep/SweepMerge.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

#include "strategies/sweep/Sweep.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "workloads/json/Error.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

namespace {

// Reads `{"key":` then a value up to its end at `pos`; each returns false when the text is not what it expects.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool literal(std::string_view s) {
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  bool digits(std::uint64_t& value) {
    std::size_t end = pos_;
    while (end < text_.size() && end - pos_ < 20 && text_[end] >= '0' && text_[end] <= '9') ++end;
    if (end == pos_ || end - pos_ > 19) return false;
    value = std::stoull(std::string(text_.substr(pos_, end - pos_)));
    pos_ = end;
    return true;
  }
  // A JSON string without escapes (hashes, versions and shards never have any).
  bool plain_string(std::string& value) {
    if (!literal("\"")) return false;
    std::size_t end = text_.find('"', pos_);
    if (end == std::string_view::npos) return false;
    value = std::string(text_.substr(pos_, end - pos_));
    if (value.find('\\') != std::string::npos) return false;
    pos_ = end + 1;
    return true;
  }
  // A JSON number's text (digits, sign, point, exponent), non-empty.
  bool number_text(std::string& value) {
    std::size_t end = pos_;
    while (end < text_.size() && std::string_view("0123456789+-.eE").find(text_[end]) != std::string_view::npos) ++end;
    if (end == pos_) return false;
    value = std::string(text_.substr(pos_, end - pos_));
    pos_ = end;
    return true;
  }
  std::size_t pos() const { return pos_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// A results file mapped into memory.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    try {
      fd_ = open_input_file(path);  // a FIFO would block the merge, a device map nothing or never end
    } catch (const InputError& e) {
      error_ = e.what();
      return;
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      error_ = "cannot read '" + path + "': " + std::strerror(errno);
      return;
    }
    // A sweep writing the file holds an exclusive flock; a shared one fails then (filesystems without flock: no
    // answer, taken as not locked).
    locked_ = ::flock(fd_, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ == 0) return;
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      error_ = "cannot read '" + path + "': " + std::strerror(errno);
    }
  }
  ~MappedFile() {
    if (map_) ::munmap(map_, size_);
    if (fd_ >= 0) ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view text() const { return map_ ? std::string_view(static_cast<const char*>(map_), size_) : ""; }
  const std::string& error() const { return error_; }
  bool locked_by_writer() const { return locked_; }
  bool same_file(const MappedFile& other) const {
    return error_.empty() && other.error_.empty() && dev_ == other.dev_ && ino_ == other.ino_;
  }

 private:
  int fd_ = -1;
  void* map_ = nullptr;
  std::size_t size_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool locked_ = false;
  std::string error_;
};

// One row found in a file: where its line is, for the output.
struct Found {
  std::uint64_t index;
  std::uint32_t file;
  std::string_view line;
  std::size_t shard_begin, shard_end;
};

// A non-negative decimal without a leading zero (but "0"), or nullopt.
std::optional<std::uint64_t> plain_number(std::string_view text) {
  if (text.empty() || text.size() > 19 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The shard a row's "i/M" names ("" is the whole sweep, 0/1); nullopt unless 0 <= i < M, M >= 2, both written as
// SweepRows writes them (strict: the text is compared as a label too, which parse_shard's --shard input is not).
std::optional<Shard> parse_shard_text(std::string_view text) {
  if (text.empty()) return Shard{};
  auto slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto i = plain_number(text.substr(0, slash));
  auto m = plain_number(text.substr(slash + 1));
  if (!i || !m || *m < 2 || *i >= *m) return std::nullopt;
  return Shard{*i, *m};
}

// `text` as one word of a shell command line, for advice to copy.
std::string shell_word(const std::string& text) {
  if (!text.empty() &&
      text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./+-=,:@%") ==
          std::string::npos)
    return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Why a line that starts as a row (`has_identity`) or is no JSON at all is not one complete row, or "".
std::string row_damage(std::string_view row, bool has_identity, const Json& parsed) {
  // The whole row must be one JSON object (a damaged or CR-terminated line would be copied as is).
  if (!has_identity || row.back() != '}' || !parsed.is_object() || !parsed.contains("status") ||
      !parsed["status"].is_string())
    return "not one complete JSON object with a status" +
           std::string(row.back() == '\r' ? "; it ends in a carriage return" : "");
  // A key twice (an edited or concatenated line): the identity read here and the value a JSON reader keeps differ.
  auto issue = json_structure_issue(row);
  if (!issue) return "";
  if (issue->key.empty()) return issue->describe(row);
  return "key " + Json(issue->key).dump(-1, ' ', false, Json::error_handler_t::replace) +
         " appears twice, at columns " + std::to_string(issue->first_offset + 1) + " and " +
         std::to_string(issue->offset + 1) + ": JSON readers would keep one or the other";
}

// The most points a sweep can have (strategies/sweep: 2^53), and the most a merge tracks one by one beyond the rows
// it was given: a claimed count far above the rows is reported as a count, not enumerated.
constexpr std::uint64_t kMaxSweepPoints = std::uint64_t{1} << 53;
constexpr std::uint64_t kMaxUntrackedGap = 50'000'000;
// Damaged lines named one by one per file; the rest are counted (a file of garbage must not give a million lines).
constexpr std::size_t kDamagedLinesListed = 20;

class Merger {
 public:
  explicit Merger(const MergeOptions& options) : options_(options) {}

  MergeSummary run() {
    open_files();
    for (std::uint32_t f = 0; f < files_.size(); ++f)
      if (files_[f]->error().empty() && !repeated_[f] && !stop_) scan(f);
    check_damage();
    check_expected_sweep();
    check_coverage();
    if (!problems_.empty()) throw InputError(report());
    if (!options_.out.empty()) write();
    return summary_;
  }

 private:
  void problem(std::string text) { problems_.push_back(std::move(text)); }

  void open_files() {
    if (options_.shards.empty()) throw InputError("sweep merge: no results files given");
    for (std::uint32_t f = 0; f < options_.shards.size(); ++f) {
      files_.push_back(std::make_unique<MappedFile>(options_.shards[f]));
      shard_of_file_.emplace_back();
      damaged_lines_.emplace_back();
      rows_of_file_.push_back(0);
      repeated_.push_back(false);
      const MappedFile& m = *files_.back();
      if (!m.error().empty()) {
        problem(m.error());
        continue;
      }
      if (m.locked_by_writer())
        problem(options_.shards[f] + ": a sweep is still writing it (it holds the file's lock); merge when it ends");
      for (std::uint32_t g = 0; g < f && !repeated_[f]; ++g)
        if (files_[g]->same_file(m)) {
          problem(options_.shards[f] + ": given twice (also as " + options_.shards[g] + ")");
          repeated_[f] = true;
        }
      if (!repeated_[f]) {
        std::string_view text = m.text();
        total_lines_ += static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n'));
      }
    }
    if (!options_.out.empty()) {
      MappedFile out(options_.out);
      for (std::uint32_t f = 0; f < files_.size(); ++f)
        if (files_[f]->same_file(out))
          throw InputError("sweep merge: the output " + options_.out + " is one of the files to merge");
    }
  }

  // The first row of all files fixes the sweep, version, point count and shard count the others must have.
  bool check_identity(const RowIdentity& id, std::uint32_t file, std::size_t line) {
    const std::string where = options_.shards[file] + ":" + std::to_string(line) + ": ";
    if (!reference_) {
      if (id.points == 0 || id.points > kMaxSweepPoints) {
        problem(where + "a sweep of " + std::to_string(id.points) + " points: no sweep has that many");
        stop_ = true;
        return false;
      }
      if (options_.sweep_points && *options_.sweep_points != id.points) {
        problem(where + "a row of a " + std::to_string(id.points) +
                "-point sweep; the sweep file given with --sweep has " + std::to_string(*options_.sweep_points) +
                " points");
        stop_ = true;
        return false;
      }
      reference_ = id;
      reference_where_ = options_.shards[file] + ":" + std::to_string(line);
      summary_.sweep = id.sweep;
      summary_.version = id.version;
      summary_.points = id.points;
      summary_.shard_count = parse_shard_text(id.shard)->count;
      // Coverage is tracked per point (a bit each) unless the rows given could never come close.
      if (id.points <= total_lines_ + kMaxUntrackedGap)
        seen_.assign(id.points, false);
      else
        untracked_ = true;
      return true;
    }
    const RowIdentity& r = *reference_;
    auto differs = [&](const char* what, const std::string& here, const std::string& there) {
      problem(where + what + " " + here + ", but " + there + " in " + reference_where_);
      return false;
    };
    if (id.sweep != r.sweep)
      return differs("a row of sweep", id.sweep, r.sweep + " (two different sweep files, or one edited between runs)");
    if (id.version != r.version) return differs("written by placesim", id.version, r.version);
    if (id.points != r.points)
      return differs("a sweep of", std::to_string(id.points) + " points", std::to_string(r.points));
    if (id.device_memory != r.device_memory) {
      auto shown = [](const std::string& v) { return v.empty() ? std::string("none") : v + " bytes"; };
      return differs("--device-memory", shown(id.device_memory), shown(r.device_memory));
    }
    std::uint64_t count = parse_shard_text(id.shard)->count;
    if (count != summary_.shard_count)
      return differs(
          "shard", id.shard.empty() ? "0/1" : id.shard,
          "shards of " + std::to_string(summary_.shard_count) + " (" + (r.shard.empty() ? "0/1" : r.shard) + ")");
    return true;
  }

  // A line --resume does not repair: it refuses it, or keeps a row cut after its status. The file must be repaired
  // (the line deleted) before its shard is resumed; check_damage says how.
  void damaged(std::uint32_t file, std::size_t line, const std::string& what) {
    std::vector<std::size_t>& lines = damaged_lines_[file];
    lines.push_back(line);
    if (lines.size() <= kDamagedLinesListed) problem(options_.shards[file] + ":" + std::to_string(line) + ": " + what);
  }

  // Checks one line; false when the rest of the file should not be read (it is of another sweep or shard).
  bool scan_line(std::uint32_t file, std::string_view row, std::size_t line) {
    const std::string where = options_.shards[file] + ":" + std::to_string(line) + ": ";
    if (row.empty()) {
      damaged(file, line, "an empty line");
      return true;
    }
    auto id = row_identity(row);
    const Json parsed = Json::parse(row, nullptr, false);
    // Valid JSON that does not start as a row is another program's (or an old placesim's) file: not read further.
    if (!id && !parsed.is_discarded()) {
      problem(where + "not a sweep row of placesim 0.19 or later (rows start {\"index\":N,...,\"sweep\":...})");
      return false;
    }
    if (std::string damage = row_damage(row, id.has_value(), parsed); !damage.empty()) {
      damaged(file, line, "a damaged row (" + damage + ")");
      return true;
    }
    if (!check_identity(*id, file, line)) return false;
    std::string& shard = shard_of_file_[file];
    const std::string label = id->shard.empty() ? "0/1" : id->shard;
    if (rows_of_file_[file] == 0) shard = label;
    if (label != shard) {
      problem(where + "a row of shard " + label + " in a file of shard " + shard);
      return false;
    }
    if (id->index >= summary_.points || !parse_shard_text(id->shard)->contains(id->index)) {
      problem(where + "point " + std::to_string(id->index) + " is not a point of shard " + shard + " of a " +
              std::to_string(summary_.points) + "-point sweep");
      return false;
    }
    ++rows_of_file_[file];
    if (!untracked_) {
      if (seen_[id->index]) {
        duplicates_.push_back({id->index, file});
        return true;
      }
      seen_[id->index] = true;
    }
    found_.push_back({id->index, file, row, id->shard_begin, id->shard_end});
    count_status(parsed["status"].get<std::string>());
    return true;
  }

  void scan(std::uint32_t file) {
    std::string_view text = files_[file]->text();
    std::size_t start = 0, line = 0;
    while (start < text.size() && !stop_) {
      std::size_t nl = text.find('\n', start);
      ++line;
      if (nl == std::string_view::npos) {
        problem(options_.shards[file] + ":" + std::to_string(line) +
                ": a cut last line (its task was killed while writing); " +
                (damaged_lines_[file].empty() ? "resume that shard (--resume drops it)"
                                              : "--resume drops it once the damaged lines above are deleted"));
        return;
      }
      if (!scan_line(file, text.substr(start, nl - start), line)) return;
      start = nl + 1;
    }
  }

  void count_status(const std::string& status) {
    if (status == "ok")
      ++summary_.ok;
    else if (status == "invalid")
      ++summary_.invalid;
    else if (status == "filtered")
      ++summary_.filtered;
    else
      ++summary_.error;
  }

  // How to repair each file with damaged lines: --resume would refuse it (or keep the damage), so the advice to
  // resume its shard holds only after the lines are deleted.
  void check_damage() {
    for (std::uint32_t f = 0; f < files_.size(); ++f) {
      const std::vector<std::size_t>& lines = damaged_lines_[f];
      if (lines.empty()) continue;
      const std::string& path = options_.shards[f];
      std::string text = path + ": " + std::to_string(lines.size()) + " damaged line(s), which --resume does not " +
                         "repair (it refuses them, or keeps a row cut after its status): delete ";
      if (lines.size() > kDamagedLinesListed) {
        text += "them (the first " + std::to_string(kDamagedLinesListed) + " are listed above)";
      } else {
        std::string script;
        for (std::size_t line : lines) script += (script.empty() ? "" : ";") + std::to_string(line) + "d";
        text += "them (sed -i '" + script + "' " + shell_word(path) + ")";
      }
      const std::string& shard = shard_of_file_[f];
      problem(text + ", then resume " +
              (shard.empty() ? std::string("its shard with --shard i/M --resume")
                             : "shard " + shard + " with --shard " + shard + " --resume"));
    }
  }

  void check_expected_sweep() {
    if (!reference_) {
      if (problems_.empty()) problem("no rows in " + std::to_string(files_.size()) + " file(s)");
      return;
    }
    if (options_.sweep_hash && *options_.sweep_hash != reference_->sweep)
      problem("the rows are of sweep " + reference_->sweep + " but the sweep file given with --sweep hashes to " +
              *options_.sweep_hash + ": it changed since the shards were written (or is another sweep)");
  }

  // The file that holds point `index` (found_ before it is sorted), for a duplicate's message.
  std::string holder(std::uint64_t index) const {
    for (const Found& f : found_)
      if (f.index == index) return options_.shards[f.file];
    return "?";
  }

  void check_coverage() {
    if (!reference_) return;
    if (!duplicates_.empty()) {
      std::string text = std::to_string(duplicates_.size()) +
                         " point(s) appear more than once (every point must be in exactly one file): ";
      for (std::size_t k = 0; k < duplicates_.size() && k < 10; ++k)
        text += (k ? "; " : "") + std::string("point ") + std::to_string(duplicates_[k].index) + " is in " +
                holder(duplicates_[k].index) + " and again in " + options_.shards[duplicates_[k].file];
      problem(text);
    }
    std::string empty;
    for (std::uint32_t f = 0; f < files_.size(); ++f)
      if (files_[f]->error().empty() && !repeated_[f] && files_[f]->text().empty())
        empty += (empty.empty() ? "" : ", ") + options_.shards[f];
    if (untracked_) {
      problem("the files hold " + std::to_string(found_.size()) + " rows of a " + std::to_string(summary_.points) +
              "-point sweep: at least " + std::to_string(summary_.points - found_.size()) + " points are missing" +
              (empty.empty() ? "" : " (empty files: " + empty + ")"));
      return;
    }
    // Missing indices, by the shard that owns them.
    std::map<std::uint64_t, std::vector<std::uint64_t>> missing;
    std::uint64_t total_missing = 0;
    const std::uint64_t m = summary_.shard_count;
    for (std::uint64_t i = 0; i < seen_.size(); ++i)
      if (!seen_[i]) {
        ++total_missing;
        auto& list = missing[i % m];
        if (list.size() < 64) list.push_back(i);
      }
    if (total_missing == 0) return;
    std::string text =
        "missing " + std::to_string(total_missing) + " of " + std::to_string(summary_.points) + " points:";
    for (const auto& [shard, indices] : missing) {
      std::string label = std::to_string(shard) + "/" + std::to_string(m);
      std::string file;
      bool damaged = false;
      for (std::uint32_t f = 0; f < files_.size(); ++f)
        if (shard_of_file_[f] == label) {
          file = options_.shards[f];
          damaged = !damaged_lines_[f].empty();
        }
      std::uint64_t expected = summary_.points / m + (shard < summary_.points % m ? 1 : 0);
      std::uint64_t count = 0;
      for (std::uint64_t i = shard; i < summary_.points; i += m) count += seen_[i] ? 0 : 1;
      text += "\n    shard " + label + " (" +
              (file.empty()
                   ? std::string("no file given holds it")
                   : file + ": " + std::to_string(expected - count) + " of " + std::to_string(expected) + " rows") +
              (damaged ? "; delete its damaged lines (above), then" : ";") + " resume it with --shard " + label +
              " --resume): " + index_ranges(indices) +
              (count > indices.size() ? " ... (" + std::to_string(count) + " in all)" : "");
    }
    if (!empty.empty()) text += "\n    empty files given: " + empty;
    problem(text);
  }

  std::string report() const {
    std::string text = "sweep merge: the files do not hold every point of one sweep exactly once";
    for (const auto& p : problems_) text += "\n  " + p;
    return text;
  }

  void write() {
    std::sort(found_.begin(), found_.end(), [](const Found& a, const Found& b) { return a.index < b.index; });
    AtomicFileWriter out(options_.out);
    for (const Found& f : found_) {
      out.write(f.line.substr(0, f.shard_begin));
      out.write(f.line.substr(f.shard_end));
      out.write("\n");
    }
    out.commit();
  }

  struct Duplicate {
    std::uint64_t index;
    std::uint32_t file;  ///< where it was seen again
  };

  const MergeOptions& options_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<std::string> shard_of_file_;
  std::vector<std::uint64_t> rows_of_file_;
  std::vector<bool> repeated_;                           ///< the file is one given before (same device and inode)
  std::vector<std::vector<std::size_t>> damaged_lines_;  ///< per file: its lines --resume does not repair
  std::uint64_t total_lines_ = 0;
  std::optional<RowIdentity> reference_;
  std::string reference_where_;
  std::vector<bool> seen_;  ///< per point: a row for it was found
  bool untracked_ = false;  ///< the sweep claims far more points than the files have rows: counted, not enumerated
  bool stop_ = false;       ///< the first row is unusable: nothing else can be checked against it
  std::vector<Found> found_;
  std::vector<Duplicate> duplicates_;
  std::vector<std::string> problems_;
  MergeSummary summary_;
};

}  // namespace

std::optional<RowIdentity> row_identity(std::string_view line) {
  Cursor c(line);
  RowIdentity id;
  if (!c.literal("{\"index\":") || !c.digits(id.index)) return std::nullopt;
  id.shard_begin = id.shard_end = c.pos();
  if (c.literal(",\"shard\":")) {
    if (!c.plain_string(id.shard) || id.shard.empty() || !parse_shard_text(id.shard)) return std::nullopt;
    id.shard_end = c.pos();
  }
  if (!c.literal(",\"sweep\":") || !c.plain_string(id.sweep) || !c.literal(",\"version\":") ||
      !c.plain_string(id.version) || !c.literal(",\"points\":") || !c.digits(id.points))
    return std::nullopt;
  if (c.literal(",\"device_memory\":") && !c.number_text(id.device_memory)) return std::nullopt;
  if (!c.literal(",\"point\":")) return std::nullopt;
  return id;
}

std::string index_ranges(const std::vector<std::uint64_t>& indices, std::size_t limit) {
  std::string out;
  std::size_t items = 0, k = 0;
  while (k < indices.size()) {
    // A run of indices with one stride (shards own every M-th point: 3, 11, 19 is "3-19 step 8").
    std::size_t end = k + 1;
    std::uint64_t step = end < indices.size() ? indices[end] - indices[k] : 1;
    while (end < indices.size() && indices[end] - indices[end - 1] == step) ++end;
    if (items == limit) {
      out += ", ... (" + std::to_string(indices.size() - k) + " more)";
      break;
    }
    if (!out.empty()) out += ", ";
    if (end - k >= 3) {
      out += std::to_string(indices[k]) + "-" + std::to_string(indices[end - 1]);
      if (step != 1) out += " every " + std::to_string(step);
      k = end;
    } else {
      out += std::to_string(indices[k]);
      ++k;
    }
    ++items;
  }
  return out;
}

MergeSummary merge_results(const MergeOptions& options) {
  return Merger(options).run();
}

}  // namespace placesim
