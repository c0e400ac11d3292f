#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace placesim {

/// How a child process ended and what it wrote.
struct ChildResult {
  int exit_code = -1;  ///< -1 when a signal ended it
  int signal = 0;
  std::string out, err;
};

/// Child processes running concurrently, each fed its input on stdin, with stdout and stderr collected. One process
/// per simulated point: SimGrid allows one simulation per process. A child dies with its parent (PR_SET_PDEATHSIG),
/// so killing a sweep leaves no simulations behind.
class ProcessPool {
 public:
  ProcessPool() = default;
  /// Kills and reaps the children still running.
  ~ProcessPool();
  ProcessPool(const ProcessPool&) = delete;
  ProcessPool& operator=(const ProcessPool&) = delete;

  /// Starts `argv` (argv[0] a path) in directory `cwd` ("" = this one) with `input` on its stdin.
  void start(std::uint64_t id, const std::vector<std::string>& argv, std::string input, const std::string& cwd);
  std::size_t running() const { return children_.size(); }
  /// Waits up to `timeout_ms` for output and exits; returns the children that ended, by id.
  std::vector<std::pair<std::uint64_t, ChildResult>> wait(int timeout_ms);

 private:
  struct Child {
    std::uint64_t id = 0;
    pid_t pid = -1;
    int in = -1, out = -1, err = -1;  ///< parent ends; -1 once closed
    std::string input;
    std::size_t written = 0;
    ChildResult result;
  };
  void pump(Child& c, short in_events, short out_events, short err_events);
  std::vector<Child> children_;
};

}  // namespace placesim
