// DeepSpeed as its code runs: the pipeline engine's blocking exchanges (strategy.p2p=deepspeed), the BF16_Optimizer's
// accumulation and reduction (the megatron-deepspeed stack), and ZeRO-3's gradients and buckets (deepspeed-zero).
// Expected schedules and volumes are derived by hand from DeepSpeed v0.7's TrainSchedule and engine
// (deepspeed/runtime/pipe/schedule.py, engine.py; bf16_optimizer.py; zero/stage3.py).
#include <boost/graph/adjacency_list.hpp>
#include <catch2/catch.hpp>
#include <set>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/analytic/LayerTimes.hpp"
#include "strategies/expand/Expand.hpp"
#include "strategies/placement/Mesh.hpp"
#include "tests/Helpers.hpp"

using namespace placesim;

namespace {

// 8 GPT layers of h 512: x = seq 256 x micro-batch 1 x 512 = 131072 activation elements per boundary.
const char* kSmall = R"({"layers": 8, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256})";

Experiment small(const std::string& strategy, const std::string& stack, int global_batch = 4) {
  return test::experiment(std::string(R"({"model": )") + kSmall + R"(, "training": {"global_batch": )" +
                          std::to_string(global_batch) + R"(, "micro_batch": 1}, "strategy": )" + strategy +
                          R"(, "stack": ")" + stack + "\"}");
}

ClusterSpec one_dgx() {
  return test::nodes_of("a100-80gb", 1);
}

// (source micro-batch, source direction) -> (target micro-batch, target direction) for every edge from one P2P
// transfer to one in the other direction: the transfers one blocking call must wait for before the next (edges between
// transfers of one direction are their send stream's order).
std::set<std::pair<std::pair<int, bool>, std::pair<int, bool>>> p2p_chains(const TaskGraph& g) {
  std::set<std::pair<std::pair<int, bool>, std::pair<int, bool>>> out;
  for (TaskId id = 0; id < g.size(); ++id) {
    const auto* p = std::get_if<P2P>(&g[id].body);
    if (!p) continue;
    for (auto [it, end] = boost::out_edges(id, g.graph); it != end; ++it)
      if (const auto* q = std::get_if<P2P>(&g[boost::target(*it, g.graph)].body))
        if (q->backward != p->backward) out.insert({{p->microbatch, p->backward}, {q->microbatch, q->backward}});
  }
  return out;
}

}  // namespace

TEST_CASE(
    "DeepSpeed's pipeline: one blocking call at a time, the receive first only between a backward and a forward") {
  // pp 2, 4 micro-batches. TrainSchedule: stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3, stage 1 F0 B0 F1 B1 F2 B2 F3 B3.
  // Stage 0 after F(i+1) sends act(i+1), then receives grad(i) (a backward slot: SendActivation, RecvGrad); stage 1
  // after B(i) receives act(i+1), then sends grad(i) (a forward slot: RecvActivation, SendGrad). Either way the
  // transfer of grad(i) waits for that of act(i+1): i = 0, 1, 2. Megatron's batched exchange posts both at once.
  const std::string strategy = R"({"preset": "zero1", "dp": 1, "pp": 2})";
  const TaskGraph ds = expand(small(strategy, "megatron-deepspeed"), one_dgx());
  const std::set<std::pair<std::pair<int, bool>, std::pair<int, bool>>> expected = {
      {{1, false}, {0, true}}, {{2, false}, {1, true}}, {{3, false}, {2, true}}};
  CHECK(p2p_chains(ds) == expected);
  const TaskGraph megatron = expand(small(strategy, "megatron-lm-2022"), one_dgx());
  CHECK(p2p_chains(megatron).empty());
  Experiment e = small(strategy, "megatron-deepspeed");
  CHECK(e.strategy.p2p == PipelineP2P::DeepSpeed);
}

