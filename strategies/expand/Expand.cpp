#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <tuple>

#include "strategies/expand/Expander.hpp"
#include "topology/cluster/Fabric.hpp"

namespace placesim {

namespace {

// The layers of the first model chunk (virtual stage), by which layers are grouped into compute tasks.
int layers_per_chunk(const Experiment& e) {
  const auto& s = e.strategy;
  if (e.model.opaque())  // under dualpipe a chunk is one direction's stage
    return static_cast<int>(std::max<std::int64_t>(
        1, std::max<std::int64_t>(1, e.model.opaque_layers / s.pp) / (bidirectional(s.schedule) ? 1 : s.chunks)));
  // The first virtual stage may hold the embedding alone: its first one with layers.
  for (std::int64_t n : virtual_stage_layers(e))
    if (n > 0) return static_cast<int>(n);
  return 1;
}

// Compute tasks per layer group: every device runs each pass of each micro-batch on each chunk (with context
// parallelism the attention's own tasks too: cp ring steps, or one kernel beside the all-gathered K/V).
double passes_per_group(const Experiment& e) {
  const auto& s = e.strategy;
  double passes = e.training.recompute == Recompute::None ? 2 : 3;
  if (s.cp > 1) passes *= s.cp_comm == CpComm::Ring || s.cp_impl == CpImpl::PyTorch ? 1 + static_cast<double>(s.cp) : 2;
  return static_cast<double>(s.devices()) * static_cast<double>(s.microbatches * s.chunks) * chunk_microbatch_share(s) *
         passes;
}

}  // namespace

// Layers of every virtual stage (an opaque model's even split).
std::vector<std::int64_t> chunk_layer_counts(const Experiment& e) {
  if (!e.model.opaque()) return virtual_stage_layers(e);
  return std::vector<std::int64_t>(static_cast<std::size_t>(e.strategy.pp * e.strategy.chunks), layers_per_chunk(e));
}

int layer_group_size(const Experiment& e, const ExpandOptions& o) {
  const int per_chunk = layers_per_chunk(e);
  // Offloaded activations move layer by layer (offloaded_activation_layers): one layer per compute task. MoE layers
  // exchange their tokens in the middle of each layer: one layer per group. DualPipe's pairs overlap layer by layer
  // (expand_pair, paired_walked_peak).
  if (e.strategy.placement.activations == Mode::Offloaded || e.model.moe() || overlaps_pairs(e.strategy.schedule))
    return 1;
  // Resharded after every backward, a chunk's op gathers its first unit (one layer, FSDP2's unit) before any compute
  // can start: a group of g layers would expose g layers' gather at every op.
  if (e.strategy.regathers_after_backward() && o.layer_group <= 0) return 1;
  if (o.layer_group > 0) {
    const std::vector<std::int64_t> counts = chunk_layer_counts(e);
    return static_cast<int>(std::min<std::int64_t>(o.layer_group, *std::max_element(counts.begin(), counts.end())));
  }
  const double ops = passes_per_group(e);
  for (int g = 1; g <= per_chunk; ++g)
    if (per_chunk % g == 0 && ops * (per_chunk / g) <= o.task_budget) return g;
  return per_chunk;
}

// Exact for uneven chunks: every virtual stage's layers in groups, over the stages' devices.
double estimated_compute_tasks(const Experiment& e, const ExpandOptions& o) {
  const std::int64_t group = layer_group_size(e, o);
  double groups = 0;  // layer groups of all virtual stages
  for (std::int64_t n : chunk_layer_counts(e))
    groups += static_cast<double>((std::max<std::int64_t>(1, n) + group - 1) / group);
  const auto& s = e.strategy;
  return passes_per_group(e) / static_cast<double>(s.pp * s.chunks) * groups;
}

namespace {

// The blocks a straggler or a degraded NIC or NVLink touches, each with its first cause (a degraded rail is every
// node's: it touches none).
std::map<int, std::string> touched_blocks(const Folding& f, const Experiment& e, const ClusterSpec& c) {
  std::map<int, std::string> touched;
  const auto devices = static_cast<int>(std::min<std::int64_t>(e.strategy.devices(), c.devices()));
  char text[128];
  if (c.has_stragglers())
    for (int g = 0; g < devices; ++g)
      if (const double speed = c.straggler_speed(g); speed != 1 && !touched.count(f.block(g))) {
        const std::string gpu = "gpu " + std::to_string(g), node = "node " + std::to_string(g / c.gpus_per_node);
        const std::string& name = c.slow.count(gpu) || !c.slow.count(node) ? gpu : node;
        std::snprintf(text, sizeof text, "%s at %.3gx, cluster.%s", name.c_str(), speed,
                      c.slow.count(name) ? "slow" : "speed_spread");
        touched.emplace(f.block(g), text);
      }
  for (const auto& [name, left] : c.degraded)
    if (const int gpu = c.degraded_link(name).gpu; gpu >= 0 && gpu < devices) {
      std::snprintf(text, sizeof text, "%s at %.3g, cluster.degraded", name.c_str(), left);
      touched.try_emplace(f.block(gpu), text);
    }
  return touched;
}

// Simulates the blocks an imperfection touches apart: the shortest run of consecutive blocks (going round) holding
// them, after one untouched block; the rest fold onto that untouched block. Unfolds, with the reason, when the
// simulated blocks would be half of them or more.
void place_apart(Folding& f, const Experiment& e, const ClusterSpec& c) {
  std::map<int, std::string> touched = touched_blocks(f, e, c);
  if (touched.empty()) return;
  // A context-parallel ring spanning blocks is folded as a rotation of itself, which a touched block breaks: blocks
  // grow to hold whole cp groups.
  if (const int cp = static_cast<int>(e.strategy.cp); f.folded_lanes % cp != 0) {
    f.folded_lanes = std::lcm(f.folded_lanes, cp);
    touched = touched_blocks(f, e, c);
  }
  const int blocks = f.blocks();
  std::vector<int> t;
  for (const auto& entry : touched) t.push_back(entry.first);
  // The run leaves out the largest gap between touched blocks.
  int start = t.front(), largest_gap = -1;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const int next = t[(i + 1) % t.size()];
    if (const int gap = ((next - t[i] - 1) % blocks + blocks) % blocks; gap > largest_gap) {
      largest_gap = gap;
      start = next;
    }
  }
  const int window = blocks - largest_gap + 1;
  if (2 * window > blocks) {
    const std::size_t more = t.size() - 1;
    f.reason = touched.begin()->second + (more ? " and " + std::to_string(more) + " more" : "") +
               (more ? " make " : " makes ") + std::to_string(t.size()) + " of " + std::to_string(blocks) +
               " blocks differ; simulated apart they would run " + std::to_string(std::min(window, blocks)) +
               " of the " + std::to_string(blocks);
    f.folded_lanes = f.lanes;
    return;
  }
  f.window = window;
  f.rotation = ((start - 1) % blocks + blocks) % blocks;
  for (const auto& [block, cause] : touched)
    f.apart += (f.apart.empty() ? "block " : "; block ") + std::to_string(block) + " (" + cause + ")";
}

}  // namespace

