// expand() is pure: the TaskGraph can be checked without SimGrid.
#include <algorithm>
#include <boost/graph/topological_sort.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Costs.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/expand/Expand.hpp"
#include "strategies/placement/Mesh.hpp"
#include "tests/GraphHelpers.hpp"
#include "tests/Helpers.hpp"

using namespace placesim;

namespace {

ClusterSpec two_dgx() {
  return test::nodes_of("a100-80gb", 2);
}

const char* kSmallModel = R"({"layers": 8, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256})";

Experiment small(const std::string& strategy,
                 const std::string& training = R"({"global_batch": 16, "micro_batch": 1})") {
  return test::experiment(std::string(R"({"model": )") + kSmallModel + R"(, "training": )" + training +
                          R"(, "strategy": )" + strategy + "}");
}

// Bytes each device sends per class according to the graph, to compare with the analytic model.
std::vector<std::array<double, kCommClasses>> graph_bytes(const TaskGraph& g) {
  std::vector<std::array<double, kCommClasses>> bytes(static_cast<std::size_t>(g.devices));
  for (TaskId id = 0; id < g.size(); ++id) {
    const Task& t = g[id];
    CommClass cls;
    if (const auto* c = std::get_if<Collective>(&t.body))
      cls = c->cls;
    else if (const auto* p = std::get_if<P2P>(&t.body))
      cls = p->cls;
    else
      continue;
    for (int x : task_devices(g, t))
      bytes[static_cast<std::size_t>(x)][static_cast<std::size_t>(cls)] += task_bytes_sent(g, t, x);
  }
  return bytes;
}

void check_bytes_match_analytic(const Experiment& e) {
  TaskGraph g = expand(e, two_dgx());
  Analysis a = analyze(e);
  auto bytes = graph_bytes(g);
  for (int x = 0; x < g.devices; ++x) {
    const auto& st = a.stages[static_cast<std::size_t>(mesh_coord(e.strategy, x).pp)];
    for (int k = 0; k < kCommClasses; ++k) {
      INFO("device " << x << " class " << to_string(static_cast<CommClass>(k)));
      CHECK(bytes[static_cast<std::size_t>(x)][static_cast<std::size_t>(k)] ==
            st.comm.by_class[static_cast<std::size_t>(k)]);
    }
  }
}

}  // namespace

TEST_CASE("expand gives an acyclic graph with stable ids") {
  Experiment e = small(R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4})");
  TaskGraph a = expand(e, two_dgx());
  TaskGraph b = expand(e, two_dgx());
  REQUIRE(a.size() == b.size());
  std::vector<TaskId> order;
  CHECK_NOTHROW(boost::topological_sort(a.graph, std::back_inserter(order)));
  for (TaskId id = 0; id < a.size(); ++id) {
    CHECK(a[id].body.index() == b[id].body.index());
    CHECK(boost::out_degree(id, a.graph) == boost::out_degree(id, b.graph));
  }
}

TEST_CASE("expand creates micro-batches x layers x passes compute tasks per device") {
  // pp 4, 8 layers: 2 per stage; 16 samples / (1 x dp 2) = 8 micro-batches; forward and backward. The embedding
  // (stage 0) and the head (stage 3) are one task of their own per micro-batch and pass.
  Experiment e = small(R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4})");
  ExpandOptions one_layer;
  one_layer.layer_group = 1;
  TaskGraph g = expand(e, two_dgx(), one_layer);
  const auto devices = static_cast<std::size_t>(g.devices);
  std::vector<int> fwd(devices), bwd(devices), embedding(devices), head(devices);
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* c = std::get_if<Compute>(&g[id].body)) {
      const auto x = static_cast<std::size_t>(c->device);
      if (c->part == ModelPart::Embedding) ++embedding[x];
      if (c->part == ModelPart::Head) ++head[x];
      if (c->part != ModelPart::Layers) continue;
      if (c->kind == TaskKind::Forward) ++fwd[x];
      if (c->kind == TaskKind::Backward) ++bwd[x];
    }
  for (std::size_t x = 0; x < devices; ++x) {
    const int stage = static_cast<int>(x) / 4;
    CHECK(fwd[x] == 8 * 2);
    CHECK(bwd[x] == 8 * 2);
    CHECK(embedding[x] == (stage == 0 ? 8 * 2 : 0));
    CHECK(head[x] == (stage == 3 ? 8 * 2 : 0));
  }
}

