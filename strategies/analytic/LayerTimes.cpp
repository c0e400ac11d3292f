#include "strategies/analytic/LayerTimes.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace placesim {

namespace {

bool layer_task(const TaskRecord& t) {
  if (t.layer < 0 || t.layers < 1 || t.microbatch < 0 || t.stage < 0) return false;
  if (t.kind == TaskKind::Forward || t.kind == TaskKind::Backward || t.kind == TaskKind::Recompute ||
      t.kind == TaskKind::WeightGrad)
    return true;
  return t.kind == TaskKind::Collective && t.comm_class == CommClass::TpCollective;
}

struct Span {
  double start = std::numeric_limits<double>::infinity(), end = -std::numeric_limits<double>::infinity();
  int layers = 1, stage = 0;
};

struct Sum {
  double forward = 0, backward = 0;
  int forward_n = 0, backward_n = 0;
};

}  // namespace

std::vector<LayerPassTimes> measure_layer_times(const SimulationRecord& record) {
  // (device, first layer, micro-batch, backward) -> span of the pass of that layer group
  std::map<std::tuple<int, int, int, bool>, Span> spans;
  for (const TaskRecord& t : record.tasks) {
    if (!layer_task(t)) continue;
    Span& s = spans[{t.device, t.layer, t.microbatch, t.backward}];
    s.start = std::min(s.start, t.start_s);
    s.end = std::max(s.end, t.end_s);
    s.layers = t.layers;
    s.stage = t.stage;
  }
  std::map<int, Sum> stages;
  for (const auto& [key, s] : spans) {
    Sum& sum = stages[s.stage];
    const double per_layer = (s.end - s.start) / s.layers;
    if (std::get<3>(key)) {
      sum.backward += per_layer;
      ++sum.backward_n;
    } else {
      sum.forward += per_layer;
      ++sum.forward_n;
    }
  }
  std::vector<LayerPassTimes> out;
  for (const auto& [stage, sum] : stages)
    out.push_back({stage, std::max(sum.forward_n, sum.backward_n), sum.forward_n ? sum.forward / sum.forward_n : 0,
                   sum.backward_n ? sum.backward / sum.backward_n : 0});
  return out;
}

Json layer_times_json(const std::vector<LayerPassTimes>& times) {
  Json out = Json::array();
  for (const auto& t : times)
    out.push_back(
        Json{{"stage", t.stage}, {"samples", t.samples}, {"forward_s", t.forward_s}, {"backward_s", t.backward_s}});
  return out;
}

}  // namespace placesim