Folding plan_folding(const Experiment& e, const ClusterSpec& c) {
  const StrategySpec& s = e.strategy;
  Folding f;
  f.tp = static_cast<int>(s.tp);
  f.lanes = static_cast<int>(s.data_ranks());
  f.folded_lanes = f.lanes;
  if (f.lanes == 1) return f;
  // Stages on different accelerators, or a leaf switch's uplinks degraded, make the blocks differ throughout.
  const bool leaf = std::any_of(c.degraded.begin(), c.degraded.end(),
                                [](const auto& entry) { return entry.first.rfind("leaf ", 0) == 0; });
  if (leaf || c.mixed()) {
    f.reason = std::string(leaf ? "cluster.degraded names a leaf switch" : "cluster.accelerators mixes accelerators") +
               ", so the blocks differ";
    return f;
  }
  const int gpn = c.gpus_per_node;
  // Block 0 of a stage holds devices [0, tp x folded_lanes) of the stage's slab of tp x lanes devices: whole nodes
  // when both are multiples of the node's GPUs. Its lanes hold whole cp groups and whole dp_shard groups (unless
  // one dp_shard group spans every lane), so every group of another block is a shifted copy of one of block 0's.
  if ((f.tp * f.lanes) % gpn != 0) {
    f.reason = "a stage's " + std::to_string(f.tp * f.lanes) + " devices (tp x cp x dp) do not fill whole nodes of " +
               std::to_string(gpn) + " GPUs";
    return f;
  }
  // Context parallelism's cp ranks form rings (ring attention's K/V and PyTorch's K/V gradients) or all-gather
  // groups: a block holds whole groups, or a group whole blocks (below). A ring spanning blocks is a rotation of
  // itself under a move by one block: block 0's ranks send to their successors' real devices (routed as mirrored
  // hops) and receive what their predecessor's representative sends.
  int lanes = gpn / std::gcd(gpn, f.tp);
  // Expert parallelism's all-to-alls stay inside a block: whole ep groups (ep consecutive ranks of the stage) per
  // block.
  if (s.ep > 1) lanes = std::lcm(lanes, static_cast<int>(s.ep / std::gcd(s.ep, s.tp)));
  const int shard = static_cast<int>(s.degree(kShardAxis));
  if (shard != f.lanes) lanes = std::lcm(lanes, shard);
  // Blocks cover whole leaf switches (unless every NIC is on one leaf), so that moving by a block maps each route to
  // one with the same switches: a fat-tree's leaf takes switch_radix / 2 NICs in node order, a rail-optimized unit
  // switch_radix / 2 nodes. An oversubscribed fabric needs it (its uplinks are shared). Without oversubscription a
  // leaf crossing adds only latency (a spine port carries its own NIC's traffic): the step folds into the smallest
  // blocks, each block-0 transfer taking its slowest congruent route, and says so when blocks split leaves (the
  // blocks' contention differs where their latencies do: measured within 1.1 %, tests/test_symmetry.cpp).
  const int down = c.switch_radix / 2;
  const bool rail = c.fabric == FabricTopology::RailOptimized;
  // Every pair of nodes crosses the same switches (one fat-tree leaf, or one rail-optimized unit: same-rail
  // transfers cross its rail's leaf, others the spine)...
  const bool same_switches = c.nodes == 1 || (rail ? c.nodes <= down : c.nodes * c.nics_per_node <= down);
  // ...but an oversubscribed unit's rail leaves still share their uplinks between all its nodes.
  const bool shared_uplinks = c.oversubscription > 1 && Fabric(c).leaves() > 1;
  int leaf_nodes = 1;  // nodes per leaf unit
  if (shared_uplinks || !same_switches) {
    const int nodes_per_leaf = rail ? down : down / std::gcd(down, c.nics_per_node);
    const int aligned = std::lcm(lanes, nodes_per_leaf * gpn / std::gcd(nodes_per_leaf * gpn, f.tp));
    if (shared_uplinks) {
      leaf_nodes = nodes_per_leaf;
      lanes = aligned;
    } else if (aligned != lanes && lanes < f.lanes && f.lanes % lanes == 0) {
      const int block_nodes = lanes * f.tp / gpn;
      f.note = "blocks of " + std::to_string(block_nodes) + (block_nodes == 1 ? " node" : " nodes") +
               " do not hold whole leaf switches (" + std::to_string(nodes_per_leaf) +
               " nodes per leaf): the blocks' transfers differ in the switches they cross, and block 0's take the "
               "slowest congruent route (--symmetry off resolves each block)";
    }
  }
  // Cp groups may span blocks, evenly: a block holds whole groups or a group whole blocks, so that moving by a block
  // maps each group's block-0 part onto a congruent part.
  const int cp = static_cast<int>(s.cp);
  if (lanes % cp != 0 && cp % lanes != 0) lanes = std::lcm(lanes, cp);
  if (lanes >= f.lanes || f.lanes % lanes != 0) {
    if (lanes < f.lanes || leaf_nodes > 1)
      f.reason = "the " + std::to_string(f.lanes) + " data lanes (cp x dp) do not divide into blocks of " +
                 std::to_string(lanes) + " lanes on whole nodes" +
                 (leaf_nodes > 1 ? " and whole leaf switches (" + std::to_string(leaf_nodes) +
                                       " nodes per leaf; their uplinks are oversubscribed)"
                                 : "");
    return f;
  }
  f.folded_lanes = lanes;
  place_apart(f, e, c);
  return f;
}

