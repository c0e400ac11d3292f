#include "strategies/pipeline/StagePlan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "strategies/pipeline/PipelineEval.hpp"
#include "strategies/pipeline/StageMemory.hpp"
#include "strategies/placement/Layout.hpp"

namespace placesim {

std::vector<StagePlan> stage_plan(const Experiment& e, const StageWork& w) {
  const std::vector<StageLayout> layouts = stage_layouts(e);
  std::vector<StagePlan> out;
  for (const StageLayout& st : layouts) {
    StagePlan p;
    p.stage = st.stage;
    p.chunk_layers = st.chunk_layers;
    p.activation_layers = activation_layer_equivalents(e, st);
    if (e.strategy.schedule == Schedule::Interleaved && e.strategy.pp > 1 && !e.strategy.ep_overlap)
      p.inflight_passes = interleaved_peak(e, st, false);
    else if ((chunks_per_stage(e.strategy) > 1 && e.strategy.pp > 1) || e.strategy.ep_overlap)  // the order walked
      p.inflight_passes = walked_peak(e, st, std::vector<double>(st.chunk_layers.size(), 1.0));
    else
      p.inflight_passes = st.n_layers > 0 ? p.activation_layers / static_cast<double>(st.n_layers) : 0;
    out.push_back(std::move(p));
  }
  // The bubble: one step of the schedule with every virtual stage's own durations.
  const std::vector<std::int64_t> layers = virtual_stage_layers(e);
  PipelineTimes times;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const double n = static_cast<double>(layers[k]);
    times.forward_by_virtual_stage.push_back(n * w.layer_forward_s);
    times.backward_by_virtual_stage.push_back(n * w.layer_backward_s);
  }
  if (layers.empty()) return out;
  const auto& s = e.strategy;
  for (std::size_t k = 0; k < layers.size(); ++k) {  // a model's ends: each direction's under dualpipe
    const int pp = static_cast<int>(s.pp), vstages = static_cast<int>(layers.size()), v = static_cast<int>(k);
    if (starts_model(s.schedule, pp, v)) {
      times.forward_by_virtual_stage[k] += w.embedding_forward_s;
      times.backward_by_virtual_stage[k] += w.embedding_backward_s;
    }
    if (ends_model(s.schedule, pp, vstages, v)) {
      times.forward_by_virtual_stage[k] += w.head_forward_s;
      times.backward_by_virtual_stage[k] += w.head_backward_s;
    }
  }
  PipelineSchedule schedule;
  try {
    schedule = make_schedule(shape_of(e.strategy, 1), strategy_shape_fields());
  } catch (const InputError&) {  // more passes than the evaluator accepts
    for (StagePlan& p : out) p.bubble_fraction = p.bubble_s = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  const TimelineIdle idle = timeline_idle(evaluate_pipeline(schedule, times));
  for (std::size_t s = 0; s < out.size(); ++s) {
    out[s].bubble_s = idle.idle_s[s];
    out[s].bubble_fraction = idle.fraction(s);
  }
  return out;
}

}  // namespace placesim
