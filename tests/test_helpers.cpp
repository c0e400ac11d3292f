#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "tests/Helpers.hpp"

namespace placesim::test {

int run_placesim(const std::string& arguments, std::string* output) {
  std::string command = std::string(PLACESIM_BINARY) + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buffer{};
  std::string text;
  std::size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) text.append(buffer.data(), n);
  int status = pclose(pipe);
  if (output) *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace placesim::test