TaskGraph expand(const Experiment& e, const ClusterSpec& c, const ExpandOptions& o) {
  return detail::Expander(e, c, o).run();
}

namespace detail {

PipelineSchedule step_schedule(const Experiment& e) {
  return make_schedule(shape_of(e.strategy, 1), strategy_shape_fields());
}

Expander::Expander(const Experiment& e, const ClusterSpec& c, const ExpandOptions& o)
    : e_(e),
      c_(c),
      dp_(static_cast<int>(e.strategy.data_ranks())),
      tp_(static_cast<int>(e.strategy.tp)),
      pp_(static_cast<int>(e.strategy.pp)),
      v_(static_cast<int>(e.strategy.chunks)),
      m_(static_cast<int>(e.strategy.microbatches)),
      dl_(o.folded_lanes > 0 ? o.folded_lanes : static_cast<int>(e.strategy.data_ranks())),
      group_size_(layer_group_size(e, o)),
      layouts_(stage_layouts(e)),
      plan_(data_plan(e.strategy)) {
  for (const auto& st : layouts_) costs_.push_back(stage_costs(e, c, st));
  schedule_ = step_schedule(e);
  synchronous_ = synchronous_schedule(e.strategy.schedule);
  const bool blocking_p2p = e.strategy.p2p != PipelineP2P::Async && pp_ > 1 && !e.model.opaque();
  blocking_p2p_ = blocking_p2p && synchronous_;
  scatter_gather_ = blocking_p2p && e.strategy.scatter_gather();
  deepspeed_p2p_ = blocking_p2p_ && e.strategy.p2p == PipelineP2P::DeepSpeed;
  apply_microbatch_.assign(static_cast<std::size_t>(pp_), -1);
  for (int s = 0; s < pp_; ++s) {
    groups_.emplace_back();
    for (int k = 0; k < v_; ++k) groups_.back().push_back(chunk_groups(s, k));
  }
  cp_ = static_cast<int>(e.strategy.cp);
  loss_saved_ = loss_saved_bytes(e);
  loss_transient_ = loss_transient_bytes(e);
  if (e.model.moe()) {
    ep_ = static_cast<int>(e.strategy.ep);
    routing_ = expert_routing(e);
    g_.a2a_tokens.push_back(routing_.tokens_to);
    dispatch_split_ = 0;
    expert_last_.assign(static_cast<std::size_t>(pp_),
                        std::vector<TaskId>(static_cast<std::size_t>(dp_ * tp_), kNoTask));
  }
  g_.devices = dp_ * tp_ * pp_;
  last_.assign(static_cast<std::size_t>(g_.devices), {});
  for (auto& streams : last_) streams.fill(kNoTask);
  step_end_deps_.resize(static_cast<std::size_t>(g_.devices));
  first_backward_.assign(static_cast<std::size_t>(g_.devices), kNoTask);
}

int Expander::rank(int d, int t, int s) const {
  return t + tp_ * (d + dp_ * s);
}

int Expander::data_index_base(int d, AxisSet axes) const {
  const int shard = static_cast<int>(e_.strategy.degree(kShardAxis));  // cp x dp_shard
  int ds = d % shard, dr = d / shard;
  if ((axes & kShardAxis) != 0) ds = 0;
  if ((axes & kReplicateAxis) != 0) dr = 0;
  return ds + shard * dr;
}

bool Expander::in_group(int d, int base, AxisSet axes) const {
  return data_index_base(d, axes) == base;
}

int Expander::data_group(int t, int s, int base, AxisSet axes) {
  auto [it, fresh] = data_groups_.try_emplace({t, s, base, axes}, 0);
  if (fresh) {
    std::vector<int> members;
    for (int d = 0; d < dp_; ++d)
      if (in_group(d, base, axes)) members.push_back(rank(d, t, s));
    it->second = g_.add_group(std::move(members));
  }
  return it->second;
}

std::vector<Expander::DataCoset> Expander::add_data_collectives(Collective c, AxisSet axes, int t, int s) {
  std::vector<DataCoset> out;
  for (int d = 0; d < dl_; ++d) {
    if (data_index_base(d, axes) != d) continue;  // d is the first member of its group
    DataCoset coset;                              // its expanded members (all of them unless the step is folded)
    for (int x = 0; x < dl_; ++x)
      if (in_group(x, d, axes)) coset.members.push_back(x);
    c.group = data_group(t, s, d, axes);
    coset.tasks = add_dp_collective(c, s);
    out.push_back(std::move(coset));
  }
  return out;
}

int Expander::cp_group(int d, int t, int s) {
  const int base = d - d % cp_;
  auto [it, fresh] = cp_groups_.try_emplace({base, t, s}, 0);
  if (fresh) {
    std::vector<int> members;
    for (int c = 0; c < cp_; ++c) members.push_back(rank(base + c, t, s));
    it->second = g_.add_group(std::move(members));
  }
  return it->second;
}

int Expander::tp_group(int d, int s) {
  auto [it, fresh] = tp_groups_.try_emplace({d, s}, 0);
  if (fresh) {
    std::vector<int> members;
    for (int t = 0; t < tp_; ++t) members.push_back(rank(d, t, s));
    it->second = g_.add_group(std::move(members));
  }
  return it->second;
}

TaskId Expander::add_single(TaskBody body, int stage, int device, Stream stream) {
  TaskId id = g_.add(std::move(body), stage);
  TaskId& last = last_[static_cast<std::size_t>(device)][static_cast<std::size_t>(stream)];
  if (last != kNoTask) g_.depend(last, id);
  last = id;
  return id;
}

TaskId Expander::add_collective(Collective c, int stage) {
  TaskId id = g_.add(c, stage);
  for (int device : g_.groups[static_cast<std::size_t>(c.group)]) {
    TaskId& last = last_[static_cast<std::size_t>(device)][static_cast<std::size_t>(c.stream)];
    if (last != kNoTask) g_.depend(last, id);
    last = id;
  }
  return id;
}

Collective Expander::tp_group_collective(int d, int s, CollectiveOp op, std::int64_t elems, int elem_bytes) {
  Collective c;
  c.op = op;
  c.cls = CommClass::TpCollective;
  c.stream = Stream::TpComm;
  c.group = tp_group(d, s);
  c.elems = shard_elems(elems, tp_) * tp_;
  c.elem_bytes = elem_bytes;
  return c;
}

std::vector<LayerGroup> Expander::chunk_groups(int s, int chunk) const {
  const StageLayout& st = layouts_[static_cast<std::size_t>(s)];
  const int per_chunk = static_cast<int>(st.chunk_layers[static_cast<std::size_t>(chunk)]);
  const int first = static_cast<int>(st.chunk_first[static_cast<std::size_t>(chunk)]);
  std::vector<LayerGroup> out;
  if (st.bucket_elems > 0) {
    // An opaque model without layers: its stage is gathered and reduced bucket by bucket (no compute to group).
    for (std::int64_t done = 0; done < st.layer_elems; done += st.bucket_elems) {
      LayerGroup g;
      g.first_layer = first;
      g.layers = 1;
      g.elems = std::min(st.bucket_elems, st.layer_elems - done);
      g.units = {g.elems};
      out.push_back(std::move(g));
    }
    return out;
  }
  // With training.recompute_layers the chunk's first layers are recomputed and the rest are not: no group mixes them.
  const int recomputed = partial_recompute(e_) ? static_cast<int>(recomputed_layers(e_, per_chunk)) : per_chunk;
  for (const auto& [from, to] : {std::pair{0, recomputed}, std::pair{recomputed, per_chunk}})
    for (int l = from; l < to; l += group_size_) {
      LayerGroup g;
      g.first_layer = first + l;
      g.layers = std::min(group_size_, to - l);
      g.recomputed = from == 0;
      for (int k = 0; k < g.layers; ++k)
        g.units.push_back(is_moe_layer(e_.model, g.first_layer + k) ? st.moe_layer_elems : st.layer_elems);
      out.push_back(std::move(g));
    }
  // A virtual stage without layers (the first holding the embedding alone, the last the output layer and loss): one
  // group of no layers carries them.
  if (out.empty()) {
    LayerGroup g;
    g.first_layer = first;
    g.layers = 0;
    out.push_back(std::move(g));
  }
  if (starts_model(virtual_stage(chunk, s)) && st.embed_elems > 0) {
    out.front().has_embedding = true;
    out.front().units.push_back(st.embed_elems);
  }
  if (ends_model(virtual_stage(chunk, s)) && st.head_elems > 0) {
    out.back().has_head = true;
    out.back().units.push_back(st.head_elems);
  }
  for (auto& g : out)
    for (auto u : g.units) g.elems += u;
  return out;
}

double Expander::activation_bytes(const LayerGroup& g) const {
  return g.layers * (g.recomputed ? layer_activation_bytes(e_) : kept_layer_activation_bytes(e_));
}

double Expander::activation_bytes(const LayerGroup& g, std::size_t lane) const {
  if (!moe_group(g)) return activation_bytes(g);
  return moe_layer_activation_bytes(e_, routing_.computed(static_cast<int>(lane % static_cast<std::size_t>(ep_))));
}

std::int64_t Expander::padded(std::int64_t elems) const {
  return shard_elems(elems, dp_) * dp_;
}

TaskGraph Expander::run() {
  for (int s = 0; s < pp_; ++s) expand_stage(s);
  embedding_sync();
  for (int s = 0; s < pp_; ++s) sequence_parallel_grad_sync(s);
  for (int s = 0; s < pp_; ++s) expert_step_sync(s);
  mirror_sync();
  for (int s = 0; s < pp_; ++s) finish_step(s);
  set_resident_memory();
  return std::move(g_);
}

void Expander::expand_stage(int s) {
  const auto& order = schedule_.order[static_cast<std::size_t>(s)];
  last_backward_op_.assign(static_cast<std::size_t>(v_), -1);
  first_forward_op_.assign(static_cast<std::size_t>(v_), -1);
  first_backward_op_.assign(static_cast<std::size_t>(v_), -1);
  chunk_resharded_.assign(static_cast<std::size_t>(v_), true);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    const PipeOp& op = order[static_cast<std::size_t>(i)];
    const auto chunk = static_cast<std::size_t>(op.chunk);
    // A split backward's gradients are complete after its W op: the chunk's last backward is then its last W.
    if (op.kind == PipeOpKind::Backward || op.kind == PipeOpKind::Weight) {
      if (op.kind == PipeOpKind::Weight || !op.split) last_backward_op_[chunk] = i;
      if (op.kind == PipeOpKind::Backward && first_backward_op_[chunk] < 0) first_backward_op_[chunk] = i;
    }
    if (op.kind == PipeOpKind::Forward && first_forward_op_[chunk] < 0) first_forward_op_[chunk] = i;
  }
  const std::size_t lanes = static_cast<std::size_t>(dl_ * tp_);
  gather_window_.assign(lanes, {});
  grad_window_.assign(lanes, {});
  op_reduces_.assign(lanes, {});
  reduce_before_op_.assign(lanes, {});
  activation_window_.assign(lanes, {});
  activation_copies_.clear();
  op_tail_.assign(lanes, {});
  version_refs_.clear();
  current_version_ = 0;
  call_recvs_.assign(lanes, {});
  std::vector<StageOp> unsent;  // strategy.p2p=megatron: outputs waiting for the next exchange
  // A stage whose warm-up holds every forward (Megatron-Core's are_all_microbatches_in_warmup).
  all_warmup_ = false;
  if (v_ > 1) {
    bool backward_seen = false, forward_after = false;
    for (const PipeOp& op : order) {
      backward_seen = backward_seen || op.kind == PipeOpKind::Backward;
      forward_after = forward_after || (backward_seen && op.kind == PipeOpKind::Forward);
    }
    all_warmup_ = !forward_after;
  }
  issue_param_sync(s);
  if (blocking_p2p_) post_receives(s, order, 0);
  host_wait(s, e_.training.host_time_per_step_s, -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    const PipeOp& pop = order[static_cast<std::size_t>(i)];
    if (pop.kind == PipeOpKind::Forward && pop.chunk == 0)
      host_wait(s, e_.training.host_time_per_microbatch_s, pop.microbatch);
    if (pop.kind == PipeOpKind::Apply) {
      if (synchronous_) {
        apply_microbatch_[static_cast<std::size_t>(s)] = pop.microbatch;
      } else {
        for (int t = 0; t < tp_; ++t) flush_bucket(t, s);
        apply_inline(s, pop);
      }
      continue;
    }
    if (pop.kind == PipeOpKind::Average)
      throw InputError("strategy.schedule=localsgd is simulated for abstract pipelines only");
    if (pairs_interleave(order, i)) {
      expand_pair(s, i++);
      continue;
    }
    const StageOp op = expand_op(s, i, pop);
    if (op.weight) continue;  // a W op receives and sends nothing
    if (!blocking_p2p_) {
      send_boundary(s, op);
      continue;
    }
    unsent.push_back(op);
    if (ends_call(order, i)) p2p_call(s, order, i, unsent);
  }
  // The step's update waits for the last op's collectives too.
  for (int d = 0; d < dl_; ++d)
    for (int t = 0; t < tp_; ++t)
      for (TaskId id : op_tail_[static_cast<std::size_t>(d * tp_ + t)])
        step_end_deps_[static_cast<std::size_t>(rank(d, t, s))].push_back(id);
  for (int t = 0; t < tp_; ++t) flush_bucket(t, s);
}