TEST_CASE("Bytes per device and class in the graph equal the analytic bytes for every preset") {
  for (const char* strategy :
       {R"({"preset": "dp", "dp": 16})", R"({"preset": "zero1", "dp": 16})", R"({"preset": "zero2", "dp": 16})",
        R"({"preset": "zero3", "dp": 16})", R"({"preset": "fsdp", "dp": 16})",
        R"({"preset": "zero-offload", "dp": 16})", R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4})",
        R"({"preset": "megatron-3d", "dp": 2, "tp": 4, "pp": 2, "sp": true})",
        R"({"preset": "megatron-3d", "dp": 1, "tp": 2, "pp": 8, "schedule": "interleaved", "chunks": 1})"}) {
    INFO(strategy);
    check_bytes_match_analytic(small(strategy));
  }
  check_bytes_match_analytic(small(R"({"preset": "megatron-3d", "dp": 4, "tp": 2, "pp": 2})",
                                   R"({"global_batch": 16, "micro_batch": 1, "recompute": "full"})"));
  check_bytes_match_analytic(small(R"({"preset": "megatron-3d", "dp": 2, "tp": 1, "pp": 8, "schedule": "gpipe"})"));
}

TEST_CASE("Bytes in the graph equal the analytic bytes for uneven pipelines, interleaved or not") {
  for (const char* strategy :
       {R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 3})",
        R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 2, "schedule": "interleaved", "chunks": 3})",
        R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 2, "schedule": "interleaved", "chunks": 2,
               "layers_per_stage": [3, 1, 1, 3], "microbatch_group": 4, "p2p": "async"})",
        R"({"preset": "megatron-3d", "dp": 1, "tp": 4, "pp": 2, "sp": true, "schedule": "interleaved",
               "layers_per_stage": [2, 2, 3, 1]})",
        R"({"preset": "fsdp", "dp": 4, "pp": 2, "schedule": "interleaved", "layers_per_stage": [1, 3, 3, 1]})",
        R"({"preset": "zero1", "dp": 2, "tp": 2, "pp": 4, "layers_per_stage": [1, 3, 3, 1], "schedule": "gpipe"})",
        // The ends without layers (the embedding alone on the first virtual stage, the head on the last).
        R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 2, "sp": true, "schedule": "interleaved", "chunks": 5})",
        R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4, "layers_per_stage": [0, 4, 4, 0]})",
        R"({"preset": "fsdp", "dp": 4, "pp": 2, "schedule": "interleaved", "layers_per_stage": [0, 4, 4, 0]})"}) {
    INFO(strategy);
    const Experiment e = small(strategy);
    REQUIRE_NOTHROW(check_validity(e));
    check_bytes_match_analytic(e);
  }
}

