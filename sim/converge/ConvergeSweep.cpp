#include "sim/converge/ConvergeSweep.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <memory>
#include <thread>

#include "sim/converge/Converge.hpp"
#include "sim/converge/Minimum.hpp"
#include "sim/converge/Objectives.hpp"
#include "sim/sweep/Cpus.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"

namespace placesim {

namespace {

ConvergenceSpec objective_of(ObjectiveKind kind, int dimension, int samples) {
  ConvergenceSpec c;
  c.objective.kind = kind;
  c.objective.dimension = dimension;
  if (kind != ObjectiveKind::Quadratic) {
    c.objective.samples = samples;
    c.objective.batch_size = std::min(16, samples);
  }
  return c;
}

Schedule schedule_named(const std::string& name, const std::string& field) {
  std::vector<std::string> names;
  for (Schedule s : all_schedules()) {
    if (to_string(s) == name) return s;
    names.push_back(to_string(s));
  }
  const std::string guess = nearest(name, names);
  throw InputError(field + "=" + name + " is not a schedule" + (guess.empty() ? "" : " (did you mean " + guess + "?)"));
}

template <class T, class Read>
std::vector<T> read_list(ObjectReader& r, const char* key, std::vector<T> fallback, Read read) {
  const Json* list = r.child(key);
  if (!list) return fallback;
  if (!list->is_array() || list->empty())
    throw InputError(r.field(key) + "=" + show(*list) + " must be a non-empty list");
  std::vector<T> out;
  for (std::size_t i = 0; i < list->size(); ++i)
    out.push_back(read((*list)[i], r.field(key) + "[" + std::to_string(i) + "]"));
  return out;
}

int read_stage_count(const Json& v, const std::string& field) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 4096)
    throw InputError(field + "=" + show(v) + " must be a stage count from 1 to 4096");
  return static_cast<int>(v.get<std::int64_t>());
}

ConvergenceSpec read_objective(const Json& v, const std::string& field) {
  if (v.is_object() && v.contains("step_size"))
    throw InputError(field + ".step_size is tuned by the sweep (see sweep.min_log2_step, sweep.max_log2_step)");
  ConvergenceSpec spec;
  try {
    spec = parse_convergence(v);
  } catch (const InputError& e) {
    throw InputError(field + ": " + e.what());
  }
  return spec;
}

// Rules that involve several fields: LocalSGD's replicas split every step's micro-batches evenly.
void check_sweep(const ConvergeSweepSpec& s) {
  if (s.min_log2_step > s.max_log2_step)
    throw InputError("sweep.min_log2_step=" + std::to_string(s.min_log2_step) +
                     " exceeds sweep.max_log2_step=" + std::to_string(s.max_log2_step));
  if (std::find(s.schedules.begin(), s.schedules.end(), Schedule::LocalSGD) == s.schedules.end()) return;
  for (int stages : s.stages) {
    const int m = s.microbatches_per_stage * stages, r = s.replicas > 0 ? s.replicas : stages;
    if (m % r != 0)
      throw InputError("sweep.replicas=" + std::to_string(r) +
                       " does not divide the M = microbatches_per_stage x S = " + std::to_string(m) +
                       " micro-batches per step at S=" + std::to_string(stages));
  }
}

AbstractPipeline pipeline_for(const ConvergeSweepSpec& spec, int stages, Schedule schedule) {
  AbstractPipeline p;
  PipelineShape& sh = p.shape;
  sh.schedule = schedule;
  sh.stages = stages;
  sh.microbatches = spec.microbatches_per_stage * stages;
  sh.noam = stages;
  sh.chunks = interleaves_chunks(schedule) || v_shaped(schedule) ? 2 : 1;
  if (schedule == Schedule::LocalSGD) {
    sh.replicas = spec.replicas > 0 ? spec.replicas : stages;
    sh.local_steps = spec.local_steps;
  }
  p.times.forward_s = spec.forward_s;
  p.times.backward_s = spec.backward_s;
  p.times.p2p_s = spec.p2p_s;
  return p;
}

