// FSDP2's behaviour of gathered parameters: reshard_after_forward, prefetch depth, the copy-out / copy-in kernels.
// expand() and analyze() are pure; the one simulation runs in its own process (ctest -R).
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <map>

#include "sim/backend/Simulator.hpp"
#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/expand/Expand.hpp"
#include "strategies/placement/Layout.hpp"
#include "tests/Helpers.hpp"
#include "tests/SweepHelpers.hpp"
#include "workloads/json/Error.hpp"

using namespace placesim;

namespace {

ClusterSpec one_dgx() {
  return test::nodes_of("h100-sxm", 1);
}

// 4 layers of h 512 (3,145,728 + 512·... parameters each), fsdp over 8 GPUs, 2 micro-batches of 1.
Experiment fsdp(const std::string& extra = "") {
  return test::experiment(
      std::string(R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
                      "training": {"global_batch": 16, "micro_batch": 1},
                      "strategy": {"preset": "fsdp", "dp": 8)") +
      extra + "}}");
}

double zero_gather_bytes(const Analysis& a) {
  return a.stages[0].comm.by_class[static_cast<std::size_t>(CommClass::ZeroGather)];
}

// Device 0's compute task of layer 1 (forward or backward): its seconds and the layers its group holds.
std::pair<double, double> layer1_compute(const TaskGraph& g, bool backward) {
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* t = std::get_if<Compute>(&g[id].body))
      if (t->device == 0 && t->part == ModelPart::Layers && t->layer == 1 &&
          t->kind == (backward ? TaskKind::Backward : TaskKind::Forward))
        return {t->seconds, static_cast<double>(t->layers)};
  return {0.0, 0.0};
}

std::vector<TaskId> forward_gathers(const TaskGraph& g, int device) {
  std::vector<TaskId> out;
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* c = std::get_if<Collective>(&g[id].body))
      if (c->cls == CommClass::ZeroGather && !c->backward && c->microbatch == 0) {
        const auto& m = task_devices(g, g[id]);
        if (std::find(m.begin(), m.end(), device) != m.end()) out.push_back(id);
      }
  return out;
}

std::vector<TaskId> predecessors(const TaskGraph& g, TaskId id) {
  std::vector<TaskId> out;
  for (auto [e, end] = boost::in_edges(id, g.graph); e != end; ++e) out.push_back(boost::source(*e, g.graph));
  return out;
}

}  // namespace

TEST_CASE("FSDP2 reshard_after_forward=false gathers once per micro-batch and keeps the units for the backward") {
  Experiment on = fsdp(), off = fsdp(R"(, "reshard_after_forward": false)");
  Analysis a_on = analyze(on), a_off = analyze(off);
  // Per micro-batch every unit is gathered before the forward and, resharded, again before the backward: without
  // resharding half the gather bytes.
  CHECK(zero_gather_bytes(a_off) * 2 == zero_gather_bytes(a_on));
  const double pb = 2, padded = static_cast<double>(stage_layouts(on)[0].padded_elems(8));
  // Each gather sends 7/8 of the padded stage per micro-batch: 2 micro-batches.
  CHECK(zero_gather_bytes(a_off) == 2 * 7 * (padded / 8) * pb);
  // Buffers: every unit of the stage stays gathered from its forward to its backward, instead of the unit computing
  // and the one prefetched.
  const double unit = static_cast<double>(stage_layouts(on)[0].max_unit_elems());
  CHECK(a_off.memory.buffers - a_on.memory.buffers == Approx(padded * pb - 2 * unit * pb));
  TaskGraph g = expand(off, one_dgx());
  int backward_gathers = 0;
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* c = std::get_if<Collective>(&g[id].body))
      backward_gathers += c->cls == CommClass::ZeroGather && c->backward;
  CHECK(backward_gathers == 0);
}

