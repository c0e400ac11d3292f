// Context parallelism (strategy.cp, cp_comm ring or all-gather): hand-computed attention work, memory, K/V bytes, and
// the ring's step time when its transfers hide behind the attention and when they do not.
#include <catch2/catch.hpp>

#include "sim/backend/Simulator.hpp"
#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/analytic/Costs.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/expand/Expand.hpp"
#include "tests/Helpers.hpp"
#include "tests/SimFixtures.hpp"

using namespace placesim;

namespace {

Experiment llama8b(int seq, int cp, const std::string& extra = "") {
  return test::experiment(
      R"({"model": {"preset": "llama3-8b", "seq_len": )" + std::to_string(seq) +
      R"(}, "training": {"global_batch": 1, "micro_batch": 1}, "strategy": {"preset": "dp", "cp": )" +
      std::to_string(cp) + extra + "}}");
}

std::string refusal(const std::string& strategy, const std::string& model = R"({"preset": "llama3-8b"})") {
  try {
    check_validity(test::experiment(R"({"model": )" + model + R"(, "strategy": )" + strategy + "}"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Causal attention balanced over 2 cp chunks: every rank computes seq^2 / (2 cp) query-key pairs") {
  // Chunks of c = s / (2 cp) tokens; rank i holds chunks i and 2cp-1-i. Query chunk q attends to the q chunks before
  // it whole and to itself half (causal): (q + 1/2) c^2 pairs. Rank i: (i + 1/2 + 2cp-1-i + 1/2) c^2 = 2 cp c^2.
  const double s = 8192;
  for (int cp : {1, 2, 4, 8}) {
    const double c = s / (2 * cp);
    for (int i = 0; i < cp; ++i) {
      const double pairs = (i + 0.5) * c * c + (2 * cp - 1 - i + 0.5) * c * c;
      CHECK(pairs == s * s / (2 * cp));
    }
    // Llama 3 8B: 32 heads of 128; forward 4 x 128 FLOPs per pair and head.
    CHECK(attention_forward_flops(llama8b(8192, cp)) == 4.0 * 32 * 128 * s * s / (2 * cp));
  }
  // cp = 4: 4 x 32 x 128 x 8192^2 / 8 = 137,438,953,472 FLOPs per rank, a quarter of one device's causal attention.
  CHECK(attention_forward_flops(llama8b(8192, 4)) == 137438953472.0);
  CHECK(attention_forward_flops(llama8b(8192, 1)) == 4 * 137438953472.0);
}

TEST_CASE("Context parallelism divides activation memory by cp") {
  for (int cp : {2, 4, 8}) {
    INFO("cp " << cp);
    CHECK(layer_activation_bytes(llama8b(32768, cp)) * cp == layer_activation_bytes(llama8b(32768, 1)));
    CHECK(analyze(llama8b(32768, cp)).memory.activations * cp == analyze(llama8b(32768, 1)).memory.activations);
  }
  // Llama 3 8B at 32K, micro-batch 1, flash attention, no recompute: per layer 4 norm/QKV/MLP inputs of s x h,
  // Q + K + V (h + 2 x 8 x 128 per token), the attention output, gated MLP 2 f and fc2's input f, 2 bytes each:
  // (4 x 4096 + 4096 + 2048 + 4096 + 3 x 14336) x 2 bytes = 139,264 bytes per token.
  CHECK(layer_activation_bytes(llama8b(32768, 1)) == 32768.0 * 139264);
  CHECK(layer_activation_bytes(llama8b(32768, 8)) == 4096.0 * 139264);
}

TEST_CASE("K/V bytes per rank: GQA keys and values, the same for the ring and the all-gather") {
  // Llama 3 8B: 8 key-value heads of 128 (a quarter of its 32 query heads). seq 8192, cp 4: each rank holds 2048
  // tokens: K and V = 2 x 2048 x 8 x 128 = 4,194,304 elements = 8 MiB in bf16.
  const Experiment ring = llama8b(8192, 4);
  CHECK(cp_kv_elems(ring) == 4194304);
  // Per layer and micro-batch: forward 3 blocks (ring steps, or the all-gather's 3 shards) = 24 MiB; backward
  // twice that (K/V and their gradients; or the re-gather and the gradients' reduce-scatter).
  CHECK(cp_layer_bytes(ring, false) == 3 * 8388608.0);
  CHECK(cp_layer_bytes(ring, true) == 6 * 8388608.0);
  // 32 layers x 1 micro-batch x 9 blocks of 8 MiB = 2,415,919,104 bytes per rank and step.
  const auto cls = static_cast<std::size_t>(CommClass::CpKv);
  CHECK(analyze(ring).comm.by_class[cls] == 2415919104.0);
  CHECK(analyze(llama8b(8192, 4, R"(, "cp_comm": "all-gather")")).comm.by_class[cls] == 2415919104.0);
  // A full recompute repeats the forward's 3 blocks: 12 per layer.
  const Experiment recompute = test::experiment(
      R"({"model": "llama3-8b", "training": {"global_batch": 1, "micro_batch": 1, "recompute": "full"},
          "strategy": {"preset": "dp", "cp": 4}})");
  CHECK(analyze(recompute).comm.by_class[cls] == 32 * 12 * 8388608.0);
  // Transient blocks of one layer: the ring receives 3 in the forward and double-buffers K/V with their gradients
  // (4) in the backward; the all-gather holds all 4 gathered blocks, and in the backward their gradients too (8).
  CHECK(cp_buffer_bytes(ring, false) == 3 * 8388608.0);
  CHECK(cp_buffer_bytes(ring, true) == 4 * 8388608.0);
  const Experiment gather = llama8b(8192, 4, R"(, "cp_comm": "all-gather")");
  CHECK(cp_buffer_bytes(gather, true) == 8 * 8388608.0);
  CHECK(analyze(gather).memory.buffers - analyze(llama8b(8192, 1)).memory.buffers == 8 * 8388608.0);
  // With tp 2 each rank holds half the key-value heads.
  CHECK(cp_kv_elems(llama8b(8192, 4, R"(, "tp": 2)")) == 2097152);
}

TEST_CASE("Gradients are synchronised over dp x cp: parameters are replicated along cp") {
  // DDP over dp 2 x cp 4 = 8 ranks: the all-reduce of Llama 3 8B's 8.03e9 fp32 gradients sends 2 x 7/8 of them.
  const Experiment e = test::experiment(
      R"({"model": "llama3-8b", "training": {"global_batch": 2, "micro_batch": 1},
          "strategy": {"preset": "dp", "dp": 2, "cp": 4}})");
  const Analysis a = analyze(e);
  REQUIRE(a.stages[0].data_collectives.size() == 1);
  CHECK(a.stages[0].data_collectives[0].group_size == 8);
  // FSDP shards over dp_shard x cp (torchtitan's dp_shard_cp): an eighth of the parameters per rank, held in fp32 (the
  // master weights, as PyTorch FSDP keeps them) where DDP holds bf16 copies: 1/8 x 4/2.
  const Experiment f = test::experiment(
      R"({"model": "llama3-8b", "training": {"global_batch": 2, "micro_batch": 1},
          "strategy": {"preset": "fsdp", "dp": 2, "cp": 4}})");
  const Analysis b = analyze(f);
  CHECK(b.memory.parameters == Approx(a.memory.parameters / 8 * 2).epsilon(1e-6));
  CHECK(e.strategy.devices() == 8);
  CHECK(e.training.global_batch == 2);  // the cp ranks share their data-parallel rank's micro-batches
}

TEST_CASE("Context parallelism refusals name the field") {
  CHECK(refusal(R"({"cp": 3})", R"({"preset": "llama3-8b", "seq_len": 8192})") ==
        "invalid strategy: model.seq_len=8192 is not divisible by 2 x strategy.cp = 6 (context parallelism balances "
        "causal attention over 2 cp chunks)");
  CHECK(refusal(R"({"cp": 3, "cp_comm": "all-gather"})", R"({"preset": "llama3-8b", "seq_len": 8188})") ==
        "invalid strategy: model.seq_len=8188 is not divisible by 2 x strategy.cp = 6 (context parallelism balances "
        "causal attention over 2 cp chunks)");
  CHECK(refusal(R"({"cp": 2})", R"({"preset": "llama3-8b", "flash_attention": false})") ==
        "invalid strategy: strategy.cp=2 needs model.flash_attention=true: context parallelism runs fused attention "
        "kernels on sequence blocks (TransformerEngine)");
  CHECK(refusal(R"({"cp": 2, "cp_comm": "alltoall"})") ==
        "strategy.cp_comm=alltoall is not one of: ring p2p all-gather all_gather");
  CHECK(refusal(R"({"cp": 2, "mesh": {"cp": 4}})") == "strategy.mesh.cp=4 contradicts strategy.cp=2");
}

namespace {

// One DGX-like node of 8 GPUs of raw links (tests/SimFixtures.hpp): 1 us per NVLink direction, a route crosses two.
ClusterSpec node(double nvlink_bw) {
  return test::links_node(8, nvlink_bw);
}

// The span of layer 0's forward attention on device 0, micro-batch 0: from the end of the layer's other work to the
// end of its last ring step.
double ring_span(const Experiment& e, const ClusterSpec& c) {
  ExpandOptions o;
  o.layer_group = 1;
  const TaskGraph g = expand(e, c, o);
  const SimResult r = simulate(g, c, {});
  std::vector<const TaskRecord*> layer;
  for (const TaskRecord& t : r.record.tasks)
    if (t.device == 0 && t.kind == TaskKind::Forward && t.layer == 0 && t.microbatch == 0) layer.push_back(&t);
  REQUIRE(layer.size() == 5);  // the layer's other work, then 4 attention steps
  std::sort(layer.begin(), layer.end(), [](auto* a, auto* b) { return a->start_s < b->start_s; });
  return layer.back()->end_s - layer.front()->end_s;
}

Experiment ring_case() {
  // 4 query heads of 128 sharing 1 key-value head, 16384 tokens over cp 4: each rank's K/V block is
  // 2 x 4096 x 128 = 1,048,576 elements = 2 MiB.
  return test::experiment(
      R"({"model": {"layers": 2, "hidden": 512, "heads": 4, "kv_heads": 1, "vocab": 1000, "seq_len": 16384},
          "training": {"global_batch": 1, "micro_batch": 1}, "strategy": {"preset": "dp", "cp": 4}})");
}

}  // namespace

