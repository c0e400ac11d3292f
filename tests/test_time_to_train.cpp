// Time to train, energy, cost and goodput (strategies/plan): each figure against a derivation by hand, Daly's optimum
// against the values his paper prints, the failure defaults against the Llama 3 paper's counts, and the run
// section's refusals.
#include <catch2/catch.hpp>
#include <cmath>

#include "strategies/analytic/ExperimentFile.hpp"
#include "strategies/plan/RunPlan.hpp"
#include "strategies/plan/TimeToTrain.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"
#include "workloads/json/Units.hpp"
#include "workloads/run/RunSpec.hpp"

using namespace placesim;
using Catch::Detail::Approx;

namespace {

constexpr double kHour = 3600, kDay = 86400;

// 2 nodes of 8 GPUs at 700 W, 4,600 W beyond the GPUs per node, PUE 1.5, $2 per GPU-hour.
PowerInputs small_cluster() {
  PowerInputs p;
  p.devices = 16;
  p.nodes = 2;
  p.gpu_power_w = 700;
  p.node_power_w = 4600;
  p.pue = 1.5;
  p.gpu_hour_usd = 2;
  return p;
}

// The messages of every error of an experiment (empty when it parses).
std::string experiment_errors(const std::string& text) {
  ErrorList errors("exp.json");
  try {
    parse_experiment(Json::parse(text), PLACESIM_SOURCE_DIR, errors);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("time to train: days, GPU-hours, energy and cost of a small run by hand") {
  const PowerInputs p = small_cluster();
  const double step_s = 2, tokens_per_step = 1 << 20;
  // 1e9 tokens / 2^20 tokens per step = 953.67: 954 steps.
  CHECK(steps_for_tokens(1e9, tokens_per_step) == 954);
  CHECK(steps_for_tokens(2.0 * tokens_per_step, tokens_per_step) == 2);
  const Totals t = totals(954, step_s, tokens_per_step, p);
  // Facility power 1.5 x (16 x 700 + 2 x 4,600) = 1.5 x 20,400 = 30,600 W.
  CHECK(p.facility_power_w() == Approx(30600));
  CHECK(t.compute_s == Approx(1908));  // 954 x 2 s
  CHECK(t.compute_s / kDay == Approx(0.0220833).epsilon(1e-5));
  CHECK(t.gpu_hours == Approx(8.48));           // 1,908 s x 16 / 3,600
  CHECK(t.energy_j / 3.6e6 == Approx(16.218));  // 1,908 s x 30,600 W = 58,384,800 J = 16.218 kWh
  CHECK(*t.cost_usd == Approx(16.96));          // 8.48 GPU-hours x $2
  CHECK(t.tokens == 954.0 * (1 << 20));
  const PerToken per = per_token(step_s, tokens_per_step, p);
  CHECK(per.energy_j == Approx(2 * 30600.0 / 1048576));                               // 0.05836 J
  CHECK(*per.cost_per_million_usd == Approx(2 * 16 * (2.0 / 3600) * 1e6 / 1048576));  // $0.01695
  PowerInputs unpriced = p;
  unpriced.gpu_hour_usd.reset();
  CHECK_FALSE(per_token(step_s, tokens_per_step, unpriced).cost_per_million_usd);
  CHECK_FALSE(totals(954, step_s, tokens_per_step, unpriced).cost_usd);
}

TEST_CASE("goodput: each interruption loses half an interval and its checkpoint, plus the restart") {
  // One interruption per 10 h; a checkpoint stalls 60 s every 3,600 s of compute; a restart takes 300 s.
  const JobRates rates{1 / (10 * kHour), 0};
  CheckpointCosts c;
  c.stall_s = c.write_s = 60;
  c.restart_s = 300;
  c.interval_s = 3600;
  const Goodput g = goodput(rates, c, false);
  // Lost per interruption: 300 + (3,600 + 60) / 2 = 2,130 s; lost fraction 2,130 / 36,000 = 0.0591667;
  // checkpoints add 60 / 3,600: goodput = (1 - 0.0591667) / (1 + 1/60) = 0.92541.
  CHECK(g.loss_unplanned_s == Approx(2130));
  CHECK(g.goodput == Approx((1 - 2130.0 / 36000) / (1 + 60.0 / 3600)));
  CHECK(g.goodput == Approx(0.925410).epsilon(1e-5));
  CHECK_FALSE(g.interval_auto);
  // 100 h of useful compute: T = 360,000 x (1 + 1/60) / (1 - 0.0591667) = 389,017 s, 10.81 interruptions expected.
  const WallClock w = wall_clock(100 * kHour, 100 * kHour, 100 * kHour, g, rates);
  CHECK(w.expected_s == Approx(360000 * (1 + 60.0 / 3600) / (1 - 2130.0 / 36000)));
  CHECK(w.expected_failures == Approx(w.expected_s / 36000));
  // Poisson(10.81): 5th percentile 6 (P(N <= 5) = 0.042, P(N <= 6) = 0.087), 95th 16 (P(N <= 15) = 0.917,
  // P(N <= 16) = 0.951); the range takes each count at its mean loss, 2,130 s.
  CHECK(w.failures_low == 6);
  CHECK(w.failures_high == 16);
  CHECK(w.low_s == Approx(360000 * (1 + 60.0 / 3600) + 6 * 2130.0));
  CHECK(w.high_s == Approx(360000 * (1 + 60.0 / 3600) + 16 * 2130.0));

  SECTION("a planned stop checkpoints first: it loses the write and the restart") {
    const JobRates with_planned{1 / (10 * kHour), 1 / (20 * kHour)};
    const Goodput p = goodput(with_planned, c, false);
    CHECK(p.loss_planned_s == Approx(360));  // 300 + 60
    CHECK(p.goodput == Approx((1 - 2130.0 / 36000 - 360.0 / 72000) / (1 + 60.0 / 3600)));
  }
  SECTION("async: training stalls for the host copy, and the newest checkpoint is durable a write later") {
    CheckpointCosts a = c;
    a.stall_s = 5;
    const Goodput q = goodput(rates, a, true);
    CHECK(q.loss_unplanned_s == Approx(300 + (3600 + 5) / 2.0 + 60));
    CHECK(q.goodput == Approx((1 - (300 + 1802.5 + 60) / 36000) / (1 + 5.0 / 3600)));
  }
  SECTION("refused when the job loses work faster than it makes progress") {
    CheckpointCosts slow = c;
    slow.restart_s = 10 * kHour;
    const Goodput r = goodput(rates, slow, false);
    CHECK_FALSE(r.feasible);
    CHECK_THAT(r.refused, Catch::Contains("never finishes") && Catch::Contains("run.checkpoint.restart"));
  }
  SECTION("no interruptions: no checkpoints needed, goodput 1") {
    const Goodput none = goodput(JobRates{}, CheckpointCosts{60, 60, 300, std::nullopt}, false);
    CHECK_FALSE(none.interval_s);
    CHECK(none.goodput == 1);
  }
}

TEST_CASE("checkpoint interval: Young's and Daly's optima by hand and as Daly's paper prints them") {
  // Young: sqrt(2 x 300 s x 86,400 s) = sqrt(51,840,000) = 7,200 s.
  CHECK(young_interval_s(300, kDay) == Approx(7200));
  // J. T. Daly, Future Generation Computer Systems 22 (2006) 303-312, Figs. 3-5 captions (delta = 5 min): M = 24 h
  // -> tau_opt = 117 min; M = 6 h -> 57 min; M = 15 min -> 9.1 min. By hand for M = 24 h: sqrt(2 x 5 x 1,440) = 120,
  // x (1 + sqrt(5/2,880)/3 + (5/2,880)/9) = 121.69, - 5 = 116.69 min.
  CHECK(daly_interval_s(300, kDay) / 60 == Approx(116.69).margin(0.01));
  CHECK(std::round(daly_interval_s(300, kDay) / 60) == 117);
  CHECK(std::round(daly_interval_s(300, 6 * kHour) / 60) == 57);
  CHECK(daly_interval_s(300, 15 * 60) / 60 == Approx(9.1).margin(0.05));
  // delta >= 2M: the interval is M.
  CHECK(daly_interval_s(1000, 400) == 400);
  // The auto interval is Daly's for the unplanned MTBF, and under async at least the write.
  CheckpointCosts c{300, 300, 600, std::nullopt};
  CHECK(*goodput(JobRates{1 / kDay, 0}, c, false).interval_s == Approx(daly_interval_s(300, kDay)));
  CheckpointCosts async{1, 3 * kHour, 600, std::nullopt};
  CHECK(*goodput(JobRates{1 / kDay, 0}, async, true).interval_s == Approx(3 * kHour));
}

TEST_CASE("poisson quantiles: exact for small means, normal approximation for large ones") {
  // Poisson(3): P(N <= 0) = e^-3 = 0.0498 < 0.05, P(N <= 1) = 0.199: 5th percentile 1; P(N <= 5) = 0.916,
  // P(N <= 6) = 0.966: 95th percentile 6.
  CHECK(poisson_quantile(3, 0.05) == 1);
  CHECK(poisson_quantile(3, 0.95) == 6);
  CHECK(poisson_quantile(0, 0.95) == 0);
  // Mean 10,000: 10,000 +- 1.645 x 100.
  CHECK(std::abs(static_cast<double>(poisson_quantile(1e4, 0.95)) - (1e4 + 164.5)) <= 1);
  CHECK(std::abs(static_cast<double>(poisson_quantile(1e4, 0.05)) - (1e4 - 164.5)) <= 1);
  // Where the exact sum hands over to the approximation, both agree within a count.
  CHECK(std::abs(static_cast<double>(poisson_quantile(500, 0.95) - poisson_quantile(500.001, 0.95))) <= 1);
}

TEST_CASE("failure defaults reproduce the Llama 3 paper's 54-day snapshot (arXiv 2407.21783, Table 5)") {
  // A consistency check of the derivation: the rates are the counts over the unit-hours observed, so the rates times
  // the observed cluster and period give the counts back. Table 5's unexpected interruptions by root cause: faulty
  // GPU 148, GPU HBM3 memory 72, software bug 54, network switch/cable 35, host maintenance 32, GPU SRAM memory 19,
  // GPU system processor 17, NIC 7, NCCL watchdog timeouts 7, silent data corruption 6, GPU thermal interface and
  // sensor 6, SSD 3, power supply 3, server chassis 2, IO expansion board 2, dependency 2, CPU 2, system memory 2.
  const double unexpected = 148 + 72 + 54 + 35 + 32 + 19 + 17 + 7 + 7 + 6 + 6 + 3 + 3 + 2 + 2 + 2 + 2 + 2;
  REQUIRE(unexpected == 419);
  const FailureRates r = run_defaults().failures.rates();
  // 16,384 GPUs = 2,048 nodes of 8, one NIC link per GPU, 54 days = 1,296 h.
  const JobRates job = job_rates(r, 16384, 2048, 16384);
  CHECK(job.unplanned_per_s * 1296 * kHour == Approx(419));
  CHECK(job.planned_per_s * 1296 * kHour == Approx(47));  // 466 interruptions - 419 unexpected
  // GPU-attributed causes (148 + 72 + 19 + 17 + 6 + 6 = 268) and software, dependency and unknown causes
  // (54 + 2 + 7 = 63) per GPU-hour.
  CHECK(r.per_gpu_s * kHour == Approx((268.0 + 63) / (16384 * 1296)));
  CHECK(r.per_node_s * kHour == Approx((32.0 + 7 + 3 + 3 + 2 + 2 + 2 + 2) / (2048 * 1296)));
  CHECK(r.per_link_s * kHour == Approx(35.0 / (16384 * 1296)));
}

TEST_CASE("the Llama 3 405B run on 16,384 H100 keeps above 90 % effective training time, as the paper reports") {
  const Experiment e = load_experiment(std::string(PLACESIM_SOURCE_DIR) + "/examples/whatif/llama3-405b-54-days.json");
  const ClusterSpec cluster = parse_cluster(e.cluster);
  const RunPlan plan = run_plan(e, cluster, 2048.0 * 8192);
  // The paper omits the checkpoint's write time and the restart time; the defaults assume Tectonic's sustained
  // 2 TB/s over its 2,048 nodes (2 TB/s / 2,048 per node, times this job's 2,048 nodes) and 10 min. Checkpoint: the
  // model states once, N x (2 + 12) bytes.
  const double bytes = total_parameters(e.model) * 14;
  CHECK(plan.checkpoint_bytes == Approx(bytes));
  CHECK(plan.checkpoint.write_s == Approx(bytes / 2e12));  // about 2.8 s for 405 B parameters
  CHECK(plan.checkpoint.restart_s == 600);
  CHECK(plan.power.nodes == 2048);
  CHECK(plan.links == 2048 * 8);
  // By hand: unplanned MTBF M = 1,296 h / 419 = 11,135 s; delta = 2.84 s; tau = Daly(delta, M) = 249.4 s;
  // lost per unexpected interruption 600 + (tau + delta) / 2, per planned one 600 + delta (47 in 1,296 h).
  const double m = 1296 * kHour / 419, delta = bytes / 2e12;
  const double tau = std::sqrt(2 * delta * m) * (1 + std::sqrt(delta / (2 * m)) / 3 + delta / (2 * m) / 9) - delta;
  const double lost = (600 + (tau + delta) / 2) / m + (600 + delta) * 47 / (1296 * kHour);
  const Goodput g = goodput(plan.rates, plan.checkpoint, plan.async);
  CHECK(*g.interval_s == Approx(tau));
  CHECK(g.goodput == Approx((1 - lost) / (1 + delta / tau)));
  CHECK(g.goodput > 0.90);  // "higher than 90% effective training time" (section 3.3.4)
  CHECK(g.goodput < 0.95);
}

TEST_CASE("run plan: defaults named with their sources, the user's values taken as given") {
  const std::string base = R"({"model": {"layers": 2, "hidden": 64, "heads": 4, "vocab": 128, "seq_len": 16},
      "training": {"global_batch": 8, "micro_batch": 1, "tokens": 1e6},
      "strategy": {"preset": "megatron-3d", "dp": 2, "tp": 1, "pp": 2}, "cluster": {"preset": "dgx-h100", "nodes": 1})";
  const Experiment d = test::experiment(base + "}");
  const RunPlan p = run_plan(d, parse_cluster(d.cluster), 8 * 16);
  CHECK(*p.steps == 7813);  // ceil(1e6 / 128)
  CHECK(p.power.pue == 1.58);
  CHECK(p.power.node_power_w == Approx(10200 - 8 * 700));  // DGX H100: 10.2 kW less 8 x 700 W
  CHECK(p.links == 0);                                     // one node: no inter-node links
  CHECK_FALSE(p.power.gpu_hour_usd);
  std::string all;
  for (const auto& a : p.assumptions) all += a + "\n";
  CHECK_THAT(all, Catch::Contains("run.pue not given: 1.58") && Catch::Contains("Uptime Institute") &&
                      Catch::Contains("DGX H100") && Catch::Contains("2407.21783") &&
                      Catch::Contains("run.gpu_hour_usd not given: no cost figures") &&
                      Catch::Contains("run.checkpoint.restart not given"));

  const Experiment u = test::experiment(base + R"(, "run": {"gpu_hour_usd": 2.5, "pue": 1.1, "node_power_w": 1000,
      "gpu_power_fraction": 0.5, "failures": {"mtbf": "12h"},
      "checkpoint": {"interval": "30min", "write_bandwidth": "10GB/s", "restart": "2min"}}})");
  const RunPlan q = run_plan(u, parse_cluster(u.cluster), 8 * 16);
  CHECK(*q.power.gpu_hour_usd == 2.5);
  CHECK(q.power.pue == 1.1);
  CHECK(q.power.node_power_w == 1000);
  CHECK(q.power.gpu_power_w == 350);  // 0.5 x 700 W
  CHECK(q.rates.unplanned_per_s == Approx(1 / (12 * kHour)));
  CHECK(q.rates.planned_per_s == 0);
  CHECK(*q.checkpoint.interval_s == 1800);
  CHECK(q.checkpoint.restart_s == 120);
  CHECK(q.checkpoint.write_s == Approx(checkpoint_bytes(u) / 10e9));
  for (const auto& a : q.assumptions) CHECK(a.find("run.pue") == std::string::npos);
}