TEST_CASE("FSDP2 prefetch depth: a unit's gather waits for the compute depth + 1 units back") {
  for (int depth : {0, 1, 2}) {
    INFO("prefetch_forward " << depth);
    Experiment e = fsdp(R"(, "prefetch_forward": )" + std::to_string(depth));
    TaskGraph g = expand(e, one_dgx());
    std::vector<TaskId> gathers = forward_gathers(g, 0);
    REQUIRE(gathers.size() >= 4);
    for (std::size_t k = 0; k < gathers.size(); ++k) {
      // The gather of unit k follows a compute task of each member (device 0's here) only when k > depth.
      int computes = 0;
      for (TaskId p : predecessors(g, gathers[k]))
        if (const auto* c = std::get_if<Compute>(&g[p].body)) computes += c->device == 0;
      CHECK(computes == (k > static_cast<std::size_t>(depth) ? 1 : 0));
    }
  }
  CHECK(analyze(fsdp(R"(, "prefetch_forward": 2)")).memory.buffers - analyze(fsdp()).memory.buffers ==
        static_cast<double>(stage_layouts(fsdp())[0].max_unit_elems()) * 2);
}

TEST_CASE("FSDP2 copies: the forward's layer compute carries the copy-out of its gathered unit") {
  Experiment with = fsdp(), without = fsdp(R"(, "gather_copies": false)");
  ClusterSpec c = one_dgx();
  TaskGraph g1 = expand(with, c), g0 = expand(without, c);
  // Layer groups of one layer (h 512: 12 h^2 + 13 h = 3,152,384 elements, bf16): copy-out reads and writes the unit.
  const double elems = 12.0 * 512 * 512 + 13 * 512;
  auto [f1, layers] = layer1_compute(g1, false);
  auto [f0, layers0] = layer1_compute(g0, false);
  REQUIRE(layers == 1);
  CHECK(f1 - f0 == Approx(elementwise_time_s(2 * elems * 2, c.accelerator)));
  // Backward: the re-gathered unit's copy-out plus the gradients' copy-in, bf16 read and fp32 written.
  CHECK(layer1_compute(g1, true).first - layer1_compute(g0, true).first ==
        Approx(elementwise_time_s(2 * elems * 2 + elems * (2 + 4), c.accelerator)));
}

// FSDP1's flat parameters (strategy.flat_params): the gathered buffer is used in place, so the forward pays no
// copy; the backward concatenates the gradients in bf16 (read and write, 4 bytes an element) and, with fp32 reduction
// (the fsdp preset's grad_dtype), casts them in a pass of their own (2 + 4 bytes): 10 bytes an element against FSDP2's
// 4 (the re-gathered unit's copy-out) + 6 (copy-in cast to fp32). With bf16 reduction only the concatenation, 4.
TEST_CASE("FSDP1's flat parameters: no copy-out, the gradients concatenated and cast before the reduce-scatter") {
  ClusterSpec c = one_dgx();
  auto layer_s = [&](const Experiment& e, bool backward) {
    const auto [seconds, layers] = layer1_compute(expand(e, c), backward);
    REQUIRE(layers == 1);
    return seconds;
  };
  const double elems = 12.0 * 512 * 512 + 13 * 512;  // one layer, h 512 (the copies test above)
  const Experiment none = fsdp(R"(, "gather_copies": false)"), flat = fsdp(R"(, "flat_params": true)");
  CHECK(layer_s(flat, false) == layer_s(none, false));
  CHECK(layer_s(flat, true) - layer_s(none, true) == Approx(elementwise_time_s(10 * elems, c.accelerator)));
  // FSDP2's copies on the same layer: 4 + 6 bytes too, but split between the copy-out and the copy-in.
  CHECK(layer_s(fsdp(), true) - layer_s(none, true) == Approx(elementwise_time_s(10 * elems, c.accelerator)));
  CHECK(layer_s(fsdp(), false) - layer_s(none, false) == Approx(elementwise_time_s(4 * elems, c.accelerator)));
  // bf16 reduction: the concatenation alone.
  const Experiment flat16 = test::experiment(R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024,
      "seq_len": 256}, "training": {"global_batch": 16, "micro_batch": 1, "grad_dtype": "bf16"},
      "strategy": {"preset": "fsdp", "dp": 8, "flat_params": true}})");
  Experiment none16 = flat16;
  none16.strategy.flat_params = false;
  none16.strategy.gather_copies = false;
  CHECK(layer_s(flat16, true) - layer_s(none16, true) == Approx(elementwise_time_s(4 * elems, c.accelerator)));
  // No byte of communication moves.
  CHECK(zero_gather_bytes(analyze(flat)) == zero_gather_bytes(analyze(fsdp())));
  // The echo says so, and the setting is refused where it would cost nothing.
  CHECK(strategy_to_json(flat.strategy)["flat_params"] == true);
  CHECK_FALSE(strategy_to_json(fsdp().strategy).contains("flat_params"));
  CHECK_THROWS_WITH(fsdp(R"(, "gather_copies": false, "flat_params": true)"),
                    Catch::Contains("strategy.flat_params=true changes what gather_copies costs") &&
                        Catch::Contains("strategy.gather_copies=false costs no copies"));
}

