// Staleness of asynchronous pipelines and the update traces of every schedule. The delay of PipeDream's update at
// stage s is k - j: k counts global block updates (backward ops over all stages in completion order), j the backward
// ops done before the forward of the same micro-batch on stage s (Ilin & Richtarik, arXiv 2606.03498: the steady
// state grows as S^2 - S/2 + O(1)).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <tuple>

#include "strategies/pipeline/AbstractPipeline.hpp"
#include "tests/PipelineHelpers.hpp"

using namespace placesim;

namespace {

UpdateLog log_of(const test::PipelineRun& r) {
  return update_log(r.schedule, r.timeline);
}

PipelineShape pipedream(int stages, int microbatches, int noam) {
  PipelineShape sh = test::pipeline_shape(Schedule::PipeDream, stages, microbatches);
  sh.noam = noam;
  return sh;
}

}  // namespace

TEST_CASE("PipeDream steady-state max delay is S^2 - ceil(S/2) for S = 2 to 16 with f = b = 1 and NOAM = S") {
  // Measured, not assumed: the O(1) term of S^2 - S/2 + O(1) is 0 for even S and -1/2 for odd S.
  for (int S = 2; S <= 16; ++S) {
    test::PipelineRun r = test::run_pipeline(pipedream(S, 10 * S, S), test::pipeline_times(1, 1));
    const double max_delay = static_cast<double>(r.metrics.delay.max);
    INFO("S=" << S << " max delay " << max_delay << " mean " << r.metrics.delay.mean);
    CHECK(r.metrics.delay.max == S * S - (S + 1) / 2);
    CHECK(std::abs(max_delay - (S * S - S / 2.0)) <= 0.5);
    // The oldest stash is on the first stage: its delay is the pipeline's maximum.
    CHECK(r.metrics.delay_per_stage[0].max == r.metrics.delay.max);
    CHECK(r.metrics.stashed_versions_peak.size() == static_cast<std::size_t>(S));
  }
}

TEST_CASE("Synchronous schedules have staleness 0; the block updates between forward and update are kept apart") {
  // 1F1B, S = 16: the forward of the first micro-batch of a step ends... its gradient is applied at the flush, after
  // the other 15 stages' Applies of the same step at most: 15 block updates between, which together are one SGD step.
  for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved}) {
    INFO(to_string(schedule));
    test::PipelineRun r = test::run_pipeline(test::pipeline_shape(schedule, 16, 64, 2), test::pipeline_times(1, 1));
    CHECK(r.metrics.delay.max == 0);
    CHECK(r.metrics.delay.mean == 0);
    CHECK(r.metrics.delay_whole_run.max == 0);
    CHECK(r.metrics.delay.samples == r.metrics.block_updates.samples);
    CHECK(r.metrics.delay_histogram == std::map<std::int64_t, std::int64_t>{{0, r.metrics.delay.samples}});
    for (const DelayStats& d : r.metrics.delay_per_stage) CHECK(d.max == 0);
    CHECK(r.metrics.block_updates.max > 0);
    if (schedule == Schedule::OneFOneB) CHECK(r.metrics.block_updates.max == 15);
    const Json p = pipeline_json(r.metrics);
    CHECK(p["staleness"]["max_delay"] == 0);
    CHECK(p["block_updates_between"]["max"] == r.metrics.block_updates.max);
  }
}

TEST_CASE("Asynchronous schedules keep their delay: it is the block-update count") {
  for (Schedule schedule : {Schedule::PipeDream, Schedule::PipeDream2BW}) {
    INFO(to_string(schedule));
    test::PipelineRun r = test::run_pipeline(test::pipeline_shape(schedule, 4, 40, 2), test::pipeline_times(1, 1));
    CHECK(r.metrics.delay.max == r.metrics.block_updates.max);
    CHECK(r.metrics.delay.mean == r.metrics.block_updates.mean);
    CHECK(r.metrics.delay_histogram == r.metrics.block_updates_histogram);
    CHECK(r.metrics.delay.max > 0);
    if (schedule == Schedule::PipeDream) CHECK(r.metrics.delay.max == 4 * 4 - 2);
  }
}

TEST_CASE("PipeDream measured delays equal k - j counted directly over backward ops") {
  test::PipelineRun r = test::run_pipeline(pipedream(5, 50, 5), test::pipeline_times(1, 1));
  // Backward ops in completion order (end, stage, position) and the start of each one's forward.
  std::vector<std::tuple<double, int, std::size_t, int>> backwards;  // end, stage, position, micro-batch
  std::map<std::pair<int, int>, double> forward_start;
  for (std::size_t s = 0; s < r.schedule.order.size(); ++s)
    for (std::size_t i = 0; i < r.schedule.order[s].size(); ++i) {
      const PipeOp& op = r.schedule.order[s][i];
      if (op.kind == PipeOpKind::Forward) forward_start[{op.stage, op.microbatch}] = r.timeline[s][i].start_s;
      if (op.kind == PipeOpKind::Backward) backwards.emplace_back(r.timeline[s][i].end_s, op.stage, i, op.microbatch);
    }
  std::sort(backwards.begin(), backwards.end());
  std::map<std::int64_t, std::int64_t> histogram;
  for (std::size_t k = 0; k < backwards.size(); ++k) {
    const auto& [end, stage, position, microbatch] = backwards[k];
    if (microbatch < 25) continue;
    std::int64_t j = 0;
    for (const auto& other : backwards) j += std::get<0>(other) <= forward_start[{stage, microbatch}] ? 1 : 0;
    ++histogram[static_cast<std::int64_t>(k) - j];
  }
  CHECK(histogram == r.metrics.delay_histogram);
  CHECK(r.metrics.delay_histogram.rbegin()->first == 5 * 5 - 3);
}

