#pragma once
// Temporary folders and whole-file reads and writes for the tests that run placesim on files.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace placesim::test {

/// A fresh folder under /tmp, removed with everything in it when the object goes.
struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/placesim-sweep-test-XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

inline void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// Writes `text` to /tmp/placesim-test-<pid>-<name>, a file of this test process, and returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/placesim-test-" + std::to_string(::getpid()) + "-" + name;
  write(path, text);
  return path;
}

inline std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// The lines of the file at `path`.
inline std::vector<std::string> file_lines(const std::string& path) {
  return lines_of(read(path));
}

}  // namespace placesim::test
