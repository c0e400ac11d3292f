// The schedule -> evaluation -> UpdateLog -> executor path of `placesim converge`: without staleness it is plain
// mini-batch SGD bit for bit; the delays the executor meets under PipeDream are the pipeline report's (Ilin &
// Richtarik, arXiv 2606.03498); a time budget cuts a run exactly where an endless run would be.
#include <catch2/catch.hpp>

#include "sim/converge/Converge.hpp"
#include "sim/converge/UpdateDelays.hpp"
#include "strategies/pipeline/PipelineTimeline.hpp"
#include "tests/Helpers.hpp"
#include "tests/PipelineHelpers.hpp"
#include "tests/PlainSgd.hpp"

using namespace placesim;

namespace {

ConvergenceSpec spec_for(ObjectiveKind kind, int dimension, double step) {
  return test::small_convergence(kind, dimension, step, 11);
}

// The UpdateLog of a schedule evaluated with forward 1, backward 2 and transfers of 0.25 (uneven on purpose: the
// trace's order must not depend on uniform times).
UpdateLog log_of(const PipelineShape& shape) {
  const test::PipelineRun run = test::run_pipeline(shape, test::pipeline_times(1, 2, 0.25));
  return update_log(run.schedule, run.timeline);
}

// The interleaved schedule with 2 chunks, the others as test::pipeline_shape makes them.
PipelineShape shape_of_run(Schedule schedule, int stages, int microbatches, int steps) {
  PipelineShape shape = test::pipeline_shape(schedule, stages, microbatches, steps);
  if (schedule == Schedule::Interleaved) shape.chunks = 2;
  return shape;
}

// Runs `shape` for 1 .. steps steps through the whole path and checks every coordinate of the final model against
// plain SGD with `per_update` micro-batches per update, and the loss after every update.
void check_plain_sgd(Schedule schedule, ObjectiveKind kind, int stages, int microbatches, int steps, int per_update) {
  const ConvergenceSpec spec = spec_for(kind, 29, 0.1);  // 29 coordinates: uneven blocks
  const auto f = make_objective(spec.objective);
  const int updates = microbatches * steps / per_update;
  const auto reference = test::plain_sgd(*f, spec.step_size, per_update, updates);
  for (int n = 1; n <= steps; ++n) {
    ConvergenceSpec run_spec = spec;
    run_spec.sample_every = stages;  // the stages' Applies of one update are consecutive: a point per update
    const ConvergenceResult r = run_convergence(log_of(shape_of_run(schedule, stages, microbatches, n)), run_spec, *f);
    const int done = microbatches * n / per_update;
    REQUIRE(r.final_weights.size() == 1);
    for (std::size_t k = 0; k < reference[done - 1].size(); ++k) CHECK(r.final_weights[0][k] == reference[done - 1][k]);
    REQUIRE(r.points.size() == static_cast<std::size_t>(done) + 1);
    for (int u = 1; u <= done; ++u) CHECK(r.points[u].loss == test::loss_at(*f, reference[u - 1]));
  }
  CHECK(reference.front() != reference.back());  // the runs moved
}

void check_delays_match_report(int stages, int microbatches, int noam) {
  PipelineShape shape = test::pipeline_shape(Schedule::PipeDream, stages, microbatches);
  shape.noam = noam;
  const test::PipelineRun run = test::run_pipeline(shape, test::pipeline_times(1, 1));
  const UpdateDelays seen = update_delays(update_log(run.schedule, run.timeline), run.metrics.steady_from_microbatch);
  const Json report = pipeline_json(run.metrics)["staleness"];
  INFO("S=" << stages << " NOAM=" << noam);
  CHECK(seen.steady.max == report["max_delay"].get<std::int64_t>());
  CHECK(seen.steady.mean == report["mean_delay"].get<double>());
  CHECK(seen.steady.samples == report["samples"].get<std::int64_t>());
  CHECK(seen.whole_run.max == report["whole_run"]["max"].get<std::int64_t>());
  CHECK(seen.whole_run.mean == report["whole_run"]["mean"].get<double>());
  Json histogram = Json::array();
  for (const auto& [delay, count] : seen.histogram) histogram.push_back(Json{{"delay", delay}, {"count", count}});
  CHECK(histogram == report["histogram"]);
  CHECK(seen.steady.max == stages * stages - (stages + 1) / 2);  // S^2 - S/2 + O(1); not all zero
}

}  // namespace

TEST_CASE("1F1B from schedule to executor is plain mini-batch SGD bit for bit on the quadratic") {
  check_plain_sgd(Schedule::OneFOneB, ObjectiveKind::Quadratic, 4, 3, 4, 3);
}

// The zero-bubble schedules are synchronous: their deferred weight gradients all land before the step's update.
TEST_CASE("The zero-bubble schedules from schedule to executor are plain mini-batch SGD bit for bit on the quadratic") {
  check_plain_sgd(Schedule::ZbH1, ObjectiveKind::Quadratic, 4, 8, 3, 8);
  check_plain_sgd(Schedule::ZbH2, ObjectiveKind::Quadratic, 3, 6, 3, 6);
  check_plain_sgd(Schedule::ZbV, ObjectiveKind::Quadratic, 3, 6, 3, 6);
  check_plain_sgd(Schedule::DualPipeV, ObjectiveKind::Quadratic, 3, 6, 3, 6);
}

