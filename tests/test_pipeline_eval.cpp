// The exact evaluator of abstract pipelines, its records, and the bubble and in-flight measurements.
// Bubble formulas: GPipe (Huang et al., arXiv 1811.06965) and 1F1B (Narayanan et al., arXiv 2104.04473) idle
// (p-1)/(m+p-1) of the step; interleaved 1F1B (arXiv 2104.04473, section 2.2) (p-1)/(v m) of the ideal time.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>

#include "strategies/pipeline/AbstractPipeline.hpp"
#include "tests/PipelineHelpers.hpp"
#include "tests/RecordBuilders.hpp"

using namespace placesim;

namespace {

// The interval of the op of `kind` for (micro-batch) on `stage`.
OpInterval interval(const test::PipelineRun& r, int stage, PipeOpKind kind, int microbatch) {
  const auto& ops = r.schedule.order[static_cast<std::size_t>(stage)];
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == kind && ops[i].microbatch == microbatch) return r.timeline[static_cast<std::size_t>(stage)][i];
  FAIL("no such op");
  return {};
}

// `shape` evaluated with forward 1, backward 2 and transfers of 0.25 s, and the record of that timeline.
struct RecordedPipeline {
  PipelineSchedule schedule;
  PipelineTimeline timeline;
  SimulationRecord record;
};

RecordedPipeline recorded(const PipelineShape& shape) {
  const PipelineTimes times = test::pipeline_times(1, 2, 0.25);
  RecordedPipeline r;
  r.schedule = make_schedule(shape, abstract_shape_fields());
  r.timeline = evaluate_pipeline(r.schedule, times);
  r.record = pipeline_record(r.schedule, r.timeline, times);
  return r;
}

}  // namespace

TEST_CASE("Evaluator: 1F1B on 2 stages with 2 micro-batches and transfers of 0.5 s computed by hand") {
  // stage 0: F0 F1 B0 B1 A    stage 1: F0 B0 F1 B1 A      f = 1, b = 2, c = 0.5
  //   s0  F0 [0,1]  F1 [1,2]                     B0 [5,7] (grad at 4.5+0.5)   B1 [8,10] (7.5+0.5)
  //   s1  F0 [1.5,2.5]  B0 [2.5,4.5]  F1 [4.5,5.5] (stream busy until 4.5)  B1 [5.5,7.5]
  test::PipelineRun r =
      test::run_pipeline(test::pipeline_shape(Schedule::OneFOneB, 2, 2), test::pipeline_times(1, 2, 0.5));
  auto check = [&](int stage, PipeOpKind kind, int mb, double start, double end) {
    OpInterval x = interval(r, stage, kind, mb);
    CHECK(x.start_s == start);
    CHECK(x.end_s == end);
  };
  check(0, PipeOpKind::Forward, 0, 0, 1);
  check(0, PipeOpKind::Forward, 1, 1, 2);
  check(1, PipeOpKind::Forward, 0, 1.5, 2.5);
  check(1, PipeOpKind::Backward, 0, 2.5, 4.5);
  check(1, PipeOpKind::Forward, 1, 4.5, 5.5);
  check(1, PipeOpKind::Backward, 1, 5.5, 7.5);
  check(0, PipeOpKind::Backward, 0, 5, 7);
  check(0, PipeOpKind::Backward, 1, 8, 10);
  check(1, PipeOpKind::Apply, 1, 7.5, 7.5);
  check(0, PipeOpKind::Apply, 1, 10, 10);
  CHECK(r.metrics.span_s == 10);
  CHECK(r.metrics.busy_s == std::vector<double>{6, 6});
  CHECK(r.metrics.idle_fraction == std::vector<double>{0.4, 0.4});
  // Re-timed with free transfers: s0 F0 [0,1] F1 [1,2] B0 [4,6] B1 [7,9], s1 F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7]:
  // span 9, busy 6, so the schedule bubble is 3 s = 1/3 = (p-1)/(m+p-1); the other 1 s of idle is the transfers.
  CHECK(r.metrics.schedule_bubble_s == std::vector<double>{3, 3});
  CHECK(r.metrics.schedule_bubble_fraction == std::vector<double>{1.0 / 3, 1.0 / 3});
  CHECK(r.metrics.imbalance_and_waiting_s == std::vector<double>{1, 1});
  CHECK(r.metrics.warmup_s == std::vector<double>{0, 0});
  CHECK(r.metrics.optimizer_and_step_end_s == std::vector<double>{0, 0});
  CHECK(r.metrics.exposed_communication_s == std::vector<double>{0, 0});
}

