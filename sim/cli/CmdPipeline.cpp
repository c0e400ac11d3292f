#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "sim/cli/Commands.hpp"
#include "strategies/pipeline/AbstractPipeline.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "traces/report/Report.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
pipeline-sweep [--stages 2..64] [--out FILE.jsonl|FILE.csv] [options]
staleness, schedule bubble, idle time and throughput of every pipeline schedule over stage counts (abstract stages)
--stages LIST             stage counts: ranges and lists, e.g. 2..64 or 2,4,8 (default 2,4,8,16,32,64)
--schedules LIST          comma-separated schedules (default: every schedule that can run each stage count)
--microbatches M          micro-batches per step (default: --microbatches-per-stage x S)
--microbatches-per-stage K  micro-batches per step per stage when --microbatches is not given (10)
--steps N                 steps per run (default 2)
--forward-s F             forward time of a stage in seconds (default 1)
--backward-s B            backward time of a stage in seconds (default 1)
--p2p-s C                 transfer time between stages in seconds (default 0)
--chunks V                interleaved: model chunks per device (default 2)
--noam N                  pipedream, pipedream-2bw: micro-batches admitted at once (default S)
--replicas R              localsgd: model replicas (default S)
--local-steps H           localsgd: micro-batches per replica between averagings (default 5)
--out FILE                also write the rows: CSV when FILE ends in .csv, else JSON lines
)";

