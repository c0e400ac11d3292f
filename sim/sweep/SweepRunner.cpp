#include "sim/sweep/SweepRunner.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "sim/sweep/Subprocess.hpp"
#include "traces/sweep/SweepRows.hpp"

namespace placesim {

void SweepCounts::add(PointStatus s) {
  switch (s) {
    case PointStatus::Ok:
      ++ok;
      break;
    case PointStatus::Invalid:
      ++invalid;
      break;
    case PointStatus::Filtered:
      ++filtered;
      break;
    case PointStatus::Error:
      ++error;
      break;
  }
}

SweepCounts& SweepCounts::operator+=(const SweepCounts& o) {
  ok += o.ok;
  invalid += o.invalid;
  filtered += o.filtered;
  error += o.error;
  return *this;
}

namespace {

// Points per batch a worker evaluates before handing its lines over: large enough that the lock and the write are
// cheap next to the work, small enough that a killed sweep loses little and every worker gets batches.
std::size_t batch_size(std::size_t points, unsigned jobs) {
  return std::clamp<std::size_t>(points / (std::size_t{jobs} * 16), 1, 256);
}

// Analyze mode: threads take batches of points from a shared counter, each with its own evaluator (the analysis is
// pure; the evaluator keeps per-thread caches), and hand each batch's lines to the sink under one lock.
class AnalyzeRun {
 public:
  AnalyzeRun(const SweepSpec& spec, const std::vector<std::uint64_t>& todo, const SweepRunOptions& options,
             const RowSink& sink)
      : spec_(spec),
        todo_(todo),
        options_(options),
        sink_(sink),
        rows_(spec, options.shard, options.device_memory_bytes),
        batch_(batch_size(todo.size(), std::max(1u, options.jobs))) {}

  SweepCounts run() {
    std::vector<std::thread> threads;
    for (unsigned j = 1; j < options_.jobs && j < todo_.size(); ++j) threads.emplace_back([this] { work(); });
    work();
    for (auto& t : threads) t.join();
    if (failure_) std::rethrow_exception(failure_);
    return total_;
  }

 private:
  void work() {
    try {
      PointEvaluator evaluator(spec_, options_.device_memory_bytes);
      std::string lines;
      while (!stop_) {
        std::size_t begin = next_.fetch_add(batch_);
        if (begin >= todo_.size()) return;
        std::size_t end = std::min(begin + batch_, todo_.size());
        lines.clear();
        SweepCounts counts = evaluate(evaluator, begin, end, lines);
        std::lock_guard lock(mutex_);
        sink_(lines);
        total_ += counts;
        if (options_.progress) options_.progress->advance(end - begin);
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!failure_) failure_ = std::current_exception();
      stop_ = true;
    }
  }

  SweepCounts evaluate(PointEvaluator& evaluator, std::size_t begin, std::size_t end, std::string& lines) const {
    SweepCounts counts;
    for (std::size_t k = begin; k < end; ++k) {
      PointOutcome o = evaluator.evaluate(todo_[k]);
      counts.add(o.status);
      lines += rows_.line(todo_[k], evaluator.coords(), o, evaluator.experiment(), evaluator.analysis(), nullptr);
    }
    return counts;
  }

  const SweepSpec& spec_;
  const std::vector<std::uint64_t>& todo_;
  const SweepRunOptions& options_;
  const RowSink& sink_;
  const SweepRows rows_;
  const std::size_t batch_;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  SweepCounts total_;
  std::exception_ptr failure_;
};

// The last non-empty line of a child's stderr without the CLI's "placesim <command>: error: " lead.
std::string child_message(const std::string& err) {
  std::string text = err;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::string line = text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  auto lead = line.find(": error: ");
  if (line.rfind("placesim", 0) == 0 && lead != std::string::npos) line = line.substr(lead + 9);
  return line.empty() ? "(no message)" : line;
}

// Runs `argv` alone and waits for it.
ChildResult run_to_end(const std::vector<std::string>& argv) {
  ProcessPool pool;
  pool.start(0, argv, "", "");
  std::vector<std::pair<std::uint64_t, ChildResult>> ended;
  while (ended.empty()) ended = pool.wait(1000);
  return std::move(ended.front().second);
}

// The outcome of a simulated point from its child process; fills `report` when it succeeded.
PointOutcome simulated_outcome(const ChildResult& r, Json& report) {
  if (r.exit_code == 0) {
    report = Json::parse(r.out, nullptr, false);
    if (report.is_object()) return {PointStatus::Ok, "", true};
    report = Json();
    return {PointStatus::Error, "simulator: the report on stdout is not a JSON object", true};
  }
  if (r.exit_code == 2) return {PointStatus::Invalid, "simulate: " + child_message(r.err), true};
  std::string how =
      r.signal ? "was killed by signal " + std::to_string(r.signal) : "exited with code " + std::to_string(r.exit_code);
  if (r.signal == 9)
    how += " (SIGKILL, most often the kernel's out-of-memory killer: fewer --jobs leave each simulation more memory)";
  return {PointStatus::Error, "simulator " + how + ": " + child_message(r.err), true};
}

// A point handed to a simulator: what its row needs besides the report.
struct PendingPoint {
  std::vector<std::size_t> coords;
  Experiment experiment;
  Analysis analysis;
};

class SimulateRun {
 public:
  SimulateRun(const SweepSpec& spec, const SweepRunOptions& options, const RowSink& sink)
      : spec_(spec),
        options_(options),
        sink_(sink),
        rows_(spec, options.shard, options.device_memory_bytes),
        evaluator_(spec, options.device_memory_bytes) {}

