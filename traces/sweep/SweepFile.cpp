#include "traces/sweep/SweepFile.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "traces/output/OutputPolicy.hpp"
#include "traces/sweep/SweepRows.hpp"
#include "workloads/json/Error.hpp"

namespace placesim {

namespace {

std::string system_error(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

void write_all(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(system_error("cannot write", path));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The complete lines of `text` (each without its '\n'); a trailing unterminated piece is left out.
std::vector<std::string_view> complete_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n', start)) {
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// A sweep killed while finalize() rewrote the file leaves "<path>.tmp<pid>". Only a sweep holding the file's lock
// writes that temporary, and this one holds it now: every such file is stale.
void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string prefix = p.filename().string() + ".tmp";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        name.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
      fs::remove(entry.path(), ec);
  }
}

// How ResultsFile locks (set_lock_function_for_tests replaces it).
LockFunction lock_function = [](int fd) { return ::flock(fd, LOCK_EX | LOCK_NB); };

}  // namespace

LockFunction set_lock_function_for_tests(LockFunction f) {
  std::swap(lock_function, f);
  return f;
}

std::optional<std::uint64_t> row_index(std::string_view line) {
  constexpr std::string_view head = "{\"index\":";
  if (line.substr(0, head.size()) != head) return std::nullopt;
  std::size_t end = line.find(',', head.size());
  std::string_view digits = line.substr(head.size(), end == std::string_view::npos ? 0 : end - head.size());
  if (digits.empty() || digits.size() > 19 || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  return std::stoull(std::string(digits));
}

namespace {

// Why a results line is not the row `expected` (a row prefix, see SweepRows::prefix) says point `index` has: the
// first identity field that differs.
std::string mismatch_reason(std::string_view text, const std::string& expected, std::uint64_t index) {
  const Json row = Json::parse(text, nullptr, false);
  const Json want = Json::parse(expected + "\"}", nullptr, false);
  const std::string point = "point " + std::to_string(index);
  auto value = [](const Json& j, const char* key) { return j.is_object() && j.contains(key) ? j[key].dump() : ""; };
  if (!row.is_object()) return point + ": not a JSON object (a damaged line)";
  if (value(row, "sweep").empty() && !value(want, "sweep").empty())
    return point + " was written by a placesim before 0.19 (its rows carry no sweep hash); write to a new --out";
  if (value(row, "sweep") != value(want, "sweep"))
    return point + " was written by another sweep file (sweep hash " + value(row, "sweep") + "; this file has " +
           value(want, "sweep") +
           "): the sweep file changed since (any field counts: base, axes, filters, figures, mode); restore it or "
           "write to a new --out";
  if (value(row, "version") != value(want, "version"))
    return point + " was written by placesim " + value(row, "version") + ", this is " + value(want, "version") +
           ": the rows of two versions would mix; finish with the old binary or write to a new --out";
  if (value(row, "device_memory") != value(want, "device_memory"))
    return point + " was checked against --device-memory " +
           (value(row, "device_memory").empty() ? "none" : value(row, "device_memory") + " bytes") + ", this run " +
           (value(want, "device_memory").empty() ? "none" : value(want, "device_memory") + " bytes");
  if (value(row, "shard") != value(want, "shard"))
    return point + " was written by shard " + (value(row, "shard").empty() ? "0/1" : value(row, "shard")) +
           ", this run is shard " + (value(want, "shard").empty() ? "0/1" : value(want, "shard"));
  return point + " has other axis values (or simulation fidelity) than this sweep gives it; write to a new --out";
}

}  // namespace

void ResumeScanner::line(std::string_view text) {
  ++lines_;
  const std::string where = origin_ + ":" + std::to_string(lines_) + ": ";
  auto index = row_index(text);
  if (!index) throw InputError(where + "not a sweep row; --resume continues only a file this sweep wrote");
  auto prefix = expected_(*index);
  if (!prefix) {
    const Json row = Json::parse(text, nullptr, false);
    std::string written;
    if (row.is_object() && row.contains("shard")) written = " (written by shard " + row["shard"].dump() + ")";
    throw InputError(where + "point " + std::to_string(*index) + written + " is not a point of this sweep and shard");
  }
  if (text.substr(0, prefix->size()) != *prefix) throw InputError(where + mismatch_reason(text, *prefix, *index));
  scan_.done.push_back(*index);
}

ResumeScan ResumeScanner::finish(std::uint64_t complete_bytes) {
  std::sort(scan_.done.begin(), scan_.done.end());
  auto dup = std::adjacent_find(scan_.done.begin(), scan_.done.end());
  if (dup != scan_.done.end()) throw InputError(origin_ + ": point " + std::to_string(*dup) + " appears twice");
  scan_.complete_bytes = complete_bytes;
  return std::move(scan_);
}

ResumeScan scan_results(std::string_view text, const ExpectedPrefix& expected, const std::string& origin) {
  ResumeScanner scanner(expected, origin);
  for (std::string_view line : complete_lines(text)) scanner.line(line);
  std::size_t last = text.rfind('\n');
  return scanner.finish(last == std::string_view::npos ? 0 : last + 1);
}

namespace {

// The complete lines of results text with their indices, and whether they already are in index order.
std::vector<std::pair<std::uint64_t, std::string_view>> indexed_lines(std::string_view text, bool& sorted) {
  std::vector<std::pair<std::uint64_t, std::string_view>> rows;
  sorted = true;
  for (std::string_view line : complete_lines(text)) {
    std::uint64_t index = row_index(line).value_or(0);
    sorted = sorted && (rows.empty() || rows.back().first <= index);
    rows.emplace_back(index, line);
  }
  return rows;
}

void sort_by_index(std::vector<std::pair<std::uint64_t, std::string_view>>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
}

}  // namespace

bool sort_rows(std::string& text) {
  bool sorted = false;
  auto rows = indexed_lines(text, sorted);
  if (sorted) return false;
  sort_by_index(rows);
  std::string out;
  out.reserve(text.size());
  for (const auto& [index, line] : rows) {
    out += line;
    out += '\n';
  }
  text = std::move(out);
  return true;
}

std::string lock_failure(const std::string& path, int error) {
  if (error == EWOULDBLOCK)
    return "'" + path + "' is being written by another sweep (it holds the file's lock); wait for it, or write to " +
           "another --out";
  return "cannot lock '" + path + "' (flock: " + std::strerror(error) +
         "): this filesystem has no file locks (Lustre mounted without -o flock, some NFS and FUSE mounts); "
         "write --out to a filesystem that has them (e.g. node-local /tmp, copied back when the sweep ends), or pass "
         "--no-lock "
         "when nothing else writes this file (two sweeps writing one file unlocked would interleave their rows)";
}

ResultsFile::ResultsFile(const std::string& path, bool keep, bool overwrite, bool lock) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(system_error("cannot open", path));
  if (lock && lock_function(fd_) != 0) {
    int error = errno;
    ::close(fd_);
    throw InputError(lock_failure(path, error));
  }
  remove_stale_temporaries(path);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw InputError(system_error("cannot stat", path));
  if (keep || st.st_size == 0) return;
  if (!overwrite) {
    ::close(fd_);
    throw InputError("'" + path + "' already holds " + std::to_string(st.st_size) +
                     " bytes of results: pass --resume to continue that sweep, or --force to overwrite it");
  }
  if (::ftruncate(fd_, 0) != 0) throw InputError(system_error("cannot truncate", path));
}

ResultsFile::~ResultsFile() {
  if (fd_ >= 0) ::close(fd_);
}

ResumeScan ResultsFile::resume(const ExpectedPrefix& expected) {
  // Streamed: one buffer and the carried-over start of a line are in memory, never the rows; only their indices are
  // kept (8 bytes a row).
  ResumeScanner scanner(expected, path_);
  // A device would be read forever (/dev/zero) and holds no sweep to continue.
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && !S_ISREG(st.st_mode))
    throw InputError("--resume: '" + path_ + "' is not a regular file: there are no rows to continue");
  std::vector<char> buffer(1 << 20);
  // The start of a line the previous read cut, capped: the index and the expected prefix are at its head, so a
  // huge line (or a file without any '\n') never has to be held whole.
  constexpr std::size_t kHeadBytes = 1 << 16;
  std::string partial;
  bool in_line = false;  // a line is cut at the end of the previous read (partial holds its head)
  std::uint64_t complete_bytes = 0;
  for (off_t offset = 0;;) {
    ssize_t n = ::pread(fd_, buffer.data(), buffer.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(system_error("cannot read", path_));
    if (n == 0) break;
    std::string_view chunk(buffer.data(), static_cast<std::size_t>(n));
    for (std::size_t nl = chunk.find('\n'); nl != std::string_view::npos; nl = chunk.find('\n')) {
      if (!in_line) {
        scanner.line(chunk.substr(0, nl));
      } else {
        partial.append(chunk.substr(0, std::min(nl, kHeadBytes - std::min(kHeadBytes, partial.size()))));
        scanner.line(partial);
        partial.clear();
        in_line = false;
      }
      complete_bytes = static_cast<std::uint64_t>(offset) + (chunk.data() - buffer.data()) + nl + 1;
      chunk.remove_prefix(nl + 1);
    }
    if (!chunk.empty()) {
      partial.append(chunk.substr(0, kHeadBytes - std::min(kHeadBytes, partial.size())));
      in_line = true;
    }
    offset += n;
  }
  ResumeScan scan = scanner.finish(complete_bytes);
  if (in_line && ::ftruncate(fd_, static_cast<off_t>(scan.complete_bytes)) != 0)
    throw InputError(system_error("cannot truncate", path_));
  return scan;
}

void ResultsFile::append(std::string_view lines) {
  write_all(fd_, lines, path_);
}

void ResultsFile::finalize() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw InputError(system_error("cannot stat", path_));
  if (st.st_size == 0) return;
  auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd_, 0);
  if (map == MAP_FAILED) throw InputError(system_error("cannot map", path_));
  try {
    bool sorted = false;
    auto rows = indexed_lines(std::string_view(static_cast<const char*>(map), size), sorted);
    if (!sorted) {
      sort_by_index(rows);
      AtomicFileWriter out(path_);
      for (const auto& [index, line] : rows) {
        out.write(line);
        out.write("\n");
      }
      out.commit();
    }
  } catch (...) {
    ::munmap(map, size);
    throw;
  }
  ::munmap(map, size);
}