TEST_CASE("Idle causes add up to the span: 1F1B on 2 stages with transfers and updates of 0.5 s computed by hand") {
  // As above plus Apply ops of 0.5 s: s1 A [7.5,8], s0 B1 [8,10], s0 A [10,10.5]. Span 10.5, busy 6.5 per stage.
  // The passes run from 0 to 10: stage 0 is busy after it, stage 1 idles 0.5 s (waiting on stage 0's update).
  PipelineTimes times = test::pipeline_times(1, 2, 0.5);
  times.apply_s = 0.5;
  test::PipelineRun r = test::run_pipeline(test::pipeline_shape(Schedule::OneFOneB, 2, 2, 1), times);
  const PipelineMetrics& m = r.metrics;
  CHECK(m.span_s == 10.5);
  CHECK(m.busy_s == std::vector<double>{6.5, 6.5});
  CHECK(m.schedule_bubble_s == std::vector<double>{3, 3});
  CHECK(m.schedule_bubble_fraction == std::vector<double>{1.0 / 3, 1.0 / 3});
  CHECK(m.optimizer_and_step_end_s == std::vector<double>{0, 0.5});
  CHECK(m.imbalance_and_waiting_s == std::vector<double>{1, 0.5});
  CHECK(m.warmup_s == std::vector<double>{0, 0});
  CHECK(m.exposed_communication_s == std::vector<double>{0, 0});
  for (std::size_t s = 0; s < 2; ++s)
    CHECK(m.busy_s[s] + m.warmup_s[s] + m.schedule_bubble_s[s] + m.exposed_communication_s[s] +
              m.imbalance_and_waiting_s[s] + m.optimizer_and_step_end_s[s] ==
          m.span_s);
}

TEST_CASE("GPipe and 1F1B bubble per device is (p-1)/(m+p-1) with uniform stages and free transfers") {
  for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB})
    for (auto [p, m] : {std::pair{2, 1}, {2, 8}, {4, 4}, {4, 16}, {8, 3}, {8, 32}, {16, 64}})
      for (auto [f, b] : {std::pair{1.0, 1.0}, {1.0, 2.0}, {3.0, 5.0}}) {
        INFO(to_string(schedule) << " p=" << p << " m=" << m << " f=" << f << " b=" << b);
        test::PipelineRun r = test::run_pipeline(test::pipeline_shape(schedule, p, m, 2), test::pipeline_times(f, b));
        for (double idle : r.metrics.idle_fraction) CHECK(idle == static_cast<double>(p - 1) / (m + p - 1));
        for (double bubble : r.metrics.schedule_bubble_fraction)
          CHECK(bubble == static_cast<double>(p - 1) / (m + p - 1));
        CHECK(r.metrics.span_s == 2 * (m + p - 1) * (f + b));  // two steps, back to back
      }
}

