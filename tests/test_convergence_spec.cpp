// The "convergence" section and the executor's refusals: one throwing test per rule.
#include <catch2/catch.hpp>

#include "sim/converge/StaleSgd.hpp"
#include "tests/UpdateLogBuilders.hpp"

using namespace placesim;
using Catch::Contains;
using test::apply;
using test::backward;

namespace {

ConvergenceSpec parse(const std::string& text) {
  return parse_convergence(Json::parse(text));
}

ConvergenceSpec tiny() {
  ConvergenceSpec spec;
  spec.objective.dimension = 4;
  return spec;
}

}  // namespace

TEST_CASE("A convergence section is read with its defaults") {
  ConvergenceSpec s = parse(R"({"objective": "logistic", "dimension": 64, "samples": 200, "batch_size": 10,
                                "condition_number": 100, "noise": 0.05, "l2": 1e-4, "seed": 42, "step_size": 0.3,
                                "sample_every": 5})");
  CHECK(s.objective.kind == ObjectiveKind::Logistic);
  CHECK(s.objective.dimension == 64);
  CHECK(s.objective.samples == 200);
  CHECK(s.objective.batch_size == 10);
  CHECK(s.objective.condition_number == 100);
  CHECK(s.objective.noise == 0.05);
  CHECK(s.objective.l2 == 1e-4);
  CHECK(s.objective.seed == 42);
  CHECK(s.step_size == 0.3);
  CHECK(s.sample_every == 5);
  ConvergenceSpec d = parse("{}");
  CHECK(d.objective.kind == ObjectiveKind::Quadratic);
  CHECK(d.objective.dimension == 512);
  CHECK(d.step_size == 0.1);
  CHECK(d.sample_every == 0);
}

TEST_CASE("A step size of zero or below is refused") {
  CHECK_THROWS_WITH(parse(R"({"step_size": 0})"), "convergence.step_size=0 must be positive");
  CHECK_THROWS_WITH(parse(R"({"step_size": -0.5})"), "convergence.step_size=-0.5 must be positive");
  ConvergenceSpec spec = tiny();
  spec.step_size = 0;
  CHECK_THROWS_WITH(run_convergence(test::synchronous_log(1, 1, 1), spec), Contains("convergence.step_size=0"));
}

TEST_CASE("An unknown objective is refused naming the nearest one") {
  CHECK_THROWS_WITH(parse(R"({"objective": "logistc"})"),
                    Contains("convergence.objective=logistc is not one of") && Contains("did you mean 'logistic'"));
}

TEST_CASE("An unknown key is refused naming the nearest one") {
  CHECK_THROWS_WITH(parse(R"({"stepsize": 0.1})"),
                    Contains("unknown key convergence.stepsize") && Contains("convergence.step_size"));
}

TEST_CASE("A dimension smaller than the number of stages is refused") {
  ConvergenceSpec spec = tiny();
  CHECK_THROWS_WITH(run_convergence(test::synchronous_log(8, 1, 1), spec),
                    Contains("convergence.dimension=4 is smaller than the 8 pipeline stages"));
  CHECK_NOTHROW(run_convergence(test::synchronous_log(4, 1, 1), spec));
}

TEST_CASE("Data-set fields are refused for the quadratic") {
  CHECK_THROWS_WITH(parse(R"({"objective": "quadratic", "samples": 10})"),
                    Contains("convergence.samples has no meaning for objective quadratic"));
}

TEST_CASE("A batch larger than the data set is refused") {
  CHECK_THROWS_WITH(parse(R"({"objective": "least_squares", "samples": 10, "batch_size": 11})"),
                    "convergence.batch_size=11 exceeds samples=10");
  CHECK(parse(R"({"objective": "least_squares", "samples": 10})").objective.batch_size == 10);  // default 16 capped
}

TEST_CASE("A condition number below 1 is refused") {
  CHECK_THROWS_WITH(parse(R"({"condition_number": 0.5})"), "convergence.condition_number=0.5 must be at least 1");
}

TEST_CASE("A label flip probability above one half is refused") {
  CHECK_THROWS_WITH(parse(R"({"objective": "logistic", "noise": 0.7})"), Contains("convergence.noise=0.7"));
  CHECK_NOTHROW(parse(R"({"objective": "least_squares", "noise": 0.7})"));
}

TEST_CASE("Negative noise and negative l2 are refused") {
  CHECK_THROWS_WITH(parse(R"({"noise": -1})"), "convergence.noise=-1 must not be negative");
  CHECK_THROWS_WITH(parse(R"({"l2": -0.1})"), "convergence.l2=-0.1 must not be negative");
}