Expander::OpRun Expander::start_op(int s, int i, const PipeOp& pop) {
  if (!blocking_p2p_ && scatter_gather_) receive_gather(s, pop);
  OpRun run;
  StageOp& op = run.op;
  op = StageOp{pop.kind == PipeOpKind::Forward, pop.microbatch, pop.chunk, pop.weight_version, pop.split,
               pop.kind == PipeOpKind::Weight};
  const auto& order = schedule_.order[static_cast<std::size_t>(s)];
  if (pop.pairs_next && i + 1 < static_cast<int>(order.size()) &&
      has_input(s, order[static_cast<std::size_t>(i) + 1])) {
    const PipeOp& next = order[static_cast<std::size_t>(i) + 1];
    op.pair_vstage = virtual_stage(next.chunk, s);
    op.pair_microbatch = next.microbatch;
    op.pair_forward = next.kind == PipeOpKind::Forward;
  }
  run.stash = stash_change(s, pop);
  run.groups = static_cast<int>(groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)].size());
  frontier_.assign(static_cast<std::size_t>(dl_ * tp_), {});
  for (std::size_t lane = 0; lane < op_reduces_.size(); ++lane) {
    if (!op_reduces_[lane].empty()) reduce_before_op_[lane] = op_reduces_[lane].back();
    op_reduces_[lane].clear();
  }
  const auto chunk = static_cast<std::size_t>(op.chunk);
  // Across data-parallel replicas an asynchronous schedule synchronises the gradients before each update, as a
  // synchronous one does before its step's.
  const bool before_update = !synchronous_ && dp_ > 1 && i + 1 < static_cast<int>(order.size()) &&
                             order[static_cast<std::size_t>(i) + 1].kind == PipeOpKind::Apply;
  const bool last_op_of_chunk = !op.forward && (i == last_backward_op_[chunk] || before_update);
  // A split backward's B ends no gradient: its W does.
  run.grads_done = !op.split && last_op_of_chunk;
  op_first_forward_ = op.forward && i == first_forward_op_[chunk];
  op_first_backward_ = !op.forward && i == first_backward_op_[chunk];
  op_last_backward_ = run.grads_done;
  // reshard_after_backward: the chunk's units are gathered again after each of its backwards (and at its first op).
  op_regather_ = e_.strategy.regathers_after_backward() && chunk_resharded_[chunk];
  chunk_resharded_[chunk] = !op.forward;
  // Kept gathered for the step, the units' gradients are reduce-scattered after the chunk's last backward, in the
  // units' order (torch.distributed.pipelining runs FSDP's post-backward of every unit then).
  defer_sync_ = last_op_of_chunk && e_.strategy.defers_grad_sync();
  return run;
}

