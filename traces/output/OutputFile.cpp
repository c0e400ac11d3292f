#include "traces/output/OutputFile.hpp"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <istream>
#include <iterator>
#include <stdexcept>

#include "traces/output/OutputPolicy.hpp"
#include "workloads/json/Error.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

namespace {

constexpr std::size_t kBufferBytes = 1 << 20;

}  // namespace

OutputFile::OutputFile(const std::string& path) : path_(path), target_(path) {
  buffer_.reserve(kBufferBytes);
  if (path == "-") {
    file_ = stdout;
    return;
  }
  // A regular file is written whole to a temporary beside it and renamed over it on close(): a killed run leaves
  // the old file; a device, FIFO or /dev/stdout is written in place.
  path_ = output_temporary(path);
  if (path.ends_with(".gz")) {
    gzFile gz = gzopen(path_.c_str(), "wb");
    if (!gz) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
    gzbuffer(gz, 256 * 1024);
    gz_ = gz;
  } else {
    file_ = std::fopen(path_.c_str(), "wb");
    if (!file_) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
  }
}

OutputFile::~OutputFile() {
  try {
    close();
  } catch (const std::exception&) {
    // Already unwinding from another error, or the caller chose not to call close(): nothing more to report.
  }
  if (path_ != target_ && !committed_) ::unlink(path_.c_str());
}

void OutputFile::write(std::string_view text) {
  buffer_.append(text);
  if (buffer_.size() >= kBufferBytes) flush_buffer();
}

void OutputFile::flush_buffer() {
  if (buffer_.empty() || failed_) {
    buffer_.clear();
    return;
  }
  errno = 0;
  if (gz_) {
    failed_ = gzwrite(static_cast<gzFile>(gz_), buffer_.data(), static_cast<unsigned>(buffer_.size())) !=
              static_cast<int>(buffer_.size());
  } else if (file_) {
    failed_ = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size();
  }
  if (failed_) error_ = errno ? errno : EIO;
  buffer_.clear();
}

void OutputFile::close() {
  if (!gz_ && !file_) return;
  flush_buffer();
  const bool before = failed_;
  errno = 0;
  if (gz_) {
    failed_ = gzclose(static_cast<gzFile>(gz_)) != Z_OK || failed_;
    gz_ = nullptr;
  } else if (file_ == stdout) {
    failed_ = std::fflush(stdout) != 0 || std::ferror(stdout) || failed_;
    file_ = nullptr;
  } else {
    // Synced before the rename: after a crash the path holds the old file or the whole new one.
    failed_ =
        std::fflush(file_) != 0 || (path_ != target_ && ::fsync(::fileno(file_)) != 0 && errno != EINVAL) || failed_;
    failed_ = std::fclose(file_) != 0 || failed_;
    file_ = nullptr;
  }
  if (failed_ && !before) error_ = errno ? errno : EIO;  // the first failure's reason is the one reported
  // A full disk or a vanished directory is the environment's doing, not a bug: a refusal (exit 2) like an open error.
  if (failed_)
    throw InputError((target_ == "-" ? std::string("writing to standard output") : "writing '" + target_ + "'") +
                     " failed: " + std::strerror(error_));
  if (target_ != "-") replace_with_temporary(path_, target_);
  committed_ = true;
}

GzReadBuffer::GzReadBuffer(const std::string& path) : path_(path), data_(new char[kBufferBytes]) {
  // A trace is streamed, never held whole: no size limit, but a FIFO or a device would block or never end.
  const int fd = open_input_file(path);
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) {
    ::close(fd);
    throw InputError("cannot read '" + path + "': out of memory");
  }
  gz_ = gz;
}

GzReadBuffer::~GzReadBuffer() {
  gzclose(static_cast<gzFile>(gz_));
}

GzReadBuffer::int_type GzReadBuffer::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  int n = gzread(static_cast<gzFile>(gz_), data_.get(), static_cast<unsigned>(kBufferBytes));
  if (n < 0) throw InputError("cannot read '" + path_ + "': corrupt gzip data");
  if (n == 0) return traits_type::eof();
  setg(data_.get(), data_.get(), data_.get() + n);
  return traits_type::to_int_type(*gptr());
}

void check_output_path(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  if (path == "-") return;
  auto refuse = [&](const std::string& why) { throw InputError(flag + "=" + path + ": " + why); };
  if (path.empty()) refuse("an empty path");
  std::error_code ec;
  const fs::path p(path);
  const fs::file_status status = fs::status(p, ec);
  if (fs::is_directory(status)) refuse("is a directory, not a file");
  // An existing file (or device: /dev/stdout, /dev/fd/63) only needs to be writable itself; a new one needs a
  // writable directory. (The writers that rename a temporary over the path also create it in that directory.)
  if (fs::exists(status)) {
    if (::access(p.c_str(), W_OK) != 0) refuse(std::string("cannot be written: ") + std::strerror(errno));
    return;
  }
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) refuse("its directory '" + dir.string() + "' does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    refuse("its directory '" + dir.string() + "' is not writable: " + std::strerror(errno));
}

std::string read_text_file(const std::string& path) {
  GzReadBuffer buffer(path);
  std::istream in(&buffer);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace placesim
