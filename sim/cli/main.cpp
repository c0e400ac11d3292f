#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "sim/cli/Cli.hpp"

int main(int argc, char** argv) {
  const int status = placesim::run_cli(argc, argv);
  // What went to stdout must have arrived: a full disk, /dev/full or a closed stdout is an error (exit 2), not a
  // report cut short with exit 0. (A command that failed has said why already.)
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (failed && status == 0) {
    std::fprintf(stderr, "placesim: error: writing to standard output failed: %s\n",
                 std::strerror(errno ? errno : EIO));
    return 2;
  }
  // The same for stderr (summaries go there with --report -); with nowhere left to say why, only the exit code.
  std::cerr.flush();
  if (status == 0 && (!std::cerr || std::fflush(stderr) != 0 || std::ferror(stderr))) return 2;
  return status;
}
