// Platform build time and memory: `bench_platform GPUS PAIRS [fat-tree|rail-optimized] [OVERSUBSCRIPTION]`.
// Builds DGX A100 nodes with the given GPU count and PAIRS GPU pairs (ring neighbours, the node-local pairs, then
// pseudo-random pairs), prints the build time and peak resident memory, then runs one ring step (every GPU sends
// 64 MB to the next) to show the routes work. One process per run (SimGrid: one platform per process).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <simgrid/s4u.hpp>

#include "sim/backend/Platform.hpp"

using namespace placesim;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s GPUS PAIRS [fabric] [oversubscription]\n", argv[0]);
    return 2;
  }
  int gpus = std::atoi(argv[1]);
  std::size_t wanted = std::strtoull(argv[2], nullptr, 10);
  Json spec{{"preset", "dgx-a100"}, {"nodes", gpus / 8}};
  if (argc > 3) spec["fabric"] = argv[3];
  ClusterSpec c = parse_cluster(spec);
  if (argc > 4) c.oversubscription = std::atof(argv[4]);

  std::vector<std::pair<int, int>> pairs;
  for (int g = 0; g < gpus && pairs.size() < wanted; ++g) pairs.emplace_back(g, (g + 1) % gpus);
  for (int g = 0; g < gpus && pairs.size() < wanted; ++g)
    for (int h = g + 1; h < (g / 8 + 1) * 8 && pairs.size() < wanted; ++h) pairs.emplace_back(g, h);
  std::uint64_t state = 12345;
  while (pairs.size() < wanted) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    int a = static_cast<int>((state >> 33) % gpus), b = static_cast<int>((state >> 13) % gpus);
    if (a != b) pairs.emplace_back(a, b);
  }

  int fake_argc = 1;
  char name[] = "bench_platform";
  char* fake_argv[] = {name, nullptr};
  simgrid::s4u::Engine engine(&fake_argc, fake_argv);
  auto start = std::chrono::steady_clock::now();
  Platform p = build_platform(engine, c, pairs);
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%d GPUs, %zu pairs (%zu distinct): build %.3f s, peak RSS %.0f MB\n", gpus, pairs.size(),
              p.routed_pairs.size(), build_s, usage.ru_maxrss / 1024.0);

  // SimGrid resolves the route of every transfer it starts: time that lookup over the declared pairs.
  std::vector<simgrid::s4u::Link*> route;
  double latency = 0;
  start = std::chrono::steady_clock::now();
  const int lookups = 1000000;
  for (int i = 0; i < lookups; ++i) {
    auto [a, b] = pairs[static_cast<std::size_t>(i) * 7919 % pairs.size()];
    route.clear();
    p.gpus[a]->route_to(p.gpus[b], route, &latency);
  }
  double lookup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("route lookup: %.2f us each\n", lookup_s / lookups * 1e6);

  std::vector<simgrid::s4u::CommPtr> comms;
  for (int g = 0; g < gpus; ++g) {
    comms.push_back(simgrid::s4u::Comm::sendto_init(p.gpus[g], p.gpus[(g + 1) % gpus]));
    comms.back()->set_payload_size(64e6)->vetoable_start();
  }
  start = std::chrono::steady_clock::now();
  engine.run();
  double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double last = 0;
  for (const auto& comm : comms) last = std::max(last, comm->get_finish_time());
  std::printf("ring step of %d x 64 MB: simulated %.6f s, wall %.3f s\n", gpus, last, run_s);
  return 0;
}
