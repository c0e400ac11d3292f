#include "traces/sweep/SweepMerge.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "traces/sweep/SweepFile.hpp"
#include "workloads/json/Error.hpp"

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
  std::size_t pos() const { return pos_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// A results file mapped into memory.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = std::strerror(errno);
      return;
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      error_ = std::strerror(errno);
      return;
    }
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ == 0) return;
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      error_ = std::strerror(errno);
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
  bool same_file(const MappedFile& other) const {
    return error_.empty() && other.error_.empty() && dev_ == other.dev_ && ino_ == other.ino_;
  }

 private:
  int fd_ = -1;
  void* map_ = nullptr;
  std::size_t size_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::string error_;
};

// One row found in a file: where its line is, for the output.
struct Found {
  std::uint64_t index;
  std::uint32_t file;
  std::string_view line;
  std::size_t shard_begin, shard_end;
};

// A shard's index and count from "i/M".
std::pair<std::uint64_t, std::uint64_t> parse_shard_text(const std::string& text) {
  if (text.empty()) return {0, 1};
  auto slash = text.find('/');
  return {std::stoull(text.substr(0, slash)), std::stoull(text.substr(slash + 1))};
}

// The status of a row. Its key is the first `,"status":"` of the line: inside a JSON string value the same text
// would have its quotes escaped.
std::string_view row_status(std::string_view line) {
  constexpr std::string_view key = ",\"status\":\"";
  std::size_t at = line.find(key);
  if (at == std::string_view::npos) return "";
  std::size_t begin = at + key.size();
  std::size_t end = line.find('"', begin);
  return end == std::string_view::npos ? "" : line.substr(begin, end - begin);
}

class Merger {
 public:
  explicit Merger(const MergeOptions& options) : options_(options) {}

