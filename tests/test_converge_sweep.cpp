// The schedule comparison of `placesim converge-sweep` (sim/converge/ConvergeSweep): reading a sweep file, the tuned
// cells, and results that do not depend on the number of threads.
#include <catch2/catch.hpp>
#include <cmath>

#include "sim/converge/ConvergeSweep.hpp"
#include "sim/converge/ConvergeSweepOutput.hpp"
#include "sim/converge/Minimum.hpp"
#include "tests/XmlCheck.hpp"
#include "traces/svg/SvgPlot.hpp"

using namespace placesim;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

ConvergeSweepSpec tiny_sweep(int threads) {
  ConvergeSweepSpec s = quick_converge_sweep();
  s.stages = {2, 3};
  s.schedules = {Schedule::PipeDream, Schedule::OneFOneB, Schedule::GPipe, Schedule::LocalSGD};
  s.replicas = 2;  // divides M = 4 S for S = 2 and 3
  s.budget_s = 60;
  s.threads = threads;
  return s;
}

}  // namespace

TEST_CASE("A sweep file overrides the base sweep field by field") {
  const ConvergeSweepSpec s = parse_converge_sweep(Json::parse(R"({"stages": [2, 8], "schedules": ["1f1b", "localsgd"],
      "objectives": [{"objective": "logistic", "dimension": 8, "samples": 32}], "local_steps": 3,
      "budget_s": 123, "min_log2_step": -3, "max_log2_step": 0})"),
                                                   default_converge_sweep());
  CHECK(s.stages == std::vector<int>{2, 8});
  CHECK(s.schedules == std::vector<Schedule>{Schedule::OneFOneB, Schedule::LocalSGD});
  REQUIRE(s.objectives.size() == 1);
  CHECK(s.objectives[0].objective.kind == ObjectiveKind::Logistic);
  CHECK(s.local_steps == 3);
  CHECK(s.budget_s == 123);
  CHECK(s.microbatches_per_stage == 4);  // kept from the base
  CHECK(s.forward_s == 1);
}

TEST_CASE("A sweep file is refused with the field and the value") {
  const ConvergeSweepSpec base = quick_converge_sweep();
  auto parse = [&](const char* text) { return parse_converge_sweep(Json::parse(text), base); };
  CHECK_THROWS_WITH(parse(R"({"budget_s": 0})"), "sweep.budget_s=0 must be positive");
  CHECK_THROWS_WITH(parse(R"({"stages": []})"), "sweep.stages=[] must be a non-empty list");
  CHECK_THROWS_WITH(parse(R"({"stages": [2, 0]})"), "sweep.stages[1]=0 must be a stage count from 1 to 4096");
  CHECK_THROWS_WITH(parse(R"({"min_log2_step": 2, "max_log2_step": 1})"),
                    "sweep.min_log2_step=2 exceeds sweep.max_log2_step=1");
  CHECK_THROWS_WITH(parse(R"({"local_steps": 0})"), "sweep.local_steps=0 must be an integer from 1 to 1000000");
  CHECK_THROWS_WITH(parse(R"({"stages": [3], "replicas": 5})"),
                    Catch::StartsWith("sweep.replicas=5 does not divide the M = microbatches_per_stage x S = 12"));
  CHECK_THROWS_WITH(parse(R"({"stage": [2]})"), Catch::Contains("sweep.stage") && Catch::Contains("stages"));
}

TEST_CASE("Every cell keeps its lowest finite final loss and the result does not depend on the threads") {
  const std::vector<ConvergeSweepCell> one = run_converge_sweep(tiny_sweep(1)),
                                       three = run_converge_sweep(tiny_sweep(3));
  REQUIRE(one.size() == 2 * 2 * 4);
  CHECK(sweep_csv(one) == sweep_csv(three));
  CHECK(sweep_jsonl(one) == sweep_jsonl(three));
  for (const ConvergeSweepCell& c : one) {
    REQUIRE(c.best >= 0);
    REQUIRE(c.runs.size() == 10);
    REQUIRE(c.minimum.size() == 2);
    const ConvergeSweepRun& best = c.runs[static_cast<std::size_t>(c.best)];
    for (const ConvergeSweepRun& r : c.runs)
      if (!r.diverged) CHECK(best.mean_gap <= r.mean_gap);
    CHECK(best.mean_gap == Approx(((best.final_loss[0] - c.minimum[0]) + (best.final_loss[1] - c.minimum[1])) / 2));
    CHECK(best.final_loss[0] != best.final_loss[1]);  // two instances, not one counted twice
    CHECK(best.final_time_s <= 60);
  }
}

