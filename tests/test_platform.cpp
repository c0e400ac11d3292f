// SimGrid timing on tiny clusters in DAG mode (no actors). Each TEST_CASE runs in its own process (one platform per
// process). Every expectation is hand-computed as sum(latency) + bytes / bandwidth, see the diagram in
// sim/backend/Platform.hpp: NVLink 100 GB/s and 1 us per hop, PCIe 20 GB/s and 3 us, NIC 10 GB/s and 2 us, switch 0.5
// us (half of it on each NIC link), NVMe 8 GB/s read and 4 GB/s write.
#include <catch2/catch.hpp>
#include <simgrid/s4u.hpp>

#include "sim/backend/Platform.hpp"

using namespace placesim;
using Catch::Contains;
namespace s4u = simgrid::s4u;

namespace {

Json tiny_json(int nodes, int gpus, int nics) {
  return Json{
      {"accelerator", "a100-80gb"}, {"nodes", nodes},          {"gpus_per_node", gpus},   {"nics_per_node", nics},
      {"fabric", "fat-tree"},       {"switch_radix", 4},       {"nvlink_bw", "100GB/s"},  {"nvlink_latency", "1us"},
      {"pcie_bw", "20GB/s"},        {"pcie_latency", "3us"},   {"nic_bw", "10GB/s"},      {"nic_latency", "2us"},
      {"switch_latency", "0.5us"},  {"host_flops", "1TFLOPS"}, {"nvme_read_bw", "8GB/s"}, {"nvme_write_bw", "4GB/s"}};
}

// The engine of this process, with no platform yet.
struct Engine {
  int argc = 1;
  char name[16] = "placesim_tests";
  char* argv[2] = {name, nullptr};
  s4u::Engine engine{&argc, argv};
};

// One engine and its platform. The engine must outlive every activity.
struct Simulation : Engine {
  Platform platform;

  Simulation(const Json& cluster, const std::vector<std::pair<int, int>>& pairs)
      : platform(build_platform(engine, parse_cluster(cluster), pairs)) {}

  s4u::CommPtr send(s4u::Host* src, s4u::Host* dst, double bytes) {
    s4u::CommPtr comm = s4u::Comm::sendto_init(src, dst);
    comm->set_payload_size(bytes);
    return comm;
  }
  s4u::CommPtr send(int src_gpu, int dst_gpu, double bytes) {
    return send(platform.gpus.at(src_gpu), platform.gpus.at(dst_gpu), bytes);
  }

  // Starts the roots, runs to the end and checks every activity completed (a pending one would fail silently).
  void run(const std::vector<s4u::ActivityPtr>& roots, const std::vector<s4u::ActivityPtr>& all) {
    for (const auto& a : roots) a->vetoable_start();
    engine.run();
    for (const auto& a : all) REQUIRE(a->get_state() == s4u::Activity::State::FINISHED);
  }
  void run(const std::vector<s4u::ActivityPtr>& activities) { run(activities, activities); }
};

double duration(const s4u::ActivityPtr& a) {
  return a->get_finish_time() - a->get_start_time();
}

}  // namespace

TEST_CASE("a transfer inside a node pays two NVLink hops and the NVLink bandwidth") {
  Simulation sim(tiny_json(1, 2, 1), {{0, 1}});
  auto comm = sim.send(0, 1, 1e9);
  sim.run({comm});
  CHECK(comm->get_start_time() == 0);
  CHECK(comm->get_finish_time() == Approx(2 * 1e-6 + 1e9 / 100e9).epsilon(1e-9));
}

TEST_CASE("the NVSwitch is non-blocking: only a GPU's own NVLink is shared") {
  Simulation sim(tiny_json(1, 4, 1), {{0, 1}, {2, 3}, {0, 2}});
  auto disjoint = sim.send(2, 3, 1e9);  // shares no link with the two below
  auto first = sim.send(0, 1, 1e9);     // these two share nvlink-0 up
  auto second = sim.send(0, 2, 1e9);    // and second shares nvlink-2 down with nothing (disjoint uses 2 up)
  sim.run({disjoint, first, second});
  CHECK(disjoint->get_finish_time() == Approx(2 * 1e-6 + 1e9 / 100e9).epsilon(1e-9));
  CHECK(first->get_finish_time() == Approx(2 * 1e-6 + 2 * 1e9 / 100e9).epsilon(1e-9));
  CHECK(second->get_finish_time() == Approx(2 * 1e-6 + 2 * 1e9 / 100e9).epsilon(1e-9));
}

TEST_CASE("a transfer between nodes under one leaf pays two NICs and one switch") {
  Simulation sim(tiny_json(2, 1, 1), {{1, 0}});  // radix 4: both NICs on leaf 0
  auto comm = sim.send(0, 1, 1e9);
  auto back = sim.send(1, 0, 1e9);  // the reverse direction of a declared pair is routed too
  sim.run({comm, back});
  CHECK(comm->get_finish_time() == Approx(2 * 2e-6 + 0.5e-6 + 1e9 / 10e9).epsilon(1e-9));
  CHECK(back->get_finish_time() == Approx(2 * 2e-6 + 0.5e-6 + 1e9 / 10e9).epsilon(1e-9));
}