TEST_CASE("Ring CP: transfers hidden behind the attention steps, the layer's attention takes cp steps") {
  const Experiment e = ring_case();
  const ClusterSpec probe = node(100e9);
  const double a = stage_costs(e, probe, stage_layouts(e)[0]).layer_attention_forward_s / 4;  // one step
  const double bytes = 2.0 * 1048576;
  // A bandwidth that makes a transfer (2 us of latency + bytes / bw) take half a step.
  const double bw = bytes / (a / 2 - 2e-6);
  const double t = 2e-6 + bytes / bw;
  REQUIRE(t < a);
  // Step i + 1 waits for the block step i received: a + 3 max(a, t) = 4a.
  CHECK(ring_span(e, node(bw)) == Approx(4 * a).epsilon(1e-9));
}

TEST_CASE("Ring CP: transfers slower than the attention steps are exposed, cp - 1 of them") {
  const Experiment e = ring_case();
  const ClusterSpec probe = node(100e9);
  const double a = stage_costs(e, probe, stage_layouts(e)[0]).layer_attention_forward_s / 4;
  const double bytes = 2.0 * 1048576;
  const double bw = bytes / (2 * a - 2e-6);  // a transfer takes two steps
  const double t = 2e-6 + bytes / bw;
  REQUIRE(t > a);
  // The first step starts at once; step i (i >= 1) waits for i transfers: a + 3 t.
  CHECK(ring_span(e, node(bw)) == Approx(a + 3 * t).epsilon(1e-9));
}