TEST_CASE("Every valid interleaved shape expands to an acyclic graph, with blocking or asynchronous exchanges") {
  // A cycle is a deadlock of the blocking exchanges (the simulation would stall); invalid shapes are refused first.
  int expanded = 0;
  for (int pp : {2, 3, 4})
    for (int chunks : {2, 3})
      for (int m = 1; m <= 9; ++m)
        for (int group = 0; group <= m; ++group)
          for (const char* p2p : {"megatron", "async"}) {
            const std::string strategy = R"({"preset": "megatron-3d", "pp": )" + std::to_string(pp) +
                                         R"(, "schedule": "interleaved", "chunks": )" + std::to_string(chunks) +
                                         R"(, "p2p": ")" + p2p + "\"" +
                                         (group > 0 ? R"(, "microbatch_group": )" + std::to_string(group) : "") + "}";
            Experiment e = test::experiment(
                R"({"model": {"layers": 12, "hidden": 256, "heads": 4, "vocab": 1000, "seq_len": 128},
                    "training": {"micro_batch": 1, "global_batch": )" +
                std::to_string(m) + R"(}, "strategy": )" + strategy + "}");
            try {
              check_validity(e);
            } catch (const InputError&) {
              continue;
            }
            INFO(strategy << " m=" << m);
            const TaskGraph g = expand(e, two_dgx());
            std::vector<TaskId> order;
            CHECK_NOTHROW(boost::topological_sort(g.graph, std::back_inserter(order)));
            ++expanded;
          }
  CHECK(expanded > 100);
}

TEST_CASE("Bytes in the graph equal the analytic bytes for every context-parallel implementation") {
  for (const char* comm : {"ring", "all-gather"})
    for (const char* strategy :
         {R"({"preset": "dp", "cp": 4)", R"({"preset": "fsdp", "dp": 2, "cp": 2)",
          R"({"preset": "megatron-3d", "dp": 1, "tp": 2, "pp": 2, "cp": 2)",
          R"({"preset": "megatron-3d", "tp": 2, "sp": true, "pp": 2, "cp": 2, "schedule": "interleaved",
                 "layers_per_stage": [3, 1, 1, 3])",
          R"({"preset": "hsdp", "mesh": {"dp_replicate": 2, "dp_shard": 2, "cp": 2})"}) {
      const std::string text = std::string(strategy) + R"(, "cp_comm": ")" + comm + "\"}";
      INFO(text);
      const Experiment e = small(text);
      REQUIRE_NOTHROW(check_validity(e));
      const TaskGraph g = expand(e, two_dgx());
      std::vector<TaskId> order;
      CHECK_NOTHROW(boost::topological_sort(g.graph, std::back_inserter(order)));
      check_bytes_match_analytic(e);
      CHECK(analyze(e).comm.by_class[static_cast<std::size_t>(CommClass::CpKv)] > 0);
    }
  // Review finding: torchtitan's op-level selective recompute saves the attention's output, so its recompute runs no
  // ring steps: the graph's K/V bytes are the analytic ones (those of no recompute), not full recompute's.
  for (const char* recompute : {"selective-op", "full"}) {
    INFO(recompute);
    const Experiment e =
        small(R"({"preset": "fsdp", "dp": 2, "cp": 2})",
              std::string(R"({"global_batch": 16, "micro_batch": 1, "recompute": ")") + recompute + R"("})");
    check_bytes_match_analytic(e);
  }
}

TEST_CASE("An uneven interleaved pipeline runs each chunk's own layers, in model order") {
  const Experiment e = small(R"({"preset": "megatron-3d", "pp": 2, "schedule": "interleaved",
                                 "layers_per_stage": [3, 1, 1, 3]})");
  const TaskGraph g = expand(e, two_dgx());
  std::map<std::pair<int, int>, std::set<int>> layers;  // (stage, chunk) -> layers of its forward tasks
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* c = std::get_if<Compute>(&g[id].body))
      if (c->kind == TaskKind::Forward && c->layer >= 0)
        for (int l = c->layer; l < c->layer + c->layers; ++l) layers[{g[id].stage, c->chunk}].insert(l);
  CHECK(layers[{0, 0}] == std::set<int>{0, 1, 2});
  CHECK(layers[{1, 0}] == std::set<int>{3});
  CHECK(layers[{0, 1}] == std::set<int>{4});
  CHECK(layers[{1, 1}] == std::set<int>{5, 6, 7});
}

