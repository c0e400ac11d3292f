#include "strategies/pipeline/PipelineMetrics.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>

#include "strategies/pipeline/PipelineEval.hpp"

namespace placesim {

namespace {

// The union of intervals as disjoint intervals in time order.
std::vector<OpInterval> merged(std::vector<OpInterval> spans) {
  std::sort(spans.begin(), spans.end(), [](const OpInterval& a, const OpInterval& b) { return a.start_s < b.start_s; });
  std::vector<OpInterval> out;
  for (const OpInterval& x : spans) {
    if (out.empty() || x.start_s > out.back().end_s) {
      out.push_back(x);
    } else {
      out.back().end_s = std::max(out.back().end_s, x.end_s);
    }
  }
  return out;
}

double total_length(const std::vector<OpInterval>& disjoint) {
  double total = 0;
  for (const OpInterval& x : disjoint) total += x.end_s - x.start_s;
  return total;
}

// Length of the part of disjoint, time-ordered intervals that lies within [from, to].
double length_within(const std::vector<OpInterval>& disjoint, double from, double to) {
  auto it = std::lower_bound(disjoint.begin(), disjoint.end(), from,
                             [](const OpInterval& x, double t) { return x.end_s <= t; });
  double total = 0;
  for (; it != disjoint.end() && it->start_s < to; ++it) total += std::min(it->end_s, to) - std::max(it->start_s, from);
  return total;
}

// Busy, idle and idle fraction per stage; returns each stage's busy intervals, merged.
std::vector<std::vector<OpInterval>> measure_idle(const std::vector<std::vector<OpInterval>>& busy, PipelineMetrics& m,
                                                  double& first, double& last) {
  first = std::numeric_limits<double>::infinity();
  last = -first;
  for (const auto& spans : busy)
    for (const OpInterval& x : spans) {
      first = std::min(first, x.start_s);
      last = std::max(last, x.end_s);
    }
  m.span_s = last > first ? last - first : 0;
  std::vector<std::vector<OpInterval>> out;
  for (const auto& spans : busy) {
    out.push_back(merged(spans));
    m.busy_s.push_back(total_length(out.back()));
    m.idle_s.push_back(m.span_s - m.busy_s.back());
    m.idle_fraction.push_back(m.span_s > 0 ? m.idle_s.back() / m.span_s : 0);
  }
  return out;
}

bool is_pass(const PipeOp& op) {
  return op.kind == PipeOpKind::Forward || op.kind == PipeOpKind::Backward || op.kind == PipeOpKind::Weight;
}

// The schedule bubble: the schedule re-timed with balanced stages (mean measured forward, backward and weight-gradient
// ops; a split backward is its B and its W), zero communication and free Apply and Average ops.
void measure_schedule_bubble(const PipelineSchedule& schedule, const PipelineTimeline& timeline, PipelineMetrics& m) {
  double forward = 0, backward = 0, weight = 0;
  std::int64_t forwards = 0, backwards = 0, weights = 0;
  for (std::size_t s = 0; s < schedule.order.size(); ++s)
    for (std::size_t i = 0; i < schedule.order[s].size(); ++i) {
      const double length = timeline[s][i].end_s - timeline[s][i].start_s;
      if (schedule.order[s][i].kind == PipeOpKind::Forward) {
        forward += length;
        ++forwards;
      } else if (schedule.order[s][i].kind == PipeOpKind::Backward) {
        backward += length;
        ++backwards;
      } else if (schedule.order[s][i].kind == PipeOpKind::Weight) {
        weight += length;
        ++weights;
      }
    }
  const auto mean = [&](double sum, std::int64_t n) {
    return n > 0 ? sum / static_cast<double>(n) * schedule.shape.passes_per_stage() : 0;
  };
  PipelineTimes balanced;  // per whole stage: an interleaved chunk takes 1/v of it
  balanced.forward_s = mean(forward, forwards);
  balanced.weight_s = mean(weight, weights);
  // A whole backward is B and its W: where every backward is split, their means; where some are not (DualPipe's BW
  // ops), the mean whole backward, every W counted with its B.
  balanced.backward_s =
      weights == backwards ? mean(backward, backwards) + balanced.weight_s : mean(backward + weight, backwards);
  const TimelineIdle idle = timeline_idle(evaluate_pipeline(schedule, balanced));
  for (std::size_t s = 0; s < idle.idle_s.size(); ++s) {
    m.schedule_bubble_s.push_back(idle.idle_s[s]);
    m.schedule_bubble_fraction.push_back(idle.fraction(s));
  }
}

// Splits each stage's idle time into its causes (see PipelineMetrics).
void measure_idle_causes(const PipelineSchedule& schedule, const PipelineTimeline& timeline,
                         const std::vector<std::vector<OpInterval>>& busy, double first, double last,
                         PipelineMetrics& m) {
  double passes_first = std::numeric_limits<double>::infinity(), passes_last = -passes_first;
  for (std::size_t s = 0; s < schedule.order.size(); ++s)
    for (std::size_t i = 0; i < schedule.order[s].size(); ++i)
      if (is_pass(schedule.order[s][i])) {
        passes_first = std::min(passes_first, timeline[s][i].start_s);
        passes_last = std::max(passes_last, timeline[s][i].end_s);
      }
  if (passes_first > passes_last) passes_first = passes_last = first;  // no passes: all idle is step end
  for (std::size_t s = 0; s < busy.size(); ++s) {
    const double warmup = (passes_first - first) - length_within(busy[s], first, passes_first);
    const double end = (last - passes_last) - length_within(busy[s], passes_last, last);
    double exposed = 0;
    for (std::size_t i = 0; i < schedule.order[s].size(); ++i) {
      if (!is_pass(schedule.order[s][i])) continue;
      const OpInterval& op = timeline[s][i];
      exposed += (op.end_s - op.start_s) - length_within(busy[s], op.start_s, op.end_s);
    }
    m.warmup_s.push_back(warmup);
    m.optimizer_and_step_end_s.push_back(end);
    m.exposed_communication_s.push_back(exposed);
    m.imbalance_and_waiting_s.push_back(m.idle_s[s] - warmup - end - exposed - m.schedule_bubble_s[s]);
  }
}

// In-flight micro-batches and weight versions held, after every op of one stage.
void measure_holdings(const std::vector<PipeOp>& ops, PipelineMetrics& m) {
  std::vector<int> current(static_cast<std::size_t>(m.shape.replicas), 0);
  std::map<std::pair<int, int>, int> held;   // (replica, version) -> in-flight chunk passes that read it
  int replicas_off_held = m.shape.replicas;  // replicas whose current version no in-flight pass read
  int pending = 0, pending_peak = 0, versions_peak = 0;
  for (const PipeOp& op : ops) {
    if (op.replica < 0) continue;  // Average: versions stay
    const auto r = static_cast<std::size_t>(op.replica);
    replicas_off_held -= held.count({op.replica, current[r]}) ? 0 : 1;
    if (op.kind == PipeOpKind::Forward) {
      ++held[{op.replica, op.weight_version}];
      ++pending;
    } else if (op.kind == PipeOpKind::Weight || (op.kind == PipeOpKind::Backward && !op.split)) {
      // A micro-batch is held until its weight gradient: the whole backward, or the W of a split one.
      auto it = held.find({op.replica, op.weight_version});
      if (it == held.end()) throw std::logic_error("pipeline backward without its forward");
      if (--it->second == 0) held.erase(it);
      --pending;
    } else if (op.kind == PipeOpKind::Backward) {
      // The input gradient of a split backward: the micro-batch stays held.
    } else {
      ++current[r];
    }
    replicas_off_held += held.count({op.replica, current[r]}) ? 0 : 1;
    pending_peak = std::max(pending_peak, pending);
    versions_peak = std::max(versions_peak, static_cast<int>(held.size()) + replicas_off_held);
  }
  m.inflight_microbatches_peak.push_back(static_cast<double>(pending_peak) / m.shape.passes_per_stage());
  m.stashed_versions_peak.push_back(versions_peak);
}

// Updates (Apply ops) of each replica: their end times in completion order and each one's rank in it.
struct Updates {
  std::vector<std::vector<double>> ends;  // [replica]
  std::vector<std::vector<int>> rank;     // [stage][position], -1 for other ops
};

Updates index_updates(const PipelineSchedule& schedule, const PipelineTimeline& timeline) {
  Updates u;
  u.ends.resize(static_cast<std::size_t>(schedule.shape.replicas));
  for (const auto& ops : schedule.order) u.rank.emplace_back(ops.size(), -1);
  for (const OpId& id : completion_order(schedule, timeline)) {
    const auto s = static_cast<std::size_t>(id.stage), i = static_cast<std::size_t>(id.index);
    const PipeOp& op = schedule.order[s][i];
    if (op.kind != PipeOpKind::Apply) continue;
    auto& ends = u.ends[static_cast<std::size_t>(op.replica)];
    u.rank[s][i] = static_cast<int>(ends.size());
    ends.push_back(timeline[s][i].end_s);
  }
  return u;
}

struct StalenessTallies {
  bool synchronous = false;
  DelayTally steady, whole, lag;
  std::vector<DelayTally> steady_per_stage, lag_per_stage;
  std::map<std::int64_t, std::int64_t> histogram;
};

// Delay and own-stage version lag of every backward op of one stage.
void measure_stage_delays(const PipelineSchedule& schedule, const PipelineTimeline& timeline, const Updates& u,
                          int stage, int steady_from, StalenessTallies& t) {
  const auto s = static_cast<std::size_t>(stage);
  const auto& ops = schedule.order[s];
  const auto chunks = static_cast<std::size_t>(schedule.shape.chunks);
  std::vector<int> next_apply(ops.size(), -1), last_seen(static_cast<std::size_t>(schedule.shape.replicas), -1);
  for (std::size_t i = ops.size(); i-- > 0;) {
    if (ops[i].replica < 0) continue;
    next_apply[i] = last_seen[static_cast<std::size_t>(ops[i].replica)];
    if (ops[i].kind == PipeOpKind::Apply) last_seen[static_cast<std::size_t>(ops[i].replica)] = static_cast<int>(i);
  }
  std::vector<double> forward_start(static_cast<std::size_t>(schedule.shape.total_microbatches()) * chunks);
  std::vector<int> applied(static_cast<std::size_t>(schedule.shape.replicas), 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const PipeOp& op = ops[i];
    if (op.kind == PipeOpKind::Apply) ++applied[static_cast<std::size_t>(op.replica)];
    if (op.kind != PipeOpKind::Forward && op.kind != PipeOpKind::Backward) continue;
    const std::size_t slot = static_cast<std::size_t>(op.microbatch) * chunks + static_cast<std::size_t>(op.chunk);
    if (op.kind == PipeOpKind::Forward) {
      forward_start[slot] = timeline[s][i].start_s;
      continue;
    }
    if (next_apply[i] < 0) throw std::logic_error("pipeline backward whose gradient is never applied");
    const auto& ends = u.ends[static_cast<std::size_t>(op.replica)];
    const std::int64_t k = u.rank[s][static_cast<std::size_t>(next_apply[i])];
    const std::int64_t j = std::upper_bound(ends.begin(), ends.end(), forward_start[slot]) - ends.begin();
    if (t.synchronous && ops[static_cast<std::size_t>(next_apply[i])].weight_version != op.weight_version)
      throw std::logic_error("synchronous pipeline: a gradient applied to other weights than its forward read");
    t.whole.add(k - j);
    t.lag.add(applied[static_cast<std::size_t>(op.replica)] - op.weight_version);
    t.lag_per_stage[s].add(applied[static_cast<std::size_t>(op.replica)] - op.weight_version);
    if (op.microbatch < steady_from) continue;
    t.steady.add(k - j);
    t.steady_per_stage[s].add(k - j);
    ++t.histogram[k - j];
  }
}

void measure_staleness(const PipelineSchedule& schedule, const PipelineTimeline& timeline, PipelineMetrics& m) {
  const Updates u = index_updates(schedule, timeline);
  StalenessTallies t;
  t.synchronous = synchronous_schedule(schedule.shape.schedule);
  t.steady_per_stage.resize(schedule.order.size());
  t.lag_per_stage.resize(schedule.order.size());
  m.steady_from_microbatch = schedule.shape.total_microbatches() / 2;
  for (int s = 0; s < schedule.stages(); ++s)
    measure_stage_delays(schedule, timeline, u, s, m.steady_from_microbatch, t);
  m.block_updates = t.steady.stats();
  m.block_updates_whole_run = t.whole.stats();
  m.version_lag = t.lag.stats();
  m.block_updates_histogram = std::move(t.histogram);
  for (const DelayTally& x : t.steady_per_stage) m.block_updates_per_stage.push_back(x.stats());
  for (const DelayTally& x : t.lag_per_stage) m.version_lag_per_stage.push_back(x.stats());
  if (!t.synchronous) {
    m.delay = m.block_updates;
    m.delay_whole_run = m.block_updates_whole_run;
    m.delay_per_stage = m.block_updates_per_stage;
    m.delay_histogram = m.block_updates_histogram;
    return;
  }
  const auto zero = [](const DelayStats& d) { return DelayStats{0, 0, d.samples}; };
  m.delay = zero(m.block_updates);
  m.delay_whole_run = zero(m.block_updates_whole_run);
  for (const DelayStats& d : m.block_updates_per_stage) m.delay_per_stage.push_back(zero(d));
  if (m.delay.samples > 0) m.delay_histogram[0] = m.delay.samples;
}

Json stats_json(const DelayStats& d) {
  return Json{{"max", d.max}, {"mean", d.mean}};
}

Json per_stage_json(const std::vector<DelayStats>& list) {
  Json out = Json::array();
  for (const DelayStats& d : list) out.push_back(stats_json(d));
  return out;
}

// A count of the steady state's backward ops (staleness, block updates between): its samples, max and mean (keys
// "max" and "mean" plus `suffix`), per stage, histogram (`value_key` -> backward ops) and over the whole run.
Json steady_stats_json(const PipelineMetrics& m, const DelayStats& steady, const std::vector<DelayStats>& per_stage,
                       const std::map<std::int64_t, std::int64_t>& histogram, const DelayStats& whole_run,
                       const std::string& value_key, const std::string& suffix) {
  Json bins = Json::array();
  for (const auto& [value, count] : histogram) bins.push_back(Json{{value_key, value}, {"count", count}});
  return Json{{"steady_from_microbatch", m.steady_from_microbatch},
              {"samples", steady.samples},
              {"max" + suffix, steady.max},
              {"mean" + suffix, steady.mean},
              {"per_stage", per_stage_json(per_stage)},
              {"histogram", bins},
              {"whole_run", stats_json(whole_run)}};
}

PipelineMetrics measure(const PipelineSchedule& schedule, const PipelineTimeline& timeline,
                        const std::vector<std::vector<OpInterval>>& busy) {
  PipelineMetrics m;
  m.shape = schedule.shape;
  double first = 0, last = 0;
  const auto merged_busy = measure_idle(busy, m, first, last);
  measure_schedule_bubble(schedule, timeline, m);
  measure_idle_causes(schedule, timeline, merged_busy, first, last, m);
  for (const auto& ops : schedule.order) measure_holdings(ops, m);
  measure_staleness(schedule, timeline, m);
  return m;
}

}  // namespace

PipelineMetrics measure_pipeline(const PipelineSchedule& schedule, const PipelineTimeline& timeline) {
  return measure(schedule, timeline, timeline);
}

PipelineMetrics measure_pipeline(const PipelineSchedule& schedule, const SimulationRecord& record) {
  std::vector<std::vector<OpInterval>> busy(schedule.order.size());
  for (const TaskRecord& t : record.tasks)
    if (t.stream == Stream::Compute && t.stage >= 0 && static_cast<std::size_t>(t.stage) < busy.size())
      busy[static_cast<std::size_t>(t.stage)].push_back({t.start_s, t.end_s});
  return measure(schedule, pipeline_timeline(schedule, record), busy);
}

double stage_mean(const std::vector<double>& per_stage) {
  double sum = 0;
  for (double x : per_stage) sum += x;
  return per_stage.empty() ? 0 : sum / static_cast<double>(per_stage.size());
}

Json pipeline_json(const PipelineMetrics& m) {
  const PipelineShape& sh = m.shape;
  Json idle_over_busy = Json::array();
  for (std::size_t s = 0; s < m.busy_s.size(); ++s)
    idle_over_busy.push_back(m.busy_s[s] > 0 ? m.idle_s[s] / m.busy_s[s] : 0);
  return Json{
      {"schedule", to_string(sh.schedule)},
      {"stages", sh.stages},
      {"microbatches", sh.microbatches},
      {"steps", sh.steps},
      {"chunks", sh.chunks},
      {"noam", sh.noam},
      {"replicas", sh.replicas},
      {"local_steps", sh.local_steps},
      {"span_s", m.span_s},
      {"busy_s", m.busy_s},
      {"idle_s", m.idle_s},
      {"idle_fraction", m.idle_fraction},
      {"idle_fraction_mean", stage_mean(m.idle_fraction)},
      {"idle_over_busy", idle_over_busy},
      {"schedule_bubble_fraction", m.schedule_bubble_fraction},
      {"schedule_bubble_fraction_mean", stage_mean(m.schedule_bubble_fraction)},
      {"idle_causes",
       {{"warmup_s", m.warmup_s},
        {"schedule_bubble_s", m.schedule_bubble_s},
        {"exposed_communication_s", m.exposed_communication_s},
        {"imbalance_and_waiting_s", m.imbalance_and_waiting_s},
        {"optimizer_and_step_end_s", m.optimizer_and_step_end_s}}},
      {"inflight_microbatches_peak", m.inflight_microbatches_peak},
      {"stashed_versions_peak", m.stashed_versions_peak},
      {"staleness",
       steady_stats_json(m, m.delay, m.delay_per_stage, m.delay_histogram, m.delay_whole_run, "delay", "_delay")},
      {"block_updates_between", steady_stats_json(m, m.block_updates, m.block_updates_per_stage,
                                                  m.block_updates_histogram, m.block_updates_whole_run, "updates", "")},
      {"version_lag",
       {{"max", m.version_lag.max},
        {"mean", m.version_lag.mean},
        {"per_stage", per_stage_json(m.version_lag_per_stage)}}},
  };
}

}  // namespace placesim