void Expander::expand_part(const OpRun& run, int s, int k, int phase) {
  const int g = run.op.forward ? k : run.groups - 1 - k;
  expand_group(s, run.op, g, run.grads_done, k == run.groups - 1 ? run.stash : 0, phase);
}

void Expander::finish_op(const OpRun& run, int s) {
  if (defer_sync_)
    for (int g = 0; g < run.groups; ++g) sync_gradients(s, run.op, g, true);
  defer_sync_ = false;
}

StageOp Expander::expand_op(int s, int i, const PipeOp& pop) {
  const OpRun run = start_op(s, i, pop);
  for (int k = 0; k < run.groups; ++k) expand_part(run, s, k, kWholeGroup);
  finish_op(run, s);
  op_tail_ = frontier_;
  return run.op;
}

void Expander::swap_op_state(OpState& o) {
  auto mine =
      std::tie(frontier_, before_compute_, compute_of_group_, gather_of_group_, op_reduces_, expert_in_,
               expert_computes_, op_first_forward_, op_first_backward_, op_last_backward_, defer_sync_, op_regather_);
  auto kept = std::tie(o.frontier, o.before_compute, o.compute_of_group, o.gather_of_group, o.op_reduces, o.expert_in,
                       o.expert_computes, o.first_forward, o.first_backward, o.last_backward, o.defer_sync, o.regather);
  mine.swap(kept);  // a tuple of references swaps what they refer to
}