TEST_CASE("At equal time GPipe and 1F1B do the same updates with uniform stages and free transfers") {
  // Both steps last (M + S - 1)(f + b) and both are plain mini-batch SGD: the same final loss, bit for bit.
  const std::vector<ConvergeSweepCell> cells = run_converge_sweep(tiny_sweep(2));
  int pairs = 0;
  for (const ConvergeSweepCell& a : cells)
    for (const ConvergeSweepCell& b : cells)
      if (a.schedule == Schedule::GPipe && b.schedule == Schedule::OneFOneB && a.stages == b.stages &&
          a.objective == b.objective) {
        ++pairs;
        for (std::size_t i = 0; i < a.runs.size(); ++i) {
          CHECK(a.runs[i].updates == b.runs[i].updates);
          CHECK(a.runs[i].final_loss == b.runs[i].final_loss);
        }
      }
  CHECK(pairs == 4);
}

TEST_CASE("The sweep table names every schedule and marks tuned steps at the edge of the grid") {
  std::vector<ConvergeSweepCell> cells = run_converge_sweep(tiny_sweep(2));
  const std::string table = sweep_table(cells);
  for (const char* name : {"pipedream", "1f1b", "gpipe", "localsgd"}) CHECK(table.find(name) != std::string::npos);
  cells[0].best = 0;
  CHECK(cells[0].best_at_grid_edge());
  CHECK(sweep_table(cells).find("(-6)*") != std::string::npos);
  cells[0].best = -1;
  CHECK(sweep_table(cells).find("diverged") != std::string::npos);
  CHECK(sweep_csv(cells).find("quadratic,2,pipedream,8,1,1,60,2,,,,,,,,,,") != std::string::npos);
}

TEST_CASE("The reference minimum of a regularized quadratic is the closed-form one") {
  // f = 1/2 (x - c)^T diag(1, 4) (x - c) + 1/4 ||x||^2 with c = (1, -2): per coordinate a l c^2 / (2 (a + l)), so
  // f* = 1/6 + 8/9 = 19/18.
  const QuadraticObjective f({1, 0, 0, 4}, {1, -2}, 0, 0.5, 1);
  const MinimumEstimate m = estimate_minimum(f, 1000, 1e-12);  // stops at rounding: ||grad|| ~ 1e-8 for f ~ 1
  CHECK(m.value == Approx(19.0 / 18).epsilon(1e-14));
  CHECK(m.gradient_norm <= 1e-7);
  CHECK(m.iterations < 1000);
  CHECK(m.iterations > 1);
}

TEST_CASE("The reference minimum of logistic regression is stationary and what gradient descent reaches") {
  ObjectiveSpec spec;
  spec.kind = ObjectiveKind::Logistic;
  spec.dimension = 8;
  spec.samples = 256;
  const auto f = make_objective(spec);
  const MinimumEstimate m = estimate_minimum(*f, 4000, 1e-7);
  CHECK(m.gradient_norm <= 1e-7);
  std::vector<double> x(8, 0.0), g(8);
  const double start = f->evaluate(x, g);
  CHECK(m.value < start);
  for (int i = 0; i < 5000; ++i) {  // plain gradient descent with a safe step (smoothness <= 1/4) gets no lower
    f->evaluate(x, g);
    for (int k = 0; k < 8; ++k) x[k] -= 1.0 * g[k];
  }
  CHECK(m.value == Approx(f->evaluate(x, g)).epsilon(1e-12));
}

