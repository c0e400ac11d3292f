#pragma once
#include <cstdio>
#include <memory>
#include <streambuf>
#include <string>
#include <string_view>

namespace placesim {

/// A text output written piece by piece, so that a large trace never has to exist whole in memory:
/// gzip-compressed when the path ends in ".gz", stdout for "-", else a plain file. A regular file is written to a
/// temporary beside it and renamed over it only by a close() that wrote everything (output_temporary): a failed or
/// killed write leaves the old file; a device or FIFO is written in place.
class OutputFile {
 public:
  /// Opens `path` for writing; throws InputError naming the path when it cannot be created.
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view text);
  /// Flushes and closes, throwing InputError naming the path and the first failure's reason if anything failed (disk
  /// full...). The destructor closes too, silently, for the unwinding case.
  void close();

 private:
  void flush_buffer();

  std::string path_;    ///< where the bytes go: the temporary, or the target itself
  std::string target_;  ///< the path asked for
  bool committed_ = false;
  std::string buffer_;
  std::FILE* file_ = nullptr;
  void* gz_ = nullptr;  ///< gzFile; void* keeps zlib.h out of this header
  bool failed_ = false;
  int error_ = 0;  ///< errno of the first failed write or close
};

/// A std::streambuf reading a file through zlib: gunzips gzip files and passes plain files through unchanged.
class GzReadBuffer : public std::streambuf {
 public:
  /// Opens `path`; throws InputError naming the path when it cannot be read.
  explicit GzReadBuffer(const std::string& path);
  ~GzReadBuffer() override;
  GzReadBuffer(const GzReadBuffer&) = delete;
  GzReadBuffer& operator=(const GzReadBuffer&) = delete;

 protected:
  int_type underflow() override;

 private:
  std::string path_;
  void* gz_ = nullptr;
  std::unique_ptr<char[]> data_;
};

/// The whole (decompressed) text of a file.
std::string read_text_file(const std::string& path);

/// Refuses (InputError naming `flag`) an output path that cannot be written, before any work is done: "-" is stdout;
/// otherwise its directory must exist, be a directory and be writable, and the path must not be a directory or a
/// read-only file. Nothing is created.
void check_output_path(const std::string& flag, const std::string& path);

}  // namespace placesim
