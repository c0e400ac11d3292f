#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/sweep/Sweep.hpp"

namespace placesim {

/// What --resume finds in an existing results file.
struct ResumeScan {
  std::vector<std::uint64_t> done;   ///< indices of the complete lines, ascending
  std::uint64_t complete_bytes = 0;  ///< length of the text up to its last '\n'; the rest is a line cut by a kill
};

/// The row prefix point `index` must have in this sweep and shard, or nullopt when the index is not one of its
/// points (see SweepRows::prefix).
using ExpectedPrefix = std::function<std::optional<std::string>(std::uint64_t index)>;

/// Checks results lines one at a time (see scan_results), keeping only their indices.
class ResumeScanner {
 public:
  ResumeScanner(ExpectedPrefix expected, std::string origin)
      : expected_(std::move(expected)), origin_(std::move(origin)) {}
  void line(std::string_view text);  ///< one complete line, without its '\n'
  /// Sorts the indices, refuses a duplicate, and records `complete_bytes` (the text up to the last '\n').
  ResumeScan finish(std::uint64_t complete_bytes);

 private:
  ExpectedPrefix expected_;
  std::string origin_;
  std::uint64_t lines_ = 0;
  ResumeScan scan_;
};

/// Reads the complete lines of a results file. Each must be a row of this sweep (its prefix, index and axis values
/// included, is what `expected` says) and appear once; anything else is an InputError naming `origin` and the line,
/// as it means the file was written by another sweep or shard.
ResumeScan scan_results(std::string_view text, const ExpectedPrefix& expected, const std::string& origin);

/// The index of a results line ({"index":N,...}), or nullopt when the line does not start that way.
std::optional<std::uint64_t> row_index(std::string_view line);

/// Sorts the lines of results text by index (stable for equal indices); returns whether they were out of order.
bool sort_rows(std::string& text);

/// A file written through a temporary next to it and renamed over it on commit(), so that a reader (or a kill)
/// never sees half a file. Without commit() the temporary is removed.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void write(std::string_view bytes);  ///< buffered
  void commit();                       ///< flushes, syncs and renames over the path

 private:
  void flush();
  std::string path_, temporary_, buffer_;
  int fd_ = -1;
};

/// A results file being written: opened for appending (O_APPEND) under an exclusive lock, so that two sweeps
/// cannot write one file. Each append() is a single write() of complete lines, so a killed sweep leaves whole lines
/// plus at most one cut line, which the next --resume truncates.
class ResultsFile {
 public:
  /// Opens or creates `path`, takes its lock (unless `lock` is false: --no-lock) and removes the temporaries a sweep
  /// killed during finalize() left beside it. Without `keep`, an existing non-empty file is refused unless
  /// `overwrite` (then it is emptied); with `keep` its content stays for resume(). A lock another process holds and
  /// a filesystem without flock (ENOSYS, ENOLCK, EOPNOTSUPP, ...) are refused with different messages.
  ResultsFile(const std::string& path, bool keep, bool overwrite, bool lock = true);
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  /// Scans the kept content as scan_results does, streaming it (only the indices are kept), and truncates a trailing
  /// cut line.
  ResumeScan resume(const ExpectedPrefix& expected);
  void append(std::string_view lines);
  /// Puts the lines in index order when they are not (completion order differs from index order with several
  /// jobs), replacing the file atomically. Works on a memory map: the rows are never all in memory.
  void finalize();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

/// How ResultsFile locks its file: flock(fd, LOCK_EX | LOCK_NB), 0 or -1 with errno. Tests replace it (to act as
/// a filesystem without locks) and get the previous one back.
using LockFunction = int (*)(int fd);
LockFunction set_lock_function_for_tests(LockFunction f);

/// The message a lock failure with `error` (errno) on `path` gives.
std::string lock_failure(const std::string& path, int error);

/// Writes `text` to `path` with an AtomicFileWriter.
void write_file_atomically(const std::string& path, std::string_view text);

/// Writes the CSV of the results file `results_path` (csv_header, then csv_row per line) to `csv_path`.
void write_results_csv(const SweepSpec& spec, const std::string& results_path, const std::string& csv_path);

}  // namespace placesim