  SweepCounts run(const std::vector<std::uint64_t>& todo) {
    check_simulator(options_.simulator);
    const std::size_t jobs = std::max(1u, options_.jobs);
    std::size_t k = 0;
    while (k < todo.size() || pool_.running() > 0) {
      while (k < todo.size() && pool_.running() < jobs) {
        if (options_.stop_before && options_.stop_before(todo[k])) {
          k = todo.size();
          break;
        }
        launch(todo[k++]);
      }
      for (auto& [index, result] : pool_.wait(200)) finish(index, result);
      if (options_.progress) options_.progress->tick();
    }
    return counts_;
  }

 private:
  void emit(std::uint64_t index, const PointOutcome& o, const std::vector<std::size_t>& coords, const Experiment& e,
            const Analysis& a, const Json* report) {
    counts_.add(o.status);
    sink_(rows_.line(index, coords, o, e, a, report));
    if (options_.progress) options_.progress->advance(1);
  }

  void launch(std::uint64_t index) {
    PointOutcome o = evaluator_.evaluate(index);
    if (o.status != PointStatus::Ok) {
      emit(index, o, evaluator_.coords(), evaluator_.experiment(), evaluator_.analysis(), nullptr);
      return;
    }
    Json experiment = point_experiment(spec_, evaluator_.coords());
    // Only the figures the row carries: a whole report of 16,384 GPUs is tens of MB to write and parse.
    std::string figures;
    for (const auto& f : spec_.figures) figures += (figures.empty() ? "" : ",") + f;
    pool_.start(index,
                {options_.simulator, "simulate", "-", "--report", "-", "--report-figures", figures, "--fidelity",
                 to_string(spec_.fidelity)},
                experiment.dump(), spec_.base_dir);
    pending_[index] = {evaluator_.coords(), evaluator_.experiment(), evaluator_.analysis()};
  }

  void finish(std::uint64_t index, const ChildResult& result) {
    auto it = pending_.find(index);
    Json report;
    PointOutcome o = simulated_outcome(result, report);
    emit(index, o, it->second.coords, it->second.experiment, it->second.analysis, report.is_null() ? nullptr : &report);
    pending_.erase(it);
  }

  const SweepSpec& spec_;
  const SweepRunOptions& options_;
  const RowSink& sink_;
  SweepRows rows_;
  PointEvaluator evaluator_;
  ProcessPool pool_;
  std::map<std::uint64_t, PendingPoint> pending_;
  SweepCounts counts_;
};

}  // namespace

void check_simulator(const std::string& simulator) {
  // A placesim without the simulate command would make every point "invalid"; refuse the sweep instead.
  const ChildResult help = run_to_end({simulator, "simulate", "--help"});
  if (help.exit_code != 0)
    throw InputError("simulate mode: '" + simulator + " simulate --help' failed (" + child_message(help.err) +
                     "); this placesim cannot simulate a point");
  // Rows carry this placesim's version: the simulator must be the same one.
  std::string version = run_to_end({simulator, "--version"}).out;
  while (!version.empty() && (version.back() == '\n' || version.back() == '\r')) version.pop_back();
  if (version != std::string("placesim ") + placesim_version())
    throw InputError("--simulator " + simulator + " is '" + version + "', this is placesim " + placesim_version() +
                     ": every row carries one version; simulate with the same build");
}

std::vector<Json> simulated_reports(const std::string& simulator, Fidelity fidelity,
                                    const std::vector<Json>& experiments) {
  check_simulator(simulator);
  ProcessPool pool;
  for (std::size_t k = 0; k < experiments.size(); ++k)
    pool.start(k, {simulator, "simulate", "-", "--report", "-", "--fidelity", to_string(fidelity)},
               experiments[k].dump(), "");
  std::vector<Json> reports(experiments.size());
  while (pool.running() > 0)
    for (auto& [k, result] : pool.wait(1000)) {
      reports[k] = Json::parse(result.out, nullptr, false);
      if (result.exit_code != 0 || !reports[k].is_object())
        throw InputError("simulate mode: " + simulator + " could not simulate " +
                         experiments[k].value("name", "a reference experiment") + " (" + child_message(result.err) +
                         "), whose report the sweep's figures are checked against");
    }
  return reports;
}

SweepCounts run_sweep(const SweepSpec& spec, const std::vector<std::uint64_t>& todo, const SweepRunOptions& options,
                      const RowSink& sink) {
  if (spec.mode == SweepMode::Analyze) return AnalyzeRun(spec, todo, options, sink).run();
  if (options.simulator.empty()) throw InputError("simulate mode needs the placesim executable to run per point");
  SimulateRun run(spec, options, sink);
  return run.run(todo);
}

}  // namespace placesim