TEST_CASE("Interleaved bubble relative to the ideal time is (p-1)/(v m) exactly") {
  for (auto [p, m, v] : {std::tuple{2, 2, 2}, {2, 8, 4}, {4, 4, 2}, {4, 8, 3}, {4, 16, 4}, {8, 8, 2}, {8, 16, 4}}) {
    INFO("p=" << p << " m=" << m << " v=" << v);
    PipelineShape sh = test::pipeline_shape(Schedule::Interleaved, p, m);
    sh.chunks = v;
    test::PipelineRun r = test::run_pipeline(sh, test::pipeline_times(v, 2.0 * v));  // chunk ops take 1 s and 2 s
    for (std::size_t s = 0; s < r.metrics.busy_s.size(); ++s) {
      CHECK(r.metrics.busy_s[s] == m * 3.0 * v);
      CHECK(r.metrics.idle_s[s] / r.metrics.busy_s[s] == static_cast<double>(p - 1) / (v * m));
    }
  }
}

TEST_CASE("GPipe holds m micro-batches in flight on the first stage and 1F1B at most p") {
  for (auto [p, m] : {std::pair{4, 2}, {4, 12}, {8, 32}}) {
    test::PipelineRun gpipe =
        test::run_pipeline(test::pipeline_shape(Schedule::GPipe, p, m), test::pipeline_times(1, 2));
    test::PipelineRun one =
        test::run_pipeline(test::pipeline_shape(Schedule::OneFOneB, p, m), test::pipeline_times(1, 2));
    CHECK(gpipe.metrics.inflight_microbatches_peak[0] == m);
    CHECK(one.metrics.inflight_microbatches_peak[0] == std::min(m, p));
    for (int s = 0; s < p; ++s)
      CHECK(one.metrics.inflight_microbatches_peak[static_cast<std::size_t>(s)] == std::min(m, p - s));
    CHECK(gpipe.metrics.stashed_versions_peak == std::vector<int>(static_cast<std::size_t>(p), 1));
  }
}

TEST_CASE("Interleaved in-flight chunk passes follow the warm-up 2(p-s-1)+(v-1)p+1 in micro-batches") {
  PipelineShape sh = test::pipeline_shape(Schedule::Interleaved, 4, 8);
  sh.chunks = 2;
  test::PipelineRun r = test::run_pipeline(sh, test::pipeline_times(1, 2));
  for (int s = 0; s < 4; ++s)
    CHECK(r.metrics.inflight_microbatches_peak[static_cast<std::size_t>(s)] == (2 * (3 - s) + 4 + 1) / 2.0);
}

TEST_CASE("Record: a compute task per op and a send and a receive per transfer in completion order") {
  const auto [schedule, timeline, record] = recorded(test::pipeline_shape(Schedule::OneFOneB, 3, 4));
  REQUIRE(record.devices.size() == 3);
  std::map<Stream, int> per_stream;
  std::map<std::uint64_t, std::vector<const TaskRecord*>> transfers;
  for (std::size_t i = 0; i < record.tasks.size(); ++i) {
    const TaskRecord& t = record.tasks[i];
    ++per_stream[t.stream];
    if (i > 0) CHECK(record.tasks[i - 1].end_s <= t.end_s);
    if (t.kind == TaskKind::P2P) transfers[t.task].push_back(&t);
  }
  CHECK(per_stream[Stream::Compute] == 3 * (4 * 2 + 1));
  // Activations cross 2 boundaries and gradients 2 boundaries, for 4 micro-batches: 16 transfers.
  CHECK(per_stream[Stream::PpSend] == 16);
  CHECK(per_stream[Stream::PpRecv] == 16);
  for (const auto& [id, pair] : transfers) {
    REQUIRE(pair.size() == 2);
    const TaskRecord& send = pair[0]->stream == Stream::PpSend ? *pair[0] : *pair[1];
    const TaskRecord& receive = pair[0]->stream == Stream::PpSend ? *pair[1] : *pair[0];
    CHECK(send.peer == receive.device);
    CHECK(receive.peer == send.device);
    CHECK(std::abs(send.device - receive.device) == 1);
    CHECK(send.end_s - send.start_s == 0.25);
    CHECK(send.start_s == receive.start_s);
  }
  // p2p_s = 0.25 is shorter than every forward and backward: the sends of one device never overlap.
  std::map<int, std::vector<std::pair<double, double>>> sends;
  for (const TaskRecord& t : record.tasks)
    if (t.stream == Stream::PpSend) sends[t.device].emplace_back(t.start_s, t.end_s);
  for (auto& [device, spans] : sends) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) CHECK(spans[i - 1].second <= spans[i].first);
  }
  double makespan = 0;
  for (const auto& stage : timeline)
    for (const OpInterval& x : stage) makespan = std::max(makespan, x.end_s);
  CHECK(record.step_time_s == makespan);
  CHECK(record.tasks.back().end_s == makespan);
}

