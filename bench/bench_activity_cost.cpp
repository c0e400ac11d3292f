// Cost per simulated activity: placesim's simulate() against a bare SimGrid chain of the same length, in
// the same run. Target: placesim <= 2x the bare chain.
//
//   bench_activity_cost [--repeat R] [N ...]        (defaults: R = 3, N = 100000 1000000)
//
// Each measurement is repeated R times (a fresh child each time) and the fastest kept: on a shared machine the
// fastest run is the one least disturbed by other processes.
// Every measurement runs in its own forked child (SimGrid allows one simulation per process) on the same platform:
// one DGX A100 node built by placesim's build_platform(), with the same engine configuration. Each child times
// everything from creating the Engine to the end of Engine::run(); placesim's children also time simulate() alone
// after building the TaskGraph (graph construction is expand()'s cost, printed apart). Chains, N tasks each:
//
//   comm    bare: N Comm::sendto_init(gpu0, gpu1) of 1 MB, each created and started just in time when the previous
//                 one completes (SIMGRID-NOTES: creating them all up front is O(N^2) in 3.32);
//           placesim: N P2P tasks gpu0 -> gpu1 of 1 MB, each depending on the previous one.
//           Measures SimGrid activity + max-min solver cost against placesim's per-task bookkeeping on top of it.
//   compute bare: N Exec of 1 ms on gpu0 just in time (what a naive lowering of compute tasks would cost), and N
//                 kernel timers of 1 ms, each set when the previous fires (what placesim lowers compute tasks to);
//           placesim: N Compute tasks of 1 ms on device 0, each depending on the previous one.
//           Measures placesim's fixed-length task path (timer + DAG release + stats) against the bare timer and Exec.
// placesim runs twice per kind: without task records (what `simulate` keeps for devices outside --trace-devices)
// and with records for every device (what --trace keeps).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "sim/backend/Platform.hpp"
#include "sim/backend/Simulator.hpp"
#include "topology/cluster/Cluster.hpp"

namespace sg = simgrid::s4u;
using namespace placesim;

namespace {

constexpr double kTaskSeconds = 1e-3;
constexpr double kBytes = 1e6;

/// What one child measured.
struct Sample {
  double seconds = 0;       ///< Engine creation to the end of run()
  double sim_seconds = 0;   ///< placesim: simulate() alone (0 for bare chains)
  double simulated_s = 0;   ///< simulated time at the end: every variant of a kind must agree
  double rss_mb = 0;        ///< the child's peak resident memory
  std::uint64_t count = 0;  ///< activities or timers that ran
};

ClusterSpec one_node() {
  return simulated_network(parse_cluster(Json{{"preset", "dgx-a100"}, {"nodes", 1}}));
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::unique_ptr<sg::Engine> make_engine() {
  int argc = 1;
  char name[] = "bench_activity_cost";
  char* argv[] = {name, nullptr};
  return std::make_unique<sg::Engine>(&argc, argv);
}

/// A chain of SimGrid activities, the next created and started when the previous completes. The completed one is
/// dropped one completion later (never inside its own callback).
Sample bare_activity_chain(std::uint64_t n, bool comm) {
  double t0 = now_s();
  auto engine = make_engine();
  Platform p = build_platform(*engine, one_node(), {{0, 1}});
  sg::ActivityPtr current, previous;
  std::uint64_t started = 0;
  auto next = [&]() {
    ++started;
    if (comm) {
      sg::CommPtr c = sg::Comm::sendto_init(p.gpus[0], p.gpus[1])->set_payload_size(static_cast<std::uint64_t>(kBytes));
      current = c;
      c->vetoable_start();
    } else {
      sg::ExecPtr e = sg::Exec::init()->set_flops_amount(kTaskSeconds * p.gpus[0]->get_speed())->set_host(p.gpus[0]);
      current = e;
      e->vetoable_start();
    }
  };
  sg::Activity::on_completion_cb([&](const sg::Activity&) {
    previous = current;  // keeps the completing activity alive until the next completion
    if (started < n) next();
  });
  next();
  engine->run();
  return {now_s() - t0, 0, sg::Engine::get_clock(), 0, started};
}

/// A chain of kernel timers, the next set when the previous fires.
Sample bare_timer_chain(std::uint64_t n) {
  double t0 = now_s();
  auto engine = make_engine();
  build_platform(*engine, one_node(), {{0, 1}});
  std::uint64_t fired = 0;
  std::function<void()> arm = [&]() {
    simgrid::kernel::timer::Timer::set(sg::Engine::get_clock() + kTaskSeconds, [&]() {
      if (++fired < n) arm();
    });
  };
  arm();
  engine->run();
  return {now_s() - t0, 0, sg::Engine::get_clock(), 0, fired};
}

/// N tasks on device 0 (P2P to device 1, or Compute), each after the previous.
TaskGraph chain_graph(std::uint64_t n, bool comm, int devices) {
  TaskGraph g;
  g.devices = devices;
  g.resident.assign(static_cast<std::size_t>(devices), {});
  for (std::uint64_t i = 0; i < n; ++i) {
    TaskId id = comm ? g.add(P2P{0, 1, kBytes, CommClass::PpP2P, static_cast<int>(i % 1000), -1, false}, 0)
                     : g.add(Compute{TaskKind::Forward, 0, kTaskSeconds, 1e12, 0, 1, static_cast<int>(i % 1000)}, 0);
    if (i > 0) g.depend(id - 1, id);
  }
  return g;
}

Sample placesim_chain(std::uint64_t n, bool comm, bool records) {
  double t0 = now_s();
  ClusterSpec cluster = one_node();
  TaskGraph g = chain_graph(n, comm, cluster.devices());
  SimOptions options;
  options.record.assign(static_cast<std::size_t>(cluster.devices()), records ? 1 : 0);
  double t1 = now_s();
  SimResult r = simulate(g, cluster, options);
  double t2 = now_s();
  return {t2 - t0, t2 - t1, r.step_time_s, 0, r.activities + r.timers};
}

/// Runs `measure` in a forked child and returns what it measured (the child's peak RSS added).
Sample in_child(const std::function<Sample()>& measure) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    close(fds[0]);
    Sample s = measure();
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    s.rss_mb = static_cast<double>(u.ru_maxrss) / 1024;
    ssize_t w = write(fds[1], &s, sizeof s);
    _exit(w == static_cast<ssize_t>(sizeof s) ? 0 : 1);
  }
  close(fds[1]);
  Sample s;
  ssize_t got = read(fds[0], &s, sizeof s);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof s) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench_activity_cost: a child failed (status %d)\n", status);
    std::exit(1);
  }
  return s;
}