TEST_CASE("reshard_after_backward is refused where it is not modelled, with the field named") {
  auto with = [](const std::string& strategy) {
    return test::experiment(R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
        "training": {"global_batch": 16, "micro_batch": 1}, "strategy": )" +
                            strategy + "}");
  };
  CHECK_THROWS_WITH(
      check_validity(with(R"({"preset": "fsdp", "dp": 8, "reshard_after_backward": true})")),
      Catch::Contains("strategy.reshard_after_backward=true is modelled for FSDP under a pipeline only "
                      "(pp > 1 with reshard_after_forward=false; here pp=1, reshard_after_forward=true)"));
  CHECK_THROWS_WITH(check_validity(with(R"({"preset": "fsdp", "dp": 4, "pp": 2, "reshard_after_forward": true,
                                             "reshard_after_backward": true})")),
                    Catch::Contains("here pp=2, reshard_after_forward=true"));
  CHECK_NOTHROW(check_validity(with(R"({"preset": "fsdp", "dp": 4, "pp": 2, "reshard_after_backward": false})")));
  // The report's strategy echoes it when set, and the echo parses back.
  const Experiment e = with(R"({"preset": "fsdp", "dp": 4, "pp": 2, "reshard_after_backward": true})");
  CHECK(strategy_to_json(e.strategy)["reshard_after_backward"] == true);
  CHECK_FALSE(
      strategy_to_json(with(R"({"preset": "fsdp", "dp": 4, "pp": 2})").strategy).contains("reshard_after_backward"));
}

TEST_CASE("FSDP2 options are checked with the field named") {
  CHECK_THROWS_WITH(check_validity(fsdp(R"(, "prefetch_backward": 9)")),
                    Catch::Contains("strategy.prefetch_backward=9") && Catch::Contains("0 (no prefetch"));
  CHECK_THROWS_WITH(check_validity(test::experiment(R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024,
          "seq_len": 256}, "training": {"global_batch": 16, "micro_batch": 1},
          "strategy": {"preset": "fsdp", "dp": 4, "pp": 2, "reshard_after_forward": false, "schedule": "pipedream"}})")),
                    Catch::Contains("strategy.reshard_after_forward=false with pp=2 and schedule=pipedream is not "
                                    "modelled"));
  CHECK_THROWS_WITH(check_validity(test::experiment(R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024,
          "seq_len": 256}, "training": {"global_batch": 16, "micro_batch": 1},
          "strategy": {"preset": "fsdp", "dp": 4, "pp": 2, "reshard_after_forward": false, "placement": {"parameters":
          "sharded-with-gather", "optimizer": "sharded", "gradients": "offloaded", "activations": "replicated"}}})")),
                    Catch::Contains("strategy.reshard_after_forward=false with pp=2 accumulates each unit's gradients "
                                    "on the device for the step, but strategy.placement.gradients is offloaded"));
  CHECK_THROWS_WITH(check_validity(fsdp(R"(, "reshard_after_forward": false, "schedule": "gpipe")")),
                    Catch::Contains("schedule=gpipe and 2 micro-batches is not modelled"));
  CHECK_THROWS_WITH(check_validity(fsdp(R"(, "reshard_after_forward": false, "placement": {"parameters": "offloaded",
      "optimizer": "offloaded", "gradients": "offloaded", "activations": "replicated"})")),
                    Catch::Contains("parameters is offloaded"));
}