TEST_CASE("Metrics from records equal metrics from the timeline and tolerate several records per op") {
  const auto [schedule, timeline, record] = recorded(test::pipeline_shape(Schedule::PipeDream, 4, 24));
  const Json expected = pipeline_json(measure_pipeline(schedule, timeline));
  CHECK(pipeline_json(measure_pipeline(schedule, record)) == expected);
  // A simulation records one task per layer group: split every forward and backward in two halves.
  SimulationRecord split = record;
  split.tasks.clear();
  for (const TaskRecord& t : record.tasks) {
    if (t.kind != TaskKind::Forward && t.kind != TaskKind::Backward) {
      split.tasks.push_back(t);
      continue;
    }
    TaskRecord first = t, second = t;
    first.end_s = second.start_s = (t.start_s + t.end_s) / 2;
    split.tasks.push_back(first);
    split.tasks.push_back(second);
  }
  CHECK(pipeline_json(measure_pipeline(schedule, split)) == expected);
}

TEST_CASE("A pass holds its recompute and the tensor-parallel collectives it issues, not a receive's all-gather") {
  // 1F1B on 2 stages, 2 micro-batches, forward 1 s, backward 2 s, transfers 0.5 s: stage 0 runs F0 [0,1], F1 [1,2]
  // and waits for B0 [5,7]. A forward TP collective of F1 on stage 0 from 2 to 2.5 (after its compute, as a
  // simulation records a layer's exposed collectives) makes F1 end at 2.5: 0.5 s of exposed communication inside the
  // pass. A recompute of micro-batch 0 at [4.4, 5] begins B0 (busy, so no exposed time). The all-gather of a
  // scatter-gather pipeline receive (no chunk) at [3.5, 4] is the transfer, not the pass.
  PipelineSchedule schedule = make_schedule(test::pipeline_shape(Schedule::OneFOneB, 2, 2), abstract_shape_fields());
  PipelineTimes times = test::pipeline_times(1, 2, 0.5);
  SimulationRecord record = pipeline_record(schedule, evaluate_pipeline(schedule, times), times);
  const PipelineMetrics before = measure_pipeline(schedule, record);
  CHECK(before.exposed_communication_s == std::vector<double>{0, 0});
  TaskRecord tp = test::task_record(0, Stream::TpComm, TaskKind::Collective, 2, 2.5);
  tp.comm_class = CommClass::TpCollective;
  tp.stage = 0;
  tp.microbatch = 1;
  tp.chunk = 0;
  TaskRecord gather = tp;
  gather.chunk = -1;
  gather.backward = true;
  gather.microbatch = 0;
  gather.start_s = 3.5;
  gather.end_s = 4;
  TaskRecord recompute = test::task_record(0, Stream::Compute, TaskKind::Recompute, 4.4, 5);
  recompute.backward = true;
  recompute.stage = 0;
  recompute.microbatch = 0;
  recompute.chunk = 0;
  record.tasks.insert(record.tasks.end(), {tp, gather, recompute});
  const PipelineTimeline timeline = pipeline_timeline(schedule, record);
  for (std::size_t i = 0; i < schedule.order[0].size(); ++i) {
    const PipeOp& op = schedule.order[0][i];
    if (op.kind == PipeOpKind::Forward && op.microbatch == 1) CHECK(timeline[0][i].end_s == 2.5);
    if (op.kind == PipeOpKind::Backward && op.microbatch == 0) {
      CHECK(timeline[0][i].start_s == 4.4);
      CHECK(timeline[0][i].end_s == 7);
    }
  }
  const PipelineMetrics m = measure_pipeline(schedule, record);
  CHECK(m.exposed_communication_s == std::vector<double>{0.5, 0});
  CHECK(m.busy_s[0] == Approx(before.busy_s[0] + 0.6));
  CHECK(m.busy_s[1] == before.busy_s[1]);
  for (std::size_t s = 0; s < 2; ++s)
    CHECK(m.busy_s[s] + m.warmup_s[s] + m.schedule_bubble_s[s] + m.exposed_communication_s[s] +
              m.imbalance_and_waiting_s[s] + m.optimizer_and_step_end_s[s] ==
          Approx(m.span_s));
}