// DualPipe's overlapped pair (deepseek-ai/DualPipe, dualpipe/dualpipev.py _forward_backward_compute_chunk, and the
// DeepSeek-V3 report's figure 4): the forward of op i and the backward of op i + 1 run as one, their parts
// alternating on the compute stream so that each one's all-to-all runs beside the other's compute. Part by part:
// the forward's dense part, the backward's first all-to-all, the forward's dispatch, the backward's experts, the
// forward's experts, the backward's second all-to-all, the forward's combine, the backward's dense part; a dense
// layer is one part. Both start from what the op before the pair ended with; the op after follows both.
void Expander::expand_pair(int s, int i) {
  const auto& order = schedule_.order[static_cast<std::size_t>(s)];
  OpState state[2];
  OpRun runs[2];
  std::vector<std::pair<int, int>> parts[2];  // (k, phase) in each op's order
  for (int o = 0; o < 2; ++o) {
    swap_op_state(state[o]);  // the other op's state is kept aside: a fresh one for start_op, one entry per lane
    const auto lanes = static_cast<std::size_t>(dl_ * tp_);
    op_reduces_.assign(lanes, {});
    before_compute_.assign(lanes, {});
    gather_of_group_.assign(lanes, {});
    compute_of_group_.assign(lanes, kNoTask);
    runs[o] = start_op(s, i + o, order[static_cast<std::size_t>(i + o)]);
    for (int k = 0; k < runs[o].groups; ++k) {
      const int g = runs[o].op.forward ? k : runs[o].groups - 1 - k;
      for (int p = 0; p < group_phases(s, runs[o].op, g); ++p) parts[o].emplace_back(k, p);
    }
    swap_op_state(state[o]);
  }
  for (std::size_t n = 0; n < std::max(parts[0].size(), parts[1].size()); ++n)
    for (int o = 0; o < 2; ++o) {
      if (n >= parts[o].size()) continue;
      swap_op_state(state[o]);
      expand_part(runs[o], s, parts[o][n].first, parts[o][n].second);
      swap_op_state(state[o]);
    }
  std::vector<std::vector<TaskId>> tail(static_cast<std::size_t>(dl_ * tp_));
  for (int o = 0; o < 2; ++o) {
    swap_op_state(state[o]);
    finish_op(runs[o], s);
    send_boundary(s, runs[o].op);
    for (std::size_t lane = 0; lane < tail.size(); ++lane)
      tail[lane].insert(tail[lane].end(), frontier_[lane].begin(), frontier_[lane].end());
    swap_op_state(state[o]);
  }
  op_tail_ = std::move(tail);
}

