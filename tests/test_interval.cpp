// Prediction intervals from the published runs' residuals (traces/report/Interval.hpp).
#include <catch2/catch.hpp>
#include <cmath>

#include "FileHelpers.hpp"
#include "Helpers.hpp"
#include "traces/report/Interval.hpp"

using namespace placesim;

TEST_CASE("Student's t quantiles are the table's, and between 30 and infinity they approach the normal's") {
  CHECK(student_t95(1) == 6.314);
  CHECK(student_t95(2) == 2.920);
  CHECK(student_t95(10) == 1.812);
  CHECK(student_t95(30) == 1.697);
  CHECK(student_t95(40) == Approx(1.684));
  CHECK(student_t95(60) == Approx(1.671));
  CHECK(student_t95(46) > 1.671);
  CHECK(student_t95(46) < 1.684);
  CHECK(student_t95(100000) == Approx(1.645).margin(1e-3));
  CHECK(std::isnan(student_t95(0)));
}

TEST_CASE("An interval from three residuals by hand: centred on their mean, t(2) standard deviations wide") {
  // ln(published / predicted) = 0.1, 0.2, 0.3: mean 0.2, sample standard deviation 0.1; the half-width of a prediction
  // interval for one more run is t(0.95, 2) x 0.1 x sqrt(1 + 1/3) = 2.920 x 0.1 x 1.1547 = 0.33717.
  const PredictionInterval i = interval_from_residuals({0.1, 0.2, 0.3}, 10.0);
  REQUIRE(i.available);
  CHECK(i.runs == 3);
  const double half = 2.920 * 0.1 * std::sqrt(4.0 / 3.0);
  CHECK(i.centre_s == Approx(10.0 * std::exp(0.2)));
  CHECK(i.low_s == Approx(10.0 * std::exp(0.2 - half)));
  CHECK(i.high_s == Approx(10.0 * std::exp(0.2 + half)));
  CHECK(i.low_s == Approx(8.7182).epsilon(1e-4));
  CHECK(i.high_s == Approx(17.1122).epsilon(1e-4));
  // Two runs are too few.
  CHECK_FALSE(interval_from_residuals({0.1, 0.2}, 10.0).available);
}

TEST_CASE("A report carries the interval of its stack family and accelerator generation, or says why it has none") {
  std::string out;
  REQUIRE(test::run_placesim("simulate examples/llama3-70b-megatron-core.json --fidelity analytic --quiet --report -",
                             &out) == 0);
  const Json report = Json::parse(out.substr(0, out.find("simulated step:")));
  const Json& i = report["simulation"]["interval"];
  CHECK(i["family"] == "megatron");
  CHECK(i["generation"] == "hopper");
  CHECK(i["available"] == true);
  CHECK(i["runs"].get<int>() >= 20);
  CHECK(i["step_time_low_s"].get<double>() < i["step_time_high_s"].get<double>());
  CHECK_THAT(out, Catch::Contains("90 % interval        ") && Catch::Contains("published megatron runs on hopper"));
  // DeepSpeed on A100: the development tables hold no such run.
  REQUIRE(
      test::run_placesim(
          "simulate examples/validation-test/mtnlg-530b-2240gpu.json --fidelity analytic --force --quiet --report -",
          &out) == 0);
  const Json ds = Json::parse(out.substr(0, out.find("simulated step:")));
  CHECK(ds["simulation"]["interval"]["available"] == false);
  CHECK(ds["simulation"]["interval"]["basis"] ==
        "no published run of the deepspeed stack family on ampere was checked: no interval");
}
