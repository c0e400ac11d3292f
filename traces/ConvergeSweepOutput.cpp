#include "traces/ConvergeSweepOutput.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "traces/SvgPlot.hpp"
#include "workloads/Numbers.hpp"

namespace placesim {

namespace {

const std::vector<std::string> kColumns = {
    "objective",  "stages",       "schedule",     "microbatches",   "replicas",  "local_steps", "budget_s",
    "step_size",  "log2_step",    "at_grid_edge", "final_loss",     "min_loss",  "initial_loss", "updates",
    "final_time_s", "max_delay",  "mean_delay",   "bubble_fraction", "diverged_steps"};

int diverged_steps(const SweepCell& c) {
  int n = 0;
  for (const SweepRun& r : c.runs) n += r.diverged ? 1 : 0;
  return n;
}

std::string csv_row(const SweepCell& c) {
  const bool any = c.best >= 0;
  const SweepRun* b = any ? &c.runs[static_cast<std::size_t>(c.best)] : nullptr;
  auto num = [&](double v) { return any ? format_shortest(v) : std::string(); };
  const std::vector<std::string> cells = {c.objective,
                                          std::to_string(c.stages),
                                          to_string(c.schedule),
                                          std::to_string(c.microbatches),
                                          std::to_string(c.replicas),
                                          std::to_string(c.local_steps),
                                          format_shortest(c.budget_s),
                                          any ? format_shortest(std::ldexp(1.0, b->log2_step)) : "",
                                          any ? std::to_string(b->log2_step) : "",
                                          any ? (c.best_at_grid_edge() ? "true" : "false") : "",
                                          any ? num(b->final_loss) : "",
                                          any ? num(b->min_loss) : "",
                                          any ? num(b->initial_loss) : "",
                                          any ? std::to_string(b->updates) : "",
                                          any ? num(b->final_time_s) : "",
                                          std::to_string(c.max_delay),
                                          format_shortest(c.mean_delay),
                                          format_shortest(c.bubble_fraction),
                                          std::to_string(diverged_steps(c))};
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + cells[i];
  return line + "\n";
}

Json finite_or_null(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

// Objectives in their first-seen order, and the schedules of the sweep likewise.
template <class Key>
std::vector<Key> distinct(const std::vector<SweepCell>& cells, Key (*key)(const SweepCell&)) {
  std::vector<Key> out;
  for (const SweepCell& c : cells)
    if (std::find(out.begin(), out.end(), key(c)) == out.end()) out.push_back(key(c));
  return out;
}
std::string objective_key(const SweepCell& c) { return c.objective; }
Schedule schedule_key(const SweepCell& c) { return c.schedule; }
int stages_key(const SweepCell& c) { return c.stages; }

std::string table_entry(const SweepCell& c) {
  if (c.best < 0) return "diverged";
  const SweepRun& b = c.runs[static_cast<std::size_t>(c.best)];
  char text[64];
  std::snprintf(text, sizeof text, "%.3e (%d)%s", b.final_loss, b.log2_step, c.best_at_grid_edge() ? "*" : "");
  return text;
}

std::string panel(const std::vector<SweepCell>& cells, const std::string& objective) {
  std::vector<PlotSeries> series;
  for (Schedule s : distinct(cells, schedule_key)) {
    PlotSeries line{to_string(s), {}, {}};
    for (const SweepCell& c : cells) {
      if (c.objective != objective || c.schedule != s) continue;
      line.x.push_back(c.stages);
      line.y.push_back(c.best >= 0 ? c.runs[static_cast<std::size_t>(c.best)].final_loss : NAN);
    }
    series.push_back(std::move(line));
  }
  const double budget = cells.empty() ? 0 : cells.front().budget_s;
  PlotOptions o{objective + ": final loss at " + format_shortest(budget) + " time units (tuned step)",
                "pipeline stages S", "final loss", true};
  o.log_x = true;
  o.markers = true;
  return render_line_plot(series, o);
}

}  // namespace

std::string sweep_csv(const std::vector<SweepCell>& cells) {
  std::string out;
  for (std::size_t i = 0; i < kColumns.size(); ++i) out += (i ? "," : "") + kColumns[i];
  out += "\n";
  for (const SweepCell& c : cells) out += csv_row(c);
  return out;
}

std::string sweep_jsonl(const std::vector<SweepCell>& cells) {
  std::string out;
  for (const SweepCell& c : cells) {
    for (std::size_t i = 0; i < c.runs.size(); ++i) {
      const SweepRun& r = c.runs[i];
      Json row{{"objective", c.objective},          {"stages", c.stages},
               {"schedule", to_string(c.schedule)}, {"microbatches", c.microbatches},
               {"replicas", c.replicas},            {"local_steps", c.local_steps},
               {"budget_s", c.budget_s},            {"log2_step", r.log2_step},
               {"step_size", std::ldexp(1.0, r.log2_step)},
               {"final_loss", finite_or_null(r.final_loss)},
               {"min_loss", finite_or_null(r.min_loss)},
               {"initial_loss", finite_or_null(r.initial_loss)},
               {"final_time_s", r.final_time_s},    {"updates", r.updates},
               {"backwards", r.backwards},          {"diverged", r.diverged},
               {"chosen", static_cast<int>(i) == c.best}};
      out += row.dump() + "\n";
    }
  }
  return out;
}

std::string sweep_table(const std::vector<SweepCell>& cells) {
  std::string out;
  const std::vector<Schedule> schedules = distinct(cells, schedule_key);
  char text[128];
  for (const std::string& objective : distinct(cells, objective_key)) {
    out += objective + ": final loss at the budget (log2 of the tuned step size; * = edge of the grid)\n";
    std::snprintf(text, sizeof text, "%4s", "S");
    out += text;
    for (Schedule s : schedules) {
      std::snprintf(text, sizeof text, "  %-19s", to_string(s).c_str());
      out += text;
    }
    out += "\n";
    for (int stages : distinct(cells, stages_key)) {
      std::snprintf(text, sizeof text, "%4d", stages);
      out += text;
      for (Schedule s : schedules)
        for (const SweepCell& c : cells)
          if (c.objective == objective && c.stages == stages && c.schedule == s) {
            std::snprintf(text, sizeof text, "  %-19s", table_entry(c).c_str());
            out += text;
          }
      out += "\n";
    }
    out += "\n";
  }
  return out;
}

std::string sweep_svg(const std::vector<SweepCell>& cells) {
  const std::vector<std::string> objectives = distinct(cells, objective_key);
  constexpr int kWidth = 720, kHeight = 440;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                    "version=\"1.1\" width=\"" + std::to_string(kWidth * objectives.size()) + "\" height=\"" +
                    std::to_string(kHeight) + "\">\n";
  for (std::size_t i = 0; i < objectives.size(); ++i) {
    std::string inner = panel(cells, objectives[i]);
    inner.erase(0, inner.find("<svg") + 4);  // drop the XML declaration; the panel becomes a nested, placed <svg>
    out += "<svg x=\"" + std::to_string(kWidth * i) + "\" y=\"0\"" + inner;
  }
  return out + "</svg>\n";
}

}  // namespace placesim
