// Sweep specification: axes, ranges, point order, errors, sharding, evaluation and resume bookkeeping.
#include <catch2/catch.hpp>
#include <map>

#include "strategies/sweep/SweepPoint.hpp"
#include "tests/Helpers.hpp"
#include "tests/RefusalHelpers.hpp"
#include "tests/SweepHelpers.hpp"
#include "traces/report/Report.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "traces/sweep/SweepRows.hpp"

using namespace placesim;
using test::kSmallBase;
using test::sweep;

namespace {

std::vector<Json> values(const std::string& axis) {
  return axis_values(Json::parse(axis), "axes.x");
}

// A sweep of 4 x 5 x 6 x 2 points on 64 DGX H100 nodes = 512 GPUs.
const char* kIssueSweep = R"({"base": {"model": "llama3-70b", "cluster": {"preset": "dgx-h100", "nodes": 64},
    "training": {"global_batch": 1024, "micro_batch": 1}, "strategy": {"preset": "megatron-3d"}},
    "axes": {"strategy.tp": [1, 2, 4, 8], "strategy.pp": [1, 2, 4, 8, 16], "strategy.dp": [4, 8, 16, 32, 64, 128],
             "strategy.preset": ["megatron-3d", "zero1"]}, "mode": "analyze"})";

}  // namespace

TEST_CASE("Axis lists and arithmetic ranges expand to exact values") {
  CHECK(values("[1, \"a\", {\"x\": 2}]") == std::vector<Json>{1, "a", Json{{"x", 2}}});
  CHECK(values(R"({"from": 1, "to": 10, "step": 3})") == std::vector<Json>{1, 4, 7, 10});
  CHECK(values(R"({"from": 1, "to": 10, "step": 4})") == std::vector<Json>{1, 5, 9});
  CHECK(values(R"({"from": 5, "to": 5, "step": 1})") == std::vector<Json>{5});
  std::vector<Json> halves = values(R"({"from": 0.5, "to": 1.5, "step": 0.25})");
  CHECK(halves == std::vector<Json>{0.5, 0.75, 1.0, 1.25, 1.5});
  CHECK(halves[0].is_number_float());
  // A tenth is not exact in binary; the range still ends at `to` and values are from + k*step.
  std::vector<Json> tenths = values(R"({"from": 0, "to": 1, "step": 0.1})");
  REQUIRE(tenths.size() == 11);
  CHECK(tenths[3].get<double>() == 3 * 0.1);
  CHECK(values(R"({"from": 2, "to": 3, "step": 0.5})") == std::vector<Json>{2.0, 2.5, 3.0});
}

TEST_CASE("Axis geometric ranges multiply up to and including to") {
  CHECK(values(R"({"from": 16, "to": 2048, "times": 2})") == std::vector<Json>{16, 32, 64, 128, 256, 512, 1024, 2048});
  CHECK(values(R"({"from": 3, "to": 100, "times": 3})") == std::vector<Json>{3, 9, 27, 81});
  CHECK(values(R"({"from": 1, "to": 1, "times": 10})") == std::vector<Json>{1});
  CHECK(values(R"({"from": 0.5, "to": 4, "times": 2})") == std::vector<Json>{0.5, 1.0, 2.0, 4.0});
  CHECK(values(R"({"from": 16, "to": 2048, "times": 2})")[0].is_number_integer());
}