TEST_CASE("PipeDream weight stashing: each version is read by one forward and its backward and NOAM bounds the stash") {
  for (auto [S, noam] : {std::pair{4, 4}, {8, 8}, {8, 3}, {6, 1}}) {
    INFO("S=" << S << " NOAM=" << noam);
    test::PipelineRun r = test::run_pipeline(pipedream(S, 10 * S, noam), test::pipeline_times(1, 2, 0.5));
    for (int s = 0; s < S; ++s) {
      const int depth = std::min(noam, S - s);
      CHECK(r.metrics.stashed_versions_peak[static_cast<std::size_t>(s)] == depth);
      CHECK(r.metrics.inflight_microbatches_peak[static_cast<std::size_t>(s)] == depth);
      std::map<int, int> forwards_per_version, version_of;
      for (const PipeOp& op : r.schedule.order[static_cast<std::size_t>(s)]) {
        if (op.kind == PipeOpKind::Forward) {
          ++forwards_per_version[op.weight_version];
          version_of[op.microbatch] = op.weight_version;
        }
        if (op.kind == PipeOpKind::Backward) CHECK(op.weight_version == version_of[op.microbatch]);
      }
      CHECK(forwards_per_version[0] == depth);  // the warm-up forwards all read the initial weights
      for (const auto& [version, forwards] : forwards_per_version)
        if (version > 0) CHECK(forwards == 1);
    }
  }
}

TEST_CASE("PipeDream-2BW keeps at most two versions and every update after the first has delay 1 in versions") {
  PipelineShape sh = test::pipeline_shape(Schedule::PipeDream2BW, 6, 8, 6);
  test::PipelineRun r = test::run_pipeline(sh, test::pipeline_times(1, 2, 0.25));
  CHECK(r.metrics.stashed_versions_peak == std::vector<int>(6, 2));
  CHECK(r.metrics.version_lag.max == 1);
  UpdateLog trace = log_of(r);
  std::vector<int> applies(6, 0);
  std::vector<std::vector<int>> pending(6);  // versions of stage s the gradients since its last Apply were computed at
  int updates = 0;
  for (const TrainEvent& e : trace.events) {
    const auto s = static_cast<std::size_t>(e.stage);
    if (e.kind == TrainEvent::Kind::Backward) pending[s].push_back(e.versions_read[s]);
    if (e.kind != TrainEvent::Kind::Apply) continue;
    REQUIRE(pending[s].size() == 8);  // gradients accumulate over the step's micro-batches
    for (int v : pending[s]) CHECK(applies[s] - v == (applies[s] == 0 ? 0 : 1));
    pending[s].clear();
    ++applies[s];
    ++updates;
  }
  CHECK(updates == 6 * 6);
}

TEST_CASE("LocalSGD has no staleness: each backward read its replica's weights before its own micro-batch") {
  PipelineShape sh = test::pipeline_shape(Schedule::LocalSGD, 4, 12, 2);
  sh.replicas = 3;
  sh.local_steps = 3;
  test::PipelineRun r = test::run_pipeline(sh, test::pipeline_times(1, 2, 0.5));
  CHECK(r.metrics.version_lag.max == 0);
  CHECK(r.metrics.idle_fraction.size() == 4);
  UpdateLog trace = log_of(r);
  CHECK(trace.replicas == 3);
  std::map<std::pair<int, int>, int> applied;  // (replica, stage) -> Apply events so far
  int backwards = 0, averages = 0;
  for (const TrainEvent& e : trace.events) {
    if (e.kind == TrainEvent::Kind::Apply) ++applied[{e.replica, e.stage}];
    if (e.kind == TrainEvent::Kind::Average) ++averages;
    if (e.kind != TrainEvent::Kind::Backward) continue;
    ++backwards;
    CHECK(e.replica == e.microbatch % 3);
    // Later stages already applied this micro-batch's own gradient; every earlier update of the replica is seen.
    for (int s = 0; s < 4; ++s)
      CHECK(e.versions_read[static_cast<std::size_t>(s)] == applied[{e.replica, s}] - (s > e.stage ? 1 : 0));
  }
  CHECK(backwards == 4 * 24);
  CHECK(averages == 4 * 3);  // rounds of 9 micro-batches: 9 + 9 + 6
}

TEST_CASE("GPipe and 1F1B update traces: one Apply per stage per step after all backwards of that stage") {
  for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    INFO(to_string(schedule));
    test::PipelineRun r = test::run_pipeline(test::pipeline_shape(schedule, 4, 6, 3), test::pipeline_times(1, 2, 0.5));
    UpdateLog trace = log_of(r);
    std::vector<int> backwards_in_step(4, 0), step(4, 0);
    double last_time = 0;
    for (const TrainEvent& e : trace.events) {
      CHECK(e.time_s >= last_time);
      last_time = e.time_s;
      const auto s = static_cast<std::size_t>(e.stage);
      if (e.kind == TrainEvent::Kind::Backward) {
        CHECK(e.microbatch / 6 == step[s]);
        CHECK(e.versions_read == std::vector<int>(4, step[s]));
        ++backwards_in_step[s];
      } else {
        REQUIRE(e.kind == TrainEvent::Kind::Apply);
        CHECK(backwards_in_step[s] == 6);
        backwards_in_step[s] = 0;
        ++step[s];
      }
    }
    CHECK(step == std::vector<int>(4, 3));
    CHECK(r.metrics.version_lag.max == 0);
  }
}