TEST_CASE("PyTorch's CP: the default on PyTorch's presets, K/V at the query heads, fp32 gradients around the ring") {
  // Not given, strategy.cp_impl follows the preset: PyTorch's context_parallel for fsdp, hsdp and fsdp-tp
  // (torchtitan), TransformerEngine's for the others.
  CHECK(llama8b(8192, 4).strategy.cp_impl == CpImpl::TransformerEngine);
  CHECK(test::experiment(R"({"model": "llama3-8b", "strategy": {"preset": "fsdp", "dp": 2, "cp": 4}})")
            .strategy.cp_impl == CpImpl::PyTorch);
  CHECK(test::experiment(R"({"model": "llama3-8b", "strategy": {"preset": "fsdp", "dp": 2, "cp": 4,
                                                                 "cp_impl": "te"}})")
            .strategy.cp_impl == CpImpl::TransformerEngine);
  CHECK(refusal(R"({"cp": 2, "cp_impl": "torch"})") ==
        "strategy.cp_impl=torch is not one of: te pytorch (did you mean 'pytorch'?)");
  // Llama 3 8B at 8192 over cp 4: 2048 tokens a rank. torchtitan repeats K/V to the 32 query heads before SDPA, so
  // the exchanged K and V are 2 x 2048 x 32 x 128 = 16,777,216 elements (4 x GQA's 4,194,304), the output
  // 2048 x 32 x 128 = 8,388,608.
  const Experiment e = llama8b(8192, 4, R"(, "cp_impl": "pytorch", "cp_comm": "all-gather")");
  CHECK(cp_kv_elems(e) == 16777216);
  CHECK(cp_out_elems(e) == 8388608);
  // Forward: 3 blocks of 2 bytes; backward: the 3 blocks again and 4 sends of the K/V gradients in fp32.
  CHECK(cp_layer_bytes(e, false) == 100663296.0);
  CHECK(cp_layer_bytes(e, true) == 100663296.0 + 4 * 4 * 16777216.0);
  // Buffers: the 4 gathered blocks, and forward the fp32 merged and block outputs (2 x 4 x 8,388,608); backward the
  // query's fp32 gradient and 3 fp32 K/V gradients (sum, received, sent).
  CHECK(cp_buffer_bytes(e, false) == 4 * 33554432.0 + 8 * 8388608.0);
  CHECK(cp_buffer_bytes(e, true) == 4 * 33554432.0 + 4 * 8388608.0 + 12 * 16777216.0);
  // The all-to-all rotater holds 2 blocks.
  CHECK(cp_buffer_bytes(llama8b(8192, 4, R"(, "cp_impl": "pytorch")"), false) == 2 * 33554432.0 + 8 * 8388608.0);
}

