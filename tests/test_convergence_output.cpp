// Writers of a stale-SGD run (sim/converge/ConvergenceOutput, traces/svg/SvgPlot): CSV, JSONL, summary, SVG.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "sim/converge/ConvergenceOutput.hpp"
#include "tests/UpdateLogBuilders.hpp"

using namespace placesim;

namespace {

ConvergenceResult sample_result() {
  ConvergenceResult r;
  r.objective = "quadratic";
  r.dimension = 4;
  r.stages = 2;
  r.replicas = 1;
  r.step_size = 0.1;
  r.sample_every = 2;
  r.updates = 4;
  r.backwards = 4;
  r.peak_versions = {2, 1};
  r.points = {{0, 0, 8, 4}, {2, 0.5, 2, 2}, {4, 1.25, 0.1, 0.5}};
  return r;
}

/// Checks that `svg` is well-formed XML as far as tags go: every element opened is closed in order, attributes
/// are quoted, and '&' only starts an entity. Returns the first problem, or "" when there is none.
std::string xml_problem(const std::string& svg) {
  std::vector<std::string> open;
  for (std::size_t i = 0; i < svg.size(); ++i) {
    if (svg[i] == '&' && svg.compare(i, 5, "&amp;") && svg.compare(i, 4, "&lt;") && svg.compare(i, 4, "&gt;") &&
        svg.compare(i, 6, "&quot;"))
      return "bare & at " + std::to_string(i);
    if (svg[i] != '<') continue;
    std::size_t close = svg.find('>', i);
    if (close == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = svg.substr(i + 1, close - i - 1);
    i = close;
    if (tag[0] == '?') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2) return "unbalanced quotes in <" + tag + ">";
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "unexpected </" + tag.substr(1) + ">";
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("The CSV has a header and one exact row per point") {
  std::ostringstream out;
  write_convergence_csv(out, sample_result());
  CHECK(out.str() == "updates,time_s,loss,grad_norm\n0,0,8,4\n2,0.5,2,2\n4,1.25,0.1,0.5\n");
}

TEST_CASE("JSONL rows carry the point and the extra labels with null for non-finite numbers") {
  ConvergenceResult r = sample_result();
  r.points.push_back({6, 2, INFINITY, NAN});
  std::ostringstream out;
  write_convergence_jsonl(out, r, Json{{"schedule", "1f1b"}, {"loss", "overridden"}});
  std::istringstream lines(out.str());
  std::string line;
  std::vector<Json> rows;
  while (std::getline(lines, line)) rows.push_back(Json::parse(line));
  REQUIRE(rows.size() == 4);
  CHECK(rows[1].dump() == R"({"grad_norm":2.0,"loss":2.0,"schedule":"1f1b","time_s":0.5,"updates":2})");
  CHECK(rows[3]["loss"].is_null());
  CHECK(rows[3]["grad_norm"].is_null());
}

TEST_CASE("The summary gives the first and last and lowest loss and the peak versions") {
  ConvergenceResult r = sample_result();
  r.points[1].loss = 0.01;  // the lowest is not the last
  Json s = convergence_summary(r);
  CHECK(s["initial_loss"].get<double>() == 8);
  CHECK(s["final_loss"].get<double>() == 0.1);
  CHECK(s["min_loss"].get<double>() == 0.01);
  CHECK(s["final_time_s"].get<double>() == 1.25);
  CHECK(s["peak_versions"] == Json::array({2, 1}));
  CHECK(s["diverged"].get<bool>() == false);
  CHECK(s["objective"].get<std::string>() == "quadratic");
}

TEST_CASE("The loss plot is well-formed SVG with a log axis for positive losses") {
  std::string svg = convergence_svg(sample_result(), "loss <&> \"quoted\"");
  CHECK(xml_problem(svg) == "");
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK(svg.find("loss &lt;&amp;&gt; &quot;quoted&quot;") != std::string::npos);
  CHECK(count(svg, "<polyline") == 1);
  // Losses 8 .. 0.1: the axis runs from 0.1 to 10 with ticks at 0.1 0.2 0.5 1 2 5 10.
  CHECK(svg.find(">0.1</text>") != std::string::npos);
  CHECK(svg.find(">1</text>") != std::string::npos);
  CHECK(svg.find(">10</text>") != std::string::npos);
  CHECK(svg.find(">0.2</text>") != std::string::npos);
  CHECK(svg.find(">20</text>") == std::string::npos);
}

TEST_CASE("A gap in a series splits its line and a negative loss switches to a linear axis") {
  ConvergenceResult r = sample_result();
  r.points.insert(r.points.begin() + 2, ConvergencePoint{3, 0.75, NAN, NAN});
  std::string gapped = convergence_svg(r, "gap");
  CHECK(xml_problem(gapped) == "");
  CHECK(count(gapped, "<polyline") == 2);
  r.points.back().loss = -1;
  std::string linear = convergence_svg(r, "linear");
  CHECK(xml_problem(linear) == "");
  CHECK(linear.find(">-2</text>") != std::string::npos);  // 1-2-5 ticks from -2 to 8
  CHECK(linear.find(">8</text>") != std::string::npos);
}

TEST_CASE("Several runs share one plot with a legend") {
  ConvergenceResult a = sample_result(), b = sample_result();
  b.points[2].loss = 1;
  std::string svg = convergence_svg({loss_series(a, "gpipe"), loss_series(b, "pipedream")}, "two");
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "<polyline") == 2);
  CHECK(svg.find(">gpipe</text>") != std::string::npos);
  CHECK(svg.find(">pipedream</text>") != std::string::npos);
}

TEST_CASE("Writing one run twice gives identical bytes") {
  ConvergenceSpec spec;
  spec.objective.kind = ObjectiveKind::LeastSquares;
  spec.objective.dimension = 32;
  spec.objective.samples = 64;
  spec.step_size = 0.05;
  UpdateLog trace = test::pipedream_like_log(4, 50);
  auto render = [&] {
    ConvergenceResult r = run_convergence(trace, spec);
    std::ostringstream csv, jsonl;
    write_convergence_csv(csv, r);
    write_convergence_jsonl(jsonl, r);
    return csv.str() + jsonl.str() + convergence_svg(r, "least squares") + convergence_summary(r).dump();
  };
  std::string first = render();
  CHECK(first == render());
  CHECK(xml_problem(convergence_svg(run_convergence(trace, spec), "x")) == "");
}