AtomicFileWriter::AtomicFileWriter(const std::string& path) : path_(path), temporary_(output_temporary(path)) {
  // A device, FIFO or /dev/stdout is written in place (output_temporary returns the path itself): never renamed over.
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(system_error("cannot create", temporary_));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ < 0) return;
  ::close(fd_);
  if (temporary_ != path_) ::unlink(temporary_.c_str());
}

void AtomicFileWriter::write(std::string_view bytes) {
  buffer_ += bytes;
  if (buffer_.size() >= (1u << 20)) flush();
}

void AtomicFileWriter::flush() {
  write_all(fd_, buffer_, temporary_);
  buffer_.clear();
}

void AtomicFileWriter::commit() {
  flush();
  // Synced before the rename: after a crash the path holds either the old file or the whole new one.
  if (temporary_ != path_ && ::fsync(fd_) != 0) throw InputError(system_error("cannot sync", temporary_));
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) {
    if (temporary_ != path_) ::unlink(temporary_.c_str());
    throw InputError(system_error("cannot write", path_));
  }
  replace_with_temporary(temporary_, path_);
}

void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicFileWriter out(path);
  out.write(text);
  out.commit();
}

void write_results_csv(const SweepSpec& spec, const std::string& results_path, const std::string& csv_path) {
  std::ifstream in(results_path, std::ios::binary);
  if (!in) throw InputError("cannot open '" + results_path + "'");
  AtomicFileWriter out(csv_path);
  out.write(csv_header(spec));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.write(csv_row(spec, line));
  out.commit();
}

}  // namespace placesim