TEST_CASE("A log x axis ticks 1-2-5 values and markers put a dot on every point") {
  PlotOptions o{"stages", "S", "loss", true};
  o.log_x = true;
  o.markers = true;
  const std::string svg = render_line_plot({PlotSeries{"a", {2, 4, 8, 16, 32}, {1, 0.5, 0.2, 0.1, 0.05}}}, o);
  CHECK(test::xml_problem(svg) == "");
  CHECK(count(svg, "<circle") == 5);
  // S from 2 to 32: the axis runs from 2 to 50 with ticks at 2 5 10 20 50; 4, 8, 16 and 32 are not ticks.
  for (const char* tick : {">2</text>", ">5</text>", ">10</text>", ">20</text>", ">50</text>"})
    CHECK(svg.find(tick) != std::string::npos);
  CHECK(svg.find(">4</text>") == std::string::npos);
  o.log_x = false;
  o.markers = false;
  CHECK(count(render_line_plot({PlotSeries{"a", {2, 4}, {1, 2}}}, o), "<circle") == 0);
}

TEST_CASE("The sweep figure has one panel per objective and names a line hidden under another") {
  const std::string svg = sweep_svg(run_converge_sweep(tiny_sweep(2)));
  CHECK(test::xml_problem(svg) == "");
  CHECK(count(svg, "<svg") == 3);  // the figure and its two panels
  CHECK(svg.find("gpipe (= 1f1b)") != std::string::npos);
  CHECK(count(svg, "<circle") == 2 * 4 * 2);  // objectives x schedules x stage counts
}

// The logistic disagreement (docs/convergence.md): at the size of Ilin & Richtarik's run (n = 200 < d = 512,
// batch 10 taken cyclically, additive gradient noise 0.5, lambda 1e-4, budget 3180) LocalSGD (S = 16 replicas, H = 5)
// ends lower than PipeDream at S = 16, the paired 95 % interval over 10 seeds excluding 0; without the noise PipeDream
// ends lower on every seed. Step grids around the tuned steps of the documented sweep (PipeDream 2^-6 with noise, 2^-2
// without; LocalSGD 2^-2 and 2^0).
TEST_CASE("At the authors' logistic size LocalSGD beats PipeDream at S = 16 with the gradient noise, not without") {
  auto paired = [](double noise, int min_log2, int max_log2) {
    ConvergeSweepSpec s = parse_converge_sweep(
        Json::parse(R"({"stages": [16], "schedules": ["pipedream", "localsgd"], "budget_s": 3180, "local_steps": 5,
            "seeds": 10, "objectives": [{"objective": "logistic", "data": "gaussian", "dimension": 512,
            "samples": 200, "batch_size": 10, "batches": "cyclic", "l2": 0.0001, "gradient_noise": )" +
                    std::to_string(noise) + "}]}"),
        default_converge_sweep());
    s.min_log2_step = min_log2;
    s.max_log2_step = max_log2;
    const std::vector<ConvergeSweepCell> cells = run_converge_sweep(s);
    REQUIRE(cells.size() == 2);
    REQUIRE(cells[0].schedule == Schedule::PipeDream);
    const ConvergeSweepRun &pd = cells[0].runs.at(static_cast<std::size_t>(cells[0].best)),
                           &local = cells[1].runs.at(static_cast<std::size_t>(cells[1].best));
    std::vector<double> diff;
    for (std::size_t i = 0; i < pd.final_loss.size(); ++i) diff.push_back(pd.final_loss[i] - local.final_loss[i]);
    return diff;  // PipeDream - LocalSGD per seed (same instance)
  };
  auto mean_and_half_width = [](const std::vector<double>& d) {
    double mean = 0, var = 0;
    for (double x : d) mean += x / static_cast<double>(d.size());
    for (double x : d) var += (x - mean) * (x - mean) / static_cast<double>(d.size() - 1);
    return std::pair{mean, 2.262 * std::sqrt(var / static_cast<double>(d.size()))};  // Student t, 9 df
  };
  const auto [mean, half] = mean_and_half_width(paired(0.5, -7, -1));
  CHECK(mean - half > 0);                          // LocalSGD lower, the interval excludes 0
  for (double d : paired(0, -3, 1)) CHECK(d < 0);  // without the noise PipeDream lower on every seed
}