namespace {

std::vector<std::string> schedule_names() {
  std::vector<std::string> names;
  for (Schedule s : all_schedules()) names.push_back(to_string(s));
  return names;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
  return parts;
}

int parse_int(const std::string& text, const std::string& flag) {
  const Json v = parse_cli_value(text);
  if (!v.is_number_integer() || v.get<std::int64_t>() != v.get<int>())
    throw InputError(flag + "=" + text + " must be an integer");
  return v.get<int>();
}

int int_flag(const Args& args, const std::string& flag, int fallback, int minimum) {
  auto text = args.value(flag);
  if (!text) return fallback;
  const int v = parse_int(*text, flag);
  if (v < minimum) throw InputError(flag + "=" + *text + " must be at least " + std::to_string(minimum));
  return v;
}

// A pass time (`pass`: forward, backward) or a transfer time, in the range an abstract pipeline accepts.
double seconds_flag(const Args& args, const std::string& flag, double fallback, bool pass) {
  auto text = args.value(flag);
  if (!text) return fallback;
  const Json v = parse_cli_value(*text);
  const double seconds = v.is_number() ? v.get<double>() : -1;
  if (!(pass ? seconds > 0 : seconds >= 0))
    throw InputError(flag + "=" + *text + " must be a " + (pass ? "positive" : "non-negative") + " number of seconds");
  if (seconds > kMaxOpSeconds)
    throw InputError(flag + "=" + *text + " is more than the 1e+06 s (11.6 days) an op of a pipeline may take");
  if (pass && seconds < kMinPassSeconds)
    throw InputError(flag + "=" + *text + " is less than the 1e-09 s (a nanosecond) a pass takes at least");
  return seconds;
}

// The most stage counts a --stages list holds: more rows than anyone reads, and each is evaluated.
constexpr std::int64_t kMaxStageCounts = 4096;

// "2..64" (every S), "2,4,8" or a mix: "2..4,8,16".
std::vector<int> parse_stages(const std::string& text) {
  std::vector<int> out;
  for (const std::string& part : split(text, ',')) {
    auto dots = part.find("..");
    std::int64_t from = 0, to = 0;
    if (dots == std::string::npos) {
      from = to = parse_int(part, "--stages");
    } else {
      from = parse_int(part.substr(0, dots), "--stages"), to = parse_int(part.substr(dots + 2), "--stages");
      if (to < from) throw InputError("--stages=" + part + ": the range is empty");
    }
    if (static_cast<std::int64_t>(out.size()) + (to - from + 1) > kMaxStageCounts)
      throw InputError("--stages=" + text + " lists more than " + std::to_string(kMaxStageCounts) + " stage counts");
    for (std::int64_t s = from; s <= to; ++s) out.push_back(static_cast<int>(s));
  }
  for (int s : out)
    if (s < 1) throw InputError("--stages=" + text + ": stage counts must be at least 1");
  return out;
}

std::vector<std::string> parse_schedules(const std::string& text) {
  const std::vector<std::string> names = schedule_names();
  std::vector<std::string> out = split(text, ',');
  for (const std::string& s : out) {
    if (std::find(names.begin(), names.end(), s) != names.end()) continue;
    std::string guess = nearest(s, names);
    throw InputError("--schedules: " + s + " is not a schedule" +
                     (guess.empty() ? "" : " (did you mean " + guess + "?)"));
  }
  return out;
}

struct SweepConfig {
  std::vector<int> stages;
  std::vector<std::string> schedules;
  bool every_schedule = false;  // --schedules not given: rows a schedule cannot run are left out, not refused
  int microbatches = 0, per_stage = 10, steps = 2, chunks = 2, local_steps = 5, replicas = 0, noam = 0;
  double forward_s = 1, backward_s = 1, p2p_s = 0;
};

SweepConfig read_config(const Args& args) {
  SweepConfig c;
  c.stages = parse_stages(args.value("--stages").value_or("2,4,8,16,32,64"));
  c.schedules = args.has("--schedules") ? parse_schedules(*args.value("--schedules")) : schedule_names();
  c.every_schedule = !args.has("--schedules");
  c.microbatches = int_flag(args, "--microbatches", 0, 1);
  c.per_stage = int_flag(args, "--microbatches-per-stage", 10, 1);
  c.steps = int_flag(args, "--steps", 2, 1);
  c.chunks = int_flag(args, "--chunks", 2, 1);
  c.noam = int_flag(args, "--noam", 0, 1);
  c.replicas = int_flag(args, "--replicas", 0, 1);
  c.local_steps = int_flag(args, "--local-steps", 5, 1);
  c.forward_s = seconds_flag(args, "--forward-s", 1, true);
  c.backward_s = seconds_flag(args, "--backward-s", 1, true);
  c.p2p_s = seconds_flag(args, "--p2p-s", 0, false);
  return c;
}

Json section_for(const SweepConfig& c, const std::string& schedule, int stages) {
  // Wider than an int: the section's reader refuses a count past INT_MAX, naming it.
  const std::int64_t m = c.microbatches > 0 ? c.microbatches : std::int64_t{c.per_stage} * stages;
  Json j{{"schedule", schedule},     {"stages", stages},           {"microbatches", m}, {"steps", c.steps},
         {"forward_s", c.forward_s}, {"backward_s", c.backward_s}, {"p2p_s", c.p2p_s}};
  if (schedule == "interleaved") j["chunks"] = c.chunks;
  if ((schedule == "pipedream" || schedule == "pipedream-2bw") && c.noam > 0) j["noam"] = c.noam;
  if (schedule == "localsgd") {
    j["replicas"] = c.replicas > 0 ? c.replicas : stages;
    j["local_steps"] = c.local_steps;
  }
  return j;
}

Json max_of(const Json& list) {
  Json best = list.front();
  for (const Json& v : list)
    if (v.get<double>() > best.get<double>()) best = v;
  return best;
}

// One row of the sweep: the steady-state staleness (0 for the synchronous schedules) and block updates between a
// micro-batch's forward and its update, the schedule bubble, all idle time and throughput of one (schedule, S).
Json sweep_row(const SweepConfig& c, const std::string& schedule, int stages) {
  const Json section = section_for(c, schedule, stages);
  const Json report = simulate_abstract_pipeline(section, nullptr, nullptr);
  const Json& p = report["pipeline"];
  return Json{{"schedule", schedule},
              {"stages", stages},
              {"microbatches", section["microbatches"]},
              {"steps", c.steps},
              {"forward_s", c.forward_s},
              {"backward_s", c.backward_s},
              {"p2p_s", c.p2p_s},
              {"max_delay", p["staleness"]["max_delay"]},
              {"mean_delay", p["staleness"]["mean_delay"]},
              {"max_block_updates_between", p["block_updates_between"]["max"]},
              {"mean_block_updates_between", p["block_updates_between"]["mean"]},
              {"schedule_bubble_fraction", p["schedule_bubble_fraction_mean"]},
              {"idle_fraction", p["idle_fraction_mean"]},
              {"throughput_microbatches_per_s", report["simulation"]["throughput_microbatches_per_s"]},
              {"makespan_s", report["simulation"]["makespan_s"]},
              {"stashed_versions_peak", max_of(p["stashed_versions_peak"])},
              {"inflight_microbatches_peak", max_of(p["inflight_microbatches_peak"])},
              {"version_lag_max", p["version_lag"]["max"]}};
}

std::string csv_cell(const Json& v) {
  if (v.is_string()) return v.get<std::string>();  // schedule names hold no comma or quote
  return v.dump();
}

// Columns in the order of sweep_row (JSON objects iterate their keys alphabetically).
const std::vector<std::string> kColumns = {"schedule",
                                           "stages",
                                           "microbatches",
                                           "steps",
                                           "forward_s",
                                           "backward_s",
                                           "p2p_s",
                                           "max_delay",
                                           "mean_delay",
                                           "max_block_updates_between",
                                           "mean_block_updates_between",
                                           "schedule_bubble_fraction",
                                           "idle_fraction",
                                           "throughput_microbatches_per_s",
                                           "makespan_s",
                                           "stashed_versions_peak",
                                           "inflight_microbatches_peak",
                                           "version_lag_max"};

std::string csv(const std::vector<Json>& rows) {
  std::string out;
  for (const std::string& column : kColumns) out += (column == kColumns.front() ? "" : ",") + column;
  out += "\n";
  for (const Json& row : rows) {
    for (const std::string& column : kColumns) out += (column == kColumns.front() ? "" : ",") + csv_cell(row[column]);
    out += "\n";
  }
  return out;
}

// CSV when the file ends in .csv, else JSON lines.
std::string rows_text(const std::string& path, const std::vector<Json>& rows) {
  if (path.size() >= 4 && path.substr(path.size() - 4) == ".csv") return csv(rows);
  std::string text;
  for (const Json& row : rows) text += row.dump() + "\n";
  return text;
}

std::string table(const std::vector<Json>& rows) {
  std::string out =
      "schedule         S     M  max delay  mean delay  max blk upd  mean blk upd  bubble    idle   throughput  stash  "
      "lag\n";
  char line[200];
  for (const Json& r : rows) {
    std::snprintf(line, sizeof line, "%-14s %3d %5d %10lld %11.2f %12lld %13.2f %7.4f %7.4f %12.4f %6lld %4lld\n",
                  r["schedule"].get<std::string>().c_str(), r["stages"].get<int>(), r["microbatches"].get<int>(),
                  static_cast<long long>(r["max_delay"].get<std::int64_t>()), r["mean_delay"].get<double>(),
                  static_cast<long long>(r["max_block_updates_between"].get<std::int64_t>()),
                  r["mean_block_updates_between"].get<double>(), r["schedule_bubble_fraction"].get<double>(),
                  r["idle_fraction"].get<double>(), r["throughput_microbatches_per_s"].get<double>(),
                  static_cast<long long>(r["stashed_versions_peak"].get<std::int64_t>()),
                  static_cast<long long>(r["version_lag_max"].get<std::int64_t>()));
    out += line;
  }
  return out;
}

// The most forward and backward passes a sweep evaluates, all rows together: about 20 s and, for one row holding
// them all, 2 GB (measured: 1.3 M passes/s, 66 bytes per pass). The default stage counts take 1.5 M; 2..64 with every
// schedule 25 M.
constexpr double kMaxSweepPasses = 32e6;

// The ops of one row: per forward pass, its backward (or a split backward's B and W) x stages x chunks x micro-batches
// x steps (wider than an int).
double row_passes(const SweepConfig& c, const std::string& schedule, int stages) {
  const double microbatches = c.microbatches > 0 ? c.microbatches : double{1} * c.per_stage * stages;
  const Schedule s = schedule_named(schedule);  // the names were checked by parse_schedules
  const double per_pass = splits_backward(s) ? 3 : 2;
  const double chunks = interleaves_chunks(s) ? c.chunks : v_shaped(s) ? 2 : 1;
  return per_pass * stages * chunks * microbatches * c.steps;
}

struct Row {
  std::string schedule;
  int stages = 0;
};

// Checks every row before any is evaluated: the passes of all rows together, then each section as
// simulate_abstract_pipeline reads it and each shape as the evaluator accepts it. Returns the rows to evaluate: all of
// them, except that without --schedules a row its schedule refuses (dualpipe at an odd stage count) is left out and
// named on stderr.
std::vector<Row> check_sweep(const SweepConfig& c) {
  double passes = 0;
  for (const std::string& schedule : c.schedules)
    for (int stages : c.stages) passes += row_passes(c, schedule, stages);
  if (passes > kMaxSweepPasses) {
    char count[32];
    std::snprintf(count, sizeof count, "%.3g", passes);
    throw InputError("pipeline-sweep would evaluate " + std::string(count) + " forward and backward passes (" +
                     std::to_string(c.schedules.size() * c.stages.size()) +
                     " rows of --schedules x --stages, each 2 x stages x micro-batches x --steps x chunks, 3 x for "
                     "the schedules that split the backward), more "
                     "than the limit of 3.2e+07 (about 20 s); give fewer --stages, --schedules, --microbatches or "
                     "--steps");
  }
  std::vector<Row> rows;
  for (const std::string& schedule : c.schedules) {
    for (int stages : c.stages) {
      try {
        check_shape(parse_abstract_pipeline(section_for(c, schedule, stages)).shape, abstract_shape_fields());
        rows.push_back({schedule, stages});
      } catch (const InputError& e) {
        const std::string what = schedule + " at --stages " + std::to_string(stages) + ": " + e.what();
        if (!c.every_schedule) throw InputError("--schedules " + what);
        std::cerr << "pipeline-sweep: left out " << what << "\n";
      }
    }
  }
  return rows;
}

int run(const Args& args) {
  if (!args.positional().empty())
    throw InputError("pipeline-sweep takes no file argument, got " + args.positional()[0]);
  const SweepConfig config = read_config(args);
  std::vector<Json> rows;
  for (const Row& row : check_sweep(config)) rows.push_back(sweep_row(config, row.schedule, row.stages));
  std::cout << table(rows);
  write_flag_output(args, "--out", [&] { return rows_text(*args.value("--out"), rows); });
  return 0;
}

}  // namespace

Command command_pipeline_sweep() {
  return command_from_help(kHelp, run);
}

}  // namespace placesim
