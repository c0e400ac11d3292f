// The stale-SGD executor (sim/converge/StaleSgd): without staleness it is plain mini-batch SGD bit for bit; with a
// stale trace it takes the gradient at the versions the trace names; Average averages; equal input, equal output.
#include <catch2/catch.hpp>

#include "sim/converge/StaleSgd.hpp"
#include "tests/PlainSgd.hpp"
#include "tests/UpdateLogBuilders.hpp"

using namespace placesim;
using test::apply;
using test::average;
using test::backward;
using test::loss_at;
using test::plain_sgd;

namespace {

ConvergenceSpec spec_for(ObjectiveKind kind, int dimension, double step) {
  ConvergenceSpec spec = test::small_convergence(kind, dimension, step, 7);
  spec.objective.l2 = 1e-3;
  return spec;
}

// Two replicas of two stages: replica 0 steps micro-batch 0, replica 1 micro-batches 0 and 1; a step is both
// stages' backwards (stage 1 first) at one version of the whole vector, then both stages' Applies.
UpdateLog replicas_stepped_once_and_twice() {
  UpdateLog trace{2, 2, {}};
  auto step = [&](int replica, int microbatch, int version) {
    for (int s : {1, 0}) trace.events.push_back(backward(s, microbatch, {version, version}, 1, replica));
    for (int s : {1, 0}) trace.events.push_back(apply(s, 1, replica));
  };
  step(0, 0, 0);
  step(1, 0, 0);
  step(1, 1, 1);
  return trace;
}

// Runs synchronous traces of `stages` for 1 .. steps steps and compares with plain SGD: every coordinate of every
// iterate, and the loss recorded after every step.
void check_equals_plain_sgd(ObjectiveKind kind, int dimension, int stages, int microbatches, int steps) {
  ConvergenceSpec spec = spec_for(kind, dimension, 0.05);
  spec.sample_every = stages;  // every Apply of a step is consecutive: one point per step
  auto f = make_objective(spec.objective);
  auto reference = plain_sgd(*f, spec.step_size, microbatches, steps);
  for (int n = 1; n <= steps; ++n) {
    ConvergenceResult result = run_convergence(test::synchronous_log(stages, microbatches, n), spec, *f);
    REQUIRE(result.final_weights.size() == 1);
    REQUIRE(result.final_weights[0].size() == reference[n - 1].size());
    for (std::size_t k = 0; k < reference[n - 1].size(); ++k) CHECK(result.final_weights[0][k] == reference[n - 1][k]);
    REQUIRE(result.points.size() == static_cast<std::size_t>(n) + 1);
    CHECK(result.points[n].updates == n * stages);
    CHECK(result.points[n].loss == loss_at(*f, reference[n - 1]));
  }
  CHECK(reference.front() != reference.back());  // the runs moved: equality above is not of constants
}

}  // namespace

TEST_CASE("A synchronous pipeline is plain mini-batch SGD bit for bit on the quadratic") {
  check_equals_plain_sgd(ObjectiveKind::Quadratic, 37, 4, 3, 6);  // 37 = 10+9+9+9: uneven blocks
}

TEST_CASE("A synchronous pipeline is plain mini-batch SGD bit for bit on logistic regression") {
  check_equals_plain_sgd(ObjectiveKind::Logistic, 40, 3, 4, 5);
}

TEST_CASE("A synchronous pipeline is plain mini-batch SGD bit for bit on least squares") {
  check_equals_plain_sgd(ObjectiveKind::LeastSquares, 23, 5, 2, 7);
}