// One simulation: the same experiment without resharding is faster (half the gathers, no backward copy-out) and
// its simulated bytes equal the analytic ones.
TEST_CASE("FSDP2 reshard_after_forward=false simulates with the analytic bytes") {
  Experiment e = fsdp(R"(, "reshard_after_forward": false)");
  TaskGraph g = expand(e, one_dgx());
  SimResult r = simulate(g, one_dgx(), {});
  CHECK(r.devices[3].bytes_sent[static_cast<std::size_t>(CommClass::ZeroGather)] == zero_gather_bytes(analyze(e)));
  CHECK(r.step_time_s > 0);
}

// FSDP under a pipeline as torch.distributed.pipelining runs it (the fsdp preset's default with pp > 1, torchtitan's):
// 4 layers of h 512 on pp 2 x dp 4, 4 micro-batches of 1. Each unit is gathered before micro-batch 0's forward and
// kept; its gradients accumulate unsharded (fp32) and are reduce-scattered once, after the stage's last backward.
TEST_CASE("FSDP under a pipeline gathers once per step and reduce-scatters after the last backward") {
  auto piped = [](const std::string& extra) {
    return test::experiment(R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
        "training": {"global_batch": 16, "micro_batch": 1}, "strategy": {"preset": "fsdp", "dp": 4, "pp": 2)" +
                            extra + "}}");
  };
  Experiment once = piped(""), each = piped(R"(, "reshard_after_forward": true)");
  REQUIRE(!once.strategy.reshard_after_forward);
  REQUIRE(once.strategy.gathers_once_per_step());
  REQUIRE(once.strategy.microbatches == 4);
  REQUIRE(once.training.param_bytes() == 2);
  REQUIRE(once.training.grad_bytes() == 4);
  const Analysis a = analyze(once), b = analyze(each);
  const double padded = static_cast<double>(stage_layouts(once)[0].padded_elems(4));
  const auto sent = [](const Analysis& x, CommClass c) {
    return x.stages[0].comm.by_class[static_cast<std::size_t>(c)];
  };
  // One all-gather per step (3/4 of the padded stage in bf16) and one reduce-scatter (3/4 in fp32); resharding per
  // micro-batch gathers twice per micro-batch (8 times the bytes) and reduce-scatters per micro-batch (4 times).
  CHECK(sent(a, CommClass::ZeroGather) == 3 * (padded / 4) * 2);
  CHECK(sent(a, CommClass::DpGradSync) == 3 * (padded / 4) * 4);
  CHECK(sent(b, CommClass::ZeroGather) == 8 * sent(a, CommClass::ZeroGather));
  CHECK(sent(b, CommClass::DpGradSync) == 4 * sent(a, CommClass::DpGradSync));
  // Buffers: the whole stage gathered (bf16) and its unsharded gradients (fp32).
  CHECK(a.stages[0].memory.buffers == padded * 2 + padded * 4);

  TaskGraph g = expand(once, one_dgx());
  TaskId last_backward = ~TaskId(0);
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* c = std::get_if<Compute>(&g[id].body))
      if (c->device == 0 && c->kind == TaskKind::Backward) last_backward = id;
  REQUIRE(last_backward != ~TaskId(0));
  REQUIRE(std::get<Compute>(g[last_backward].body).microbatch == 3);
  int gathers = 0, reductions = 0;
  for (TaskId id = 0; id < g.size(); ++id) {
    const auto* c = std::get_if<Collective>(&g[id].body);
    if (c == nullptr) continue;
    const auto& m = task_devices(g, g[id]);
    if (std::find(m.begin(), m.end(), 0) == m.end()) continue;
    if (c->cls == CommClass::ZeroGather) {
      ++gathers;
      CHECK(c->microbatch == 0);
      CHECK(!c->backward);
    }
    if (c->cls == CommClass::DpGradSync) {
      ++reductions;
      CHECK(c->microbatch == 3);
      // Issued after the stage's whole backward of the last micro-batch.
      const auto p = predecessors(g, id);
      CHECK(std::find(p.begin(), p.end(), last_backward) != p.end());
    }
  }
  // Stage 0's groups: the first layer with the embedding, and the second layer; one gather and one reduce-scatter
  // each per step.
  CHECK(gathers == 2);
  CHECK(reductions == 2);

  SimResult r = simulate(g, one_dgx(), {});
  CHECK(r.devices[0].bytes_sent[static_cast<std::size_t>(CommClass::ZeroGather)] == sent(a, CommClass::ZeroGather));
  CHECK(r.devices[0].bytes_sent[static_cast<std::size_t>(CommClass::DpGradSync)] == sent(a, CommClass::DpGradSync));
  // The gathered stage and its unsharded gradients are held together at the last backward's end.
  CHECK(r.devices[0].peak_buffers == Approx(a.stages[0].memory.buffers).epsilon(0.01));
}

