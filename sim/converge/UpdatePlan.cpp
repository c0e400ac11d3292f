#include "sim/converge/UpdatePlan.hpp"

#include <cmath>
#include <string>
#include <unordered_set>

#include "workloads/json/Error.hpp"
#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

std::string field(std::size_t k, const std::string& name) {
  return "trace.events[" + std::to_string(k) + "]." + name;
}

class Planner {
 public:
  explicit Planner(const UpdateLog& trace);
  UpdatePlan plan();

 private:
  int slot(int replica, int stage) const { return replica * trace_.stages + stage; }
  void check_placement(const TrainEvent& e, std::size_t k);
  void check_time(const TrainEvent& e, std::size_t k);
  void backward(const TrainEvent& e, std::size_t k);
  void apply(const TrainEvent& e, std::size_t k);

  const UpdateLog& trace_;
  UpdatePlan plan_;
  std::vector<int> pending_;                                // slot: gradients since the last Apply
  std::vector<std::unordered_set<std::int64_t>> finished_;  // slot: micro-batches whose backward ran
  double last_time_ = 0;
};

Planner::Planner(const UpdateLog& trace) : trace_(trace) {
  if (trace.stages < 1) throw InputError("trace.stages=" + std::to_string(trace.stages) + " must be at least 1");
  if (trace.replicas < 1) throw InputError("trace.replicas=" + std::to_string(trace.replicas) + " must be at least 1");
  const std::size_t slots = static_cast<std::size_t>(trace.stages) * trace.replicas;
  plan_.last_reader.assign(slots, std::vector<std::int64_t>{-1});
  pending_.assign(slots, 0);
  finished_.resize(slots);
}

void Planner::check_placement(const TrainEvent& e, std::size_t k) {
  if (e.stage < 0 || e.stage >= trace_.stages)
    throw InputError(field(k, "stage") + "=" + std::to_string(e.stage) + " is outside the trace's stages 0.." +
                     std::to_string(trace_.stages - 1));
  bool per_replica = e.kind != TrainEvent::Kind::Average;  // an Average involves every replica
  if (per_replica && (e.replica < 0 || e.replica >= trace_.replicas))
    throw InputError(field(k, "replica") + "=" + std::to_string(e.replica) + " is outside the trace's replicas 0.." +
                     std::to_string(trace_.replicas - 1));
}

void Planner::check_time(const TrainEvent& e, std::size_t k) {
  if (!std::isfinite(e.time_s) || e.time_s < 0)
    throw InputError(field(k, "time_s") + "=" + format_shortest(e.time_s) + " must be a finite time >= 0");
  if (e.time_s < last_time_)
    throw InputError(field(k, "time_s") + "=" + format_shortest(e.time_s) + " is earlier than the previous event's " +
                     format_shortest(last_time_) + " (events must be in completion order)");
  last_time_ = e.time_s;
}

void Planner::backward(const TrainEvent& e, std::size_t k) {
  if (e.microbatch < 0)
    throw InputError(field(k, "microbatch") + "=" + std::to_string(e.microbatch) + " must not be negative");
  if (!finished_[slot(e.replica, e.stage)].insert(e.microbatch).second)
    throw InputError(field(k, "microbatch") + "=" + std::to_string(e.microbatch) +
                     " already had its backward on stage " + std::to_string(e.stage) + " of replica " +
                     std::to_string(e.replica));
  if (e.versions_read.size() != static_cast<std::size_t>(trace_.stages))
    throw InputError(field(k, "versions_read") + " has " + std::to_string(e.versions_read.size()) +
                     " entries but the trace has " + std::to_string(trace_.stages) + " stages");
  for (int t = 0; t < trace_.stages; ++t) {
    std::vector<std::int64_t>& readers = plan_.last_reader[slot(e.replica, t)];
    const int v = e.versions_read[t];
    const auto newest = static_cast<std::int64_t>(readers.size()) - 1;
    if (v < 0 || v > newest)
      throw InputError(field(k, "versions_read[" + std::to_string(t) + "]") + "=" + std::to_string(v) +
                       " never existed: block " + std::to_string(t) + " of replica " + std::to_string(e.replica) +
                       " has versions 0.." + std::to_string(newest) + " at that point");
    readers[v] = static_cast<std::int64_t>(k);
  }
  ++pending_[slot(e.replica, e.stage)];
}

void Planner::apply(const TrainEvent& e, std::size_t k) {
  int& pending = pending_[slot(e.replica, e.stage)];
  if (pending == 0)
    throw InputError(field(k, "kind") + "=Apply on stage " + std::to_string(e.stage) + " of replica " +
                     std::to_string(e.replica) + " has no gradient accumulated since its previous Apply");
  pending = 0;
  plan_.last_reader[slot(e.replica, e.stage)].push_back(-1);
  ++plan_.applies;
}

UpdatePlan Planner::plan() {
  for (std::size_t k = 0; k < trace_.events.size(); ++k) {
    const TrainEvent& e = trace_.events[k];
    check_placement(e, k);
    check_time(e, k);
    if (e.kind == TrainEvent::Kind::Backward) backward(e, k);
    if (e.kind == TrainEvent::Kind::Apply) apply(e, k);
  }
  return std::move(plan_);
}

}  // namespace

UpdatePlan plan_updates(const UpdateLog& trace) {
  return Planner(trace).plan();
}

}  // namespace placesim