TEST_CASE("A virtual stage without layers runs its embedding or head alone") {
  // 8 layers on pp 2 x 5 chunks: virtual stages [0, 1 x 8, 0]; stage 0's chunk 0 is the embedding alone, stage 1's
  // chunk 4 the output layer and loss alone.
  const Experiment e = small(R"({"preset": "megatron-3d", "tp": 2, "pp": 2, "schedule": "interleaved", "chunks": 5})");
  REQUIRE(virtual_stage_layers(e) == std::vector<std::int64_t>{0, 1, 1, 1, 1, 1, 1, 1, 1, 0});
  const TaskGraph g = expand(e, two_dgx());
  std::map<std::pair<int, int>, std::set<int>> layers;  // (stage, chunk) -> layers of its forward tasks
  std::map<std::pair<int, int>, std::set<ModelPart>> parts;
  std::map<std::pair<int, int>, double> seconds;  // one micro-batch's forward on device 0 or its stage's first
  std::map<std::pair<int, int>, int> tp_layer_collectives;
  for (TaskId id = 0; id < g.size(); ++id) {
    const Task& t = g[id];
    if (const auto* c = std::get_if<Compute>(&t.body); c && c->kind == TaskKind::Forward) {
      parts[{t.stage, c->chunk}].insert(c->part);
      for (int l = c->layer; l >= 0 && l < c->layer + c->layers; ++l) layers[{t.stage, c->chunk}].insert(l);
      if (c->microbatch == 0 && (c->device == 0 || c->device == 2)) seconds[{t.stage, c->chunk}] += c->seconds;
    }
    if (const auto* c = std::get_if<Collective>(&t.body); c && c->cls == CommClass::TpCollective && c->layer >= 0)
      ++tp_layer_collectives[{t.stage, c->chunk}];
  }
  CHECK(layers[{0, 0}].empty());
  CHECK(layers[{1, 4}].empty());
  CHECK(layers[{1, 0}] == std::set<int>{0});
  CHECK(layers[{0, 4}] == std::set<int>{7});
  CHECK(parts[{0, 0}] == std::set<ModelPart>{ModelPart::Embedding, ModelPart::Layers});  // the layers' task: 0 s
  CHECK(parts[{1, 4}] == std::set<ModelPart>{ModelPart::Layers, ModelPart::Head});
  CHECK(tp_layer_collectives[{0, 0}] == 0);
  CHECK(tp_layer_collectives[{1, 4}] == 0);
  CHECK(tp_layer_collectives[{0, 1}] > 0);
  // Stage 0's chunk 0 is the embedding's forward alone; its chunk 1 one layer; stage 1's chunk 4 the head alone.
  const std::vector<StageLayout> st = stage_layouts(e);
  const StageCosts k0 = stage_costs(e, two_dgx(), st[0]), k1 = stage_costs(e, two_dgx(), st[1]);
  CHECK(k0.embed_forward_s > 0);
  CHECK(seconds[{0, 0}] == k0.embed_forward_s);
  CHECK(seconds[{0, 1}] == k0.layer_forward_s);
  CHECK(seconds[{1, 4}] == k1.extra_forward_s);
  check_bytes_match_analytic(e);
  std::vector<TaskId> order;
  CHECK_NOTHROW(boost::topological_sort(g.graph, std::back_inserter(order)));
}

TEST_CASE("A hierarchical all-reduce becomes intra-node, inter-node and intra-node phases") {
  Experiment e = small(R"({"preset": "dp", "dp": 16, "collective": "hierarchical"})");
  TaskGraph g = expand(e, two_dgx());
  int intra = 0, inter = 0;
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* c = std::get_if<Collective>(&g[id].body)) {
      auto n = g.groups[static_cast<std::size_t>(c->group)].size();
      intra += n == 8 ? 1 : 0;
      inter += n == 2 ? 1 : 0;
      CHECK(n != 16);
    }
  // Per gradient bucket: 2 nodes x (reduce-scatter + all-gather) = 4 intra-node collectives, and 8 inter-node rings
  // of 2 (one per local index): twice as many inter-node as intra-node collectives.
  CHECK(intra > 0);
  CHECK(inter == 2 * intra);
  check_bytes_match_analytic(e);
}

