// Pipeline schedules as per-stage op orders: GPipe, 1F1B (PipeDream-Flush), Megatron-LM interleaved 1F1B
// (Narayanan et al., arXiv 2104.04473), PipeDream asynchronous 1F1B with weight stashing, PipeDream-2BW, LocalSGD and
// the zero-bubble ZB-H1 and ZB-H2 (Qi et al., arXiv 2401.10241).
#include <catch2/catch.hpp>
#include <map>

#include "strategies/pipeline/AbstractPipeline.hpp"
#include "tests/PipelineHelpers.hpp"

using namespace placesim;

namespace {

// "F0 F1 B0 A" (interleaved: "F0.1" = micro-batch 0, chunk 1; "A" = Apply, "avg" = Average; "W0" = the weight
// gradient of a split backward, whose input gradient is "B0").
std::string render(const std::vector<PipeOp>& ops, bool chunks = false) {
  std::string out;
  for (const PipeOp& op : ops) {
    if (!out.empty()) out += " ";
    if (op.kind == PipeOpKind::Apply) {
      out += "A";
    } else if (op.kind == PipeOpKind::Average) {
      out += "avg";
    } else {
      const char* letter = op.kind == PipeOpKind::Forward ? "F" : op.kind == PipeOpKind::Weight ? "W" : "B";
      out += letter + std::to_string(op.microbatch);
      if (chunks) out += "." + std::to_string(op.chunk);
    }
  }
  return out;
}

PipelineSchedule schedule_of(Schedule s, int stages, int microbatches, int steps = 1) {
  return make_schedule(test::pipeline_shape(s, stages, microbatches, steps), abstract_shape_fields());
}

std::string error_of(const Json& section) {
  try {
    simulate_abstract_pipeline(section, nullptr, nullptr);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

Json section(const std::string& schedule, int stages, int microbatches) {
  return Json{
      {"schedule", schedule}, {"stages", stages}, {"microbatches", microbatches}, {"forward_s", 1}, {"backward_s", 2}};
}

// The error of a `schedule` section of 4 stages and 8 micro-batches with `key` set to `value`.
std::string error_with(const std::string& schedule, const std::string& key, const Json& value) {
  Json j = section(schedule, 4, 8);
  j[key] = value;
  return error_of(j);
}

}  // namespace

TEST_CASE("1F1B: S-s-1 warm-up forwards then one forward and one backward in turn then the cool-down") {
  PipelineSchedule s = schedule_of(Schedule::OneFOneB, 3, 4);
  CHECK(render(s.order[0]) == "F0 F1 F2 B0 F3 B1 B2 B3 A");
  CHECK(render(s.order[1]) == "F0 F1 B0 F2 B1 F3 B2 B3 A");
  CHECK(render(s.order[2]) == "F0 B0 F1 B1 F2 B2 F3 B3 A");
}

TEST_CASE("GPipe: all forwards then all backwards and one Apply per stage at the end of every step") {
  PipelineSchedule s = schedule_of(Schedule::GPipe, 2, 3, 2);
  for (const auto& ops : s.order) CHECK(render(ops) == "F0 F1 F2 B0 B1 B2 A F3 F4 F5 B3 B4 B5 A");
  for (const auto& ops : s.order) {
    CHECK(ops[0].weight_version == 0);
    CHECK(ops[6].weight_version == 0);  // the first Apply replaces version 0
    CHECK(ops[7].weight_version == 1);  // the second step reads version 1
  }
}

TEST_CASE("Interleaved 1F1B follows Megatron-LM: chunk order and a warm-up of 2(S-s-1)+(v-1)S forwards") {
  PipelineShape sh = test::pipeline_shape(Schedule::Interleaved, 2, 4);
  sh.chunks = 2;
  PipelineSchedule s = make_schedule(sh, abstract_shape_fields());
  CHECK(render(s.order[0], true) ==
        "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0 A");
  CHECK(render(s.order[1], true) ==
        "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0 A");
}

TEST_CASE("Every schedule runs each micro-batch once per chunk on every stage with the forward first") {
  struct Case {
    Schedule schedule;
    int chunks, replicas, local_steps;
  };
  for (Case c :
       {Case{Schedule::GPipe, 1, 1, 1}, Case{Schedule::OneFOneB, 1, 1, 1}, Case{Schedule::Interleaved, 3, 1, 1},
        Case{Schedule::PipeDream, 1, 1, 1}, Case{Schedule::PipeDream2BW, 1, 1, 1}, Case{Schedule::LocalSGD, 1, 2, 3}}) {
    PipelineShape sh = test::pipeline_shape(c.schedule, 4, 8, 3);
    sh.chunks = c.chunks;
    sh.replicas = c.replicas;
    sh.local_steps = c.local_steps;
    PipelineSchedule s = make_schedule(sh, abstract_shape_fields());
    INFO(to_string(c.schedule));
    for (const auto& ops : s.order) {
      std::map<std::pair<int, int>, int> state;  // (micro-batch, chunk) -> 1 after its forward, 2 after its backward
      for (const PipeOp& op : ops) {
        if (op.kind == PipeOpKind::Forward) CHECK(state[{op.microbatch, op.chunk}]++ == 0);
        if (op.kind == PipeOpKind::Backward) CHECK(state[{op.microbatch, op.chunk}]++ == 1);
      }
      CHECK(state.size() == static_cast<std::size_t>(24 * c.chunks));
      for (const auto& [key, seen] : state) CHECK(seen == 2);
    }
  }
}

TEST_CASE("PipeDream: an Apply after every backward and the backward reads the version its forward stashed") {
  PipelineSchedule s = schedule_of(Schedule::PipeDream, 3, 6);
  CHECK(render(s.order[0]) == "F0 F1 F2 B0 A F3 B1 A F4 B2 A F5 B3 A B4 A B5 A");
  std::map<int, int> forward_version;
  for (const PipeOp& op : s.order[0]) {
    if (op.kind == PipeOpKind::Forward) forward_version[op.microbatch] = op.weight_version;
    if (op.kind == PipeOpKind::Backward) CHECK(op.weight_version == forward_version[op.microbatch]);
  }
  CHECK(forward_version == std::map<int, int>{{0, 0}, {1, 0}, {2, 0}, {3, 1}, {4, 2}, {5, 3}});
}

TEST_CASE("PipeDream-2BW: a new version per step and step g reads version g-1") {
  PipelineSchedule s = schedule_of(Schedule::PipeDream2BW, 2, 2, 3);
  CHECK(render(s.order[0]) == "F0 F1 B0 F2 B1 A F3 B2 F4 B3 A F5 B4 B5 A");
  CHECK(render(s.order[1]) == "F0 B0 F1 B1 A F2 B2 F3 B3 A F4 B4 F5 B5 A");
  for (const auto& ops : s.order)
    for (const PipeOp& op : ops)
      if (op.kind == PipeOpKind::Forward) CHECK(op.weight_version == std::max(0, op.microbatch / 2 - 1));
}

TEST_CASE("LocalSGD: one micro-batch per replica in flight and an Average on every stage at each round end") {
  PipelineShape sh = test::pipeline_shape(Schedule::LocalSGD, 3, 4, 2);  // 8 micro-batches
  sh.replicas = 2;
  sh.local_steps = 3;  // rounds of 6 micro-batches: 0..5 and 6..7
  PipelineSchedule s = make_schedule(sh, abstract_shape_fields());
  CHECK(render(s.order[0]) == "F0 F1 B0 A F2 B1 A F3 B2 A F4 B3 A F5 B4 A B5 A avg F6 F7 B6 A B7 A avg");
  CHECK(render(s.order[2]) == "F0 B0 A F1 B1 A F2 B2 A F3 B3 A F4 B4 A F5 B5 A avg F6 B6 A F7 B7 A avg");
  for (const PipeOp& op : s.order[0]) {
    if (op.kind == PipeOpKind::Average) {
      CHECK(op.replica == -1);
    } else {
      CHECK(op.replica == op.microbatch % 2);
    }
  }
  // Replica 1's micro-batches 1, 3, 5: versions 0, 1, 2 of its own block.
  for (const PipeOp& op : s.order[0])
    if (op.kind == PipeOpKind::Forward && op.replica == 1 && op.microbatch < 6)
      CHECK(op.weight_version == op.microbatch / 2);
}

TEST_CASE("Interleaved with a micro-batch group N: N micro-batches through a chunk, warm-up 2(S-s-1)+(v-1)N") {
  struct Case {
    int microbatches, group, stage;
    const char* order;
  };
  const Case cases[] = {
      // Breadth-first, a group of all 6: every micro-batch through chunk 0, then chunk 1. Stage 0 warms up with
      // 2(2-0-1) + (2-1)6 = 8 of its 12 forwards, stage 1 with 6 (Megatron-Core decides per rank).
      {6, 6, 0,
       "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.1 B2.1 F5.1 B3.1 B4.1 B5.1 "
       "B0.0 B1.0 B2.0 B3.0 B4.0 B5.0 A"},
      {6, 6, 1,
       "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.1 B4.1 F5.1 B5.1 "
       "B0.0 B1.0 B2.0 B3.0 B4.0 B5.0 A"},
      // 8 micro-batches in groups of 4 on 2 stages: stage 1 warms up with 2(2-1-1) + (2-1)4 = 4 forwards.
      {8, 4, 1,
       "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 "
       "F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0 A"},
      // 5 micro-batches in groups of 3 on 2 stages: (0 1 2) then the last group (3 4), chunk-major in each.
      {5, 3, 1,
       "F0.0 F1.0 F2.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.0 B0.0 F4.0 B1.0 F3.1 B2.0 F4.1 B3.1 B4.1 B3.0 B4.0 A"},
  };
  for (const Case& c : cases) {
    INFO(c.microbatches << " micro-batches in groups of " << c.group << ", stage " << c.stage);
    PipelineShape sh = test::pipeline_shape(Schedule::Interleaved, 2, c.microbatches);
    sh.chunks = 2;
    sh.microbatch_group = c.group;
    CHECK(render(make_schedule(sh, abstract_shape_fields()).order[static_cast<std::size_t>(c.stage)], true) == c.order);
  }
}

TEST_CASE("Interleaved: every accepted group size runs without deadlock, the refused ones are named") {
  int accepted = 0, refused = 0;
  for (int stages = 2; stages <= 5; ++stages)
    for (int chunks = 2; chunks <= 3; ++chunks)
      for (int m = 1; m <= 12; ++m)
        for (int group = 1; group <= 13; ++group) {
          PipelineShape sh = test::pipeline_shape(Schedule::Interleaved, stages, m, 2);
          sh.chunks = chunks;
          sh.microbatch_group = group;
          PipelineSchedule s;
          try {
            s = make_schedule(sh, abstract_shape_fields());
          } catch (const InputError& e) {
            ++refused;
            CHECK(std::string(e.what()).find("pipeline.m") == 0);
            continue;
          }
          ++accepted;
          CHECK((group >= stages && group <= m && (m % group == 0 || m % group >= stages)));
          CHECK_NOTHROW(evaluate_pipeline(s, test::pipeline_times(1, 2, 0.25)));
        }
  CHECK(accepted > 100);
  CHECK(refused > 100);
}

TEST_CASE("Error: interleaving with micro-batches fewer than the stages, or a last group below the stages") {
  Json j = section("interleaved", 4, 6);
  j["chunks"] = 2;
  CHECK(error_of(j) ==
        "pipeline.microbatches=6 leaves a last group of 2 micro-batches (groups of 4), fewer than pipeline.stages=4 "
        "(pipeline.schedule=interleaved cannot run a group smaller than the pipeline)");
  j["microbatch_group"] = 3;
  CHECK(error_of(j) ==
        "pipeline.microbatch_group=3 is below pipeline.stages=4 (pipeline.schedule=interleaved needs at least one "
        "micro-batch per stage in each group, or the first stage waits for a chunk no stage can run yet)");
  j["microbatch_group"] = 7;
  CHECK(error_of(j) ==
        "pipeline.microbatch_group=7 exceeds pipeline.microbatches=6 (pipeline.schedule=interleaved runs groups of "
        "pipeline.microbatch_group micro-batches through each chunk)");
  j["microbatch_group"] = 6;  // breadth-first: one group of every micro-batch
  CHECK(error_of(j) == "no error");
  Json k = section("interleaved", 4, 2);
  CHECK(error_of(k) ==
        "pipeline.microbatches=2 is fewer than pipeline.stages=4 (pipeline.schedule=interleaved runs the "
        "micro-batches through each chunk in groups of at least pipeline.stages)");
}

TEST_CASE("Interleaved without chunks runs 2 chunks, not 1F1B under another name") {
  Json j = section("interleaved", 2, 4);
  const Json report = simulate_abstract_pipeline(j, nullptr, nullptr);
  CHECK(report["pipeline"]["chunks"] == 2);
}

TEST_CASE("Error: NOAM below 1") {
  CHECK(error_with("pipedream", "noam", 0) == "pipeline.noam=0 must be an integer >= 1");
}

TEST_CASE("Error: local_steps below 1") {
  CHECK(error_with("localsgd", "local_steps", 0) == "pipeline.local_steps=0 must be an integer >= 1");
}

TEST_CASE("Error: replicas that do not divide the micro-batches") {
  CHECK(error_with("localsgd", "replicas", 3) == "pipeline.replicas=3 does not divide pipeline.microbatches=8");
}

TEST_CASE("Error: PipeDream-2BW with fewer micro-batches per version than stages") {
  CHECK(
      error_of(section("pipedream-2bw", 4, 3)).rfind("pipeline.microbatches=3 must be at least pipeline.stages=4", 0) ==
      0);
}

TEST_CASE("Error: a schedule's own key given to another schedule") {
  CHECK(error_with("1f1b", "noam", 2) ==
        "pipeline.noam is only meaningful with pipeline.schedule=pipedream or pipedream-2bw");
  CHECK(error_with("gpipe", "chunks", 2) ==
        "pipeline.chunks is only meaningful with pipeline.schedule=interleaved or interleaved-zb");
}

TEST_CASE("Error: unknown keys and missing or non-positive times in the pipeline section") {
  CHECK(error_with("1f1b", "forwards_s", 1) == "unknown key pipeline.forwards_s (did you mean 'pipeline.forward_s'?)");
  Json j = section("1f1b", 4, 8);
  j.erase("backward_s");
  CHECK(error_of(j) == "pipeline.backward_s is required but missing");
  CHECK(error_with("1f1b", "forward_s", 0) == "pipeline.forward_s=0 must be positive");
  CHECK(error_with("1f1b", "p2p_s", -1) == "pipeline.p2p_s=-1 must not be negative");
  CHECK(error_with("1f1b", "schedule", "pipedrem").find("(did you mean 'pipedream'?)") != std::string::npos);
}

TEST_CASE("Errors from a strategy name the strategy fields") {
  StrategySpec s;
  s.pp = 4;
  s.microbatches = 6;
  s.schedule = Schedule::Interleaved;
  s.chunks = 2;
  CHECK_THROWS_WITH(make_schedule(shape_of(s, 1), strategy_shape_fields()),
                    Catch::StartsWith("strategy.microbatches=6 leaves a last group of 2 micro-batches"));
  s.schedule = Schedule::LocalSGD;
  s.chunks = 1;
  s.replicas = 4;
  CHECK_THROWS_WITH(make_schedule(shape_of(s, 1), strategy_shape_fields()),
                    "strategy.replicas=4 does not divide strategy.microbatches=6");
}

// The handcrafted zero-bubble schedules as sail-sg/zero-bubble-pipeline-parallelism builds them (branch arxiv, commit
// f68d387, megatron/core/pipeline_parallel/efficiency.py, get_hand_schedule with warmup_c 1 for ZB-H1 and 2 for
// ZB-H2): these orders were derived from that function's loop, for 4 stages and 8 micro-batches, apart from placesim.
TEST_CASE("ZB-H1 and ZB-H2 run the op orders of the zero-bubble reference code") {
  const PipelineSchedule h1 = schedule_of(Schedule::ZbH1, 4, 8);
  CHECK(render(h1.order[0]) == "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7 A");
  CHECK(render(h1.order[1]) == "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7 A");
  CHECK(render(h1.order[2]) == "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7 A");
  CHECK(render(h1.order[3]) == "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7 A");
  const PipelineSchedule h2 = schedule_of(Schedule::ZbH2, 4, 8);
  CHECK(render(h2.order[0]) == "F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7 A");
  CHECK(render(h2.order[1]) == "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 W0 F7 B3 W1 B4 W2 B5 W3 B6 W4 B7 W5 W6 W7 A");
  CHECK(render(h2.order[2]) == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 W0 F7 B5 W1 B6 W2 B7 W3 W4 W5 W6 W7 A");
  CHECK(render(h2.order[3]) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 W0 F7 B7 W1 W2 W3 W4 W5 W6 W7 A");
  // Every backward of a zero-bubble schedule is split; each W reads the version its forward read, and the step is
  // synchronous (one Apply per stage, after the last W).
  for (const auto& ops : h2.order)
    for (const PipeOp& op : ops) {
      if (op.kind == PipeOpKind::Backward) CHECK(op.split);
      if (op.kind != PipeOpKind::Apply) CHECK(op.weight_version == 0);
    }
}

TEST_CASE("Zero-bubble schedules run B before W for every micro-batch, over several steps") {
  for (Schedule schedule : {Schedule::ZbH1, Schedule::ZbH2}) {
    const PipelineSchedule s = schedule_of(schedule, 3, 5, 2);
    INFO(to_string(schedule));
    for (const auto& ops : s.order) {
      std::map<int, int> state;  // micro-batch -> 1 after F, 2 after B, 3 after W
      int applies = 0;
      for (const PipeOp& op : ops) {
        if (op.kind == PipeOpKind::Forward) CHECK(state[op.microbatch]++ == 0);
        if (op.kind == PipeOpKind::Backward) CHECK(state[op.microbatch]++ == 1);
        if (op.kind == PipeOpKind::Weight) CHECK(state[op.microbatch]++ == 2);
        if (op.kind == PipeOpKind::Apply) {
          ++applies;
          for (const auto& [mb, seen] : state) CHECK(seen == 3);  // the step's every W before its Apply
        }
      }
      CHECK(state.size() == 10u);
      CHECK(applies == 2);
    }
  }
}

TEST_CASE("Error: weight_s belongs to the zero-bubble schedules and is a part of the backward") {
  Json s = section("1f1b", 2, 4);
  s["weight_s"] = 0.5;
  CHECK_THAT(error_of(s),
             Catch::Contains("pipeline.weight_s is only meaningful with pipeline.schedule=zb-h1, zb-h2, zb-v, "
                             "dualpipev, interleaved-zb or dualpipe"));
  s = section("zb-h1", 2, 4);
  s["weight_s"] = 2;
  CHECK_THAT(error_of(s), Catch::Contains("pipeline.weight_s"));
  CHECK_THAT(error_of(s), Catch::Contains("must be less than pipeline.backward_s"));
}

// ZB-V as PyTorch builds it (pytorch/pytorch torch/distributed/pipelining/schedules.py, ScheduleZBVZeroBubble.
// _calculate_single_rank_operations; its idle slots left out), for 4 stages and 8 micro-batches: "F3.1" is the
// forward of micro-batch 3 through chunk 1, which stage s holds as virtual stage 2S - 1 - s. These orders were derived
// from that function apart from placesim.
TEST_CASE("ZB-V runs PyTorch's op order on chunks placed in a V") {
  const PipelineSchedule v = schedule_of(Schedule::ZbV, 4, 8);
  const char* const expected[] = {
      "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F6.0 F0.1 B0.1 W0.1 F1.1 B1.1 W1.1 F2.1 B2.1 W2.1 F3.1 B3.1 W3.1 F7.0 B0.0 "
      "W0.0 F4.1 B4.1 W4.1 B1.0 W1.0 F5.1 B5.1 W5.1 B2.0 W2.0 F6.1 B6.1 W6.1 B3.0 W3.0 F7.1 B7.1 W7.1 B4.0 W4.0 "
      "B5.0 W5.0 B6.0 W6.0 B7.0 W7.0 A",
      "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F5.0 F1.1 B0.1 W0.1 F2.1 B1.1 W1.1 F3.1 B2.1 W2.1 F6.0 B0.0 W0.0 F4.1 B3.1 "
      "W3.1 F7.0 B1.0 W1.0 F5.1 B4.1 W4.1 B2.0 W2.0 F6.1 B5.1 W5.1 B3.0 W3.0 F7.1 B6.1 W6.1 B4.0 B7.1 B5.0 W4.0 "
      "B6.0 W5.0 B7.0 W6.0 W7.1 W7.0 A",
      "F0.0 F1.0 F2.0 F0.1 F3.0 F1.1 F4.0 F2.1 B0.1 W0.1 F3.1 B1.1 W1.1 F5.0 B0.0 W0.0 F4.1 B2.1 W2.1 F6.0 B1.0 "
      "W1.0 F5.1 B3.1 W3.1 F7.0 B2.0 W2.0 F6.1 B4.1 W4.1 B3.0 W3.0 F7.1 B5.1 W5.1 B4.0 B6.1 B5.0 B7.1 B6.0 W4.0 "
      "B7.0 W5.0 W6.1 W7.1 W6.0 W7.0 A",
      "F0.0 F0.1 F1.0 F1.1 F2.0 F2.1 F3.0 F3.1 B0.1 W0.1 F4.0 B0.0 W0.0 F4.1 B1.1 W1.1 F5.0 B1.0 W1.0 F5.1 B2.1 "
      "W2.1 F6.0 B2.0 W2.0 F6.1 B3.1 W3.1 F7.0 B3.0 W3.0 F7.1 B4.1 W4.1 B4.0 B5.1 B5.0 B6.1 B6.0 B7.1 B7.0 W4.0 "
      "W5.1 W6.1 W7.1 W5.0 W6.0 W7.0 A",
  };
  for (std::size_t s = 0; s < 4; ++s) {
    INFO("stage " << s);
    CHECK(render(v.order[s], true) == expected[s]);
  }
  // The V: stage s holds virtual stages s and 2S - 1 - s; the last stage feeds its own second chunk.
  CHECK(v.virtual_stage(0, 1) == 1);
  CHECK(v.virtual_stage(1, 1) == 6);
  CHECK(v.stage_of(6) == 1);
  CHECK(v.stage_of(4) == 3);
  CHECK(v.stage_of(7) == 0);
}

// DualPipeV as deepseek-ai/DualPipe runs it (commit 3da1bbe, dualpipe/dualpipev.py, DualPipeV.step, steps 1 to 8),
// for 4 stages and 8 micro-batches, derived from that function apart from placesim: "BW" a backward whose weight
// gradient it computes too, "B" a split one whose "W" comes later, oldest first over both chunks; "F3.1" micro-batch 3
// through chunk 1 (virtual stage 2S - 1 - s). The steady state's forward-backward pairs are marked.
TEST_CASE("DualPipeV runs DeepSeek's op order on chunks placed in a V") {
  const PipelineSchedule v = schedule_of(Schedule::DualPipeV, 4, 8);
  const char* const expected[] = {
      "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F6.0 F0.1 B0.1 W0.1 F1.1 B1.1 W1.1 F2.1 B2.1 W2.1 F3.1 F7.0+ BW3.1 F4.1+ "
      "BW0.0 BW4.1 F5.1+ BW1.0 BW5.1 F6.1+ BW2.0 BW6.1 F7.1+ BW3.0 BW7.1 B4.0 W4.0 B5.0 W5.0 B6.0 W6.0 B7.0 W7.0 A",
      "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F5.0 F1.1 B0.1 W0.1 F2.1 B1.1 W1.1 F3.1 F6.0+ BW2.1 F4.1+ BW0.0 F7.0+ BW3.1 "
      "F5.1+ BW1.0 BW4.1 F6.1+ BW2.0 BW5.1 F7.1+ BW3.0 BW6.1 BW4.0 B7.1 B5.0 W7.1 B6.0 W5.0 B7.0 W6.0 W7.0 A",
      "F0.0 F1.0 F2.0 F0.1 F3.0 F1.1 F4.0 F2.1 B0.1 W0.1 F3.1 F5.0+ BW1.1 F4.1+ BW0.0 F6.0+ BW2.1 F5.1+ BW1.0 "
      "F7.0+ BW3.1 F6.1+ BW2.0 BW4.1 F7.1+ BW3.0 BW5.1 BW4.0 BW6.1 B5.0 B7.1 B6.0 W5.0 B7.0 W7.1 W6.0 W7.0 A",
      "F0.0 F0.1 F1.0 F1.1 F2.0 F2.1 F3.0 F3.1 F4.0 BW0.1 F4.1+ BW0.0 F5.0+ BW1.1 F5.1+ BW1.0 F6.0+ BW2.1 F6.1+ "
      "BW2.0 F7.0+ BW3.1 F7.1+ BW3.0 BW4.1 BW4.0 BW5.1 BW5.0 B6.1 B6.0 B7.1 B7.0 W6.1 W6.0 W7.1 W7.0 A",
  };
  for (std::size_t s = 0; s < 4; ++s) {
    INFO("stage " << s);
    CHECK(test::render_paired(v.order[s]) == expected[s]);
  }
}

TEST_CASE("Error: DualPipeV needs at least twice as many micro-batches as stages") {
  CHECK_THAT(error_of(section("dualpipev", 4, 7)),
             Catch::Contains("pipeline.microbatches=7 is fewer than 2 x pipeline.stages=8"));
  CHECK(error_of(section("dualpipev", 4, 8)) == "no error");
}

// PyTorch's interleaved zero bubble (pytorch/pytorch torch/distributed/pipelining/schedules.py,
// ScheduleInterleavedZeroBubble, "the ZB1P schedule"; its idle slots left out), for 4 stages, 8 micro-batches and 2
// chunks: rounds of 8 / max(1, 8 / 4) = 4 micro-batches per chunk, (2 - 1) 4 + 3 - s warm-up forwards, then a forward
// and an input gradient B in turn, a W after each B from the (s + 1)-th on. These orders were derived from that class
// apart from placesim; "F3.1" is micro-batch 3 through chunk 1 (virtual stage 4 + s).
TEST_CASE("Interleaved zero bubble runs PyTorch's ZB1P op order") {
  PipelineShape sh = test::pipeline_shape(Schedule::InterleavedZb, 4, 8);
  sh.chunks = 2;
  const PipelineSchedule z = make_schedule(sh, abstract_shape_fields());
  CHECK(render(z.order[0], true) ==
        "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 B0.1 W0.1 F4.0 B1.1 W1.1 F5.0 B2.1 W2.1 F6.0 B3.1 W3.1 F7.0 B0.0 "
        "W0.0 F4.1 B1.0 W1.0 F5.1 B2.0 W2.0 F6.1 B3.0 W3.0 F7.1 B4.1 W4.1 B5.1 W5.1 B6.1 W6.1 B7.1 W7.1 B4.0 W4.0 "
        "B5.0 W5.0 B6.0 W6.0 B7.0 W7.0 A");
  CHECK(render(z.order[3], true) ==
        "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 W0.1 F4.0 B0.0 W1.1 F5.0 B1.0 W2.1 F6.0 B2.0 "
        "W3.1 F7.0 B3.0 W0.0 F4.1 B4.1 W1.0 F5.1 B5.1 W2.0 F6.1 B6.1 W3.0 F7.1 B7.1 W4.1 B4.0 W5.1 B5.0 W6.1 B6.0 "
        "W7.1 B7.0 W4.0 W5.0 W6.0 W7.0 A");
}

// Peak chunk-forwards held (from F to W): the warm-up (v - 1) mpr + S - s - 1, the s pairs whose W waits, and the
// next forward: (v - 1) mpr + S on every stage, mpr = m / max(1, m / S) (at most the step's m v).
TEST_CASE("Interleaved zero bubble holds (v - 1) mpr + S chunk-forwards on every stage and never deadlocks") {
  for (int stages = 2; stages <= 5; ++stages)
    for (int chunks = 2; chunks <= 3; ++chunks)
      for (int m = stages; m <= 3 * stages; ++m) {
        PipelineShape sh = test::pipeline_shape(Schedule::InterleavedZb, stages, m, 2);
        sh.chunks = chunks;
        const int rounds = std::max(1, m / stages), mpr = m / rounds;
        INFO("S " << stages << " v " << chunks << " m " << m);
        if (m % rounds != 0) {
          CHECK_THROWS_WITH(make_schedule(sh, abstract_shape_fields()),
                            Catch::Contains("a multiple of its rounds max(1, m / S) = " + std::to_string(rounds)));
          continue;
        }
        const PipelineSchedule z = make_schedule(sh, abstract_shape_fields());
        for (int s = 0; s < stages; ++s) {
          int level = 0, peak = 0;
          for (const PipeOp& op : z.order[static_cast<std::size_t>(s)]) {
            if (op.kind == PipeOpKind::Forward) peak = std::max(peak, ++level);
            if (op.kind == PipeOpKind::Weight) --level;
          }
          CHECK(peak == std::min((chunks - 1) * mpr + stages, m * chunks));
        }
        CHECK_NOTHROW(evaluate_pipeline(z, test::pipeline_times(1, 2, 0.25)));
      }
  CHECK_THAT(error_of(section("interleaved-zb", 4, 3)), Catch::Contains("needs at least pipeline.stages=4"));
}