TEST_CASE("Ranges that never end or are empty are refused naming the field") {
  auto message = [](const std::string& axis) { return test::refusal_message([&] { values(axis); }); };
  test::check_refusals(message, {{R"({"from": 1, "to": 10, "step": 0})", "axes.x.step=0 must be positive"},
                                 {R"({"from": 1, "to": 10, "step": -1})", "axes.x.step=-1 must be positive"},
                                 {R"({"from": 1, "to": 10, "times": 1})", "axes.x.times=1 must be greater than 1"},
                                 {R"({"from": 1, "to": 10, "times": 0.5})", "never end"},
                                 {R"({"from": 0, "to": 10, "times": 2})", "axes.x.from=0 must be positive"},
                                 {R"({"from": 10, "to": 1, "step": 1})", "never reach to"},
                                 {R"({"from": 10, "to": 1, "times": 2})", "never reach to"},
                                 {R"({"from": 1, "to": 10})", "exactly one of \"step\""},
                                 {R"({"from": 1, "to": 10, "step": 1, "times": 2})", "exactly one of"},
                                 {R"({"to": 10, "step": 1})", "axes.x.from is required"},
                                 {R"({"from": 1, "to": 10, "stepp": 1})", "axes.x"},
                                 {R"({"from": 1, "to": 1e12, "step": 1})", "more than 10000000 values"},
                                 {"[]", "axes.x is an empty axis"},
                                 {"4", "must be a list of values or a range"}});
}

TEST_CASE("Points are the Cartesian product in file order with the last axis fastest") {
  // Written tp before dp: the file's order, not the alphabetical one, sets the enumeration.
  SweepSpec s =
      sweep(std::string("{") + kSmallBase + R"(, "axes": {"strategy.tp": [1, 2], "strategy.dp": [1, 2, 4]}})");
  REQUIRE(s.points() == 6);
  REQUIRE(s.paths() == std::vector<std::string>{"strategy.tp", "strategy.dp"});
  std::vector<std::pair<int, int>> tp_dp;
  for (std::uint64_t i = 0; i < s.points(); ++i) {
    Json e = point_experiment(s, point_coords(s, i));
    tp_dp.emplace_back(e["strategy"]["tp"].get<int>(), e["strategy"]["dp"].get<int>());
  }
  CHECK(tp_dp == std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}, {2, 4}});
  CHECK(point_coords(s, 4) == std::vector<std::size_t>{1, 1});
}

TEST_CASE("A joint axis varies its paths together") {
  SweepSpec s = sweep(std::string("{") + kSmallBase +
                      R"(, "axes": {"strategy.dp,strategy.tp": [[8, 1], [4, 2]], "training.micro_batch": [1, 2]}})");
  REQUIRE(s.points() == 4);
  Json e = point_experiment(s, point_coords(s, 3));
  CHECK(e["strategy"]["dp"] == 4);
  CHECK(e["strategy"]["tp"] == 2);
  CHECK(e["training"]["micro_batch"] == 2);
  CHECK_THAT(
      test::sweep_error(std::string("{") + kSmallBase + R"(, "axes": {"strategy.dp,strategy.tp": [[8, 1], [4]]}})"),
      Catch::Contains("axes.strategy.dp,strategy.tp[1]=[4] must be a list of 2 values"));
  CHECK_THAT(test::sweep_error(std::string("{") + kSmallBase + R"(, "axes": {"strategy.dp,strategy.tp": [[8, 1]],
             "strategy.tp": [1]}})"),
             Catch::Contains("the field strategy.tp is swept by two axes"));
}