TEST_CASE("run and training length: every refusal names the field and the value") {
  const std::string model = R"("model": {"layers": 2, "hidden": 64, "heads": 4, "vocab": 128, "seq_len": 16},
      "strategy": {"preset": "megatron-3d", "dp": 2, "tp": 1, "pp": 2})";
  SECTION("all at once: tokens and steps both, a negative PUE, a zero interval") {
    const std::string errors = experiment_errors("{" + model + R"(,
        "training": {"global_batch": 8, "micro_batch": 1, "tokens": 1e9, "steps": 100},
        "run": {"pue": -1, "checkpoint": {"interval": 0}}})");
    CHECK_THAT(errors, Catch::Contains("3 errors"));
    CHECK_THAT(errors, Catch::Contains("training.steps=100 and training.tokens=1e+09 both give the run's length"));
    CHECK_THAT(errors, Catch::Contains("run.pue=-1 must be at least 1"));
    CHECK_THAT(errors, Catch::Contains("run.checkpoint.interval=0 must be a positive time between checkpoints") &&
                           Catch::Contains("\"auto\""));
  }
  SECTION("negative tokens, steps that are not a positive integer") {
    CHECK_THAT(experiment_errors("{" + model + R"(, "training": {"tokens": -3}})"),
               Catch::Contains("training.tokens=-3 must be a positive number of tokens"));
    CHECK_THAT(experiment_errors("{" + model + R"(, "training": {"steps": 2.5}})"),
               Catch::Contains("training.steps=2.5 must be a positive integer"));
  }
  SECTION("run fields") {
    CHECK_THAT(experiment_errors("{" + model + R"(, "run": {"gpu_hour_usd": 0}})"),
               Catch::Contains("run.gpu_hour_usd=0 must be positive"));
    CHECK_THAT(experiment_errors("{" + model + R"(, "run": {"gpu_power_fraction": 1.5}})"),
               Catch::Contains("run.gpu_power_fraction=1.5 must be in (0, 1]"));
    CHECK_THAT(experiment_errors("{" + model + R"(, "run": {"failures": {"mtbf": "3h", "per_gpu_hour": 1e-5}}})"),
               Catch::Contains("run.failures.per_gpu_hour=1e-05 with run.failures.mtbf"));
    CHECK_THAT(experiment_errors("{" + model + R"(, "run": {"checkpoint": {"restart": "5 weeks"}}})"),
               Catch::Contains("run.checkpoint.restart=\"5 weeks\": unknown duration unit 'weeks'"));
    CHECK_THAT(experiment_errors("{" + model + R"(, "run": {"checkpoint": {"host_bandwidth": "25GB/s"}}})"),
               Catch::Contains("run.checkpoint.host_bandwidth") && Catch::Contains("async=true"));
    CHECK_THAT(experiment_errors("{" + model + R"(, "run": {"pue_": 1.2}})"),
               Catch::Contains("unknown key run.pue_ (did you mean 'run.pue'?)"));
  }
  SECTION("durations") {
    CHECK(parse_duration("10min", "f") == 600);
    CHECK(parse_duration("2h", "f") == 7200);
    CHECK(parse_duration("1.5d", "f") == 129600);
    CHECK(parse_duration("600", "f") == 600);
  }
}

TEST_CASE("placesim simulate prints the time to train of an experiment with training.tokens") {
  std::string out;
  REQUIRE(test::run_placesim("simulate " + std::string(PLACESIM_SOURCE_DIR) +
                                 "/examples/small-3d-1f1b.json --fidelity analytic --set training.tokens=1e9 --set "
                                 "run.gpu_hour_usd=2",
                             &out) == 0);
  // 1e9 tokens / (32 samples x 256 tokens per step) = 122,070.3: 122,071 steps.
  CHECK_THAT(out, Catch::Contains("  time to train        ") && Catch::Contains("122,071 steps"));
  CHECK_THAT(out, Catch::Contains("  goodput              ") && Catch::Contains("  energy               ") &&
                      Catch::Contains("  cost                 ") && Catch::Contains("per million tokens"));
}