namespace {

// The compute tasks of a device in expansion (= stream) order.
std::vector<const Compute*> compute_order(const TaskGraph& g, int device) {
  std::vector<const Compute*> out;
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* c = std::get_if<Compute>(&g[id].body); c && c->device == device) out.push_back(c);
  return out;
}

// The strategy of megatron-3d with the JSON members `fields` on top, as in R"("tp": 2, "sp": true)".
std::string megatron_3d(const std::string& fields) {
  return R"({"preset": "megatron-3d", )" + fields + "}";
}

bool has_compute_successor(const TaskGraph& g, TaskId id, int device) {
  for (auto [e, last] = boost::out_edges(id, g.graph); e != last; ++e)
    if (const auto* c = std::get_if<Compute>(&g[boost::target(*e, g.graph)].body); c && c->device == device)
      return true;
  return false;
}

}  // namespace

TEST_CASE("The embedding runs before the first layer and the head after the last layer in their own tasks") {
  Experiment e = small(R"({"preset": "megatron-3d", "tp": 2})", R"({"global_batch": 1, "micro_batch": 1})");
  ExpandOptions all_layers;
  all_layers.layer_group = 8;
  TaskGraph g = expand(e, two_dgx(), all_layers);
  std::vector<std::pair<TaskKind, ModelPart>> seen;
  for (const Compute* c : compute_order(g, 0)) seen.emplace_back(c->kind, c->part);
  // Full recompute (megatron-3d): the layers' recompute precedes their backward.
  const std::vector<std::pair<TaskKind, ModelPart>> expected = {
      {TaskKind::Forward, ModelPart::Embedding},  {TaskKind::Forward, ModelPart::Layers},
      {TaskKind::Forward, ModelPart::Head},       {TaskKind::Backward, ModelPart::Head},
      {TaskKind::Recompute, ModelPart::Layers},   {TaskKind::Backward, ModelPart::Layers},
      {TaskKind::Backward, ModelPart::Embedding}, {TaskKind::Optimizer, ModelPart::Layers}};
  CHECK(seen == expected);
  for (const Compute* c : compute_order(g, 0)) {
    if (c->kind != TaskKind::Optimizer) CHECK((c->part == ModelPart::Layers) == (c->layer >= 0));
    if (c->part == ModelPart::Head && c->kind == TaskKind::Forward) CHECK(c->flops > 0);
  }
}

TEST_CASE("Every TP collective is awaited by a compute task of each member as Megatron-LM waits before an op returns") {
  // Before: the exposed all-reduces ending a stage's forward (and the hidden ones ending its backward) ran beside the
  // next op's compute. Checked with the overlap (hidden backward collectives) and without it.
  for (const char* overlap : {"true", "false"}) {
    INFO("tp_overlap " << overlap);
    Experiment e = small(megatron_3d(R"("dp": 2, "tp": 2, "pp": 4, "tp_overlap": )" + std::string(overlap)));
    TaskGraph g = expand(e, two_dgx());
    int collectives = 0;
    for (const auto& [id, c] : test::tasks_of<Collective>(g)) {
      if (c->cls != CommClass::TpCollective) continue;
      ++collectives;
      for (int x : g.groups[static_cast<std::size_t>(c->group)]) CHECK(has_compute_successor(g, id, x));
    }
    CHECK(collectives > 0);
  }
}

TEST_CASE("Without tp_overlap the backward TP collectives follow the backward compute instead of running beside it") {
  auto backward_collective_follows_compute = [](bool overlap) {
    Experiment e = small(megatron_3d(R"("tp": 2, "tp_overlap": )" + std::string(overlap ? "true" : "false")),
                         R"({"global_batch": 1, "micro_batch": 1, "recompute": "none"})");
    TaskGraph g = expand(e, two_dgx());
    for (const auto& [id, c] : test::tasks_of<Collective>(g)) {
      if (!c->backward || c->cls != CommClass::TpCollective) continue;
      for (auto [edge, last] = boost::in_edges(id, g.graph); edge != last; ++edge)
        if (const auto* before = std::get_if<Compute>(&g[boost::source(*edge, g.graph)].body))
          if (before->kind == TaskKind::Backward && before->part == ModelPart::Layers && before->layer == c->layer)
            return true;
    }
    return false;
  };
  CHECK_FALSE(backward_collective_follows_compute(true));
  CHECK(backward_collective_follows_compute(false));
}

