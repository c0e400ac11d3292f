// Randomized PipeDream (Ilin & Richtarik, arXiv 2606.03498): with one stage and no delay it is plain SGD bit
// for bit; with PipeDream's own order and delays it is the stale replay of the schedule bit for bit and meets the
// pipeline report's delays; the bound's terms by hand.
#include <catch2/catch.hpp>
#include <cmath>

#include "sim/converge/Rpd.hpp"
#include "sim/converge/UpdateDelays.hpp"
#include "strategies/pipeline/PipelineTimeline.hpp"
#include "tests/PipelineHelpers.hpp"
#include "tests/PlainSgd.hpp"

using namespace placesim;

namespace {

std::unique_ptr<Objective> objective(ObjectiveKind kind, int dimension) {
  return make_objective(test::small_objective(kind, dimension, 5));
}

}  // namespace

TEST_CASE("RPD with one stage and delay bound 0 is plain SGD bit for bit") {
  for (ObjectiveKind kind : {ObjectiveKind::Quadratic, ObjectiveKind::Logistic}) {
    const auto f = objective(kind, 24);
    const RpdSpec spec{.stages = 1, .iterations = 40, .step_size = 0.1, .delta = 0};
    const RpdResult r = run_rpd(spec, *f);
    const auto reference = test::plain_sgd(*f, spec.step_size, 1, 40);
    CHECK(r.final_x == reference.back());
    CHECK(r.delays.max == 0);
    CHECK(r.final_x != std::vector<double>(24, 0.0));
  }
}

TEST_CASE("RPD with PipeDream's delays is the stale replay bit for bit and meets the pipeline report's delays") {
  for (int stages : {2, 4, 6}) {
    INFO("S=" << stages);
    const test::PipelineRun run =
        test::run_pipeline(test::pipeline_shape(Schedule::PipeDream, stages, 10 * stages), test::pipeline_times(1, 1));
    const UpdateLog log = update_log(run.schedule, run.timeline);
    const auto f = objective(ObjectiveKind::Quadratic, 30);
    RpdSpec spec;
    spec.stages = stages;
    spec.step_size = 0.02;
    spec.exact = &log;
    spec.steady_from_microbatch = run.metrics.steady_from_microbatch;
    const RpdResult r = run_rpd(spec, *f);
    ConvergenceSpec replay;
    replay.step_size = spec.step_size;
    const ConvergenceResult stale = run_convergence(log, replay, *f);
    CHECK(r.final_x == stale.final_weights[0]);
    CHECK(r.iterations == stale.updates);
    // The delays RPD applied, counted by RPD itself, against the pipeline report's (PipelineMetrics).
    const Json report = pipeline_json(run.metrics)["staleness"];
    Json histogram = Json::array();
    for (const auto& [delay, count] : r.histogram) histogram.push_back(Json{{"delay", delay}, {"count", count}});
    CHECK(histogram == report["histogram"]);
    CHECK(r.delays.max == report["whole_run"]["max"].get<std::int64_t>());
    CHECK(std::abs(r.delays.mean - report["whole_run"]["mean"].get<double>()) < 1e-12);
    CHECK(report["max_delay"].get<std::int64_t>() == stages * stages - stages / 2);  // S^2 - S/2
  }
}

TEST_CASE("RPD's uniform delays stay in 0..delta, and stages are sampled uniformly or in backward order") {
  const auto f = objective(ObjectiveKind::Quadratic, 64);
  RpdSpec spec{.stages = 8, .iterations = 4000, .step_size = 0.01, .delta = 60};
  const RpdResult r = run_rpd(spec, *f);
  CHECK(r.delays.max == 60);
  CHECK(r.histogram.begin()->first == 0);
  // Uniform on 0..min(60, k): the mean over 4000 iterations is within 1.5 of 30 (60 x 61 / 2 / 4000 = 0.46 lower from
  // the first 60 iterations, sampling noise sd about 17.6 / sqrt(4000) = 0.28).
  CHECK(std::abs(r.delays.mean - 30) < 1.5);
  CHECK(r.points.back().loss < r.points.front().loss);
  spec.sampling = RpdSpec::Sampling::BackwardOrder;
  spec.delta = 0;
  spec.iterations = 16;
  // Backward order without delay: block-cyclic SGD from the last block down, each block twice in 16 iterations,
  // against a hand-written loop.
  const RpdResult cyclic = run_rpd(spec, *f);
  std::vector<double> x(64, 0.0), g;
  const BlockSplit split(64, 8);
  for (int k = 0; k < 16; ++k) {
    const int s = 7 - k % 8;
    g.assign(static_cast<std::size_t>(split.size(s)), 0.0);
    f->sample_gradient(x, SampleKey{0, k}, split.begin(s), split.end(s), g);
    for (int c = split.begin(s); c < split.end(s); ++c)
      x[static_cast<std::size_t>(c)] =
          x[static_cast<std::size_t>(c)] - spec.step_size * g[static_cast<std::size_t>(c - split.begin(s))];
  }
  CHECK(cyclic.final_x == x);
}

TEST_CASE("The RPD bound's terms, by hand") {
  // step 0.1, S 4, K 100, delta 14, L 2, G^2 3, gap 5.
  const RpdBound b = rpd_bound(0.1, 4, 100, 14, 2.0, 3.0, 5.0);
  CHECK(b.descent == Approx(2 * 4 * 5 / (0.1 * 100)));  // 4
  CHECK(b.noise == Approx(0.1 * 4 * 2 * 3));            // 2.4
  CHECK(b.stale == Approx(0.01 * 4 * 196 * 3));         // 23.52
  CHECK(b.total() == Approx(29.92));
  CHECK(b.tuned_step == Approx(std::sqrt(1.0 / 60)));
  CHECK(b.tuned_main == Approx(8 * std::sqrt(0.6)));  // 2 S sqrt(2 L gap G^2 / K)
  CHECK(b.tuned_stale == Approx(39.2));               // 2 L gap delta^2 / K
}

TEST_CASE("The smoothness estimate of a quadratic is its largest eigenvalue") {
  ObjectiveSpec o;
  o.kind = ObjectiveKind::Quadratic;
  o.dimension = 64;
  o.condition_number = 10;
  o.noise = 0;
  const auto f = make_objective(o);
  // linear_spectrum(d, kappa): eigenvalues evenly spaced on [1/kappa, 1].
  CHECK(estimate_smoothness(*f, std::vector<double>(64, 0.0)) == Approx(1).epsilon(2e-3));
}