ConvergeSweepCell cell_for(const ConvergeSweepSpec& spec, const ConvergenceSpec& objective,
                           const PreparedPipeline& prepared) {
  ConvergeSweepCell c;
  c.objective = to_string(objective.objective.kind);
  const PipelineShape& sh = prepared.pipeline.shape;
  c.stages = sh.stages;
  c.schedule = sh.schedule;
  c.microbatches = sh.microbatches;
  c.replicas = sh.replicas;
  c.local_steps = sh.local_steps;
  c.budget_s = spec.budget_s;
  const Json& p = prepared.pipeline_report;
  c.max_delay = p["staleness"]["max_delay"].get<std::int64_t>();
  c.mean_delay = p["staleness"]["mean_delay"].get<double>();
  c.idle_fraction = p["idle_fraction_mean"].get<double>();
  const auto seeds = static_cast<std::size_t>(spec.seeds);
  for (int e = spec.min_log2_step; e <= spec.max_log2_step; ++e) {
    ConvergeSweepRun run;
    run.log2_step = e;
    run.final_loss.assign(seeds, 0);
    run.min_loss.assign(seeds, 0);
    run.initial_loss.assign(seeds, 0);
    c.runs.push_back(std::move(run));
  }
  c.minimum.assign(seeds, 0);
  c.minimum_gradient_norm.assign(seeds, 0);
  return c;
}

// About 4 samples per run besides the first and the last, each after a whole number of full-model updates: the
// sweep ranks by the final loss, and a logistic loss costs a pass over the data set (more samples made it the bulk
// of the default sweep's time).
std::int64_t sample_interval(const UpdateLog& trace) {
  std::int64_t applies = 0;
  for (const TrainEvent& e : trace.events) applies += e.kind == TrainEvent::Kind::Apply ? 1 : 0;
  const std::int64_t full = std::int64_t{trace.stages} * trace.replicas;
  return full * std::max<std::int64_t>(1, (applies / full + 3) / 4);
}

// Runs one step size on one instance (seed index k) and files the outcome under k.
void execute(const UpdateLog& trace, ConvergenceSpec spec, const Objective& objective, std::size_t k,
             ConvergeSweepRun& run) {
  spec.step_size = std::ldexp(1.0, run.log2_step);
  spec.sample_every = sample_interval(trace);
  const ConvergenceResult r = run_convergence(trace, spec, objective);
  run.initial_loss[k] = r.points.front().loss;
  run.final_loss[k] = r.points.back().loss;
  run.min_loss[k] = INFINITY;
  for (const ConvergencePoint& p : r.points)
    if (std::isfinite(p.loss)) run.min_loss[k] = std::min(run.min_loss[k], p.loss);
  if (k != 0) return;  // the trace, so the updates and their times, is the same for every seed
  run.final_time_s = r.points.back().time_s;
  run.updates = r.updates;
  run.backwards = r.backwards;
}

// Calls work(i) for i in [0, count) on `threads` threads; rethrows the first exception after all have stopped.
template <class Work>
void parallel_for(std::size_t count, int threads, Work work) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (std::size_t i; !failed && (i = next++) < count;) {
      try {
        work(i);
      } catch (...) {
        if (!failed.exchange(true)) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

// The quadratic is shifted so that f(x*) = 0 without l2; everything else is minimized numerically. A gradient norm
// of 1e-7 puts f within about 1e-12 of f* for these objectives (strongly convex around the minimum, moduli above
// 1e-3), far below the suboptimalities the sweep compares; going further only fights rounding.
MinimumEstimate minimum_of(const ConvergenceSpec& spec, const Objective& f) {
  if (spec.objective.kind == ObjectiveKind::Quadratic && spec.objective.l2 == 0) return {};
  // The language model is not convex and its minimum is not computed: f* = 0, the lower bound of a cross-entropy,
  // so its "f - f*" is the loss itself in nats per character.
  if (spec.objective.kind == ObjectiveKind::CharLm) return {};
  return estimate_minimum(f, 4000, 1e-7);
}

// A run diverged when some seed's final loss is not finite or above its initial loss: the executor stops at a blow
// up, and a run that ends worse than it started has not converged at that step size either.
void summarize(ConvergeSweepCell& c) {
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    ConvergeSweepRun& r = c.runs[i];
    double loss = 0, gap = 0;
    for (std::size_t k = 0; k < r.final_loss.size(); ++k) {
      r.diverged = r.diverged || !std::isfinite(r.final_loss[k]) || r.final_loss[k] > r.initial_loss[k];
      loss += r.final_loss[k];
      gap += r.final_loss[k] - c.minimum[k];
    }
    r.mean_final_loss = r.diverged ? NAN : loss / static_cast<double>(r.final_loss.size());
    r.mean_gap = r.diverged ? NAN : gap / static_cast<double>(r.final_loss.size());
    if (!r.diverged && (c.best < 0 || r.mean_gap < c.runs[static_cast<std::size_t>(c.best)].mean_gap))
      c.best = static_cast<int>(i);
  }
}

}  // namespace