void print(const char* what, std::uint64_t n, const Sample& s) {
  const double per = 1e6 / static_cast<double>(n);
  if (s.sim_seconds > 0)
    std::printf("  %-38s simulate() %7.3f s = %6.3f us/task; with the graph built %7.3f s = %6.3f us/task;", what,
                s.sim_seconds, per * s.sim_seconds, s.seconds, per * s.seconds);
  else
    std::printf("  %-38s run        %7.3f s = %6.3f us/task;%44s", what, s.seconds, per * s.seconds, "");
  std::printf(" %6.1f MB peak; ran %llu; simulated %.6g s\n", s.rss_mb, static_cast<unsigned long long>(s.count),
              s.simulated_s);
}

void ratio(const char* what, const Sample& placesim, const Sample& bare) {
  std::printf("  ratio %-44s %5.2fx  (with the graph built: %5.2fx)\n", what, placesim.sim_seconds / bare.seconds,
              placesim.seconds / bare.seconds);
}

/// The fastest of `repeat` children running `measure` (by simulate() time for placesim, run time for bare chains).
Sample fastest(int repeat, const std::function<Sample()>& measure) {
  Sample best = in_child(measure);
  auto key = [](const Sample& s) { return s.sim_seconds > 0 ? s.sim_seconds : s.seconds; };
  for (int i = 1; i < repeat; ++i) {
    Sample s = in_child(measure);
    if (key(s) < key(best)) best = s;
  }
  return best;
}

void bench(std::uint64_t n, int repeat) {
  std::printf("N = %llu (fastest of %d)\n", static_cast<unsigned long long>(n), repeat);
  auto measure = [&](const char* what, const std::function<Sample()>& f) {
    Sample s = fastest(repeat, f);
    print(what, n, s);
    return s;
  };
  Sample comm = measure("bare SimGrid Comm chain", [n] { return bare_activity_chain(n, true); });
  Sample p2p = measure("placesim P2P chain", [n] { return placesim_chain(n, true, false); });
  Sample p2p_rec = measure("placesim P2P chain, records kept", [n] { return placesim_chain(n, true, true); });
  Sample exec = measure("bare SimGrid Exec chain", [n] { return bare_activity_chain(n, false); });
  Sample timer = measure("bare SimGrid kernel-timer chain", [n] { return bare_timer_chain(n); });
  Sample compute = measure("placesim Compute chain", [n] { return placesim_chain(n, false, false); });
  Sample compute_rec = measure("placesim Compute chain, records kept", [n] { return placesim_chain(n, false, true); });
  ratio("placesim P2P / bare Comm", p2p, comm);
  ratio("placesim P2P with records / bare Comm", p2p_rec, comm);
  ratio("placesim Compute / bare Exec", compute, exec);
  ratio("placesim Compute / bare timer", compute, timer);
  ratio("placesim Compute with records / bare timer", compute_rec, timer);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::uint64_t> sizes;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::stoi(argv[++i]));
    else
      sizes.push_back(std::stoull(arg));
  }
  if (sizes.empty()) sizes = {100000, 1000000};
  std::printf("cost per simulated task: placesim simulate() vs a bare SimGrid chain, one forked child each\n");
  for (std::uint64_t n : sizes) bench(n, repeat);
  return 0;
}