TEST_CASE("An objective too large for memory is refused") {
  CHECK_THROWS_WITH(parse(R"({"dimension": 2000000})"), "convergence.dimension=2000000 is too large (at most 1048576)");
  CHECK_NOTHROW(parse(R"({"dimension": 100000})"));  // the quadratic never forms its d x d Hessian
  CHECK_THROWS_WITH(parse(R"({"objective": "logistic", "dimension": 100000})"),
                    Contains("convergence.dimension=100000 gives samples x dimension"));
}

TEST_CASE("Cyclic batches need samples a multiple of batch_size and mean nothing to the quadratic") {
  CHECK(
      parse(R"({"objective": "logistic", "samples": 200, "batch_size": 10, "batches": "cyclic"})").objective.batches ==
      ObjectiveSpec::Batches::Cyclic);
  CHECK(parse(R"({"objective": "logistic"})").objective.batches == ObjectiveSpec::Batches::Random);
  CHECK_THROWS_WITH(parse(R"({"objective": "logistic", "samples": 200, "batch_size": 7, "batches": "cyclic"})"),
                    "convergence.batches=\"cyclic\" cyclic needs samples a multiple of batch_size (200 samples, "
                    "batches of 7)");
  CHECK_THROWS_WITH(parse(R"({"batches": "cyclic"})"), Contains("convergence.batches has no meaning"));
  CHECK_THROWS_WITH(parse(R"({"objective": "logistic", "batches": "epoch"})"), Contains("convergence.batches"));
}

TEST_CASE("A sampling interval must be a positive integer") {
  CHECK_THROWS_WITH(parse(R"({"sample_every": 0})"), Contains("convergence.sample_every=0"));
  CHECK_THROWS_WITH(parse(R"({"sample_every": 1.5})"), Contains("convergence.sample_every=1.5"));
}

TEST_CASE("A negative seed is refused") {
  CHECK_THROWS_WITH(parse(R"({"seed": -3})"), "convergence.seed=-3 must not be negative");
}

TEST_CASE("A backward reading a version that never existed is refused") {
  UpdateLog trace{2, 1, {backward(1, 0, {0, 0}, 1), apply(1, 2), backward(1, 1, {0, 3}, 3)}};
  CHECK_THROWS_WITH(run_convergence(trace, tiny()),
                    "trace.events[2].versions_read[1]=3 never existed: block 1 of replica 0 has versions 0..1 at "
                    "that point");
  trace.events[2].versions_read = {-1, 0};
  CHECK_THROWS_WITH(run_convergence(trace, tiny()), Contains("trace.events[2].versions_read[0]=-1 never existed"));
}

TEST_CASE("A backward whose versions_read does not have one entry per stage is refused") {
  UpdateLog trace{2, 1, {backward(1, 0, {0}, 1)}};
  CHECK_THROWS_WITH(run_convergence(trace, tiny()),
                    "trace.events[0].versions_read has 1 entries but the trace has 2 stages");
}

TEST_CASE("An Apply without an accumulated gradient is refused") {
  UpdateLog trace{1, 1, {backward(0, 0, {0}, 1), apply(0, 2), apply(0, 3)}};
  CHECK_THROWS_WITH(run_convergence(trace, tiny()), Contains("trace.events[2].kind=Apply on stage 0 of replica 0"));
}

TEST_CASE("A micro-batch whose backward repeats on a stage is refused") {
  UpdateLog trace{1, 1, {backward(0, 5, {0}, 1), apply(0, 2), backward(0, 5, {1}, 3)}};
  CHECK_THROWS_WITH(run_convergence(trace, tiny()),
                    "trace.events[2].microbatch=5 already had its backward on stage 0 of replica 0");
}

TEST_CASE("Events out of completion order are refused") {
  UpdateLog trace{1, 1, {backward(0, 0, {0}, 2), apply(0, 1)}};
  CHECK_THROWS_WITH(run_convergence(trace, tiny()), Contains("trace.events[1].time_s=1 is earlier than"));
}

TEST_CASE("Events outside the trace's stages or replicas are refused") {
  UpdateLog stage{2, 1, {backward(2, 0, {0, 0}, 1)}};
  CHECK_THROWS_WITH(run_convergence(stage, tiny()), "trace.events[0].stage=2 is outside the trace's stages 0..1");
  UpdateLog replica{2, 1, {backward(0, 0, {0, 0}, 1, 1)}};
  CHECK_THROWS_WITH(run_convergence(replica, tiny()), "trace.events[0].replica=1 is outside the trace's replicas 0..0");
  UpdateLog none{0, 1, {}};
  CHECK_THROWS_WITH(run_convergence(none, tiny()), "trace.stages=0 must be at least 1");
}
