#pragma once
#include <string>

#include "strategies/graph/Record.hpp"
#include "strategies/graph/TaskGraph.hpp"

namespace placesim {

/// A task's record on `device` with its name and arguments filled in (times left to the caller): "fwd L12 mb3",
/// "allreduce dp_grad_sync grp7 52.4 MB", "send act mb3 -> gpu9".
TaskRecord describe_task(const TaskGraph& g, TaskId id, int device);

}  // namespace placesim
