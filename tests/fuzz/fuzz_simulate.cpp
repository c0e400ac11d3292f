// libFuzzer target over `placesim simulate`, SimGrid included. An input is a whole experiment (text starting with
// '{') or, otherwise, `--set` lines PATH=VALUE applied to a tiny experiment (kBase), plus optional lines
// `--fidelity=analytic|flow|full` and `--symmetry=off` as the CLI's flags.
//
// SimGrid allows one simulation per process, so each input that parses is simulated in a forked child: the parent
// parses, resolves the cluster and checks validity (no SimGrid call), the child runs simulate_experiment and the
// report and leaves by _exit(0), also on an InputError (exit 2 of the CLI). The parent aborts -- a finding, with the
// input saved by libFuzzer -- when the child died from a signal (SimGrid's SIGSEGV, SIGABRT, the child's own time
// limit) or exited otherwise (an internal error, exit 3; a sanitizer's report, exit 1). The child sends its coverage
// counters back through a pipe, so libFuzzer is guided by the simulator's code too.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/backend/Simulate.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/expand/Expand.hpp"
#include "strategies/placement/Experiment.hpp"
#include "traces/report/Report.hpp"
#include "traces/report/SimReport.hpp"
#include "workloads/json/JsonReader.hpp"

// The inline 8-bit coverage counters of every instrumented object (-fsanitize=fuzzer-no-link), laid out by the linker
// in one section; null in a build without them. This file is built without coverage (tests/fuzz/CMakeLists.txt): the
// coverage pass declares these symbols too, and its renamed copy would register no counters with libFuzzer.
extern "C" {
extern std::uint8_t __start___sancov_cntrs[] __attribute__((weak));
extern std::uint8_t __stop___sancov_cntrs[] __attribute__((weak));
}

namespace placesim {
namespace {

/// The work bounds of fuzz_inputs.cpp's expansion stage: bigger steps are legitimately slow to simulate, so they are
/// skipped rather than reported as timeouts.
constexpr double kMaxExpandTasks = 2e3;  ///< estimated compute tasks
constexpr std::int64_t kMaxExpandDevices = 64;
/// Host seconds a child may simulate before it is killed (SIGALRM, a finding): below fuzz.sh's -timeout=10.
constexpr unsigned kChildSeconds = 8;

/// Two nodes of 4 GPUs and a 3D mesh of 2 x 2 x 2 over them: tensor-parallel transfers inside a node, pipeline and
/// data-parallel ones across.
constexpr const char* kBase = R"({
  "model": {"layers": 4, "hidden": 256, "heads": 4, "vocab": 1000, "seq_len": 128},
  "training": {"global_batch": 8, "micro_batch": 1},
  "strategy": {"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 2, "schedule": "1f1b"},
  "cluster": {"preset": "dgx-a100", "nodes": 2, "gpus_per_node": 4, "nics_per_node": 4}
})";

// Experiments name files (model.hf_config, accelerator.profile) that the library reads whole: a string naming a
// device, a directory or a /proc or /sys file would make the harness measure the file system, so such inputs are
// skipped (fuzz_inputs.cpp's rule; there is no input file here, so every regular file is left out too).
bool mentions_existing_file(const Json& doc) {
  std::vector<const Json*> todo{&doc};
  while (!todo.empty()) {
    const Json* j = todo.back();
    todo.pop_back();
    if (j->is_string()) {
      const std::string& s = j->get_ref<const std::string&>();
      std::error_code ec;
      if (!s.empty() && s.size() <= 4096 && s.find('\0') == std::string::npos && std::filesystem::exists(s, ec))
        return true;
    }
    if (j->is_structured())
      for (const auto& item : *j) todo.push_back(&item);
  }
  return false;
}

/// The experiment and the simulate flags an input stands for.
struct Case {
  Json experiment;
  SimulateSettings settings;
};

// As experiment_json_from_args applies --set: every line PATH=VALUE, the value parsed by parse_cli_value. A line the
// CLI would refuse (no '=', a value that is not UTF-8, a path through a number) is left out rather than ending the
// input: refusing lines is fuzz_inputs' subject, and most mutations of a line break it, so the rest of the input still
// reaches SimGrid.
Case read_case(const std::string& text) {
  Case c;
  c.settings.reproducible = true;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    c.experiment = parse_json_text(text, "<fuzz>");
    return c;
  }
  c.experiment = parse_json_text(kBase, "kBase");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string path = line.substr(0, eq), value = line.substr(eq + 1);
    try {
      if (path == "--fidelity")
        c.settings.sim.fidelity = parse_fidelity(value, "--fidelity");
      else if (path == "--symmetry")
        c.settings.symmetry = value != "off";
      else
        set_path(c.experiment, path, parse_cli_value(value));
    } catch (const InputError&) {
      // Left out, as said above.
    }
  }
  return c;
}