// megatron-3d on 4 stages (16 micro-batches of the small model) with the given tp and pipeline exchange.
static Experiment four_stages(int tp, bool megatron_p2p) {
  return small(megatron_3d(R"("dp": 1, "pp": 4, "tp": )" + std::to_string(tp) + R"(, "p2p": ")" +
                           (megatron_p2p ? "megatron" : "async") + "\""));
}

TEST_CASE("Megatron p2p scatter-gathers activations over tp without sp and async p2p sends them whole") {
  // x = seq 256 x micro-batch 1 x hidden 512 = 131072 elements of 2 bytes.
  for (bool megatron : {true, false}) {
    INFO("p2p megatron " << megatron);
    Experiment e = four_stages(2, megatron);
    TaskGraph g = expand(e, two_dgx());
    int sends = 0, gathers = 0;
    for (TaskId id = 0; id < g.size(); ++id) {
      if (const auto* p = std::get_if<P2P>(&g[id].body)) {
        ++sends;
        CHECK(p->bytes == (megatron ? 131072.0 : 262144.0));
      }
      if (const auto* c = std::get_if<Collective>(&g[id].body))
        if (c->op == CollectiveOp::AllGather && c->cls == CommClass::TpCollective && c->layers == 0) ++gathers;
    }
    // 16 micro-batches cross 3 boundaries each way on both TP ranks; one all-gather per received boundary per TP group.
    CHECK(sends == 16 * 3 * 2 * 2);
    CHECK(gathers == (megatron ? 16 * 3 * 2 : 0));
    check_bytes_match_analytic(e);
  }
  check_bytes_match_analytic(
      small(R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 2, "schedule": "interleaved", "chunks": 2})"));
}

TEST_CASE("Megatron p2p blocks: a transfer waits for its receiver and the sender's next op waits for the transfer") {
  for (bool megatron : {true, false}) {
    INFO("p2p megatron " << megatron);
    TaskGraph g = expand(four_stages(1, megatron), two_dgx());
    auto pass_on = [&](TaskId id, int device) {
      const auto* c = std::get_if<Compute>(&g[id].body);
      return c && c->device == device && c->kind != TaskKind::Optimizer;
    };
    int sends = 0, posted = 0, blocking = 0;
    for (const auto& [id, p] : test::tasks_of<P2P>(g)) {
      ++sends;
      bool waits_for_receiver = false, sender_waits = false;
      for (auto [it, end] = boost::in_edges(id, g.graph); it != end; ++it)
        waits_for_receiver |= pass_on(boost::source(*it, g.graph), p->dst);
      for (auto [it, end] = boost::out_edges(id, g.graph); it != end; ++it)
        sender_waits |= pass_on(boost::target(*it, g.graph), p->src);
      posted += waits_for_receiver;
      blocking += sender_waits;
    }
    // 16 micro-batches x 3 boundaries x 2 directions. Stages 1-3 post their first receive before running anything;
    // the last backward of stages 1-3 sends with nothing after it but the optimizer step.
    CHECK(sends == 96);
    CHECK(posted == (megatron ? 96 - 3 : 0));
    CHECK(blocking == (megatron ? 96 - 3 : 0));
  }
}