TEST_CASE("FSDP under a pipeline resharded after every backward gathers at each op that follows a backward") {
  const Experiment e = test::experiment(
      R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
          "training": {"global_batch": 16, "micro_batch": 1},
          "strategy": {"preset": "fsdp", "dp": 4, "pp": 2, "reshard_after_backward": true}})");
  const Experiment once = test::experiment(
      R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
          "training": {"global_batch": 16, "micro_batch": 1}, "strategy": {"preset": "fsdp", "dp": 4, "pp": 2}})");
  REQUIRE(e.strategy.regathers_after_backward());
  REQUIRE_FALSE(e.strategy.gathers_once_per_step());
  REQUIRE(e.strategy.microbatches == 4);
  const Analysis a = analyze(e), b = analyze(once);
  const auto sent = [](const Analysis& x, CommClass c) {
    return x.stages[0].comm.by_class[static_cast<std::size_t>(c)];
  };
  // m = 4 gathers per step instead of one; the same reduce-scatter and the same buffers (the stage gathered, its
  // gradients unsharded).
  CHECK(sent(a, CommClass::ZeroGather) == 4 * sent(b, CommClass::ZeroGather));
  CHECK(sent(a, CommClass::DpGradSync) == sent(b, CommClass::DpGradSync));
  CHECK(a.stages[0].memory.buffers == b.stages[0].memory.buffers);

  // Stage 0 runs 1F1B as F0 F1 B0 F2 B1 F3 B2 B3: its units are gathered before F0 (the first op), F2 and F3 (each
  // after a backward) and B3 (after B2), once per layer group (the expansion takes one layer a group here).
  TaskGraph g = expand(e, one_dgx());
  std::map<std::pair<int, bool>, int> gathers;  // (micro-batch, backward) -> gathers on device 0
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* c = std::get_if<Collective>(&g[id].body))
      if (c->cls == CommClass::ZeroGather) {
        const auto& m = task_devices(g, g[id]);
        if (std::find(m.begin(), m.end(), 0) != m.end()) ++gathers[{c->microbatch, c->backward}];
      }
  const std::map<std::pair<int, bool>, int> expected{{{0, false}, 2}, {{2, false}, 2}, {{3, false}, 2}, {{3, true}, 2}};
  CHECK(gathers == expected);

  SimResult r = simulate(g, one_dgx(), {});
  CHECK(r.devices[0].bytes_sent[static_cast<std::size_t>(CommClass::ZeroGather)] == sent(a, CommClass::ZeroGather));
  CHECK(r.devices[0].bytes_sent[static_cast<std::size_t>(CommClass::DpGradSync)] == sent(a, CommClass::DpGradSync));
  CHECK(r.devices[0].peak_buffers <= a.stages[0].memory.buffers * 1.01);
  CHECK(r.devices[0].peak_buffers > 0);
}

