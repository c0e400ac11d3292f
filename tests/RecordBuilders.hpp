#pragma once
#include "strategies/graph/Record.hpp"

namespace placesim::test {

/// A recorded task of `kind` on `device`'s `stream` from `start_s` to `end_s` (seconds); every other field at its
/// default.
inline TaskRecord task_record(int device, Stream stream, TaskKind kind, double start_s, double end_s) {
  return TaskRecord{.device = device, .stream = stream, .kind = kind, .start_s = start_s, .end_s = end_s};
}

}  // namespace placesim::test