TEST_CASE("DeepSpeed's pipeline with tp 2 sends halves, gathers them on receipt and gathers its sent output again") {
  // Per micro-batch: stage 0 sends x/2 to each of stage 1's TP ranks, stage 1 returns x/2 of the gradient. Stage 1
  // all-gathers each received activation (4), stage 0 each received gradient (4) and, before each backward, the output
  // it sent (4): 12 TP all-gathers of x, where Megatron-LM's scatter-gather has 8.
  auto count = [](const std::string& stack) {
    const TaskGraph g = expand(small(R"({"preset": "zero1", "dp": 1, "tp": 2, "pp": 2})", stack), one_dgx());
    int sends = 0, gathers = 0;
    for (TaskId id = 0; id < g.size(); ++id) {
      if (const auto* p = std::get_if<P2P>(&g[id].body)) {
        ++sends;
        CHECK(p->bytes == 131072.0 / 2 * 2);
      }
      if (const auto* c = std::get_if<Collective>(&g[id].body))
        if (c->op == CollectiveOp::AllGather && c->cls == CommClass::TpCollective && c->layers == 0) {
          ++gathers;
          CHECK(c->elems == 131072);
        }
    }
    return std::pair{sends, gathers};
  };
  CHECK(count("megatron-deepspeed") == std::pair{4 * 2 * 2, 12});
  CHECK(count("megatron-lm-2022") == std::pair{4 * 2 * 2, 8});
  // The analytic model counts the same bytes: the TP class of stage 0 holds the 4 extra gathers.
  const Experiment ds = small(R"({"preset": "zero1", "dp": 1, "tp": 2, "pp": 2})", "megatron-deepspeed");
  const Experiment mg = small(R"({"preset": "zero1", "dp": 1, "tp": 2, "pp": 2})", "megatron-lm-2022");
  const double tp0 = analyze(ds).stages[0].comm.by_class[static_cast<std::size_t>(CommClass::TpCollective)] -
                     analyze(mg).stages[0].comm.by_class[static_cast<std::size_t>(CommClass::TpCollective)];
  // A ring all-gather of x over 2 ranks sends x/2 per rank, in bf16: 4 x 65536 x 2 bytes. (The two stacks also differ
  // in TP overlap only in timing, not bytes.)
  CHECK(tp0 == 4 * 65536.0 * 2);
  CHECK(analyze(ds).stages[1].comm.by_class == analyze(mg).stages[1].comm.by_class);
}

TEST_CASE("The BF16_Optimizer reduces once after the last backward and accumulates by a cast and an add") {
  // dp 2 x pp 2 under megatron-deepspeed: ReduceGrads in the schedule's last step, one reduction of the whole fp32
  // buffer per stage (bucket_bytes 1e15), after the stage's last backward.
  const Experiment e = small(R"({"preset": "zero1", "dp": 2, "pp": 2})", "megatron-deepspeed");
  REQUIRE(e.training.grad_accumulation_cast);
  REQUIRE(e.strategy.bucket_bytes == 1e15);
  const TaskGraph g = expand(e, one_dgx());
  std::map<int, int> reductions;  // device -> gradient reductions
  for (TaskId id = 0; id < g.size(); ++id) {
    const auto* c = std::get_if<Collective>(&g[id].body);
    if (!c || c->cls != CommClass::DpGradSync) continue;
    for (int x : task_devices(g, g[id])) ++reductions[x];
  }
  REQUIRE(reductions.size() == 4);
  for (const auto& [device, n] : reductions) CHECK(n == 1);
  // Unfused accumulation: Megatron-LM's in-place add moves 2 + 4 + 4 bytes a weight, the cast-and-add 2 + 4 (the
  // fp32 temporary) + 4 + 4 + 4: 18 against 10 bytes per linear weight element per micro-batch, one pass per linear
  // (QKV 3h^2, projection h^2, FFN 4h^2 and 4h^2).
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "a");
  Experiment add = e;
  add.training.grad_accumulation_cast = false;
  double expected = 0;
  for (double w : {3.0 * 512 * 512, 1.0 * 512 * 512, 4.0 * 512 * 512, 4.0 * 512 * 512})
    expected += elementwise_time_s(18 * w, acc) - elementwise_time_s(10 * w, acc);
  CHECK(layer_times(e, acc).backward_s - layer_times(add, acc).backward_s == Approx(expected).epsilon(1e-9));
  // Its memory: 2 (bf16 parameters) + 4 (fp32 gradients) + 2 (bf16 gradients) + 12 / dp a parameter.
  const Analysis a = analyze(e);
  CHECK(a.memory.gradients == Approx(a.memory.parameters * 3));
}

