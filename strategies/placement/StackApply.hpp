#pragma once
#include <memory>
#include <string>

#include "strategies/placement/Provenance.hpp"
#include "strategies/placement/Strategy.hpp"
#include "workloads/model/Training.hpp"
#include "workloads/stack/Stack.hpp"

namespace placesim {

/// An experiment's training and strategy sections resolved in one pass: its training stack's defaults, then its
/// strategy preset, then its own fields (which win). A stack setting with a condition ("when") applies where the
/// layout the others give meets it; a stack's words are read as it means them.
struct RunSections {
  TrainingSpec training;
  StrategySpec strategy;
  std::shared_ptr<const StackSpec> stack;
  /// How the stack was chosen: "experiment" (its "stack" field), "preset" (the strategy preset's) or "default".
  std::string stack_from;
  Provenance provenance;
};

/// `training`, `strategy` and `stack` are the experiment's sections (null when absent); `base_dir` resolves a stack
/// file's relative path. With `errors`, the errors of the training and strategy sections are collected there (a
/// section that cannot be read at all is marked failed); the stack and the strategy preset are still thrown.
RunSections parse_run_sections(const Json* training, const Json* strategy, const Json* stack,
                               const std::string& base_dir, ErrorList* errors = nullptr);

}  // namespace placesim