TEST_CASE("pipeline_timeline refuses a record that lacks an op") {
  PipelineSchedule schedule = make_schedule(test::pipeline_shape(Schedule::GPipe, 2, 2), abstract_shape_fields());
  PipelineTimes times = test::pipeline_times(1, 2);
  SimulationRecord record = pipeline_record(schedule, evaluate_pipeline(schedule, times), times);
  auto it = std::find_if(record.tasks.begin(), record.tasks.end(), [](const TaskRecord& t) {
    return t.kind == TaskKind::Backward && t.stage == 1 && t.microbatch == 1;
  });
  REQUIRE(it != record.tasks.end());
  record.tasks.erase(it);
  CHECK_THROWS_WITH(pipeline_timeline(schedule, record),
                    "the record has no task for the backward of stage 1 after micro-batch 1 chunk 0");
}

TEST_CASE("LocalSGD: every stage averages for average_s at each round end and the bubble is reported") {
  Json section{{"schedule", "localsgd"}, {"stages", 4},   {"microbatches", 16}, {"forward_s", 1},
               {"backward_s", 2},        {"replicas", 4}, {"local_steps", 2},   {"average_s", 5}};
  SimulationRecord record;
  Json report = simulate_abstract_pipeline(section, &record, nullptr);
  int averages = 0;
  for (const TaskRecord& t : record.tasks)
    if (t.kind == TaskKind::Collective) {
      ++averages;
      CHECK(t.end_s - t.start_s == 5);
      CHECK(t.stream == Stream::Compute);
    }
  CHECK(averages == 4 * 2);  // rounds of replicas x local_steps = 8 micro-batches
  const Json& bubbles = report["pipeline"]["idle_fraction"];
  REQUIRE(bubbles.size() == 4);
  for (const Json& b : bubbles) CHECK(b.get<double>() > 0);
  // Busy = 16 forwards and backwards of 3 s plus two averagings of 5 s on every stage.
  for (const Json& busy : report["pipeline"]["busy_s"]) CHECK(busy.get<double>() == 16 * 3 + 2 * 5);
}

TEST_CASE("The abstract report keeps the keys scripts rely on") {
  Json section{{"schedule", "pipedream"}, {"stages", 4}, {"microbatches", 40}, {"forward_s", 1}, {"backward_s", 1}};
  Json report = simulate_abstract_pipeline(section, nullptr, nullptr);
  const Json& p = report["pipeline"];
  for (const char* key :
       {"idle_fraction", "schedule_bubble_fraction", "stashed_versions_peak", "inflight_microbatches_peak"}) {
    REQUIRE(p.contains(key));
    CHECK(p[key].size() == 4);
  }
  for (const char* key : {"max_delay", "mean_delay", "per_stage", "histogram"}) CHECK(p["staleness"].contains(key));
  for (const char* key : {"max", "mean", "per_stage", "histogram"}) CHECK(p["block_updates_between"].contains(key));
  for (const char* key : {"warmup_s", "schedule_bubble_s", "exposed_communication_s", "imbalance_and_waiting_s",
                          "optimizer_and_step_end_s"})
    CHECK(p["idle_causes"][key].size() == 4);
  CHECK(p["staleness"]["per_stage"][0].contains("max"));
  CHECK(p["staleness"]["per_stage"][0].contains("mean"));
  CHECK(report["simulation"]["step_time_s"].get<double>() == report["simulation"]["makespan_s"].get<double>());
  std::int64_t counted = 0;
  for (const Json& bin : p["staleness"]["histogram"]) counted += bin["count"].get<std::int64_t>();
  CHECK(counted == p["staleness"]["samples"].get<std::int64_t>());
  CHECK(counted == 4 * 20);  // backwards of micro-batches 20..39 on 4 stages
}