// PipeDream keeps the weights each in-flight micro-batch's forward read until its backward: a version superseded by
// an Apply while still referenced becomes a stashed copy, freed by the backward that releases it last.
double Expander::stash_change(int s, const PipeOp& op) {
  if (synchronous_ || e_.strategy.schedule == Schedule::PipeDream2BW) return 0;
  if (op.kind == PipeOpKind::Forward) {
    ++version_refs_[op.weight_version];
    return 0;
  }
  int& refs = version_refs_[op.weight_version];
  --refs;
  if (refs == 0 && op.weight_version != current_version_)
    return -static_cast<double>(stashed_version_elems(e_, layouts_[static_cast<std::size_t>(s)])) *
           e_.training.param_bytes();
  return 0;
}

void Expander::apply_inline(int s, const PipeOp& op) {
  const StageCosts& k = costs_[static_cast<std::size_t>(s)];
  const double elems = static_cast<double>(layouts_[static_cast<std::size_t>(s)].elems());
  const double stashed = static_cast<double>(stashed_version_elems(e_, layouts_[static_cast<std::size_t>(s)]));
  const int superseded = current_version_++;
  auto it = version_refs_.find(superseded);
  const bool stash = e_.strategy.schedule == Schedule::PipeDream && it != version_refs_.end() && it->second > 0;
  for (int d = 0; d < dl_; ++d)
    for (int t = 0; t < tp_; ++t) {
      int x = rank(d, t, s);
      TaskId id = add_single(Compute{TaskKind::Optimizer, x, elems * k.optimizer_s_per_elem, 0, -1, 0, op.microbatch,
                                     -1, op.weight_version},
                             s, x, Stream::Compute);
      // The update reads the gradients the replicas all-reduced (none when dp = 1).
      auto& synced = step_end_deps_[static_cast<std::size_t>(x)];
      for (TaskId dep : synced) g_.depend(dep, id);
      synced.clear();
      if (stash) g_.set_memory(id, {}, {{x, State::Parameters, stashed * e_.training.param_bytes(), false}});
    }
}

void Expander::host_wait(int s, double seconds, int microbatch) {
  if (seconds <= 0) return;
  for (int d = 0; d < dl_; ++d)
    for (int t = 0; t < tp_; ++t) {
      const int x = rank(d, t, s);
      HostCompute h{x, seconds, 0, -1, true, microbatch};
      TaskId& compute = last_[static_cast<std::size_t>(x)][static_cast<std::size_t>(Stream::Compute)];
      const TaskId before = compute;
      const TaskId id = g_.add(h, s);  // on the host, ordered by the device's compute stream alone
      if (before != kNoTask) g_.depend(before, id);
      compute = id;  // the device's next compute task waits for it
    }
}

bool Expander::pairs_interleave(const std::vector<PipeOp>& order, int i) const {
  const auto at = static_cast<std::size_t>(i);
  return order[at].pairs_next && !blocking_p2p_ && at + 1 < order.size() && order[at].kind == PipeOpKind::Forward &&
         order[at + 1].kind == PipeOpKind::Backward;
}

const std::vector<TaskId>& Expander::preceding(std::size_t lane, const std::vector<TaskId>& frontier) const {
  return frontier.empty() ? op_tail_[lane] : frontier;
}

}  // namespace detail
}  // namespace placesim