TEST_CASE("a transfer between nodes on different leaves pays three switches") {
  Simulation sim(tiny_json(2, 2, 2), {{0, 2}});  // radix 4: node 0's two NICs fill leaf 0, node 1's leaf 1
  auto comm = sim.send(0, 2, 1e9);
  sim.run({comm});
  CHECK(comm->get_finish_time() == Approx(2 * 2e-6 + 3 * 0.5e-6 + 1e9 / 10e9).epsilon(1e-9));
}

TEST_CASE("two flows through one shared NIC get half its bandwidth each") {
  Simulation sim(tiny_json(2, 2, 1), {{0, 2}, {1, 3}});  // one NIC per node, shared by both GPUs
  auto first = sim.send(0, 2, 1e9);
  auto second = sim.send(1, 3, 1e9);
  sim.run({first, second});
  CHECK(first->get_finish_time() == Approx(2 * 2e-6 + 0.5e-6 + 2 * 1e9 / 10e9).epsilon(1e-9));
  CHECK(second->get_finish_time() == Approx(2 * 2e-6 + 0.5e-6 + 2 * 1e9 / 10e9).epsilon(1e-9));
}

TEST_CASE("two flows on separate rails each get a full NIC") {
  Simulation sim(tiny_json(2, 2, 2), {{0, 2}, {1, 3}});  // radix 4: a leaf per node, both flows cross the spine
  auto first = sim.send(0, 2, 1e9);
  auto second = sim.send(1, 3, 1e9);
  sim.run({first, second});
  CHECK(first->get_finish_time() == Approx(2 * 2e-6 + 3 * 0.5e-6 + 1e9 / 10e9).epsilon(1e-9));
  CHECK(second->get_finish_time() == Approx(2 * 2e-6 + 3 * 0.5e-6 + 1e9 / 10e9).epsilon(1e-9));
}

namespace {

// Four single-GPU nodes, two per leaf; every NIC sends 1 GB to the other leaf at once. Returns the finish times.
std::vector<double> all_nics_cross_leaves(double oversubscription) {
  Json cluster = tiny_json(4, 1, 1);
  cluster["oversubscription"] = oversubscription;
  Simulation sim(cluster, {{0, 2}, {1, 3}});
  std::vector<s4u::ActivityPtr> comms = {sim.send(0, 2, 1e9), sim.send(1, 3, 1e9), sim.send(2, 0, 1e9),
                                         sim.send(3, 1, 1e9)};
  sim.run(comms);
  std::vector<double> finish;
  for (const auto& comm : comms) finish.push_back(comm->get_finish_time());
  return finish;
}

}  // namespace

TEST_CASE("oversubscription 2 halves the cross-leaf rate when all NICs send") {
  // Each leaf's uplink carries 2 x 10 GB/s / 2 = 10 GB/s per direction, shared by its two NICs' flows.
  for (double finish : all_nics_cross_leaves(2.0))
    CHECK(finish == Approx(2 * 2e-6 + 3 * 0.5e-6 + 1e9 / 5e9).epsilon(1e-9));
}

TEST_CASE("full bisection lets every NIC cross leaves at full rate") {
  for (double finish : all_nics_cross_leaves(1.0))
    CHECK(finish == Approx(2 * 2e-6 + 3 * 0.5e-6 + 1e9 / 10e9).epsilon(1e-9));
}

TEST_CASE("rail-optimized: same rail in a unit crosses one switch and another rail three") {
  Json cluster = tiny_json(2, 2, 2);
  cluster["fabric"] = "rail-optimized";  // radix 4: one unit of 2 nodes, leaf r holds rail r of both
  Simulation sim(cluster, {{0, 2}, {0, 3}});
  auto same_rail = sim.send(0, 2, 1e9);
  auto other_rail = sim.send(0, 3, 1e9);
  other_rail->add_successor(same_rail);  // one after the other: they would share NIC 0.0
  sim.run({other_rail}, {other_rail, same_rail});
  CHECK(duration(other_rail) == Approx(2 * 2e-6 + 3 * 0.5e-6 + 1e9 / 10e9).epsilon(1e-9));
  CHECK(duration(same_rail) == Approx(2 * 2e-6 + 0.5e-6 + 1e9 / 10e9).epsilon(1e-9));
}

TEST_CASE("device-to-host and host-to-device copies use the two directions of PCIe") {
  Simulation sim(tiny_json(2, 2, 2), {});
  auto d2h = sim.send(sim.platform.gpus[3], sim.platform.cpus[1], 1e9);
  auto h2d = sim.send(sim.platform.cpus[1], sim.platform.gpus[3], 1e9);
  sim.run({d2h, h2d});
  CHECK(d2h->get_finish_time() == Approx(3e-6 + 1e9 / 20e9).epsilon(1e-9));
  CHECK(h2d->get_finish_time() == Approx(3e-6 + 1e9 / 20e9).epsilon(1e-9));
}