TEST_CASE("Performance: PipeDream with S=64 and M=640 is evaluated and measured in well under a second") {
  Json section{{"schedule", "pipedream"}, {"stages", 64}, {"microbatches", 640}, {"forward_s", 1}, {"backward_s", 1}};
  auto start = std::chrono::steady_clock::now();
  Json report = simulate_abstract_pipeline(section, nullptr, nullptr);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("took " << seconds << " s");
  CHECK(seconds < 1.0);  // about 40 ms on a loaded 2-core machine; a quadratic evaluator takes minutes
  CHECK(report["pipeline"]["staleness"]["max_delay"].get<std::int64_t>() == 64 * 64 - 32);
}

// Zero-bubble pipelines (Qi et al., arXiv 2401.10241, Table 1; the same figures asserted by arxiv_bubble_rates in
// sail-sg/zero-bubble-pipeline-parallelism, branch arxiv, efficiency.py), with F, B (input gradient) and W (weight
// gradient) per micro-batch and stage and free transfers:
//   1F1B   bubble (p-1)(F+B+W) per stage, peak p micro-batches on stage 0
//   ZB-H1  bubble (p-1)(F+B-W) per stage, peak p on every stage
//   ZB-H2  bubble (p-1)(F+B-2W) within a stage's own span (first op to last), peak 2p-1 on every stage
TEST_CASE("Zero-bubble ZB-H1 and ZB-H2 leave the bubbles and hold the micro-batches of Qi et al.'s Table 1") {
  struct Costs {
    double f, b, w;
  };
  for (Costs c : {Costs{1, 1, 1}, Costs{2, 3, 1}, Costs{1, 1.5, 0.75}})
    for (int p : {4, 6})
      for (int m : {2 * p, 3 * p}) {
        INFO("F " << c.f << " B " << c.b << " W " << c.w << " p " << p << " m " << m);
        PipelineTimes times = test::pipeline_times(c.f, c.b + c.w);
        times.weight_s = c.w;
        const double work = m * (c.f + c.b + c.w);
        const test::PipelineRun one = test::run_pipeline(test::pipeline_shape(Schedule::OneFOneB, p, m), times);
        CHECK(one.metrics.span_s == Approx(work + (p - 1) * (c.f + c.b + c.w)));
        const test::PipelineRun h1 = test::run_pipeline(test::pipeline_shape(Schedule::ZbH1, p, m), times);
        for (int s = 0; s < p; ++s) {
          CHECK(h1.metrics.idle_s[static_cast<std::size_t>(s)] == Approx((p - 1) * (c.f + c.b - c.w)));
          CHECK(h1.metrics.inflight_microbatches_peak[static_cast<std::size_t>(s)] == p);
        }
        const test::PipelineRun h2 = test::run_pipeline(test::pipeline_shape(Schedule::ZbH2, p, m), times);
        double own_idle = 0;
        for (int s = 0; s < p; ++s) {
          const auto& stage = h2.timeline[static_cast<std::size_t>(s)];
          double first = stage.front().start_s, last = 0;
          for (const OpInterval& x : stage) last = std::max(last, x.end_s);
          own_idle = std::max(own_idle, last - first - work);
          CHECK(h2.metrics.inflight_microbatches_peak[static_cast<std::size_t>(s)] == 2 * p - 1);
        }
        CHECK(own_idle == Approx((p - 1) * (c.f + c.b - 2 * c.w)).margin(1e-9));
      }
}