// A stage of the interleaved schedule holds several chunks: its gradient of a micro-batch is one, complete after the
// last chunk's backward.
TEST_CASE("Interleaved 1F1B from schedule to executor is plain mini-batch SGD bit for bit on the quadratic") {
  check_plain_sgd(Schedule::Interleaved, ObjectiveKind::Quadratic, 3, 6, 3, 6);
}

TEST_CASE("GPipe from schedule to executor is plain mini-batch SGD bit for bit on logistic regression") {
  check_plain_sgd(Schedule::GPipe, ObjectiveKind::Logistic, 3, 5, 3, 5);
}

TEST_CASE("PipeDream with one stage from schedule to executor is plain SGD with one micro-batch per update") {
  check_plain_sgd(Schedule::PipeDream, ObjectiveKind::Quadratic, 1, 4, 3, 1);
  check_plain_sgd(Schedule::PipeDream, ObjectiveKind::LeastSquares, 1, 2, 2, 1);
}

TEST_CASE("Delays the executor meets under PipeDream equal the pipeline report's max mean and histogram") {
  for (int stages : {2, 3, 4, 6, 8}) check_delays_match_report(stages, 10 * stages, stages);
}

TEST_CASE("With transfer delays the executor's version-based delays are at least the report's read-time ones") {
  // A forward that waits for its input reads its block later than the Apply that made the version: the report
  // counts from the read, update_delays from the version, so it sees more updates in between, never fewer.
  const test::PipelineRun run =
      test::run_pipeline(test::pipeline_shape(Schedule::PipeDream, 5, 50), test::pipeline_times(1, 1, 0.3));
  const UpdateDelays seen = update_delays(update_log(run.schedule, run.timeline), run.metrics.steady_from_microbatch);
  CHECK(seen.steady.samples == run.metrics.delay.samples);
  CHECK(seen.steady.max >= run.metrics.delay.max);
  CHECK(seen.steady.mean > run.metrics.delay.mean);
}

TEST_CASE("A time budget cuts the trace where a much longer run would be") {
  AbstractPipeline p;
  p.shape = test::pipeline_shape(Schedule::LocalSGD, 4, 8);
  p.shape.replicas = 4;
  p.shape.local_steps = 3;
  p.times = test::pipeline_times(1, 1.5, 0.2);
  const double budget = 77.5;
  const PreparedPipeline cut = prepare_pipeline(p, RunLength{0, budget});
  const PreparedPipeline longer = prepare_pipeline(p, RunLength{cut.pipeline.shape.steps + 5, 0});
  const UpdateLog reference = cut_log(longer.trace, budget);
  REQUIRE(cut.trace.events.size() == reference.events.size());
  REQUIRE(!cut.trace.events.empty());
  for (std::size_t k = 0; k < reference.events.size(); ++k) {
    const TrainEvent &a = cut.trace.events[k], &b = reference.events[k];
    CHECK((a.kind == b.kind && a.stage == b.stage && a.replica == b.replica && a.microbatch == b.microbatch &&
           a.time_s == b.time_s && a.versions_read == b.versions_read));
  }
  CHECK(cut.trace.events.back().time_s <= budget);
  CHECK(cut.end_s == budget);
  CHECK(longer.trace.events.back().time_s > budget);
}

TEST_CASE("The budget's step count is the least that keeps stage 0 busy up to the budget") {
  AbstractPipeline p;
  p.shape = test::pipeline_shape(Schedule::OneFOneB, 2, 4);
  p.times = test::pipeline_times(1, 1);
  // One 1F1B step of S=2, M=4 takes (M + S - 1)(f + b) = 10; stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3, its last
  // forward starting at 6 within the step.
  CHECK(steps_for_budget(p, 6) == 1);
  CHECK(steps_for_budget(p, 6.5) == 2);
  CHECK(steps_for_budget(p, 16) == 2);
  CHECK(steps_for_budget(p, 16.01) == 3);
  CHECK(steps_for_budget(p, 96) == 10);
}

TEST_CASE("An experiment's convergence section is parsed and optional") {
  Experiment with = test::experiment(R"({"pipeline": {"stages": 2, "microbatches": 4, "forward_s": 1,
      "backward_s": 1}, "convergence": {"objective": "logistic", "dimension": 16, "step_size": 0.25}})");
  REQUIRE(with.convergence.has_value());
  CHECK(with.convergence->objective.kind == ObjectiveKind::Logistic);
  CHECK(with.convergence->step_size == 0.25);
  Experiment without = test::experiment(R"({"pipeline": {"stages": 2, "microbatches": 4, "forward_s": 1,
      "backward_s": 1}})");
  CHECK_FALSE(without.convergence.has_value());
  CHECK_THROWS_WITH(test::experiment(R"({"pipeline": {"stages": 2, "microbatches": 4, "forward_s": 1,
      "backward_s": 1}, "convergence": {"objective": "hinge"}})"),
                    Catch::Contains("convergence.objective") && Catch::Contains("hinge"));
}
