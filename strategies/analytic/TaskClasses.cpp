#include "strategies/analytic/TaskClasses.hpp"

#include <algorithm>

#include "strategies/placement/Routing.hpp"

namespace placesim {

TaskClassifier::TaskClassifier(const Experiment& e, const AcceleratorSpec& acc)
    : model_(&e.model),
      selective_in_backward_(e.training.recompute == Recompute::Selective),
      memory_efficiency_(acc.profile.memory_efficiency) {
  layer_ = layer_times(e, acc);
  moe_ = moe_dense_times(e, acc);
  if (e.model.moe()) experts_ = expert_times(e, acc, static_cast<double>(expert_routing(e).computed(0)));
  head_ = logit_times(e, acc);
  embedding_ = embedding_times(e, acc);
  optimizer_per_elem_ = optimizer_step_s(1e9, e, acc) / 1e9;
}

const PassTimes& TaskClassifier::unit(const Compute& c) const {
  switch (c.part) {
    case ModelPart::Embedding:
      return embedding_;
    case ModelPart::Head:
      return head_;
    case ModelPart::Experts:
      return experts_;
    case ModelPart::Layers:
      break;
  }
  return model_->moe() && c.layer >= 0 && is_moe_layer(*model_, c.layer) ? moe_ : layer_;
}

namespace {

void add(ClassSeconds& to, const ClassSeconds& x, double times = 1) {
  to.gemm += times * x.gemm;
  to.attention += times * x.attention;
  to.memory += times * x.memory;
  to.launch += times * x.launch;
}

}  // namespace

ClassSeconds TaskClassifier::pass_classes(const PassTimes& p, TaskKind kind) const {
  if (kind == TaskKind::Recompute) return p.recompute_classes;
  if (kind != TaskKind::Backward) return p.forward_classes;
  ClassSeconds out = p.backward_classes;
  // Costs folds a selective recompute into the backward task (stage_costs).
  if (selective_in_backward_) add(out, p.recompute_classes);
  return out;
}

TaskClassSeconds TaskClassifier::split(const Compute& c, double seconds) const {
  return rescale(c, seconds, *this);
}

TaskClassSeconds TaskClassifier::rescale(const Compute& c, double seconds, const TaskClassifier& other) const {
  TaskClassSeconds out;
  if (c.kind == TaskKind::Optimizer) {
    out.optimizer = optimizer_per_elem_ > 0 ? seconds * other.optimizer_per_elem_ / optimizer_per_elem_ : seconds;
    return out;
  }
  double layers = c.part == ModelPart::Layers ? std::max(1, c.layers) : 1;
  const double pass = pass_classes(unit(c), c.kind).total();
  // Each ep rank's experts compute their own routed pairs: the first rank's classes in proportion.
  if (c.part == ModelPart::Experts && pass > 0) layers = seconds / pass;
  const double passes = layers * pass;
  // What the expansion added to the passes: memory-bound, at the other profile's memory efficiency.
  const double added = std::max(0.0, seconds - passes);
  add(out.passes, pass_classes(other.unit(c), c.kind), layers);
  out.passes.memory += added * memory_efficiency_ / other.memory_efficiency_;
  return out;
}

namespace {

void add(TaskClassSeconds& to, const TaskClassSeconds& x) {
  add(to.passes, x.passes);
  to.optimizer += x.optimizer;
}

}  // namespace

TaskClassSeconds device_class_seconds(const TaskGraph& g, int device, const TaskClassifier& classes) {
  return device_class_seconds(g, device, classes, classes);
}

TaskClassSeconds device_class_seconds(const TaskGraph& g, int device, const TaskClassifier& classes,
                                      const TaskClassifier& other) {
  TaskClassSeconds out;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto* c = std::get_if<Compute>(&g[i].body);
    if (c && c->device == device) add(out, classes.rescale(*c, c->seconds, other));
  }
  return out;
}

}  // namespace placesim