TEST_CASE("Interleaved Megatron p2p sends a steady-state forward's output after the backward that follows it") {
  // pp 2, 2 chunks, 16 micro-batches: 32 virtual forwards per device; warm-up 2(p - s - 1) + (v - 1)p forwards
  // (stage 0: 4, stage 1: 2), so 28 and 30 steady-state forward-backward pairs exchange once after the backward.
  for (const char* schedule : {R"("interleaved", "chunks": 2)", R"("1f1b")"}) {
    INFO(schedule);
    Experiment e = small(megatron_3d(R"("dp": 1, "tp": 1, "pp": 2, "schedule": )" + std::string(schedule)));
    TaskGraph g = expand(e, two_dgx());
    int after_backward = 0;
    for (const auto& [id, p] : test::tasks_of<P2P>(g)) {
      if (p->backward) continue;
      for (auto [it, end] = boost::in_edges(id, g.graph); it != end; ++it) {
        const auto* c = std::get_if<Compute>(&g[boost::source(*it, g.graph)].body);
        if (c && c->device == p->src && c->kind == TaskKind::Backward) {
          ++after_backward;
          break;
        }
      }
    }
    // Forward sends of the pairs: stage 0 sends every forward (28 in pairs); stage 1 pairs virtual forwards 2..31,
    // of which chunk 0 ((j mod 4) div 2 = 0: 4, 5, 8, 9, ..., 28, 29) are 14 - those of chunk 1 feed the head.
    CHECK(after_backward == (std::string(schedule) == R"("1f1b")" ? 0 : 28 + 14));
  }
}

TEST_CASE("The vocabulary-parallel embedding and output layer add their TP collectives per micro-batch") {
  // pp 2, tp 2, 16 micro-batches. Embedding (stage 0): all-reduce forward, and under sp an all-gather of the gradient
  // backward. Output layer (stage 1): all-reduce of the input gradient, or under sp an all-gather forward and a
  // re-gather plus a reduce-scatter (costed as an all-gather) backward.
  for (bool sp : {false, true}) {
    INFO("sp " << sp);
    Experiment e = small(megatron_3d(R"("tp": 2, "pp": 2, "sp": )" + std::string(sp ? "true" : "false")));
    TaskGraph g = expand(e, two_dgx());
    std::array<int, 2> reduces{}, gathers{};
    for (const auto& [id, c] : test::tasks_of<Collective>(g)) {
      if (c->cls != CommClass::TpCollective || c->layers != 0 || c->microbatch < 0) continue;
      const int stage = g.groups[static_cast<std::size_t>(c->group)].front() / 2;
      if (!sp && c->op == CollectiveOp::AllGather) continue;  // the scatter-gather of pipeline transfers
      (c->op == CollectiveOp::AllReduce ? reduces : gathers)[static_cast<std::size_t>(stage)]++;
    }
    CHECK(reduces[0] == 16);
    CHECK(gathers[0] == (sp ? 16 : 0));
    CHECK(reduces[1] == (sp ? 0 : 16));
    CHECK(gathers[1] == (sp ? 3 * 16 : 0));
    check_bytes_match_analytic(e);
  }
}

TEST_CASE("Sequence parallelism all-reduces the norm and row-parallel-bias gradients over tp once per step") {
  // 8 layers of hidden 512 with biases on pp 2: per layer two norms (2 x 2h) and two row-parallel biases (2h) are
  // replicated over tp, 3072 elements; stage 0 holds 4 layers (12288), stage 1 also the final norm (2h): 13312.
  for (bool sp : {false, true}) {
    INFO("sp " << sp);
    Experiment e = small(megatron_3d(R"("dp": 2, "tp": 2, "pp": 2, "sp": )" + std::string(sp ? "true" : "false")));
    TaskGraph g = expand(e, two_dgx());
    std::vector<std::int64_t> elems;
    for (const auto& [id, c] : test::tasks_of<Collective>(g))
      if (c->cls == CommClass::TpCollective && c->microbatch < 0) elems.push_back(c->elems);
    std::sort(elems.begin(), elems.end());
    CHECK(elems == (sp ? std::vector<std::int64_t>{12288, 12288, 13312, 13312} : std::vector<std::int64_t>{}));
    check_bytes_match_analytic(e);
  }
}
