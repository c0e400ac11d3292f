#include <catch2/catch.hpp>
#include <cmath>

#include "tests/Helpers.hpp"
#include "topology/CommProfile.hpp"

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

// Checks a fabric against the measured busbw curve of a measurement file: bandwidth-bound sizes (>= 256 MiB) within
// `tight`, latency-bound sizes (<= 256 KiB) within `small`; the protocol-switching middle (NCCL's LL128 -> Simple,
// fewer channels), which an alpha-beta model cannot follow, within a factor `loose`.
void check_curve(const std::string& file, const FabricProfile& f, CollectiveAlgorithm a, double tight, double small,
                 double loose) {
  Json m = read_json_file(std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/measurements/" + file);
  for (const auto& p : m["collectives"]) {
    double bytes = p["bytes"].get<double>(), measured = p["busbw_GBps"].get<double>();
    double model = model_busbw(f, a, bytes, p["ranks"].get<int>());
    INFO(file << " " << bytes << " B: measured " << measured << " GB/s, model " << model);
    if (bytes >= 268435456)
      CHECK(std::fabs(model / measured - 1) < tight);
    else if (bytes <= 262144)
      CHECK(std::fabs(model / measured - 1) < small);
    else
      CHECK(std::fabs(std::log(model / measured)) < std::log(loose));
  }
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

TEST_CASE("NVLink3 ring model against the A100 nccl-tests all-reduce curve (Azure ND A100 v4)") {
  check_curve("a100-80gb.json", fabric_preset("nvlink3", "test"), CollectiveAlgorithm::Ring, 0.06, 0.06, 1.6);
}

// NCCL runs small all-reduces with a low-latency ring/tree instead of NVLS; one NVLS alpha overstates their time.
TEST_CASE("NVLink4 NVLS model against the H100 nccl-tests all-reduce curve (Azure ND H100 v5)") {
  check_curve("h100-sxm.json", fabric_preset("nvlink4", "test"), CollectiveAlgorithm::Nvls, 0.08, 0.4, 1.6);
}

TEST_CASE("NVLink5 ring model against the GB200 nccl-tests all-reduce curve (Azure ND GB200 v6)") {
  check_curve("b200.json", fabric_preset("nvlink5", "test"), CollectiveAlgorithm::Ring, 0.1, 0.1, 1.8);
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
  FabricProfile parsed = parse_fabric_profile(Json{{"preset", "ib-ndr"}, {"step_latency", "5us"}}, "f");
  CHECK(parsed.step_latency_s == Approx(5e-6));
  CHECK(parsed.link_bw_Bps == 50e9);
}
