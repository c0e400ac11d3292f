#include "sim/converge/ConvergeModel.hpp"

#include <algorithm>
#include <map>

#include "sim/backend/Simulate.hpp"
#include "strategies/pipeline/PipelineEval.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/pipeline/PipelineTimeline.hpp"
#include "strategies/placement/Mesh.hpp"

namespace placesim {

namespace {

// Time one stage spent on each kind of op in one step.
struct StageTimes {
  double forward_s = 0, backward_s = 0, optimizer_s = 0;
};

struct StepTimes {
  std::vector<StageTimes> stages;
  double p2p_sum_s = 0;
  int p2p_count = 0;
};

// An op's time is its span, from its first record's start to its last one's end: the tensor-parallel collectives
// between its layers are inside it. A backward's span starts at its first recomputation, which runs before it.
StepTimes step_times(const Experiment& e, const PipelineSchedule& one_step, const SimulationRecord& all) {
  const SimulationRecord record = pipeline_records(e, all);
  const PipelineTimeline timeline = pipeline_timeline(one_step, record);
  std::map<std::pair<std::int64_t, int>, double> recompute_start;  // (stage, micro-batch) -> first recompute start
  for (const TaskRecord& r : record.tasks) {
    if (r.kind == TaskKind::Recompute) {
      auto key = std::make_pair(mesh_coord(e.strategy, r.device).pp, r.microbatch);
      auto [it, fresh] = recompute_start.try_emplace(key, r.start_s);
      if (!fresh) it->second = std::min(it->second, r.start_s);
    }
  }
  StepTimes t;
  t.stages.resize(one_step.order.size());
  for (std::size_t s = 0; s < one_step.order.size(); ++s)
    for (std::size_t i = 0; i < one_step.order[s].size(); ++i) {
      const PipeOp& op = one_step.order[s][i];
      double start = timeline[s][i].start_s;
      if (op.kind == PipeOpKind::Backward) {
        auto it = recompute_start.find({static_cast<std::int64_t>(s), op.microbatch});
        if (it != recompute_start.end()) start = std::min(start, it->second);
      }
      const double span = timeline[s][i].end_s - start;
      (op.kind == PipeOpKind::Forward    ? t.stages[s].forward_s
       : op.kind == PipeOpKind::Backward ? t.stages[s].backward_s
                                         : t.stages[s].optimizer_s) += span;
    }
  for (const TaskRecord& r : record.tasks) {
    if (r.stream == Stream::PpSend && r.kind == TaskKind::P2P && r.comm_class == CommClass::PpP2P) {
      t.p2p_sum_s += r.end_s - r.start_s;
      ++t.p2p_count;
    }
  }
  return t;
}

double makespan(const AbstractPipeline& p) {
  const PipelineTimeline timeline = evaluate_pipeline(make_schedule(p.shape, strategy_shape_fields()), p.times);
  double end = 0;
  for (const auto& stage : timeline)
    for (const OpInterval& x : stage) end = std::max(end, x.end_s);
  return end;
}

int applies_per_step(const PipelineShape& shape) {
  const PipelineSchedule one = make_schedule(shape, strategy_shape_fields());
  return static_cast<int>(std::count_if(one.order[0].begin(), one.order[0].end(),
                                        [](const PipeOp& op) { return op.kind == PipeOpKind::Apply; }));
}

Json per_stage_json(const std::vector<StageTimes>& stages, int microbatches) {
  Json out = Json::array();
  for (const StageTimes& s : stages)
    out.push_back(Json{{"forward_s", s.forward_s / microbatches},
                       {"backward_s", s.backward_s / microbatches},
                       {"optimizer_s", s.optimizer_s}});
  return out;
}

}  // namespace

DerivedPipeline derive_pipeline(const Experiment& e) {
  SimulateSettings settings;
  settings.reproducible = true;
  const SimulatedStep out = simulate_experiment(resolve_simulation(e), settings);
  DerivedPipeline d;
  AbstractPipeline& p = d.pipeline;
  p.shape = shape_of(e.strategy, 1);
  const StepTimes t = step_times(e, make_schedule(p.shape, strategy_shape_fields()), out.result.record);
  const int m = p.shape.microbatches;
  double optimizer = 0;
  p.times.forward_s = p.times.backward_s = 0;
  for (const StageTimes& s : t.stages) {
    p.times.forward_s = std::max(p.times.forward_s, s.forward_s / m);
    p.times.backward_s = std::max(p.times.backward_s, s.backward_s / m);
    optimizer = std::max(optimizer, s.optimizer_s);
  }
  if (!(p.times.forward_s > 0 && p.times.backward_s > 0))
    throw InputError("the simulated step of " + e.name +
                     " recorded no forward or backward compute to derive a pipeline from");
  p.times.p2p_s = t.p2p_count > 0 ? t.p2p_sum_s / t.p2p_count : 0;
  const bool synchronous = synchronous_schedule(p.shape.schedule);
  const double step = out.result.step_time_s;
  p.times.apply_s = synchronous ? std::max(0.0, step - makespan(p)) : optimizer / applies_per_step(p.shape);
  d.derivation = Json{{"method", "abstract pipeline with the op times of one step simulated with SimGrid"},
                      {"simulated_step_time_s", step},
                      {"abstract_step_time_s", makespan(p)},
                      {"per_stage", per_stage_json(t.stages, m)},
                      {"forward_s", p.times.forward_s},
                      {"backward_s", p.times.backward_s},
                      {"p2p_s", p.times.p2p_s},
                      {"apply_s", p.times.apply_s}};
  return d;
}

}  // namespace placesim
