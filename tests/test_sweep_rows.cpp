// Sweep rows and results files: row contents, value filters, resume scanning, sorting and CSV cells.
#include <catch2/catch.hpp>

#include "strategies/sweep/SweepPoint.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "tests/SweepHelpers.hpp"
#include "traces/report/Report.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "traces/sweep/SweepRows.hpp"

using namespace placesim;

using test::kSmallBase;
using test::sweep;

TEST_CASE("Rows keep the axis order and carry figures only when analyzed") {
  SweepSpec s = sweep(std::string("{") + kSmallBase + R"(, "axes": {"strategy.tp": [1, 5], "strategy.dp": [2]}})");
  PointEvaluator ev(s, 0);
  SweepRows rows(s);
  PointOutcome ok = ev.evaluate(0);
  std::string line = rows.line(0, ev.coords(), ok, ev.experiment(), ev.analysis(), nullptr);
  CHECK_THAT(line,
             Catch::StartsWith(
                 R"({"index":0,"sweep":")" + s.hash + R"(","version":")" + PLACESIM_VERSION +
                 R"(","points":2,"point":{"strategy.tp":1,"strategy.dp":2},"status":"ok","memory.total_bytes":)"));
  CHECK(line.back() == '\n');
  Json row = Json::parse(line);
  CHECK(row["communication.bytes_per_step"] == number(ev.analysis().bytes_per_step));
  PointOutcome bad = ev.evaluate(1);
  Json invalid = Json::parse(rows.line(1, ev.coords(), bad, ev.experiment(), ev.analysis(), nullptr));
  CHECK(invalid["status"] == "invalid");
  CHECK_THAT(invalid["reason"].get<std::string>(), Catch::Contains("strategy.tp=5 does not divide model.heads=24"));
  CHECK_FALSE(invalid.contains("memory.total_bytes"));
}

TEST_CASE("Value filters and mesh_matches_cluster skip points and say which filter") {
  SweepSpec s = sweep(R"({"base": {"model": "gpt-1.7b", "cluster": {"preset": "dgx-a100", "nodes": 2},
      "training": {"global_batch": 64}, "strategy": "megatron-3d"},
      "axes": {"strategy.tp": [1, 2, 4, 8], "strategy.dp": [1, 2, 4, 8, 16],
               "strategy.preset": ["megatron-3d", "zero1"]},
      "filters": {"mesh_matches_cluster": true, "strategy.tp": {"max": 4},
                  "strategy.preset": {"not_in": ["zero1"]}}})");
  PointEvaluator ev(s, 1e15);
  std::map<std::string, int> by_reason;
  int ok = 0;
  for (std::uint64_t i = 0; i < s.points(); ++i) {
    PointOutcome o = ev.evaluate(i);
    if (o.status == PointStatus::Filtered) ++by_reason[o.reason];
    ok += o.status == PointStatus::Ok ? 1 : 0;
  }
  // Value filters are tried in the order of their paths, then the mesh: zero1 20 points; megatron-3d with tp 8: 5;
  // megatron-3d with tp <= 4 and tp x dp != 16 GPUs: 15 - 3.
  CHECK(by_reason["filters.strategy.preset"] == 20);
  CHECK(by_reason["filters.strategy.tp"] == 5);
  CHECK(by_reason["filters.mesh_matches_cluster"] == 12);
  CHECK(ok == 3);
  CHECK_THAT(test::sweep_error(std::string("{") + kSmallBase +
                               R"(, "axes": {"strategy.tp": [1]}, "filters": {"strategy.dp": {"max": 1}}})"),
             Catch::Contains("filters.strategy.dp: strategy.dp is not an axis of this sweep"));
  CHECK_THAT(test::sweep_error(std::string("{") + kSmallBase +
                               R"(, "axes": {"strategy.tp": [1]}, "filters": {"mesh_matches_cluster": true}})"),
             Catch::Contains("filters.mesh_matches_cluster=true needs a cluster"));
}