TEST_CASE("One stage applying after every backward is plain SGD with one micro-batch per step") {
  ConvergenceSpec spec = spec_for(ObjectiveKind::Logistic, 16, 0.2);
  spec.sample_every = 1;
  auto f = make_objective(spec.objective);
  UpdateLog trace{1, 1, {}};
  for (int i = 0; i < 20; ++i) {
    trace.events.push_back(backward(0, i, {i}, 2.0 * i + 1));
    trace.events.push_back(apply(0, 2.0 * i + 2));
  }
  ConvergenceResult result = run_convergence(trace, spec, *f);
  auto reference = plain_sgd(*f, spec.step_size, 1, 20);
  CHECK(result.final_weights[0] == reference.back());
  REQUIRE(result.points.size() == 21);
  for (int i = 0; i < 20; ++i) {
    CHECK(result.points[i + 1].loss == loss_at(*f, reference[i]));
    CHECK(result.points[i + 1].time_s == 2.0 * i + 2);
  }
  CHECK(result.peak_versions == std::vector<int>{1});  // nothing stale: the old version is dropped at once
}

// f(x) = 1/2 (x - x*)^T A (x - x*), A = [[2, 1], [1, 4]], x* = (2, 2), step 1/4, x0 = 0; block 0 = x[0],
// block 1 = x[1]. By hand (g = A (x - x*) at the model the versions name):
//   e0 B s1 v(0,0) x=(0,0)     g1 = -2 - 8 = -10      e1 A s1  x1 = 0 + 2.5 = 2.5   (v1 = 1)
//   e2 B s0 v(0,0) x=(0,0)     g0 = -4 - 2 = -6       e3 A s0  x0 = 0 + 1.5 = 1.5   (v0 = 1)
//   e4 B s1 v(0,0) x=(0,0)     g1 = -10 (stale; at the current (1.5, 2.5) it would be 1.5)
//                                                     e5 A s1  x1 = 2.5 + 2.5 = 5   (v1 = 2)
//   e6 B s0 v(0,1) x=(0,2.5)   g0 = -4 + 0.5 = -3.5 (stale; at the current (1.5, 5) it would be 2)
//                                                     e7 A s0  x0 = 1.5 + 0.875 = 2.375
//   e8 B s1 v(1,1) x=(1.5,2.5) g1 = -0.5 + 2 = 1.5   e9 A s1  x1 = 5 - 0.375 = 4.625
// Final loss: u = (0.375, 2.625), 1/2 u^T A u = 1/2 (0.28125 + 1.96875 + 27.5625) = 14.90625.
TEST_CASE("A stale trace takes each gradient at the versions it read on a 2-block quadratic") {
  QuadraticObjective f({2, 1, 1, 4}, {2, 2}, 0.0, 0.0, 1);
  UpdateLog trace{
      2,
      1,
      {backward(1, 0, {0, 0}, 1), apply(1, 2), backward(0, 0, {0, 0}, 3), apply(0, 4), backward(1, 1, {0, 0}, 5),
       apply(1, 6), backward(0, 1, {0, 1}, 7), apply(0, 8), backward(1, 2, {1, 1}, 9), apply(1, 10)}};
  ConvergenceSpec spec;
  spec.step_size = 0.25;
  spec.sample_every = 1;
  ConvergenceResult result = run_convergence(trace, spec, f);
  CHECK(result.final_weights[0] == std::vector<double>{2.375, 4.625});
  REQUIRE(result.points.size() == 6);
  CHECK(result.points[0].loss == 0.5 * (2 * 4 + 2 * 4 + 4 * 4));  // x = 0: u = (-2, -2)
  CHECK(result.points[5].updates == 5);
  CHECK(result.points[5].time_s == 10);
  CHECK(result.points[5].loss == 14.90625);
  CHECK(result.updates == 5);
  CHECK(result.backwards == 5);
  CHECK(result.peak_versions == std::vector<int>{2, 2});  // e6 still needs v0 of block 0 and v1 of block 1
}