TEST_CASE("Unknown field paths are refused naming the axis") {
  auto with_axis = [](const std::string& axis) {
    return test::sweep_error(std::string("{") + kSmallBase + R"(, "axes": {")" + axis + R"(": [1]}})");
  };
  test::check_refusals(with_axis, {{"strategy.tpp", "axes.strategy.tpp: strategy.tpp is not a field"},
                                   {"strategy.tpp", "(did you mean 'strategy."},
                                   {"training.micro_batchh", "axes.training.micro_batchh"},
                                   {"model.layerz", "axes.model.layerz: model.layerz is not a field"},
                                   {"stratgy.tp", "axes.stratgy.tp"},
                                   {"strategy.placement.optimiser", "axes.strategy.placement.optimiser"},
                                   {"training.micro_batch.size", "axes.training.micro_batch.size"}});
  // A model given only by an axis does not hide an unknown strategy field.
  CHECK_THAT(test::sweep_error(R"({"base": {"strategy": "dp"}, "axes": {"model": ["gpt-1.7b"], "strategy.tpp": [1]}})"),
             Catch::Contains("axes.strategy.tpp"));
  CHECK_THAT(test::sweep_error(
                 R"({"base": {"model": "gpt-1.7b", "strategy": "dp", "modle": 1}, "axes": {"strategy.dp": [1]}})"),
             Catch::Contains("base: unknown key modle"));
  CHECK_THAT(test::sweep_error(std::string("{") + kSmallBase + R"(, "axes": {"strategy.tp": []}})"),
             Catch::Contains("axes.strategy.tp is an empty axis"));
  CHECK_THAT(test::sweep_error(std::string("{") + kSmallBase + R"(, "axes": {}})"),
             Catch::Contains("at least one axis"));
  CHECK_THAT(test::sweep_error(std::string("{") + kSmallBase + R"(, "axes": {"strategy.tp": [1]}, "mode": "simulat"})"),
             Catch::Contains("mode=simulat is not one of"));
  CHECK_THAT(test::sweep_error(std::string("{") + kSmallBase + R"(, "axis": {"strategy.tp": [1]}})"),
             Catch::Contains("unknown key axis"));
}

TEST_CASE("Shard specs are i/N with i below N") {
  auto message = [](const std::string& text) { return test::refusal_message([&] { parse_shard(text); }); };
  CHECK(parse_shard("3/16").index == 3);
  CHECK(parse_shard("3/16").count == 16);
  CHECK(parse_shard("0/1").count == 1);
  test::check_refusals(message, {{"3/3", "--shard=3/3: i must be below N"},
                                 {"1/0", "N must be at least 1"},
                                 {"2", "expected i/N"},
                                 {"a/2", "i must be a non-negative integer"},
                                 {"-1/2", "i must be a non-negative integer"},
                                 {"1/x", "N must be a non-negative integer"},
                                 {"/4", "i must be"}});
}

TEST_CASE("Shards partition the points: each index in exactly one shard") {
  for (std::uint64_t n : {1, 2, 5, 16}) {
    std::vector<int> seen(37, 0);
    std::uint64_t sizes = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      Shard s{i, n};
      sizes += s.size(37);
      for (std::uint64_t p = 0; p < 37; ++p) seen[p] += s.contains(p) ? 1 : 0;
    }
    CHECK(sizes == 37);
    CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  }
}

TEST_CASE("The issue's sweep has 240 points and records the 206 meshes that miss 512 GPUs as invalid") {
  SweepSpec s = sweep(kIssueSweep);
  REQUIRE(s.points() == 240);
  PointEvaluator ev(s, 0);
  int mismatched = 0, matched = 0;
  for (std::uint64_t i = 0; i < s.points(); ++i) {
    PointOutcome o = ev.evaluate(i);
    const Json e = point_experiment(s, ev.coords());
    auto devices = e["strategy"]["dp"].get<int>() * e["strategy"]["tp"].get<int>() * e["strategy"]["pp"].get<int>();
    INFO("point " << i << " devices " << devices << " reason " << o.reason);
    REQUIRE(o.status != PointStatus::Filtered);
    bool says_mismatch = o.reason.find("does not match the cluster's 512 GPUs") != std::string::npos;
    CHECK(says_mismatch == (devices != 512));
    if (devices != 512) {
      CHECK(o.status == PointStatus::Invalid);
      ++mismatched;
    } else {
      ++matched;
    }
  }
  // Meshes with tp x pp x dp = 512 from the axes: 3 (tp 1) + 4 (tp 2) + 5 (tp 4) + 5 (tp 8) = 17, two presets each.
  CHECK(matched == 34);
  CHECK(mismatched == 206);
}