// The parent's share: everything simulate does before SimGrid, refusals included. Nothing when there is nothing to
// simulate (an abstract pipeline) or the step is above the work bounds.
std::optional<SimulationInput> prepare(const Case& c) {
  if (mentions_existing_file(c.experiment)) return std::nullopt;
  Experiment e = parse_experiment(c.experiment, "");
  if (!e.pipeline.is_null()) return std::nullopt;
  SimulationInput in = resolve_simulation(std::move(e));
  const Experiment& x = in.experiment;
  if (x.strategy.devices() > kMaxExpandDevices || in.cluster.devices() > kMaxExpandDevices) return std::nullopt;
  check_validity(x);
  if (!(estimated_compute_tasks(x, c.settings.expand) <= kMaxExpandTasks)) return std::nullopt;
  return in;
}

// The coverage counters as one span (empty without instrumentation).
std::uint8_t* counters_begin() {
  return __start___sancov_cntrs;
}
std::size_t counters_size() {
  return __start___sancov_cntrs && __stop___sancov_cntrs ? __stop___sancov_cntrs - __start___sancov_cntrs : 0;
}

void write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// The child: simulates, writes its counters to `fd` and leaves without running destructors or exit handlers (the
// parent's state is not its to clean up).
[[noreturn]] void run_child(const SimulationInput& in, const SimulateSettings& settings, int fd) {
  ::signal(SIGALRM, SIG_DFL);
  ::signal(SIGPIPE, SIG_IGN);
  ::alarm(kChildSeconds);
  int status = 0;
  try {
    const SimulatedStep step = simulate_experiment(in, settings);
    dump(simulation_report(step));
  } catch (const InputError&) {
    // Refused with a message (a step that does not fit, a simulation estimate too large): the CLI's exit 2.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_simulate: internal error: %s\n", e.what());
    status = 3;
  }
  write_all(fd, counters_begin(), counters_size());
  ::_exit(status);
}

// The child's coverage into the parent's counters: the greater count of each edge.
void merge_counters(int fd) {
  std::uint8_t* counters = counters_begin();
  const std::size_t size = counters_size();
  std::vector<std::uint8_t> buffer(65536);
  for (std::size_t at = 0; at < size;) {
    const ssize_t n = ::read(fd, buffer.data(), std::min(buffer.size(), size - at));
    if (n < 0 && errno == EINTR) continue;  // libFuzzer's timeout timer ticks in the parent
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) counters[at + i] = std::max(counters[at + i], buffer[static_cast<std::size_t>(i)]);
    at += static_cast<std::size_t>(n);
  }
}

void simulate_in_child(const SimulationInput& in, const SimulateSettings& settings) {
  int fds[2];
  if (::pipe(fds) != 0) std::abort();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    ::close(fds[0]);
    run_child(in, settings, fds[1]);
  }
  ::close(fds[1]);
  merge_counters(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) std::abort();
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "fuzz_simulate: the simulating child died from signal %d (%s)\n", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? "ran past its time limit" : ::strsignal(WTERMSIG(status)));
    std::abort();
  }
  if (WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "fuzz_simulate: the simulating child exited with status %d\n", WEXITSTATUS(status));
    std::abort();
  }
}

}  // namespace
}  // namespace placesim

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace placesim;
  try {
    const Case c = read_case(std::string(reinterpret_cast<const char*>(data), size));
    if (const std::optional<SimulationInput> in = prepare(c)) simulate_in_child(*in, c.settings);
  } catch (const InputError&) {
    // Bad input refused with a message before any SimGrid call: what the parsers must do.
  }
  return 0;
}
