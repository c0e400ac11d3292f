#pragma once
#include <string>
#include <vector>

#include "strategies/placement/Experiment.hpp"
#include "topology/hardware/Accelerator.hpp"

namespace placesim {

/// A predicted step's error bar: the spread of published runs of the same stack family on the same accelerator
/// generation around placesim's predictions for them (workloads/stack/residuals.json, written by
/// `bench/validation_table.py --residuals` from the development tables). With n residuals r = ln(published step /
/// predicted step), mean m and standard deviation s, the real step lies with 90 % confidence in
///   predicted x exp(m -/+ t(0.95, n - 1) s sqrt(1 + 1/n))
/// (a prediction interval for one more run, Student's t): it is centred where the published runs were, not on the
/// prediction, so a family placesim predicts optimistically gets an interval above its step.
struct PredictionInterval {
  bool available = false;
  std::string family, generation;  ///< the group looked up
  int runs = 0;                    ///< published runs in the group
  double low_s = 0, high_s = 0;    ///< the 90 % interval of the real step time
  double centre_s = 0;             ///< predicted x exp(m): where the group's runs centre
  std::string basis;               ///< "31 megatron runs on hopper ..." or why there is no interval
};

/// The interval of `step_time_s` for experiment `e` on accelerator `acc`.
PredictionInterval prediction_interval(const Experiment& e, const AcceleratorSpec& acc, double step_time_s);

/// The interval of `step_time_s` from one group's residuals (available when there are at least 3).
PredictionInterval interval_from_residuals(const std::vector<double>& log_ratios, double step_time_s);

/// Student's t one-sided 95 % quantile for `dof` >= 1 degrees of freedom (the two-sided 90 % interval's).
double student_t95(int dof);

/// The report's "interval" section (under "simulation").
Json interval_json(const PredictionInterval& i);

}  // namespace placesim