TEST_CASE("A strategy.preset axis re-resolves the preset with the other axis values on top") {
  SweepSpec s = sweep(kIssueSweep);
  PointEvaluator ev(s, 0);
  // Point (tp 8, pp 4, dp 16, zero1): coordinates (3, 2, 2, 1).
  std::uint64_t index = ((3 * 5 + 2) * 6 + 2) * 2 + 1;
  ev.evaluate(index);
  const StrategySpec& st = ev.experiment().strategy;
  CHECK(st.preset == "zero1");
  CHECK(st.tp == 8);
  CHECK(st.pp == 4);
  CHECK(st.dp == 16);
  CHECK(st.placement.optimizer == Mode::Sharded);
  // A whole-strategy axis is applied before a deeper one, whatever the file order.
  SweepSpec whole = sweep(std::string("{") + kSmallBase + R"(, "axes": {"strategy.tp": [2], "strategy": ["zero3"]}})");
  PointEvaluator ev2(whole, 0);
  ev2.evaluate(0);
  CHECK(ev2.experiment().strategy.preset == "zero3");
  CHECK(ev2.experiment().strategy.tp == 2);
  CHECK(ev2.experiment().strategy.placement.parameters == Mode::ShardedWithGather);
}

TEST_CASE("Memory that does not fit the cluster's GPU or --device-memory makes a point invalid with its figures") {
  SweepSpec s = sweep(kIssueSweep);
  PointEvaluator on_h100(s, 0), on_huge(s, 1e15);
  // tp 4, pp 4, dp 32, zero1: 512 GPUs needing 97.0 GB each (77.2 GB of activations with fused attention)
  std::uint64_t index = ((2 * 5 + 2) * 6 + 3) * 2 + 1;
  PointOutcome o = on_h100.evaluate(index);
  CHECK(o.status == PointStatus::Invalid);
  CHECK_THAT(o.reason, Catch::StartsWith("memory: the model does not fit"));
  CHECK(o.analyzed);
  CHECK(on_h100.experiment().device_memory_bytes == 81559.0 * (1ull << 20));  // nvidia-smi's total on an H100 80GB
  CHECK(on_huge.evaluate(index).status == PointStatus::Ok);
}

TEST_CASE("Cached sections give the same rows as parsing every point whole") {
  // Invalid values (tp 3, micro_batch 0, an unknown preset) exercise cached errors too. The loader refuses values
  // that can never be valid, so micro_batch 0 and the preset zero4 are added to the parsed axes.
  SweepSpec s = sweep(R"({"base": {"model": "gpt-1.7b", "cluster": {"preset": "dgx-a100", "nodes": 1},
      "training": {"global_batch": 64, "recompute": "selective"}, "strategy": {"preset": "megatron-3d", "sp": false}},
      "axes": {"model": ["gpt-1.7b", "llama2-7b", {"parameters": 1e9, "layers": 8}],
               "cluster.nodes": [1, 2], "strategy.tp": [1, 2, 3, 8], "strategy.pp": [1, 2, 4],
               "strategy.dp": {"from": 1, "to": 16, "times": 2}, "training.micro_batch": [1, 4],
               "strategy.preset": ["megatron-3d", "zero3", "zero-offload"]}})");
  REQUIRE(s.axes[5].name() == "training.micro_batch");
  s.axes[5].values.insert(s.axes[5].values.begin(), {Json(0)});
  s.axes[6].values.push_back({Json("zero4")});
  REQUIRE(s.points() == 3 * 2 * 4 * 3 * 5 * 3 * 4);
  PointEvaluator cached(s, 0, true), whole(s, 0, false);
  const SweepRows rows(s);
  int ok = 0;
  for (std::uint64_t i = 0; i < s.points(); ++i) {
    PointOutcome a = cached.evaluate(i), b = whole.evaluate(i);
    REQUIRE(a.status == b.status);
    REQUIRE(a.reason == b.reason);
    REQUIRE(rows.line(i, cached.coords(), a, cached.experiment(), cached.analysis(), nullptr) ==
            rows.line(i, whole.coords(), b, whole.experiment(), whole.analysis(), nullptr));
    ok += a.status == PointStatus::Ok ? 1 : 0;
  }
  CHECK(ok > 50);
  // A section given as null is an error, not an absent section.
  SweepSpec null_training =
      sweep(R"({"base": {"model": "gpt-1.7b", "training": null, "strategy": "dp"}, "axes": {"strategy.dp": [1]}})");
  PointOutcome a = PointEvaluator(null_training, 0, true).evaluate(0);
  CHECK(a.status == PointStatus::Invalid);
  CHECK(a.reason == PointEvaluator(null_training, 0, false).evaluate(0).reason);
}

