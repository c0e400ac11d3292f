#include "traces/profiler/TraceSummary.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "traces/profiler/Intervals.hpp"

namespace placesim {

namespace {

// The union of the disjoint sorted intervals `v` clipped to [lo, hi), and the idle gaps between them split at
// `launch_gap`.
struct Busy {
  double busy = 0, launch_gaps = 0, host_stalls = 0;
};

Busy busy_in(const std::vector<Interval>& v, double lo, double hi, double launch_gap) {
  Busy b;
  double cursor = lo;
  auto gap = [&](double g) {
    if (g <= 0) return;
    (g <= launch_gap ? b.launch_gaps : b.host_stalls) += g;
  };
  for (auto it = first_ending_after(v, lo); it != v.end() && it->start < hi; ++it) {
    const double s = std::max(it->start, lo), e = std::min(it->end, hi);
    gap(s - cursor);
    b.busy += e - s;
    cursor = e;
  }
  gap(hi - cursor);
  return b;
}

bool compute_class(KernelClass c) {
  return c != KernelClass::Collective && c != KernelClass::Copy;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// When a rank's GPU ran anything, its compute and its collectives (merged), and each collective's end (sorted).
struct RankTimeline {
  std::vector<Interval> all, comm, compute;
  std::vector<double> comm_ends;
};

// The step of `kernels` (those the step launched) over the window [lo, hi) of the rank's GPU timeline.
StepSummary step_summary(const std::vector<const TraceKernel*>& kernels, double lo, double hi, const RankTimeline& r,
                         const SummaryOptions& o) {
  StepSummary s;
  s.start_s = lo;
  s.period_s = hi - lo;
  const Busy b = busy_in(r.all, lo, hi, o.launch_gap_s);
  s.busy_s = b.busy;
  s.idle_s = s.period_s - b.busy;
  s.launch_gaps_s = b.launch_gaps;
  s.host_stalls_s = b.host_stalls;
  // The step's first compute kernel, and whether a collective ended as it started (it waited for that collective).
  double first_compute = hi;
  for (const TraceKernel* k : kernels)
    if (compute_class(k->cls)) first_compute = std::min(first_compute, k->start_s);
  auto after = std::lower_bound(r.comm_ends.begin(), r.comm_ends.end(), first_compute - 1e-6);
  const bool waited = after != r.comm_ends.end() && *after <= first_compute + 1e-9;
  if (first_compute > lo && first_compute < hi && !waited) {
    s.host_start_s = first_compute - lo;
    s.idle_at_start_s = s.host_start_s - busy_in(r.all, lo, first_compute, o.launch_gap_s).busy;
  }
  for (const TraceKernel* k : kernels) {
    const auto c = static_cast<int>(k->cls);
    s.class_s[c] += k->dur_s;
    if (k->cls == KernelClass::Collective) s.overlapped_s[c] += covered(r.compute, k->start_s, k->start_s + k->dur_s);
    if (compute_class(k->cls)) s.overlapped_s[c] += covered(r.comm, k->start_s, k->start_s + k->dur_s);
    s.phase_s[static_cast<int>(k->phase)][c] += k->dur_s;
    ++s.kernels;
  }
  return s;
}

// The steps of one rank (`step_ids` in start order), in windows that tile its GPU timeline.
void rank_steps(const ProfilerTrace& t, int rank, const std::vector<int>& step_ids,
                const std::vector<std::vector<const TraceKernel*>>& by_step,
                const std::vector<const TraceKernel*>& rank_kernels, const std::vector<Interval>& comm,
                const std::vector<Interval>& compute, const SummaryOptions& o, std::vector<StepSummary>& out) {
  RankTimeline r{{}, comm, compute, {}};
  std::vector<Interval> every;
  every.reserve(rank_kernels.size());
  for (const TraceKernel* k : rank_kernels) {
    every.push_back({k->start_s, k->start_s + k->dur_s});
    if (k->cls == KernelClass::Collective) r.comm_ends.push_back(k->start_s + k->dur_s);
  }
  r.all = merged(std::move(every));
  std::sort(r.comm_ends.begin(), r.comm_ends.end());
  std::vector<double> last_end;
  for (int id : step_ids) {
    double end = t.steps[id].end_s;
    for (const TraceKernel* k : by_step[id]) end = std::max(end, k->start_s + k->dur_s);
    last_end.push_back(end);
  }
  for (std::size_t i = 0; i < step_ids.size(); ++i) {
    const int id = step_ids[i];
    if (by_step[id].empty()) continue;
    const double lo = i > 0 ? std::max(t.steps[id].start_s, last_end[i - 1]) : t.steps[id].start_s;
    const double hi =
        i + 1 < step_ids.size() ? std::max(lo, std::max(t.steps[step_ids[i + 1]].start_s, last_end[i])) : last_end[i];
    StepSummary s = step_summary(by_step[id], lo, hi, r, o);
    s.rank = rank;
    s.number = t.steps[id].number;
    out.push_back(s);
  }
}

}  // namespace

namespace {

// The trace's kernels by step and by rank, and per rank when its compute and its collectives ran (merged).
struct Index {
  std::vector<std::vector<const TraceKernel*>> by_step;
  std::map<int, std::vector<const TraceKernel*>> by_rank;
  std::map<int, std::vector<Interval>> comm_of, compute_of;
};

Index index_of(const ProfilerTrace& t) {
  Index x;
  x.by_step.resize(t.steps.size());
  for (const TraceKernel& k : t.kernels) {
    x.by_rank[k.rank].push_back(&k);
    if (k.step >= 0 && k.step < static_cast<int>(x.by_step.size())) x.by_step[k.step].push_back(&k);
  }
  for (const auto& [rank, ks] : x.by_rank) {
    std::vector<Interval> comm, compute;
    for (const TraceKernel* k : ks) {
      if (k->cls == KernelClass::Collective) comm.push_back({k->start_s, k->start_s + k->dur_s});
      if (compute_class(k->cls)) compute.push_back({k->start_s, k->start_s + k->dur_s});
    }
    x.comm_of[rank] = merged(std::move(comm));
    x.compute_of[rank] = merged(std::move(compute));
  }
  return x;
}

// The summary's means per step over its steps.
void average_steps(TraceSummary& s) {
  const double n = static_cast<double>(s.steps.size());
  for (const StepSummary& st : s.steps) {
    s.period_s += st.period_s / n;
    s.busy_s += st.busy_s / n;
    s.idle_s += st.idle_s / n;
    s.launch_gaps_s += st.launch_gaps_s / n;
    s.host_stalls_s += st.host_stalls_s / n;
    s.host_start_s += st.host_start_s / n;
    s.idle_at_start_s += st.idle_at_start_s / n;
    for (int c = 0; c < kKernelClasses; ++c) {
      s.class_s[c] += st.class_s[c] / n;
      s.overlapped_s[c] += st.overlapped_s[c] / n;
      for (int p = 0; p < kPhases; ++p) s.phase_s[p][c] += st.phase_s[p][c] / n;
    }
  }
}

// Collectives of the summarised steps, bucketed by operation, group size and power of two of bytes.
void summarise_collectives(TraceSummary& s, Index& x) {
  const double n = static_cast<double>(s.steps.size());
  std::map<std::tuple<std::string, int, int>, std::vector<const TraceKernel*>> buckets;
  for (const auto& ks : x.by_step)
    for (const TraceKernel* k : ks)
      if (k->cls == KernelClass::Collective && k->bytes > 0 && k->group_size > 0)
        buckets[{k->collective, k->group_size, static_cast<int>(std::floor(std::log2(k->bytes)))}].push_back(k);
  for (const auto& [key, ks] : buckets) {
    CollectiveSummary c;
    c.op = std::get<0>(key);
    c.group_size = std::get<1>(key);
    std::vector<double> bw;
    for (const TraceKernel* k : ks) {
      c.bytes += k->bytes / static_cast<double>(ks.size());
      c.time_s += k->dur_s / n;
      c.overlapped_s += covered(x.compute_of[k->rank], k->start_s, k->start_s + k->dur_s) / n;
      if (k->dur_s > 0)
        bw.push_back(bus_bandwidth_Bps(collective_kind(c.op).value_or(CollectiveKind::SendRecv), k->bytes, c.group_size,
                                       k->dur_s));
    }
    c.count = static_cast<int>(ks.size());
    c.bus_bw_Bps = bw.empty() ? 0 : median(bw);
    s.collectives.push_back(c);
  }
}

// GEMM shapes by total time, the largest first.
void summarise_gemm_shapes(TraceSummary& s, const Index& x) {
  std::map<std::tuple<double, double, double, double, int>, std::vector<double>> shapes;
  for (const auto& ks : x.by_step)
    for (const TraceKernel* k : ks)
      if (k->cls == KernelClass::Gemm && k->m > 0) {
        ++s.gemms_with_shape;
        shapes[{k->m, k->n, k->k, k->batch, k->elem_bytes}].push_back(k->dur_s);
      }
  for (auto& [key, times] : shapes) {
    GemmShapeSummary g{std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<4>(key)};
    g.count = static_cast<int>(times.size());
    for (double t : times) g.total_s += t;
    g.median_s = median(times);
    s.gemm_shapes.push_back(g);
  }
  std::sort(s.gemm_shapes.begin(), s.gemm_shapes.end(),
            [](const GemmShapeSummary& a, const GemmShapeSummary& b) { return a.total_s > b.total_s; });
}

// The same compute kernel (name and shape) alone and beside a collective (during at least half of it).
void summarise_overlap(TraceSummary& s, Index& x) {
  const double n = static_cast<double>(s.steps.size());
  std::map<std::tuple<std::uint32_t, double, double, double>, std::pair<std::vector<double>, std::vector<double>>> same;
  for (const auto& ks : x.by_step)
    for (const TraceKernel* k : ks) {
      if (!compute_class(k->cls)) continue;
      const double over = covered(x.comm_of[k->rank], k->start_s, k->start_s + k->dur_s);
      const bool overlapped = k->dur_s > 0 && over >= 0.5 * k->dur_s;
      if (overlapped) s.overlap.overlapped_compute_s += k->dur_s / n;
      auto& pair = same[{k->name, k->m, k->n, k->k}];
      (overlapped ? pair.second : pair.first).push_back(k->dur_s);
    }
  double log_sum = 0, weight = 0;
  for (const auto& [key, pair] : same) {
    if (pair.first.empty() || pair.second.empty()) continue;
    const double alone = median(pair.first), over = median(pair.second);
    if (!(alone > 0) || !(over > 0)) continue;
    const double w = over * static_cast<double>(pair.second.size());
    log_sum += w * std::log(over / alone);
    weight += w;
    ++s.overlap.kernels_compared;
  }
  if (weight > 0) s.overlap.slowdown = std::exp(log_sum / weight);
}

}  // namespace

std::optional<CollectiveKind> collective_kind(const std::string& op) {
  if (op == "allreduce") return CollectiveKind::AllReduce;
  if (op == "allgather") return CollectiveKind::AllGather;
  if (op == "reduce_scatter") return CollectiveKind::ReduceScatter;
  if (op == "broadcast") return CollectiveKind::Broadcast;
  return std::nullopt;
}

TraceSummary summarize(const ProfilerTrace& t, const SummaryOptions& o) {
  TraceSummary s;
  s.runtime = t.runtime;
  s.notes = t.notes;
  Index x = index_of(t);
  std::map<int, std::vector<int>> steps_of;
  for (std::size_t i = 0; i < t.steps.size(); ++i) steps_of[t.steps[i].rank].push_back(static_cast<int>(i));
  for (auto& [rank, ids] : steps_of) {
    std::sort(ids.begin(), ids.end(), [&](int a, int b) { return t.steps[a].start_s < t.steps[b].start_s; });
    rank_steps(t, rank, ids, x.by_step, x.by_rank[rank], x.comm_of[rank], x.compute_of[rank], o, s.steps);
  }
  s.ranks = static_cast<int>(x.by_rank.size());
  if (s.steps.empty()) return s;
  average_steps(s);
  summarise_collectives(s, x);
  summarise_gemm_shapes(s, x);
  summarise_overlap(s, x);
  return s;
}

Json summary_to_json(const TraceSummary& s) {
  auto classes = [](const ClassArray& a) {
    Json j = Json::object();
    for (int c = 0; c < kKernelClasses; ++c) j[to_string(static_cast<KernelClass>(c))] = a[c];
    return j;
  };
  Json phases = Json::object();
  for (int p = 0; p < kPhases; ++p) phases[to_string(static_cast<Phase>(p))] = classes(s.phase_s[p]);
  Json coll = Json::array();
  for (const CollectiveSummary& c : s.collectives)
    coll.push_back(Json{{"op", c.op},
                        {"group_size", c.group_size},
                        {"bytes", c.bytes},
                        {"count", c.count},
                        {"time_s_per_step", c.time_s},
                        {"overlapped_s_per_step", c.overlapped_s},
                        {"bus_bw_GBps", c.bus_bw_Bps / 1e9}});
  return Json{{"steps", s.steps.size()},
              {"ranks", s.ranks},
              {"runtime", s.runtime},
              {"step_s", s.period_s},
              {"busy_s", s.busy_s},
              {"idle_s", s.idle_s},
              {"launch_gaps_s", s.launch_gaps_s},
              {"host_stalls_s", s.host_stalls_s},
              {"host_start_s", s.host_start_s},
              {"idle_at_start_s", s.idle_at_start_s},
              {"kernel_s_by_class", classes(s.class_s)},
              {"overlapped_s_by_class", classes(s.overlapped_s)},
              {"kernel_s_by_phase", phases},
              {"collectives", coll},
              {"overlap", Json{{"kernels_compared", s.overlap.kernels_compared},
                               {"slowdown", s.overlap.slowdown},
                               {"overlapped_compute_s", s.overlap.overlapped_compute_s}}},
              {"gemms_with_shape", s.gemms_with_shape},
              {"notes", s.notes}};
}

}  // namespace placesim