TEST_CASE("an NVMe write takes bytes over the write bandwidth and a read over the read bandwidth") {
  Simulation sim(tiny_json(1, 2, 1), {});
  s4u::IoPtr write = s4u::Io::init();
  write->set_disk(sim.platform.nvme[0])->set_size(2e9)->set_op_type(s4u::Io::OpType::WRITE);
  s4u::IoPtr read = s4u::Io::init();
  read->set_disk(sim.platform.nvme[0])->set_size(2e9)->set_op_type(s4u::Io::OpType::READ);
  write->add_successor(read);
  sim.run({write}, {write, read});
  CHECK(duration(write) == Approx(2e9 / 4e9).epsilon(1e-9));
  CHECK(duration(read) == Approx(2e9 / 8e9).epsilon(1e-9));
}

TEST_CASE("GPU hosts run at peak bf16 and a node CPU has one host_flops core per GPU") {
  Simulation sim(tiny_json(2, 2, 2), {});
  REQUIRE(sim.platform.gpus.size() == 4);
  REQUIRE(sim.platform.cpus.size() == 2);
  REQUIRE(sim.platform.nvme.size() == 2);
  CHECK(sim.platform.gpus[3]->get_speed() == 312e12);
  CHECK(sim.platform.cpus[1]->get_speed() == 1e12);
  CHECK(sim.platform.cpus[1]->get_core_count() == 2);
  CHECK(sim.platform.nvme[1]->get_host() == sim.platform.cpus[1]);
  // Two GPUs' optimizer steps of 1e12 FLOP at once: each gets its own 1e12 FLOP/s core, 1 s each.
  s4u::ExecPtr a = s4u::Exec::init(), b = s4u::Exec::init();
  a->set_flops_amount(1e12)->set_host(sim.platform.cpus[0]);
  b->set_flops_amount(1e12)->set_host(sim.platform.cpus[0]);
  sim.run({a, b});
  CHECK(a->get_finish_time() == Approx(1.0).epsilon(1e-9));
  CHECK(b->get_finish_time() == Approx(1.0).epsilon(1e-9));
}

TEST_CASE("The timer host runs concurrent delays without sharing") {
  Simulation sim(tiny_json(1, 2, 2), {});
  s4u::ExecPtr a = s4u::Exec::init(), b = s4u::Exec::init();
  a->set_flops_amount(0.25 * sim.platform.timer->get_speed())->set_host(sim.platform.timer);
  b->set_flops_amount(0.5 * sim.platform.timer->get_speed())->set_host(sim.platform.timer);
  sim.run({a, b});
  CHECK(a->get_finish_time() == Approx(0.25).epsilon(1e-12));
  CHECK(b->get_finish_time() == Approx(0.5).epsilon(1e-12));
}

TEST_CASE("only declared pairs are routed and duplicates collapse") {
  Simulation sim(tiny_json(2, 2, 2), {{0, 3}, {3, 0}, {1, 2}, {0, 3}});
  CHECK(sim.platform.routed_pairs.size() == 2);
  CHECK(sim.platform.has_route(0, 3));
  CHECK(sim.platform.has_route(3, 0));
  CHECK(sim.platform.has_route(2, 1));
  CHECK_FALSE(sim.platform.has_route(0, 1));
  CHECK_FALSE(sim.platform.has_route(0, 0));
  CHECK_FALSE(sim.platform.has_route(0, 4));
}

TEST_CASE("a pair out of range is refused naming the devices") {
  Engine e;
  CHECK_THROWS_WITH(build_platform(e.engine, parse_cluster(tiny_json(2, 2, 2)), {{0, 1}, {2, 7}}),
                    Contains("transfer device 2 -> device 7: device 7 is out of range"));
}

TEST_CASE("a pair whose route cannot exist is refused naming the devices") {
  Engine e;
  CHECK_THROWS_WITH(build_platform(e.engine, parse_cluster(tiny_json(2, 2, 2)), {{1, 1}}),
                    Contains("transfer device 1 -> device 1 has no route"));
}

TEST_CASE("a SimGrid configuration key placesim does not pass is refused naming it") {
  Engine e;
  Json cluster = tiny_json(1, 2, 1);
  cluster["simgrid_config"] = Json{{"network/no-such-key", "1"}};
  CHECK_THROWS_WITH(build_platform(e.engine, parse_cluster(cluster), {}),
                    Contains("cluster.simgrid_config: unknown key \"network/no-such-key\""));
}

TEST_CASE("a second platform in one process is a logic error instead of a SimGrid abort") {
  Simulation sim(tiny_json(1, 2, 1), {{0, 1}});
  CHECK_THROWS_AS(build_platform(sim.engine, parse_cluster(tiny_json(1, 2, 1)), {}), std::logic_error);
}
