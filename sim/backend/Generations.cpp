#include "sim/backend/Generations.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Costs.hpp"
#include "strategies/placement/Layout.hpp"
#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

// The mean of a vector (0 when empty).
double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// The cluster with every node on `acc`.
ClusterSpec uniform(const ClusterSpec& c, const AcceleratorSpec& acc) {
  ClusterSpec out = c;
  out.accelerator = acc;
  out.node_kind.clear();
  out.node_kinds.clear();
  return out;
}

// The accelerator kind of GPU x's node (ClusterSpec::node_kind; -1: the cluster's accelerator).
int kind_of(const ClusterSpec& c, int x) {
  return c.node_kind[static_cast<std::size_t>(x / c.gpus_per_node)];
}

// "nodes 0-1" or "node 3".
std::string node_span(int first, int last) {
  return first == last ? "node " + std::to_string(first)
                       : "nodes " + std::to_string(first) + "-" + std::to_string(last);
}

// Per stage, the most layers its memory holds: the analytic bound (every transient buffer live) taken as linear in
// the stage's layers, a_s + b_s n, from the even split and the even split with a layer more on every stage, against
// the smallest memory among the stage's GPUs.
std::vector<std::int64_t> layers_that_fit(const Experiment& e, const ClusterSpec& c) {
  const auto& s = e.strategy;
  const int pp = static_cast<int>(s.pp);
  Experiment even = e, more = e;
  even.strategy.layers_per_stage = stage_layer_counts(e.model.layers, pp);
  more.strategy.layers_per_stage = even.strategy.layers_per_stage;
  for (auto& n : more.strategy.layers_per_stage) ++n;
  more.model.layers += pp;
  const Analysis a = analyze(even), b = analyze(more);
  std::vector<std::int64_t> most;
  for (int stage = 0; stage < pp; ++stage) {
    const double capacity = smallest_accelerator(e, c, stage).hbm_bytes;
    const double at = a.stages[static_cast<std::size_t>(stage)].memory.total(),
                 per_layer = b.stages[static_cast<std::size_t>(stage)].memory.total() - at;
    const double n = static_cast<double>(even.strategy.layers_per_stage[static_cast<std::size_t>(stage)]);
    most.push_back(per_layer > 0 ? static_cast<std::int64_t>(std::floor((capacity - (at - per_layer * n)) / per_layer))
                                 : e.model.layers);
  }
  return most;
}

}  // namespace

const AcceleratorSpec& smallest_accelerator(const Experiment& e, const ClusterSpec& c, int stage) {
  const int first = stage_first_gpu(e, stage), last = first + static_cast<int>(e.strategy.tp * e.strategy.data_ranks());
  const AcceleratorSpec* smallest = &c.node_accelerator(first / c.gpus_per_node);
  for (int node = first / c.gpus_per_node + 1; node <= (last - 1) / c.gpus_per_node; ++node)
    if (c.node_accelerator(node).hbm_bytes < smallest->hbm_bytes) smallest = &c.node_accelerator(node);
  return *smallest;
}

double layer_seconds_on(const Experiment& e, const ClusterSpec& c, int stage, const AcceleratorSpec& acc) {
  const std::vector<StageLayout> layouts = stage_layouts(e);
  const StageLayout& st = layouts[static_cast<std::size_t>(stage)];
  const StageCosts k = stage_costs(e, uniform(c, acc), st);
  const double dense = k.layer_forward_s + k.layer_backward_s + k.layer_recompute_s;
  if (st.n_layers == 0 || st.moe_layers == 0) return dense;
  const double moe = k.moe_forward_s + k.moe_backward_s + k.moe_recompute_s + mean(k.expert_forward_s) +
                     mean(k.expert_backward_s) + mean(k.expert_recompute_s);
  const double n = static_cast<double>(st.n_layers), m = static_cast<double>(st.moe_layers);
  return ((n - m) * dense + m * moe) / n;
}