// ZB-V (Qi et al., arXiv 2405.15362; PyTorch's ScheduleZBVZeroBubble): zero bubble within a stage's own span when
// F = B = W per chunk, about 1F1B's activation memory (p micro-batches: 2p chunk passes of half a stage), and the
// whole step longer than the work only by the forward stagger of the first chunk, (p - 1) F / 2 per stage.
TEST_CASE("ZB-V leaves no bubble within a stage's span and holds p micro-batches") {
  for (int p : {4, 6})
    for (int m : {2 * p, 3 * p}) {
      INFO("p " << p << " m " << m);
      PipelineTimes times = test::pipeline_times(1, 2);  // per stage: F 1, B 1, W 1; a chunk takes half of each
      times.weight_s = 1;
      const test::PipelineRun v = test::run_pipeline(test::pipeline_shape(Schedule::ZbV, p, m), times);
      const double work = m * 3.0;
      for (int s = 0; s < p; ++s) {
        const auto& stage = v.timeline[static_cast<std::size_t>(s)];
        double first = stage.front().start_s, last = 0;
        for (const OpInterval& x : stage) last = std::max(last, x.end_s);
        CHECK(last - first == Approx(work));
        CHECK(v.metrics.inflight_microbatches_peak[static_cast<std::size_t>(s)] == p);
      }
      CHECK(v.metrics.span_s == Approx(work + (p - 1) * 0.5));
    }
}

// DualPipeV (DeepSeek-V3 report, arXiv 2412.19437, Table 2, as the DualPipe README gives it for DualPipeV): a bubble
// of (PP/2 - 1)(F&B + B - 3W) on PP = 2p virtual stages, with F, B (the whole backward) and W of one chunk and F&B a
// forward-backward pair (here F + B: an abstract pipeline has no communication to hide), and PP + 1 chunk activations
// on every device. With F = B_input = W = 1 per stage (0.5 per chunk): (p - 1)(1.5 + 1 - 1.5) = p - 1 per stage,
// whatever m.
TEST_CASE("DualPipeV leaves the bubble and holds the activations of the DeepSeek-V3 report's Table 2") {
  for (int p : {4, 6})
    for (int m : {2 * p, 3 * p}) {
      INFO("p " << p << " m " << m);
      PipelineTimes times = test::pipeline_times(1, 2);
      times.weight_s = 1;
      const test::PipelineRun v = test::run_pipeline(test::pipeline_shape(Schedule::DualPipeV, p, m), times);
      CHECK(v.metrics.span_s == Approx(m * 3.0 + (p - 1)));
      for (int s = 0; s < p; ++s) {
        CHECK(v.metrics.idle_s[static_cast<std::size_t>(s)] == Approx(p - 1));
        CHECK(v.metrics.inflight_microbatches_peak[static_cast<std::size_t>(s)] == (2 * p + 1) / 2.0);
      }
    }
}

// On uniform stages without communication the measured idle is the schedule's own bubble: no imbalance. DualPipe's
// steady state mixes whole backwards (BW) with split ones (B, W later); the balanced re-timing counts each W with
// its B, so the mix re-times to the same ops.
TEST_CASE("Uniform stages leave no imbalance under schedules that mix whole and split backwards") {
  for (const char* schedule : {"dualpipev", "dualpipe", "zb-h1", "interleaved-zb"}) {
    INFO(schedule);
    Json section{{"schedule", schedule}, {"stages", 4},     {"microbatches", 8},
                 {"forward_s", 1},       {"backward_s", 2}, {"weight_s", 1}};
    const Json report = simulate_abstract_pipeline(section, nullptr, nullptr);
    for (const Json& x : report["pipeline"]["idle_causes"]["imbalance_and_waiting_s"])
      CHECK(x.get<double>() == Approx(0).margin(1e-12));
  }
}
