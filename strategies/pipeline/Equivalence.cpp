#include "strategies/pipeline/Equivalence.hpp"

#include "strategies/pipeline/PipelineEval.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"

namespace placesim {

namespace {

std::string given_up(const StrategySpec& s) {
  switch (s.schedule) {
    case Schedule::PipeDream:
      if (s.pp == 1)
        return "it updates the weights after every micro-batch instead of once per global batch of " +
               std::to_string(s.microbatches) + " micro-batches";
      return "each stage applies every micro-batch's gradient at once (weight stashing): a gradient is taken at "
             "weights its stage has updated since, and stages compute one micro-batch at different weight versions, "
             "so state consistency across stages and the single-device update order are given up";
    case Schedule::PipeDream2BW:
      if (s.pp == 1) return "";  // one stage: every gradient is taken at the version it updates (accumulation)
      return "a new weight version every " + std::to_string(s.microbatches) +
             " micro-batches, double-buffered: gradients are taken at the previous version and applied to the "
             "next, so the single-device update order (gradient integrity per step) is given up";
    case Schedule::LocalSGD:
      // One local step per round of one micro-batch per replica, a round per step: every replica steps from the
      // averaged weights and their average is the mini-batch SGD step of the M micro-batches (to rounding; found by
      // the numeric executor, sim/verify).
      if (s.local_steps == 1 && s.replicas == s.microbatches) return "";
      return std::to_string(s.replicas) + " replica(s) each take " + std::to_string(s.local_steps) +
             " local step(s) of one micro-batch between averagings: updates follow every micro-batch rather than "
             "every global batch, and replicas' weights differ between averagings, so state consistency holds only "
             "at the averaging";
    default:
      return "";
  }
}

}  // namespace

Equivalence training_equivalence(const StrategySpec& strategy) {
  Equivalence e;
  e.given_up = given_up(strategy);
  if (e.given_up.empty()) return e;
  e.equivalent = false;
  const PipelineSchedule schedule = make_schedule(shape_of(strategy, 4), strategy_shape_fields());
  PipelineTimes times;
  times.forward_s = 1;
  times.backward_s = 2;
  const PipelineMetrics m = measure_pipeline(schedule, evaluate_pipeline(schedule, times));
  e.delay = m.delay;
  return e;
}

}  // namespace placesim