// DeepSpeed v0.7.0 pipe/engine.py _exec_reduce_grads -> _bf16_reduce_grads -> buffered_allreduce_fallback: the
// BF16_Optimizer's fp32 gradients are all-reduced although each rank steps its shard only. Per stage of the
// megatron-deepspeed run above (dp 2, pp 2): a ring all-reduce sends 2 (dp - 1) / dp of the stage's fp32 gradient
// buffer, twice the reduce-scatter zero1 needs; without a pipeline the stack leaves it to the placement.
TEST_CASE("The BF16_Optimizer under DeepSpeed's pipeline all-reduces its fp32 gradients: twice zero1's bytes") {
  const Experiment e = small(R"({"preset": "zero1", "dp": 2, "pp": 2})", "megatron-deepspeed");
  REQUIRE(e.strategy.grad_allreduce);
  CHECK_FALSE(e.provenance.written("strategy.grad_allreduce"));
  Experiment rs = e;
  rs.strategy.grad_allreduce = false;
  const double all_reduced = analyze(e).comm.by_class[static_cast<std::size_t>(CommClass::DpGradSync)],
               reduce_scattered = analyze(rs).comm.by_class[static_cast<std::size_t>(CommClass::DpGradSync)];
  REQUIRE(reduce_scattered > 0);
  CHECK(all_reduced == Approx(2 * reduce_scattered));
  CHECK_FALSE(small(R"({"preset": "zero1", "dp": 2, "pp": 1})", "megatron-deepspeed").strategy.grad_allreduce);
  // Written on a placement that reduce-scatters nothing at the step: refused, naming it.
  CHECK_THROWS_WITH(small(R"({"preset": "zero2", "dp": 2, "grad_allreduce": true})", "deepspeed-zero"),
                    Catch::Contains("strategy.grad_allreduce=true") && Catch::Contains("gradients sharded"));
}

TEST_CASE("DeepSpeed ZeRO-3 reduce-scatters bf16 gradients every micro-batch, half the bytes of fp32 ones") {
  // zero3 over dp 4, 2 micro-batches, one unit a layer: each micro-batch gathers every unit in the forward and again in
  // the backward and reduce-scatters its gradients. Under deepspeed-zero the gradients are bf16 (stage3.py's 16-bit
  // partition), under Megatron's defaults fp32: the same collectives, half the gradient bytes.
  const std::string strategy = R"({"preset": "zero3", "dp": 4})";
  const Experiment ds = small(strategy, "deepspeed-zero", 8), mg = small(strategy, "megatron-lm-2022", 8);
  REQUIRE(ds.training.grad_dtype == DType::BF16);
  REQUIRE(mg.training.grad_dtype == DType::FP32);
  CHECK_FALSE(ds.training.grad_accumulation_fusion);
  const auto cls = [](const Analysis& a, CommClass c) { return a.comm.by_class[static_cast<std::size_t>(c)]; };
  CHECK(cls(analyze(ds), CommClass::DpGradSync) * 2 == cls(analyze(mg), CommClass::DpGradSync));
  CHECK(cls(analyze(ds), CommClass::ZeroGather) == cls(analyze(mg), CommClass::ZeroGather));
  auto collectives = [](const Experiment& e) {
    const TaskGraph g = expand(e, one_dgx());
    std::map<CommClass, int> n;
    for (TaskId id = 0; id < g.size(); ++id)
      if (const auto* c = std::get_if<Collective>(&g[id].body))
        if (task_devices(g, g[id]).front() == 0) ++n[c->cls];
    return n;
  };
  const auto n = collectives(ds);
  // Device 0's units: the 8 layers plus its share of the embedding and head groups; per micro-batch each unit is
  // gathered twice (forward, backward) and reduced once.
  CHECK(n.at(CommClass::ZeroGather) == 2 * n.at(CommClass::DpGradSync));
  CHECK(n.at(CommClass::DpGradSync) % 2 == 0);  // the same units in both micro-batches
  CHECK(n == collectives(mg));
}
