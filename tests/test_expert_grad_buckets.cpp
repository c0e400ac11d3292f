// The experts' gradients reduced bucket by bucket in the last backward, as the dense gradients are.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "tests/Helpers.hpp"

using namespace placesim;

namespace {

struct Span {
  double start = 0, end = 0;  // us
};

// Device 0's spans of the events whose name holds `part`, in start order.
std::vector<Span> spans(const Json& trace, const std::string& part) {
  std::vector<Span> out;
  for (const Json& e : trace["traceEvents"])
    if (e.value("ph", "") == "X" && e["name"].get<std::string>().find(part) != std::string::npos)
      out.push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  std::sort(out.begin(), out.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  return out;
}

}  // namespace

// Megatron-Core core_v0.14.0 distributed_data_parallel.py gives the experts' parameters buffers of their own
// (expert_parallel_bucket_groups) whose gradients the same backward post-hook marks ready (register_grad_ready): a
// bucket is reduce-scattered over the expert-data-parallel group once its layers' last backward is done. Four MoE
// layers, one bucket each (bucket_bytes 1 MB, below a layer's experts): four reduce-scatters, the first during the
// last micro-batch's backward (before layer 0's backward ends), each after its own layer's expert backward; the bytes
// are the after-backward reduction's (every exact figure equals the analytic model's).
TEST_CASE("The experts' gradients are reduce-scattered per bucket in the last backward, by hand") {
  const std::string experiment = R"({"model": {"family": "llama", "layers": 4, "hidden": 1024, "heads": 8,
      "kv_heads": 8, "ffn": 2816, "vocab": 1024, "seq_len": 2048, "experts": 8, "top_k": 2, "moe_ffn": 1408},
    "training": {"global_batch": 64, "micro_batch": 2},
    "strategy": {"preset": "megatron-core", "dp": 16, "ep": 4, "bucket_bytes": "1MB"},
    "cluster": {"preset": "dgx-h100", "nodes": 2}})";
  const std::string path = std::string(PLACESIM_BINARY) + ".egb.json", trace = path + ".trace.json";
  std::ofstream(path) << experiment;
  std::string out;
  REQUIRE(test::run_placesim("simulate " + path + " --fidelity analytic --layer-group 1 --quiet --reproducible " +
                                 "--trace " + trace + " --trace-devices 0 --report " + path + ".report",
                             &out) == 0);
  std::ifstream t(trace), r(path + ".report");
  const Json j = Json::parse(t), report = Json::parse(r);
  for (const std::string& p : {path, trace, path + ".report"}) std::remove(p.c_str());
  bool experts_checked = false;
  for (const Json& row : report["validation"])
    if (row["figure"].get<std::string>().rfind("communication.", 0) == 0) {
      CHECK(row["difference"].get<double>() == 0);
      experts_checked = experts_checked || row["figure"] == "communication.by_class.expert_data_sync";
    }
  CHECK(experts_checked);
  const std::vector<Span> reduces = spans(j, "reducescatter expert_data_sync");
  REQUIRE(reduces.size() == 4);
  // The last micro-batch (mb 1 of 2 per rank) runs its layers' backwards L3 to L0, each MoE layer's experts before
  // its dense part; each layer's bucket follows its experts' backward in it (so none precedes the last micro-batch's
  // backward), and the first is under way before layer 0's backward ends.
  const std::vector<Span> l0 = spans(j, "bwd L0 mb1"), experts = spans(j, "bwd experts mb1");
  REQUIRE(l0.size() == 1);
  REQUIRE(experts.size() == 4);
  CHECK(reduces.front().start < l0.front().end);
  for (std::size_t b = 0; b < 4; ++b) CHECK(reduces[b].start >= experts[b].end - 1e-6);
}