// Sharded gradients are reduce-scattered after each micro-batch's backward; the step's update reads the reduced
// shard, so each device's optimizer task (and ZeRO-1/2's all-gather of the updated parameters after it) must follow
// every reduce-scatter of the last micro-batch that device takes part in. Until 2026-12 it followed only the backward
// compute: the update and the parameter all-gather ran beside the last reduce-scatters (a ZeRO-2 step of one 8.6 GB
// bucket on 4 DGX A100 took 96.9 ms with the gather and the reduce-scatter sharing the NICs, 101.1 ms in order).
TEST_CASE("ZeRO-2 and FSDP: the optimizer step waits for the last micro-batch's gradient reduce-scatters") {
  for (const char* preset : {"zero2", "fsdp"}) {
    INFO(preset);
    Experiment e = test::experiment(
        std::string(R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
                        "training": {"global_batch": 16, "micro_batch": 1},
                        "strategy": {"preset": ")") +
        preset + R"(", "dp": 8}})");
    TaskGraph g = expand(e, one_dgx());
    for (int device : {0, 5}) {
      INFO("device " << device);
      TaskId optimizer = ~TaskId(0);
      std::vector<TaskId> last_reductions;
      for (TaskId id = 0; id < g.size(); ++id) {
        if (const auto* c = std::get_if<Compute>(&g[id].body))
          if (c->kind == TaskKind::Optimizer && c->device == device) optimizer = id;
        if (const auto* c = std::get_if<Collective>(&g[id].body)) {
          const auto& m = task_devices(g, g[id]);
          if (c->cls == CommClass::DpGradSync && c->microbatch == 1 && std::find(m.begin(), m.end(), device) != m.end())
            last_reductions.push_back(id);
        }
      }
      REQUIRE(optimizer != ~TaskId(0));
      // 4 layers, the embedding and the head: every unit's gradients, one reduce-scatter each (fsdp), or the
      // buckets of zero2's 25 MB (the whole model here: one or more).
      REQUIRE(!last_reductions.empty());
      // Everything the optimizer (transitively) depends on.
      std::vector<char> before(g.size(), 0);
      std::vector<TaskId> todo{optimizer};
      while (!todo.empty()) {
        TaskId t = todo.back();
        todo.pop_back();
        for (TaskId p : predecessors(g, t))
          if (!before[p]) {
            before[p] = 1;
            todo.push_back(p);
          }
      }
      for (TaskId rs : last_reductions) CHECK(before[rs]);
    }
  }
}

// NCCL runs one collective at a time per communicator (NVIDIA/nccl#574), and FSDP2 issues its gathers and
// reduce-scatters on one process group. In the backward, unit u's gather is issued by unit u + 1's pre-hook (prefetch
// 1): after unit u + 2's reduce-scatter and before unit u + 1's. The next micro-batch's first gather follows the last
// reduce-scatter.
TEST_CASE("FSDP2 gathers and reduce-scatters are ordered as issued on their one communicator") {
  TaskGraph g = expand(fsdp(), one_dgx());
  auto holds = [&](TaskId id, int device) {
    const auto& m = task_devices(g, g[id]);
    return std::find(m.begin(), m.end(), device) != m.end();
  };
  auto edge = [&](TaskId a, TaskId b) { return boost::edge(a, b, g.graph).second; };
  for (int device : {0, 3}) {
    INFO("device " << device);
    std::vector<TaskId> reduces, backward_gathers, next_gathers;  // in creation order: the backward's last unit first
    for (TaskId id = 0; id < g.size(); ++id)
      if (const auto* c = std::get_if<Collective>(&g[id].body); c && holds(id, device)) {
        if (c->cls == CommClass::DpGradSync && c->microbatch == 0) reduces.push_back(id);
        if (c->cls == CommClass::ZeroGather && c->backward && c->microbatch == 0) backward_gathers.push_back(id);
        if (c->cls == CommClass::ZeroGather && !c->backward && c->microbatch == 1) next_gathers.push_back(id);
      }
    // One unit per layer (the embedding and the head with the first and last): each gathered again in the backward
    // and reduce-scattered.
    REQUIRE(reduces.size() == backward_gathers.size());
    REQUIRE(reduces.size() == 4);
    for (std::size_t k = 0; k < backward_gathers.size(); ++k) {
      INFO("backward unit " << k << " from the last");
      if (k >= 2) CHECK(edge(reduces[k - 2], backward_gathers[k]));
      if (k >= 1) CHECK(edge(backward_gathers[k], reduces[k - 1]));
    }
    REQUIRE(!next_gathers.empty());
    CHECK(edge(reduces.back(), next_gathers.front()));
  }
}