TEST_CASE("PyTorch's CP: element-wise work of the fp32 merge and gradient accumulation, by hand") {
  // cp 4, bf16 (el 2); n = 8,388,608 output elements, k = 16,777,216 K/V elements; (cp - 1) / 2 = 1.5 partial and
  // 1.5 full steps per rank on average.
  const Experiment e = llama8b(8192, 4, R"(, "cp_impl": "pytorch", "cp_comm": "all-gather")");
  const CpMergeWork f = cp_merge_work(e, false);
  // K/V: contiguous() and 3 cats, 4 bytes an element each: 16 k. Output: step 0's cast to fp32 and results()' cast
  // back (2 x 6); a full merge 2 + 4 + 12 + 8 + 12 = 38, a partial one 19 + the fp32 cat 8 = 27:
  // 12 + 1.5 x 38 + 1.5 x 27 = 109.5 n.
  CHECK(f.bytes == 16 * 16777216.0 + 109.5 * 8388608.0);
  CHECK(f.bytes == 1186988032.0);
  // 2 contiguous + 3 cats + 2 casts + 1.5 x 9 + 1.5 x 11 + 2 casts = 39 kernels.
  CHECK(f.kernels == 39);
  const CpMergeWork b = cp_merge_work(e, true);
  // zeros (4 n + 4 k), contiguous and 3 cats (16 k); K/V gradients: step 0's add 10 k, 1.5 x 10 full and
  // 1.5 x (5 + 8) partial, 4 fp32 cats 32 k; the query's: 2.5 x 10 full and 1.5 x 13 partial adds; the casts back
  // 6 (n + k): n (4 + 25 + 19.5 + 6) = 54.5 n, k (4 + 16 + 10 + 15 + 19.5 + 32 + 6) = 102.5 k.
  CHECK(b.bytes == 54.5 * 8388608.0 + 102.5 * 16777216.0);
  CHECK(b.bytes == 2176843776.0);
  // 3 zeros + 2 contiguous + 3 cats + 2 + 1.5 x 2 + 1.5 x 4 adds + 4 cats + 2.5 + 1.5 x 2 adds + 2 casts = 30.5.
  CHECK(b.kernels == 30.5);
  // TransformerEngine merges in its kernels: none.
  CHECK(cp_merge_work(llama8b(8192, 4), false).bytes == 0);
  // On an A100 80GB (2039 GB/s at the profile's element-wise efficiency, 4 us a kernel) the layer's forward gains
  // 1,186,988,032 / (2039e9 x efficiency) s + 39 x 4 us, the backward 2,176,843,776 / ... + 30.5 x 4 us; a full
  // recompute repeats the forward's, op-level selective AC (the attention's output kept) does not.
  const ClusterSpec c = test::nodes_of("a100-80gb", 1);
  const Experiment te = llama8b(8192, 4, R"(, "cp_impl": "te", "cp_comm": "all-gather")");
  const StageCosts kp = stage_costs(e, c, stage_layouts(e)[0]), kt = stage_costs(te, c, stage_layouts(te)[0]);
  REQUIRE(c.accelerator.hbm_bw_Bps == 2039e9);
  const double efficiency = c.accelerator.profile.memory_efficiency;
  CHECK(kp.layer_forward_s - kt.layer_forward_s == Approx(1186988032.0 / (2039e9 * efficiency) + 39 * 4e-6));
  CHECK(kp.layer_backward_s - kt.layer_backward_s == Approx(2176843776.0 / (2039e9 * efficiency) + 30.5 * 4e-6));
  CHECK(kp.layer_recompute_s == kt.layer_recompute_s);  // no recompute
  auto with = [](const std::string& strategy_tail, const std::string& recompute) {
    return test::experiment(R"({"model": {"preset": "llama3-8b", "seq_len": 8192}, "training": {"global_batch": 1,
        "micro_batch": 1, "recompute": ")" +
                            recompute + R"("}, "strategy": {"preset": "dp", "cp": 4)" + strategy_tail + "}}");
  };
  for (const char* recompute : {"full", "selective-op"}) {
    INFO(recompute);
    const Experiment p = with(R"(, "cp_impl": "pytorch")", recompute), t = with(R"(, "cp_impl": "te")", recompute);
    const double extra = stage_costs(p, c, stage_layouts(p)[0]).layer_recompute_s -
                         stage_costs(t, c, stage_layouts(t)[0]).layer_recompute_s;
    CHECK(extra ==
          Approx(std::string(recompute) == "full" ? kp.layer_forward_s - kt.layer_forward_s : 0.0).margin(1e-12));
  }
}

