#pragma once
#include <string>

#include "strategies/plan/RunPlan.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

struct SimulatedStep;

/// The time to train of a simulated step: its step time and the step's 90 % interval (traces/report/Interval.hpp)
/// turned into a run (strategies/plan/RunPlan.hpp).
TimeToTrain step_time_to_train(const SimulatedStep& s);

/// The simulate report's "time_to_train" section (README, Reports): per-token energy and cost always; with
/// training.tokens or training.steps the run's steps, days, GPU-hours, energy and cost; the goodput, MTBF and
/// checkpoint figures; and `assumptions`, a sentence for every default taken, with its source. A figure that needs
/// a price (run.gpu_hour_usd) or a rated GPU power is null without it.
Json time_to_train_json(const TimeToTrain& t);

/// The summary's lines "time to train", "goodput", "energy" and "cost".
std::string time_to_train_summary(const TimeToTrain& t);

}  // namespace placesim
