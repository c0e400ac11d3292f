#include <catch2/catch.hpp>
#include <cmath>

#include "tests/Helpers.hpp"
#include "topology/hardware/CommProfile.hpp"

using namespace placesim;

namespace {

FabricProfile toy() {
  FabricProfile f;
  f.name = "toy";
  f.link_bw_Bps = 100e9;
  f.bus_efficiency = 0.5;
  f.step_latency_s = 2e-6;
  return f;
}

// nccl-tests busbw (GB/s) the model predicts for an all-reduce of `bytes` over `ranks`.
double model_busbw(const FabricProfile& f, CollectiveAlgorithm a, double bytes, int ranks) {
  double t = collective_time_s(CollectiveKind::AllReduce, a, bytes, ranks, f);
  return bus_bandwidth_Bps(CollectiveKind::AllReduce, bytes, ranks, t) / 1e9;
}

// Checks a fabric against a measured nccl-tests busbw curve: every point within `worst` and the root mean square of
// the relative errors within `rms`.
void check_curve(const std::string& file, const FabricProfile& f, CollectiveAlgorithm a, double worst, double rms) {
  Json m = read_json_file(std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/measurements/" + file);
  double squares = 0;
  for (const auto& p : m["collectives"]) {
    double bytes = p["bytes"].get<double>(), measured = p["busbw_GBps"].get<double>();
    double model = model_busbw(f, a, bytes, p["ranks"].get<int>());
    INFO(file << " " << bytes << " B: measured " << measured << " GB/s, model " << model);
    CHECK(std::fabs(model / measured - 1) < worst);
    squares += (model / measured - 1) * (model / measured - 1);
  }
  CHECK(std::sqrt(squares / static_cast<double>(m["collectives"].size())) < rms);
}

// The toy fabric with a low-latency protocol: B_LL = 25 GB/s, a_LL = 2 us beside B = 50 GB/s, a = 10 us.
FabricProfile two_protocols() {
  FabricProfile f = toy();
  f.step_latency_s = 10e-6;
  f.ll_bus_efficiency = 0.25;
  f.ll_step_latency_s = 2e-6;
  return f;
}

}  // namespace

TEST_CASE("Ring closed forms: 2(N-1)(a + X/(NB)) for all-reduce and (N-1)(a + X/(NB)) for all-gather") {
  FabricProfile f = toy();  // B = 50 GB/s, a = 2 us
  CHECK(collective_time_s(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 8e9, 8, f) ==
        Approx(14 * (2e-6 + 1e9 / 50e9)));
  CHECK(collective_time_s(CollectiveKind::AllGather, CollectiveAlgorithm::Ring, 8e9, 8, f) ==
        Approx(7 * (2e-6 + 1e9 / 50e9)));
  CHECK(collective_time_s(CollectiveKind::ReduceScatter, CollectiveAlgorithm::Ring, 8e9, 8, f) ==
        collective_time_s(CollectiveKind::AllGather, CollectiveAlgorithm::Ring, 8e9, 8, f));
  CHECK(collective_time_s(CollectiveKind::SendRecv, CollectiveAlgorithm::Ring, 1e9, 2, f) == Approx(2e-6 + 0.02));
  CHECK(collective_time_s(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 1e9, 1, f) == 0);
}

TEST_CASE("Trees pay logarithmic latency and rings linear: small messages favour trees at scale") {
  FabricProfile f = toy();
  double ring = collective_time_s(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 1024, 1024, f);
  double tree = collective_time_s(CollectiveKind::AllReduce, CollectiveAlgorithm::Tree, 1024, 1024, f);
  CHECK(ring == Approx(2 * 1023 * (2e-6 + 1024.0 / 1024 / 50e9)));
  CHECK(tree == Approx(2 * 10 * 2e-6 + 2 * 1024 / 50e9));
  CHECK(tree < ring / 50);
  // Bus bandwidth of a large ring all-reduce approaches the fabric's bus bandwidth.
  CHECK(model_busbw(f, CollectiveAlgorithm::Ring, 8e10, 8) == Approx(50).epsilon(0.001));
}

TEST_CASE("Two protocols: NCCL's low-latency protocol runs small messages and the bandwidth protocol large ones") {
  const FabricProfile f = two_protocols();
  const RingHop own{f.step_latency_s, f.bus_bw_Bps()};
  // 8 kB all-reduce on 8 ranks, 1 kB chunks: bandwidth protocol 14 (10 us + 20 ns), low-latency 14 (2 us + 40 ns).
  CollectivePlan small = plan_collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 8e3, 8, f, own);
  CHECK(small.low_latency);
  CHECK(small.time_s == Approx(14 * (2e-6 + 1e3 / 25e9)));
  // 8 GB: bandwidth protocol 14 (10 us + 20 ms) against 14 (2 us + 40 ms).
  CollectivePlan large = plan_collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 8e9, 8, f, own);
  CHECK_FALSE(large.low_latency);
  CHECK(large.time_s == Approx(14 * (10e-6 + 1e9 / 50e9)));
  // They cross where 10 us + c / 50 GB/s = 2 us + c / 25 GB/s: chunks of 400 kB, 3.2 MB all-reduces.
  CHECK(plan_collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 3.1e6, 8, f, own).low_latency);
  CHECK_FALSE(plan_collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 3.3e6, 8, f, own).low_latency);
  CHECK(collective_time_s(CollectiveKind::AllGather, CollectiveAlgorithm::Ring, 8e3, 8, f) ==
        Approx(7 * (2e-6 + 1e3 / 25e9)));
  // A tree pays 2 log2(N) steps of latency with either protocol.
  CHECK(collective_time_s(CollectiveKind::AllReduce, CollectiveAlgorithm::Tree, 1024, 1024, f) ==
        Approx(2 * 10 * 2e-6 + 2 * 1024 / 25e9));
}