// The README's ZeRO sweep (examples/sweeps/zero-13b-h100.json, DeepSpeed's stack): with 2-32 micro-batches per step
// ZeRO-3 gathers every unit twice per micro-batch, copies it out and (inside one node) slows the compute it overlaps,
// so it is slower than ZeRO-2 although it holds the least memory; with one micro-batch on 256 GPUs its per-layer
// traffic hides behind the layers while ZeRO-2's once-per-step all-gather of the updated parameters is exposed, and
// the two meet. ZeRO-1 under DeepSpeed's BF16_Optimizer keeps whole fp32 and bf16 gradients (6 bytes a parameter,
// 78 GB for 13B): it fits nowhere on 80 GB.
TEST_CASE("The 13B ZeRO sweep ranks ZeRO-3 slower than ZeRO-2 where its gathers cannot hide, level at dp 256") {
  const std::string out = std::string(PLACESIM_BINARY) + ".zero-13b.jsonl";
  std::remove(out.c_str());  // a sweep refuses to overwrite its output without --resume
  REQUIRE(test::sweep_cli(std::string(PLACESIM_SOURCE_DIR) + "/examples/sweeps/zero-13b-h100.json --out " + out +
                          " --jobs 2 --quiet") == 0);
  std::map<std::pair<int, std::string>, double> step;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    Json row = Json::parse(line);
    if (row["status"] != "ok") continue;
    step[{row["point"]["strategy.dp"].get<int>(), row["point"]["strategy.preset"].get<std::string>()}] =
        row["simulation.step_time_s"].get<double>();
  }
  for (int dp : {8, 16, 32, 64, 128}) {
    INFO("dp " << dp);
    CHECK(step.at({dp, "zero3"}) > step.at({dp, "zero2"}));
  }
  CHECK(step.at({256, "zero3"}) == Approx(step.at({256, "zero2"})).epsilon(0.01));
  for (int dp : {8, 16, 32, 64, 128, 256}) CHECK(step.count({dp, "zero1"}) == 0);  // refused, not ranked
}

TEST_CASE("The report's strategy states FSDP2's settings, and the training its launch_overhead if set") {
  Json j = strategy_to_json(fsdp(R"(, "reshard_after_forward": false, "prefetch_backward": 2)").strategy);
  CHECK(j["reshard_after_forward"] == false);
  CHECK(j["prefetch_forward"] == 1);
  CHECK(j["prefetch_backward"] == 2);
  CHECK(j["gather_copies"] == true);
  Experiment ddp = test::experiment(R"({"model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024,
      "seq_len": 256}, "training": {"global_batch": 16, "micro_batch": 1, "launch_overhead": "8us"},
      "strategy": {"preset": "dp", "dp": 8}})");
  CHECK(strategy_to_json(ddp.strategy)["reshard_after_forward"] == true);
  CHECK(training_to_json(ddp.training)["launch_overhead"].get<double>() == Approx(8e-6));
  CHECK(!training_to_json(fsdp().training).contains("launch_overhead"));
}