// Two replicas, A = I, x* = (4, 8, 4, 8), step 1/2: a step maps x to (x + x*) / 2. Replica 0 steps once
// to (2, 4, 2, 4), replica 1 twice to (3, 6, 3, 6); averaging stage 0 gives both (2.5, 5) in block 0; then
// replica 0 steps block 0 from its averaged weights: (2.5, 5) - 1/2 (-1.5, -3) = (3.25, 6.5).
TEST_CASE("Average replaces a block of every replica by the replicas' mean") {
  QuadraticObjective f({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {4, 8, 4, 8}, 0.0, 0.0, 1);
  UpdateLog trace = replicas_stepped_once_and_twice();
  trace.events.push_back(average(0, 2));
  trace.events.push_back(backward(0, 1, {1, 1}, 3, 0));
  trace.events.push_back(apply(0, 3, 0));
  ConvergenceSpec spec;
  spec.step_size = 0.5;
  spec.sample_every = 1;
  ConvergenceResult result = run_convergence(trace, spec, f);
  CHECK(result.final_weights[0] == std::vector<double>{3.25, 6.5, 2, 4});
  CHECK(result.final_weights[1] == std::vector<double>{2.5, 5, 3, 6});
  REQUIRE(result.points.size() == 8);
  CHECK(result.points[6].loss == 11.25);      // mean (2.5, 5, 2.5, 5): 1/2 (1.5^2 + 3^2 + 1.5^2 + 3^2)
  CHECK(result.points[7].loss == 8.7890625);  // mean (2.875, 5.75, 2.5, 5)
}

// As above, replica 0 at (2, 4, 2, 4) and replica 1 at (3, 6, 3, 6). Replica 0 runs the stage-1 backward of
// micro-batch 1 (g1 = (-2, -4)), stage 0 is averaged to (2.5, 5), then the stage-0 backward of micro-batch 1
// reads version 1 of block 0, which is the averaged one: g0 = (2.5 - 4, 5 - 8) = (-1.5, -3), not (-2, -4).
TEST_CASE("A backward after an Average reads the averaged newest version") {
  QuadraticObjective f({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {4, 8, 4, 8}, 0.0, 0.0, 1);
  UpdateLog trace = replicas_stepped_once_and_twice();
  trace.events.push_back(backward(1, 1, {1, 1}, 2, 0));
  trace.events.push_back(average(0, 3));
  trace.events.push_back(backward(0, 1, {1, 1}, 4, 0));
  trace.events.push_back(apply(1, 5, 0));
  trace.events.push_back(apply(0, 5, 0));
  ConvergenceSpec spec;
  spec.step_size = 0.5;
  ConvergenceResult result = run_convergence(trace, spec, f);
  CHECK(result.final_weights[0] == std::vector<double>{3.25, 6.5, 3, 6});
  CHECK(result.final_weights[1] == std::vector<double>{2.5, 5, 3, 6});
}

TEST_CASE("A prebuilt objective gives the same run as one built from the spec") {
  ConvergenceSpec spec = spec_for(ObjectiveKind::LeastSquares, 30, 0.05);
  UpdateLog trace = test::pipedream_like_log(3, 40);
  auto f = make_objective(spec.objective);
  CHECK(run_convergence(trace, spec, *f).final_weights == run_convergence(trace, spec).final_weights);
}

TEST_CASE("Average of a single replica leaves the weights unchanged") {
  QuadraticObjective f({1, 0, 0, 1}, {1, 3}, 0.0, 0.0, 1);
  UpdateLog plain{1, 1, {backward(0, 0, {0}, 1), apply(0, 2)}};
  UpdateLog averaged{1, 1, {backward(0, 0, {0}, 1), apply(0, 2), average(0, 3)}};
  ConvergenceSpec spec;
  spec.step_size = 0.5;
  CHECK(run_convergence(averaged, spec, f).final_weights == run_convergence(plain, spec, f).final_weights);
}

TEST_CASE("Stale versions are released once no later backward reads them") {
  ConvergenceSpec spec = spec_for(ObjectiveKind::Quadratic, 64, 0.01);
  ConvergenceResult result = run_convergence(test::pipedream_like_log(8, 200), spec);
  // Micro-batch i reads block t at version i - (7 - t), and every stage's backward of i reads the whole vector.
  // Block t >= 1 applies (reaching i + 1) before the lower stages' backwards of i: versions i - 7 + t .. i + 1,
  // 9 - t of them. Block 0 applies last, after its own last reader: versions i - 7 .. i, 8 of them.
  CHECK(result.peak_versions == std::vector<int>{8, 8, 7, 6, 5, 4, 3, 2});
  CHECK(result.updates == 1600);
}

TEST_CASE("Same inputs give identical outputs and another seed gives other ones") {
  ConvergenceSpec spec = spec_for(ObjectiveKind::Logistic, 48, 0.1);
  UpdateLog trace = test::pipedream_like_log(4, 60);
  ConvergenceResult a = run_convergence(trace, spec), b = run_convergence(trace, spec);
  CHECK(a.final_weights == b.final_weights);
  REQUIRE(a.points.size() == b.points.size());
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    CHECK(a.points[i].loss == b.points[i].loss);
    CHECK(a.points[i].grad_norm == b.points[i].grad_norm);
  }
  spec.objective.seed = 8;
  CHECK(run_convergence(trace, spec).final_weights != a.final_weights);
}

TEST_CASE("Automatic sampling records one point per full-model update up to 128 of them") {
  ConvergenceSpec spec = spec_for(ObjectiveKind::Quadratic, 32, 0.01);
  ConvergenceResult small = run_convergence(test::synchronous_log(4, 2, 10), spec);
  CHECK(small.sample_every == 4);
  CHECK(small.points.size() == 11);  // the initial point and one per step
  ConvergenceResult large = run_convergence(test::synchronous_log(4, 1, 600), spec);
  CHECK(large.sample_every == 20);  // 600 full-model updates: every fifth, 120 points
  CHECK(large.points.size() == 121);
  CHECK(large.points.back().updates == 2400);
}

TEST_CASE("The last Apply is always sampled") {
  ConvergenceSpec spec = spec_for(ObjectiveKind::Quadratic, 8, 0.1);
  spec.sample_every = 3;
  ConvergenceResult result = run_convergence(test::synchronous_log(2, 1, 4), spec);  // 8 Applies
  std::vector<std::int64_t> updates;
  for (const auto& p : result.points) updates.push_back(p.updates);
  CHECK(updates == std::vector<std::int64_t>{0, 3, 6, 8});
}

TEST_CASE("A diverging run stops once the loss exceeds 1e12 times the initial one") {
  QuadraticObjective f({1, 0, 0, 1}, {1, 1}, 0.0, 0.0, 1);
  ConvergenceSpec spec;
  spec.step_size = 1e3;  // x <- x - 1000 (x - x*): |x| grows 999-fold per step and overflows
  spec.sample_every = 1;
  ConvergenceResult result = run_convergence(test::synchronous_log(1, 1, 400), spec, f);
  CHECK(result.diverged);
  // f(0) = 1 and f grows by 999^2 per step: 999^4 = 0.996e12 stays below 1e12, 999^6 = 0.994e18 does not.
  CHECK(result.updates == 3);
  CHECK(result.points.back().loss > 1e12);
  CHECK(result.points[result.points.size() - 2].loss < 1e12);
}

TEST_CASE("Mild staleness still converges and heavy staleness at the same step size diverges") {
  ConvergenceSpec spec = spec_for(ObjectiveKind::Quadratic, 64, 1.0);
  spec.objective.noise = 0;
  spec.objective.l2 = 0;  // so that the minimum is 0
  ConvergenceResult sync = run_convergence(test::synchronous_log(8, 1, 300), spec);
  ConvergenceResult stale = run_convergence(test::pipedream_like_log(8, 300), spec);
  CHECK(sync.points.back().loss < 1e-12 * sync.points.front().loss);
  CHECK_FALSE(sync.diverged);
  CHECK(stale.diverged);
}