TEST_CASE("Figures read from the analysis equal the analyze report's values") {
  const std::vector<std::string> paths = {"memory.parameters_bytes",
                                          "memory.gradients_bytes",
                                          "memory.optimizer_bytes",
                                          "memory.activations_bytes",
                                          "memory.buffers_bytes",
                                          "memory.host_bytes",
                                          "memory.model_states_bytes",
                                          "memory.total_bytes",
                                          "communication.bytes_per_step",
                                          "communication.offload.h2d_bytes",
                                          "communication.offload.d2h_bytes",
                                          "compute.model_flops_per_step",
                                          "compute.hardware_flops_per_step",
                                          "compute.hardware_flops_per_device_max",
                                          "compute.tokens_per_step",
                                          "communication.by_class.dp_grad_sync",
                                          "communication.by_class.zero_gather",
                                          "communication.by_class.tp_collective",
                                          "communication.by_class.pp_p2p",
                                          "communication.by_class.embedding_sync",
                                          "memory.per_stage.1.total_bytes",
                                          "strategy.placement_short"};
  for (const char* strategy :
       {R"({"preset": "megatron-3d", "tp": 2, "pp": 2, "dp": 2})", R"({"preset": "zero-offload", "dp": 4, "pp": 2})",
        R"({"preset": "zero3", "dp": 8, "pp": 2})"}) {
    Experiment e = test::experiment(std::string(R"({"model": "gpt-1.7b", "training": {"global_batch": 32},
                                                   "strategy": )") +
                                    strategy + "}");
    Analysis a = analyze(e);
    Json report = analysis_report(e, a);
    for (const auto& p : paths) {
      INFO(strategy << " " << p);
      REQUIRE(find_path(report, p) != nullptr);
      CHECK(analytic_figure(p, e, a) == *find_path(report, p));
    }
  }
  CHECK(find_path(Json::parse(R"({"a": [{"b": 1}]})"), "a.0.b")->get<int>() == 1);
  CHECK(find_path(Json::parse(R"({"a": [{"b": 1}]})"), "a.1.b") == nullptr);
}

TEST_CASE("Figures the analyze report never has are refused naming the figure") {
  auto message = [](const std::string& figures, const char* mode) {
    return test::refusal_message([&] {
      check_figures(sweep(std::string("{") + kSmallBase + R"(, "axes": {"strategy.dp": [1]}, "mode": ")" + mode +
                          R"(", "figures": )" + figures + "}"));
    });
  };
  CHECK(message(R"(["memory.total_bytes", "memory.per_stage.0.activations_bytes"])", "analyze") == "(no error)");
  CHECK_THAT(message(R"(["memory.totl_bytes"])", "analyze"),
             Catch::Contains("figures: memory.totl_bytes is not a field"));
  CHECK_THAT(message(R"(["simulation.step_time_s"])", "analyze"), Catch::Contains("needs \"mode\": \"simulate\""));
  CHECK(message(R"(["simulation.step_time_s"])", "simulate") == "(no error)");
  CHECK_THAT(message("[]", "analyze"), Catch::Contains("figures=[] must be a non-empty list"));
}
