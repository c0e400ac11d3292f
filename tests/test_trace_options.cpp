#include <catch2/catch.hpp>

#include "traces/chrome/TraceOptions.hpp"
#include "workloads/json/Error.hpp"

using namespace placesim;

namespace {

/// 16 devices: pp 2 × dp 2 × tp 4, 8 per node, ranks in Megatron order (tp fastest, then dp, then pp).
std::vector<DeviceInfo> mesh16() {
  std::vector<DeviceInfo> devices;
  for (int rank = 0; rank < 16; ++rank)
    devices.push_back(DeviceInfo{rank / 8, rank % 8, (rank / 4) % 2, rank % 4, rank / 8});
  return devices;
}

std::vector<int> select(const std::string& text) {
  return parse_device_selection(text, mesh16());
}

std::vector<int> range(int first, int last) {
  std::vector<int> r;
  for (int i = first; i <= last; ++i) r.push_back(i);
  return r;
}

}  // namespace

TEST_CASE("device selections by index and range") {
  CHECK(select("all") == range(0, 15));
  CHECK(select("0-15") == range(0, 15));
  CHECK(select("3,5,7") == std::vector<int>{3, 5, 7});
  CHECK(select("7,3,3") == std::vector<int>{3, 7});
  CHECK(select(" 2-4 , 6") == std::vector<int>{2, 3, 4, 6});
  CHECK(select("12") == std::vector<int>{12});
}

TEST_CASE("device selections by mesh coordinate and node") {
  CHECK(select("stage0") == range(0, 7));
  CHECK(select("pp1") == range(8, 15));
  CHECK(select("dp0") == std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11});
  CHECK(select("tp0") == std::vector<int>{0, 4, 8, 12});
  CHECK(select("node1") == range(8, 15));
  CHECK(select("stage0-1") == range(0, 15));
}

TEST_CASE("plus intersects and comma unites") {
  CHECK(select("dp0+tp0") == std::vector<int>{0, 8});  // one pipeline
  CHECK(select("stage1+dp1+tp3") == std::vector<int>{15});
  CHECK(select("stage0+tp0,15") == std::vector<int>{0, 4, 15});
  CHECK(select("0-3+dp0") == range(0, 3));
}

TEST_CASE("bad device selections name the flag and the value") {
  auto fails = [](const std::string& text, const std::string& why) {
    INFO(text);
    CHECK_THROWS_AS(select(text), InputError);
    CHECK_THROWS_WITH(select(text), Catch::StartsWith("--trace-devices=" + text + ": ") && Catch::Contains(why));
  };
  fails("16", "device 16 does not exist (devices 0-15)");
  fails("0-99", "device 99 does not exist");
  fails("stage9", "'stage9' selects no device");
  fails("dp0+dp1", "'dp0+dp1' selects no device");
  fails("rack0", "'rack0' is not a device selection");
  fails("5-2", "'5-2' is not a device selection");
  fails("", "'' is not a device selection");
  fails("1,,2", "'' is not a device selection");
  fails("stage", "'stage' is not a device selection");
  fails("-1", "'-1' is not a device selection");
  fails("dp0x", "'dp0x' is not a device selection");
}

TEST_CASE("trace detail parses coarse and fine only") {
  CHECK(parse_trace_detail("coarse") == TraceDetail::Coarse);
  CHECK(parse_trace_detail("fine") == TraceDetail::Fine);
  CHECK_THROWS_AS(parse_trace_detail("full"), InputError);
  CHECK_THROWS_WITH(parse_trace_detail("full"), Catch::Contains("--trace-detail=full"));
  CHECK(std::string(to_string(TraceDetail::Fine)) == "fine");
}