std::vector<std::int64_t> balanced_split(std::int64_t layers, const std::vector<double>& per_layer_s,
                                         const std::vector<double>& ends_s, const std::vector<std::int64_t>& most) {
  const std::size_t p = per_layer_s.size();
  std::int64_t room = 0;
  for (std::int64_t m : most) room += std::max<std::int64_t>(1, m);
  const bool capped = !most.empty() && room >= layers;  // else no split fits: balance time alone
  std::vector<std::int64_t> n(p, 1);
  for (std::int64_t placed = static_cast<std::int64_t>(p); placed < layers; ++placed) {
    std::size_t best = p;
    double least = 0;
    for (std::size_t s = 0; s < p; ++s) {
      if (capped && n[s] >= most[s]) continue;
      const double t = static_cast<double>(n[s] + 1) * per_layer_s[s] + ends_s[s];
      if (best == p || t < least) {
        best = s;
        least = t;
      }
    }
    ++n[best];
  }
  return n;
}

void apply_generations(Experiment& e, ClusterSpec& c) {
  if (!c.mixed() || e.model.opaque()) return;
  const auto& s = e.strategy;
  const int pp = static_cast<int>(s.pp), per_stage = static_cast<int>(s.tp * s.data_ranks());
  // Per stage: its accelerator's layer time, and per GPU its speed relative to it.
  std::vector<double> layer_s(static_cast<std::size_t>(pp));
  c.generation_speed.assign(static_cast<std::size_t>(c.devices()), 1.0);
  bool differ = false;
  std::string note;
  for (int stage = 0; stage < pp; ++stage) {
    const int first = stage_first_gpu(e, stage), own = kind_of(c, first);
    const AcceleratorSpec& acc = c.node_accelerator(first / c.gpus_per_node);
    layer_s[static_cast<std::size_t>(stage)] = layer_seconds_on(e, c, stage, acc);
    differ = differ || own != kind_of(c, stage_first_gpu(e, 0));
    std::map<int, double> speed_of;  // per other kind in the stage, its GPUs' speed
    std::string others;
    for (int x = first; x < first + per_stage && x < c.devices(); ++x) {
      const int kind = kind_of(c, x);
      if (kind == own) continue;
      auto [it, fresh] = speed_of.try_emplace(kind, 0.0);
      if (fresh) {
        const AcceleratorSpec& other = c.node_accelerator(x / c.gpus_per_node);
        it->second = layer_s[static_cast<std::size_t>(stage)] / layer_seconds_on(e, c, stage, other);
        others += (others.empty() ? "" : ", ") + other.name;
      }
      c.generation_speed[static_cast<std::size_t>(x)] = it->second;
    }
    const int first_node = first / c.gpus_per_node, last_node = (first + per_stage - 1) / c.gpus_per_node;
    note += std::string(note.empty() ? "" : "; ") + "stage " + std::to_string(stage) + " on " + acc.name + " (" +
            node_span(first_node, last_node) + (others.empty() ? "" : ", with " + others + " GPUs at their speed") +
            ")";
  }
  // A pipeline across generations: the split that balances the stages' times, unless the experiment gives one.
  if (differ && pp > 1 && chunks_per_stage(s) == 1 && s.layers_per_stage.empty()) {
    const std::vector<StageLayout> layouts = stage_layouts(e);
    std::vector<double> ends(static_cast<std::size_t>(pp), 0.0);
    for (int stage = 0; stage < pp; ++stage) {
      const StageCosts k = stage_costs(e, c, layouts[static_cast<std::size_t>(stage)]);
      ends[static_cast<std::size_t>(stage)] =
          k.embed_forward_s + k.embed_backward_s + k.extra_forward_s + k.extra_backward_s;
    }
    e.strategy.layers_per_stage = balanced_split(e.model.layers, layer_s, ends, layers_that_fit(e, c));
    note += "; strategy.layers_per_stage ";
    for (std::size_t k = 0; k < e.strategy.layers_per_stage.size(); ++k)
      note += (k == 0 ? "[" : ", ") + std::to_string(e.strategy.layers_per_stage[k]);
    note += "] balances the stages (a layer's forward and backward: ";
    for (std::size_t k = 0; k < layer_s.size(); ++k)
      note += (k == 0 ? "" : ", ") + format_significant(layer_s[k] * 1e3, 3) + " ms";
    note += ")";
  } else if (differ && pp > 1 && s.layers_per_stage.empty()) {
    note += "; the default split does not balance the accelerators (give strategy.layers_per_stage)";
  }
  c.mixed_note = note;
}

}  // namespace placesim