TEST_CASE("PyTorch's CP in the graph: a forward of 2 blocks beside the all-gather, a backward of cp blocks and sends") {
  // 2 layers, cp 4, one micro-batch, dp preset: per device and layer the forward runs the first block and then
  // the other three as one task; the backward runs 4 blocks and sends 4 fp32 K/V gradients (and, with the ring,
  // 3 K/V blocks in each pass).
  for (const char* comm : {"all-gather", "ring"}) {
    INFO(comm);
    const Experiment e = test::experiment(
        R"({"model": {"layers": 2, "hidden": 512, "heads": 4, "kv_heads": 1, "vocab": 1000, "seq_len": 16384},
            "training": {"global_batch": 1, "micro_batch": 1},
            "strategy": {"preset": "dp", "cp": 4, "cp_impl": "pytorch", "cp_comm": ")" +
        std::string(comm) + "\"}}");
    ExpandOptions o;
    o.layer_group = 1;
    const TaskGraph g = expand(e, node(100e9), o);
    int forward = 0, backward = 0, grad_sends = 0, kv_sends = 0;
    // K/V: 2 x 4096 x 4 heads x 128 = 4,194,304 elements (repeated from 1 key-value head).
    for (TaskId id = 0; id < g.size(); ++id) {
      if (const auto* c = std::get_if<Compute>(&g[id].body)) {
        if (c->device != 0 || c->layer != 0) continue;
        forward += c->kind == TaskKind::Forward;
        backward += c->kind == TaskKind::Backward;
      }
      if (const auto* p = std::get_if<P2P>(&g[id].body))
        if (p->src == 0 && p->cls == CommClass::CpKv) {
          grad_sends += p->backward && p->bytes == 4 * 4194304.0;
          kv_sends += p->bytes == 2 * 4194304.0;
        }
    }
    const bool ring = std::string(comm) == "ring";
    CHECK(forward == (ring ? 5 : 3));  // the layer's other work, then the blocks
    CHECK(backward == 5);
    CHECK(grad_sends == 2 * 4);  // both layers
    CHECK(kv_sends == (ring ? 2 * 6 : 0));
    check_validity(e);
  }
}