ConvergeSweepSpec default_converge_sweep() {
  ConvergeSweepSpec s;
  s.objectives = {objective_of(ObjectiveKind::Quadratic, 512, 0), objective_of(ObjectiveKind::Logistic, 128, 8192)};
  return s;
}

ConvergeSweepSpec quick_converge_sweep() {
  ConvergeSweepSpec s;
  s.stages = {2, 4};
  s.budget_s = 200;
  s.min_log2_step = -6;
  s.max_log2_step = 3;
  s.objectives = {objective_of(ObjectiveKind::Quadratic, 32, 0), objective_of(ObjectiveKind::Logistic, 32, 512)};
  s.seeds = 2;
  return s;
}

ConvergeSweepSpec parse_converge_sweep(const Json& value, ConvergeSweepSpec s) {
  ObjectReader r(value, "sweep");
  s.stages = read_list(r, "stages", s.stages, read_stage_count);
  s.schedules = read_list(r, "schedules", s.schedules, [](const Json& v, const std::string& field) {
    if (!v.is_string()) throw InputError(field + "=" + show(v) + " must be a schedule name");
    return schedule_named(v.get<std::string>(), field);
  });
  s.objectives = read_list(r, "objectives", s.objectives, read_objective);
  s.microbatches_per_stage = r.get_int_in("microbatches_per_stage", s.microbatches_per_stage, 1, 1000);
  s.local_steps = r.get_int_in("local_steps", s.local_steps, 1, 1000000);
  s.replicas = r.get_int_in("replicas", s.replicas, 0, 1000000);
  s.forward_s = r.get_positive("forward_s", s.forward_s);
  s.backward_s = r.get_positive("backward_s", s.backward_s);
  s.p2p_s = r.get_non_negative("p2p_s", s.p2p_s);
  s.budget_s = r.get_positive("budget_s", s.budget_s);
  s.min_log2_step = r.get_int_in("min_log2_step", s.min_log2_step, -60, 20);
  s.max_log2_step = r.get_int_in("max_log2_step", s.max_log2_step, -60, 20);
  s.threads = r.get_int_in("threads", s.threads, 0, 1024);
  s.seeds = r.get_int_in("seeds", s.seeds, 1, 100);
  r.finish();
  check_sweep(s);
  return s;
}

std::vector<ConvergeSweepCell> run_converge_sweep(const ConvergeSweepSpec& spec) {
  check_sweep(spec);
  std::vector<PreparedPipeline> pipelines;
  for (int stages : spec.stages)
    for (Schedule schedule : spec.schedules)
      pipelines.push_back(prepare_pipeline(pipeline_for(spec, stages, schedule), RunLength{0, spec.budget_s}));
  const auto seeds = static_cast<std::size_t>(spec.seeds);
  std::vector<ConvergenceSpec> instances;  // objective o, seed k at o * seeds + k
  std::vector<ConvergeSweepCell> cells;
  for (const ConvergenceSpec& o : spec.objectives) {
    for (std::size_t k = 0; k < seeds; ++k) {
      instances.push_back(o);
      instances.back().objective.seed += k;
    }
    for (const PreparedPipeline& p : pipelines) cells.push_back(cell_for(spec, o, p));
  }
  if (cells.empty()) return cells;
  const int threads = spec.threads > 0 ? spec.threads : static_cast<int>(available_jobs());
  std::vector<std::unique_ptr<Objective>> objectives(instances.size());
  std::vector<MinimumEstimate> minima(instances.size());
  parallel_for(instances.size(), threads, [&](std::size_t i) {
    objectives[i] = make_objective(instances[i].objective);
    minima[i] = minimum_of(instances[i], *objectives[i]);
  });
  for (std::size_t i = 0; i < cells.size(); ++i)
    for (std::size_t k = 0; k < seeds; ++k) {
      cells[i].minimum[k] = minima[i / pipelines.size() * seeds + k].value;
      cells[i].minimum_gradient_norm[k] = minima[i / pipelines.size() * seeds + k].gradient_norm;
    }
  const std::size_t per_cell = cells.front().runs.size() * seeds;
  parallel_for(cells.size() * per_cell, threads, [&](std::size_t job) {
    const std::size_t cell = job / per_cell, run = job % per_cell / seeds, k = job % seeds;
    const std::size_t instance = cell / pipelines.size() * seeds + k;
    execute(pipelines[cell % pipelines.size()].trace, instances[instance], *objectives[instance], k,
            cells[cell].runs[run]);
  });
  for (ConvergeSweepCell& c : cells) summarize(c);
  return cells;
}

}  // namespace placesim