TEST_CASE("A ring's slowest hop carries the protocols: the low-latency one keeps the latency gap and bandwidth ratio") {
  const FabricProfile f = two_protocols();
  // A hop of 30 us and 40 GB/s (the bandwidth protocol on a slower, farther route): the low-latency protocol there
  // costs 30 - (10 - 2) = 22 us per step at 40 x 0.25 / 0.5 = 20 GB/s.
  const RingHop hop{30e-6, 40e9};
  CHECK(plan_collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 8e3, 8, f, hop).time_s ==
        Approx(14 * (22e-6 + 1e3 / 20e9)));
  CHECK(plan_collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 8e9, 8, f, hop).time_s ==
        Approx(14 * (30e-6 + 1e9 / 40e9)));
  // One protocol (no low-latency figures): the hop as given.
  CHECK(plan_collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 8e3, 8, toy(), hop).time_s ==
        Approx(14 * (30e-6 + 1e3 / 40e9)));
}

TEST_CASE("With NVLink SHARP an all-reduce takes the faster of NVLS and the ring, as NCCL's tuner does") {
  FabricProfile f = two_protocols();
  f.nvls_bus_efficiency = 0.9;  // 90 GB/s
  f.nvls_latency_s = 50e-6;
  CollectivePlan small = plan_collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Nvls, 8e3, 8, f,
                                         RingHop{f.step_latency_s, f.bus_bw_Bps()});
  CHECK(small.algorithm == CollectiveAlgorithm::Ring);
  CHECK(small.low_latency);
  CHECK(small.time_s == Approx(14 * (2e-6 + 1e3 / 25e9)));
  CollectivePlan large = plan_collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Nvls, 8e9, 8, f,
                                         RingHop{f.step_latency_s, f.bus_bw_Bps()});
  CHECK(large.algorithm == CollectiveAlgorithm::Nvls);
  CHECK(large.time_s == Approx(50e-6 + 2.0 * 7 / 8 * 8e9 / 90e9));
  // NVLS reduces only: an all-gather runs as a ring.
  CHECK(plan_collective(CollectiveKind::AllGather, CollectiveAlgorithm::Nvls, 8e9, 8, f,
                        RingHop{f.step_latency_s, f.bus_bw_Bps()})
            .algorithm == CollectiveAlgorithm::Ring);
}

TEST_CASE("NVLink3 two-protocol model against the A100 nccl-tests all-reduce curve (Azure ND A100 v4)") {
  check_curve("a100-80gb.json", fabric_preset("nvlink3", "test"), CollectiveAlgorithm::Ring, 0.12, 0.05);
}

TEST_CASE("NVLink4 NVLS and ring model against the H100 nccl-tests all-reduce curve (Azure ND H100 v5)") {
  check_curve("h100-sxm.json", fabric_preset("nvlink4", "test"), CollectiveAlgorithm::Nvls, 0.17, 0.06);
}