  MergeSummary run() {
    open_files();
    for (std::uint32_t f = 0; f < files_.size(); ++f)
      if (files_[f]->error().empty() && !repeated_[f]) scan(f);
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
      rows_of_file_.push_back(0);
      repeated_.push_back(false);
      const MappedFile& m = *files_.back();
      if (!m.error().empty()) {
        problem(options_.shards[f] + ": cannot read it (" + m.error() + ")");
        continue;
      }
      for (std::uint32_t g = 0; g < f && !repeated_[f]; ++g)
        if (files_[g]->same_file(m)) {
          problem(options_.shards[f] + ": given twice (also as " + options_.shards[g] + "); read once");
          repeated_[f] = true;
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
      reference_ = id;
      reference_where_ = options_.shards[file] + ":" + std::to_string(line);
      summary_.sweep = id.sweep;
      summary_.version = id.version;
      summary_.points = id.points;
      summary_.shard_count = parse_shard_text(id.shard).second;
      owner_.assign(id.points, 0);
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
    std::uint64_t count = parse_shard_text(id.shard).second;
    if (count != summary_.shard_count)
      return differs(
          "shard", id.shard.empty() ? "0/1" : id.shard,
          "shards of " + std::to_string(summary_.shard_count) + " (" + (r.shard.empty() ? "0/1" : r.shard) + ")");
    return true;
  }

  void scan(std::uint32_t file) {
    std::string_view text = files_[file]->text();
    const std::string& name = options_.shards[file];
    std::size_t start = 0, line = 0;
    bool file_ok = true;
    while (start < text.size() && file_ok) {
      std::size_t nl = text.find('\n', start);
      ++line;
      if (nl == std::string_view::npos) {
        problem(name + ":" + std::to_string(line) +
                ": a cut last line (its task was killed while writing); resume that shard (--resume drops it)");
        break;
      }
      std::string_view row = text.substr(start, nl - start);
      start = nl + 1;
      auto id = row_identity(row);
      if (!id) {
        problem(name + ":" + std::to_string(line) +
                ": not a sweep row of placesim 0.19 or later (rows start {\"index\":N,...,\"sweep\":...})");
        file_ok = false;
        break;
      }
      if (!check_identity(*id, file, line)) {
        file_ok = false;
        break;
      }
      std::string& shard = shard_of_file_[file];
      if (rows_of_file_[file] == 0) shard = id->shard.empty() ? "0/1" : id->shard;
      if ((id->shard.empty() ? "0/1" : id->shard) != shard) {
        problem(name + ":" + std::to_string(line) + ": a row of shard " + id->shard + " in a file of shard " + shard);
        file_ok = false;
        break;
      }
      auto [shard_index, shard_count] = parse_shard_text(id->shard);
      if (id->index >= summary_.points || id->index % shard_count != shard_index) {
        problem(name + ":" + std::to_string(line) + ": point " + std::to_string(id->index) +
                " is not a point of shard " + shard + " of a " + std::to_string(summary_.points) + "-point sweep");
        file_ok = false;
        break;
      }
      ++rows_of_file_[file];
      if (owner_[id->index] != 0) {
        duplicates_.push_back({id->index, owner_[id->index] - 1, file});
        continue;
      }
      owner_[id->index] = file + 1;
      found_.push_back({id->index, file, row, id->shard_begin, id->shard_end});
      count_status(row_status(row));
    }
  }

  void count_status(std::string_view status) {
    if (status == "ok")
      ++summary_.ok;
    else if (status == "invalid")
      ++summary_.invalid;
    else if (status == "filtered")
      ++summary_.filtered;
    else
      ++summary_.error;
  }

  void check_expected_sweep() {
    if (!reference_) {
      if (problems_.empty()) problem("no rows in " + std::to_string(files_.size()) + " file(s)");
      return;
    }
    if (options_.sweep_hash && *options_.sweep_hash != reference_->sweep)
      problem("the rows are of sweep " + reference_->sweep + " but the sweep file given with --sweep hashes to " +
              *options_.sweep_hash + ": it changed since the shards were written (or is another sweep)");
    if (options_.sweep_points && *options_.sweep_points != reference_->points)
      problem("the rows are of a " + std::to_string(reference_->points) + "-point sweep; the sweep file has " +
              std::to_string(*options_.sweep_points));
  }

  void check_coverage() {
    if (!reference_) return;
    for (const auto& d : duplicates_)
      if (duplicate_lines_.size() < 10)
        duplicate_lines_.push_back("point " + std::to_string(d.index) + " is in " + options_.shards[d.first] +
                                   " and again in " + options_.shards[d.second]);
    if (!duplicates_.empty()) {
      std::string text = std::to_string(duplicates_.size()) +
                         " point(s) appear more than once (every point must be "
                         "in exactly one file): ";
      for (std::size_t k = 0; k < duplicate_lines_.size(); ++k) text += (k ? "; " : "") + duplicate_lines_[k];
      problem(text);
    }
    // Missing indices, by the shard that owns them.
    std::map<std::uint64_t, std::vector<std::uint64_t>> missing;
    std::uint64_t total_missing = 0;
    const std::uint64_t m = summary_.shard_count;
    for (std::uint64_t i = 0; i < owner_.size(); ++i)
      if (owner_[i] == 0) {
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
      for (std::uint32_t f = 0; f < files_.size(); ++f)
        if (shard_of_file_[f] == label) file = options_.shards[f];
      std::uint64_t expected = summary_.points / m + (shard < summary_.points % m ? 1 : 0);
      std::uint64_t count = 0;
      for (std::uint64_t i = shard; i < summary_.points; i += m) count += owner_[i] == 0;
      text += "\n    shard " + label + " (" +
              (file.empty()
                   ? std::string("no file given holds it")
                   : file + ": " + std::to_string(expected - count) + " of " + std::to_string(expected) + " rows") +
              "; resume it with --shard " + label + " --resume): " + index_ranges(indices) +
              (count > indices.size() ? " ... (" + std::to_string(count) + " in all)" : "");
    }
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
    std::uint32_t first, second;
  };

  const MergeOptions& options_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<std::string> shard_of_file_;
  std::vector<std::uint64_t> rows_of_file_;
  std::vector<bool> repeated_;  ///< the file is one given before (same device and inode)
  std::optional<RowIdentity> reference_;
  std::string reference_where_;
  std::vector<std::uint32_t> owner_;  ///< per point: 1 + the file holding it, 0 when none
  std::vector<Found> found_;
  std::vector<Duplicate> duplicates_;
  std::vector<std::string> duplicate_lines_;
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
    if (!c.plain_string(id.shard)) return std::nullopt;
    auto slash = id.shard.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == id.shard.size() ||
        id.shard.find_first_not_of("0123456789/") != std::string::npos || id.shard.size() > 40)
      return std::nullopt;
    auto [i, m] = parse_shard_text(id.shard);
    if (m < 2 || i >= m) return std::nullopt;
    id.shard_end = c.pos();
  }
  if (!c.literal(",\"sweep\":") || !c.plain_string(id.sweep) || !c.literal(",\"version\":") ||
      !c.plain_string(id.version) || !c.literal(",\"points\":") || !c.digits(id.points) || !c.literal(",\"point\":"))
    return std::nullopt;
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