TEST_CASE("Resume scanning keeps complete rows of this sweep and drops a cut last line") {
  auto expected = [](std::uint64_t i) -> std::optional<std::string> {
    if (i >= 10 || i % 2 != 0) return std::nullopt;  // shard 0/2 of 10 points
    return "{\"index\":" + std::to_string(i) + ",\"point\":{\"a\":" + std::to_string(i) + "},\"status\":\"";
  };
  std::string good =
      "{\"index\":4,\"point\":{\"a\":4},\"status\":\"ok\"}\n{\"index\":0,\"point\":{\"a\":0},\"status\":\"ok\"}\n";
  ResumeScan scan = scan_results(good + "{\"index\":2,\"poi", expected, "r.jsonl");
  CHECK(scan.done == std::vector<std::uint64_t>{0, 4});
  CHECK(scan.complete_bytes == good.size());
  CHECK(scan_results("", expected, "r.jsonl").done.empty());
  auto message = [&](const std::string& text) {
    return test::refusal_message([&] { scan_results(text, expected, "r.jsonl"); });
  };
  CHECK_THAT(message("{\"index\":3,\"point\":{\"a\":3},\"status\":\"ok\"}\n"),
             Catch::Contains("r.jsonl:1: point 3 is not a point of this sweep and shard"));
  CHECK_THAT(message(good + "{\"index\":6,\"point\":{\"a\":7},\"status\":\"ok\"}\n"),
             Catch::Contains("r.jsonl:3: point 6 has other axis values"));
  CHECK_THAT(message(good + good), Catch::Contains("point 0 appears twice"));
  CHECK_THAT(message("hello\n"), Catch::Contains("r.jsonl:1: not a sweep row"));
}

TEST_CASE("Rows are sorted by index only when out of order") {
  std::string text = "{\"index\":2,\"x\":1}\n{\"index\":10,\"x\":2}\n{\"index\":1,\"x\":3}\n";
  CHECK(sort_rows(text));
  CHECK(text == "{\"index\":1,\"x\":3}\n{\"index\":2,\"x\":1}\n{\"index\":10,\"x\":2}\n");
  CHECK_FALSE(sort_rows(text));
  CHECK(row_index("{\"index\":12,\"point\":{}}") == 12u);
  CHECK_FALSE(row_index("{\"index\":x,").has_value());
}

TEST_CASE("CSV cells quote commas and quotes and leave absent values empty") {
  SweepSpec s =
      sweep(std::string("{") + kSmallBase + R"(, "axes": {"strategy.tp": [1]}, "figures": ["memory.total_bytes"]})");
  CHECK(csv_header(s) == "index,strategy.tp,status,reason,memory.total_bytes\n");
  CHECK(csv_row(s, R"({"index":3,"point":{"strategy.tp":1},"status":"invalid","reason":"a, \"b\""})") ==
        "3,1,invalid,\"a, \"\"b\"\"\",\n");
}

// --resume read the whole results file into memory (a 2.6 GB file took 4.2 GB), and a kill during
// the final sort left a "<out>.tmp<pid>" no later run removed.
TEST_CASE("Resume streams the results file across read buffers and removes stale temporaries") {
  test::TempDir dir;
  const std::string path = dir / "r.jsonl";
  // 30,000 rows of about 100 bytes: 3 MB, so rows straddle the 1 MB read buffer; then a line cut by a kill.
  std::string text;
  for (int i = 0; i < 30000; ++i)
    text += "{\"index\":" + std::to_string(i) + ",\"point\":{\"a\":" + std::to_string(i) + "},\"status\":\"ok\"," +
            std::string(50, ' ') + "\"x\":1}\n";
  const std::size_t complete = text.size();
  test::write(path, text + "{\"index\":30000,\"poi");
  test::write(path + ".tmp4194303", "a sort the kill interrupted");
  test::write(path + ".tmpx", "not ours: kept");
  auto expected = [](std::uint64_t i) -> std::optional<std::string> {
    return "{\"index\":" + std::to_string(i) + ",\"point\":{\"a\":" + std::to_string(i) + "},\"status\":\"";
  };
  ResumeScan scan;
  {
    ResultsFile file(path, true, false);
    scan = file.resume(expected);
  }
  REQUIRE(scan.done.size() == 30000);
  CHECK(scan.done.front() == 0);
  CHECK(scan.done.back() == 29999);
  CHECK(scan.complete_bytes == complete);
  CHECK(std::filesystem::file_size(path) == complete);  // the cut line is truncated
  CHECK_FALSE(std::filesystem::exists(path + ".tmp4194303"));
  CHECK(std::filesystem::exists(path + ".tmpx"));
  // A file that is one 3 MB cut line holds no row: nothing kept but its head, the file emptied.
  test::write(path, std::string(3 << 20, 'x'));
  {
    ResultsFile file(path, true, false);
    CHECK(file.resume(expected).done.empty());
  }
  CHECK(std::filesystem::file_size(path) == 0);
  // The same checks as scan_results, now per streamed line: a foreign row names its line number.
  test::write(path, text + "{\"index\":7,\"point\":{\"a\":8},\"status\":\"ok\"}\n");
  ResultsFile file(path, true, false);
  CHECK_THROWS_WITH(file.resume(expected), Catch::Contains("r.jsonl:30001: point 7 has other axis values"));
}