TEST_CASE("H200's fitted fabric against the H200 nccl-tests all-reduce curve (Azure ND H200 v5)") {
  Json profile = read_json_file(std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/h200.json");
  check_curve("h200.json", parse_fabric_profile(profile["comm"]["intra_node"], "h200.comm.intra_node"),
              CollectiveAlgorithm::Nvls, 0.06, 0.03);
}

TEST_CASE("NVLink5 two-protocol model against the GB200 nccl-tests all-reduce curve (Azure ND GB200 v6)") {
  check_curve("gb200.json", fabric_preset("nvlink5", "test"), CollectiveAlgorithm::Ring, 0.13, 0.05);
}

// The 8-GPU B200 all-reduce from 128 MiB (torch all_reduce_bench, NCCL 2.27.7): Ring to 4 GiB, NVLS from 8 GiB by
// NCCL's own log, one NVLS fit over them, so the step at 8 GiB is the worst point.
TEST_CASE("NVLink5 NVLS model against the 8-GPU B200 all-reduce curve (p6-b200, ml-engineering)") {
  check_curve("b200.json", fabric_preset("nvlink5", "test"), CollectiveAlgorithm::Nvls, 0.09, 0.05);
}

TEST_CASE("Every profile file's fabric equals the preset of its accelerator's reference system") {
  for (const auto& [accelerator, fabric] : {std::pair{"a100-40gb", "nvlink3"},
                                            {"a100-80gb", "nvlink3"},
                                            {"h100-sxm", "nvlink4"},
                                            {"b200", "nvlink5"},
                                            {"gb200", "nvlink5"}}) {
    INFO(accelerator);
    Json profile =
        read_json_file(std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/" + accelerator + std::string(".json"));
    Json file = profile["comm"]["intra_node"], preset = fabric_profile_to_json(fabric_preset(fabric, "test"));
    file.erase("sources");
    preset.erase("sources");
    CHECK(file == preset);
  }
}

TEST_CASE("NVLink4 ring reaches the 370 GB/s bus bandwidth NVIDIA quotes (nccl-tests issue 212)") {
  FabricProfile f = fabric_preset("nvlink4", "test");
  CHECK(model_busbw(f, CollectiveAlgorithm::Ring, 8.0 * (1 << 30), 8) == Approx(370).epsilon(0.01));
}

TEST_CASE("HDR InfiniBand rings reach about 24 GB/s per 25 GB/s NIC (nccl-tests issue 160)") {
  FabricProfile f = fabric_preset("ib-hdr", "test");
  CHECK(model_busbw(f, CollectiveAlgorithm::Ring, 8.0 * (1 << 30), 16) == Approx(24).epsilon(0.01));
}

TEST_CASE("Collective inputs are checked") {
  FabricProfile f = toy();
  CHECK_THROWS_WITH(collective_time_s(CollectiveKind::AllReduce, CollectiveAlgorithm::Nvls, 1e6, 8, f),
                    Catch::Contains("no NVLink SHARP"));
  CHECK_THROWS_WITH(collective_time_s(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 1e6, 0, f),
                    Catch::Contains("ranks=0"));
  CHECK_THROWS_WITH(parse_fabric_profile(Json{{"link_bw", "100GB/s"}, {"bus_efficiency", 0.9}}, "cluster.comm.intra"),
                    Catch::Contains("cluster.comm.intra.step_latency is required but missing"));
  CHECK_THROWS_WITH(parse_fabric_profile(Json{{"preset", "ib-hdr"}, {"step_latency", -1}}, "f"),
                    Catch::Contains("f.step_latency=-1 must not be negative"));
  CHECK_THROWS_WITH(fabric_preset("nvlnk4", "fabric"), Catch::Contains("did you mean 'nvlink4'"));
  CHECK_THROWS_WITH(parse_fabric_profile(Json{{"preset", "nvlink3"}, {"ll_bus_efficiency", 1.5}}, "f"),
                    Catch::Contains("f.ll_bus_efficiency=1.5 must be in [0, 1] (0 = none)"));
  CHECK_THROWS_WITH(parse_fabric_profile(Json{{"preset", "nvlink3"}, {"ll_step_latency", "-2us"}}, "f"),
                    Catch::Contains("f.ll_step_latency"));
  FabricProfile ll =
      parse_fabric_profile(Json{{"preset", "ib-hdr"}, {"ll_bus_efficiency", 0.5}, {"ll_step_latency", "4us"}}, "f");
  CHECK(ll.has_low_latency_protocol());
  CHECK(ll.ll_step_latency_s == Approx(4e-6));
  FabricProfile parsed = parse_fabric_profile(Json{{"preset", "ib-ndr"}, {"step_latency", "5us"}}, "f");
  CHECK(parsed.step_latency_s == Approx(5e-6));
  CHECK(parsed.link_bw_Bps == 50e9);
}
