#include "sim/converge/ConvergeSweepOutput.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "traces/svg/SvgPlot.hpp"
#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

const std::vector<std::string> kColumns = {"objective",
                                           "stages",
                                           "schedule",
                                           "microbatches",
                                           "replicas",
                                           "local_steps",
                                           "budget_s",
                                           "seeds",
                                           "step_size",
                                           "log2_step",
                                           "at_grid_edge",
                                           "final_gap",
                                           "final_loss",
                                           "min_loss",
                                           "initial_loss",
                                           "updates",
                                           "final_time_s",
                                           "max_delay",
                                           "mean_delay",
                                           "idle_fraction",
                                           "diverged_steps",
                                           "reference_minimum",
                                           "minimum_gradient_norm"};

int diverged_steps(const ConvergeSweepCell& c) {
  int n = 0;
  for (const ConvergeSweepRun& r : c.runs) n += r.diverged ? 1 : 0;
  return n;
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double largest(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

// The figures of a cell's best run; empty when every step size diverged.
std::vector<std::string> best_cells(const ConvergeSweepCell& c) {
  if (c.best < 0) return std::vector<std::string>(9);
  const ConvergeSweepRun& b = c.runs[static_cast<std::size_t>(c.best)];
  return {format_shortest(std::ldexp(1.0, b.log2_step)),
          std::to_string(b.log2_step),
          c.best_at_grid_edge() ? "true" : "false",
          format_shortest(b.mean_gap),
          format_shortest(b.mean_final_loss),
          format_shortest(mean(b.min_loss)),
          format_shortest(mean(b.initial_loss)),
          std::to_string(b.updates),
          format_shortest(b.final_time_s)};
}

std::string csv_row(const ConvergeSweepCell& c) {
  std::vector<std::string> cells = {c.objective,
                                    std::to_string(c.stages),
                                    to_string(c.schedule),
                                    std::to_string(c.microbatches),
                                    std::to_string(c.replicas),
                                    std::to_string(c.local_steps),
                                    format_shortest(c.budget_s),
                                    std::to_string(c.minimum.size())};
  for (std::string& text : best_cells(c)) cells.push_back(std::move(text));
  for (std::string text : {std::to_string(c.max_delay), format_shortest(c.mean_delay), format_shortest(c.idle_fraction),
                           std::to_string(diverged_steps(c)), format_shortest(mean(c.minimum)),
                           format_shortest(largest(c.minimum_gradient_norm))})
    cells.push_back(std::move(text));
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + cells[i];
  return line + "\n";
}

Json finite_or_null(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

// The keys (objectives, schedules, stage counts) in the order the cells first have them.
template <class Key>
std::vector<Key> distinct(const std::vector<ConvergeSweepCell>& cells, Key (*key)(const ConvergeSweepCell&)) {
  std::vector<Key> out;
  for (const ConvergeSweepCell& c : cells)
    if (std::find(out.begin(), out.end(), key(c)) == out.end()) out.push_back(key(c));
  return out;
}
std::string objective_key(const ConvergeSweepCell& c) {
  return c.objective;
}
Schedule schedule_key(const ConvergeSweepCell& c) {
  return c.schedule;
}
int stages_key(const ConvergeSweepCell& c) {
  return c.stages;
}

std::string table_entry(const ConvergeSweepCell& c) {
  if (c.best < 0) return "diverged";
  const ConvergeSweepRun& b = c.runs[static_cast<std::size_t>(c.best)];
  char text[64];
  std::snprintf(text, sizeof text, "%.3e (%d)%s", b.mean_gap, b.log2_step, c.best_at_grid_edge() ? "*" : "");
  return text;
}

// f* of each seed's instance, and a warning when a minimization did not reach a stationary point.
std::string minimum_note(const std::vector<ConvergeSweepCell>& cells, const std::string& objective) {
  for (const ConvergeSweepCell& c : cells) {
    if (c.objective != objective) continue;
    std::string note = "f* =";
    char text[160];
    for (double f : c.minimum) {
      std::snprintf(text, sizeof text, " %.6g", f);
      note += text;
    }
    if (largest(c.minimum_gradient_norm) > 1e-6) {
      std::snprintf(text, sizeof text, " (upper bounds: ||grad f|| up to %.2g there, f may have no minimizer)",
                    largest(c.minimum_gradient_norm));
      note += text;
    }
    return note;
  }
  return "";
}

std::string panel(const std::vector<ConvergeSweepCell>& cells, const std::string& objective) {
  std::vector<PlotSeries> series;
  for (Schedule s : distinct(cells, schedule_key)) {
    PlotSeries line{to_string(s), {}, {}};
    for (const ConvergeSweepCell& c : cells) {
      if (c.objective != objective || c.schedule != s) continue;
      line.x.push_back(c.stages);
      line.y.push_back(c.best >= 0 ? c.runs[static_cast<std::size_t>(c.best)].mean_gap : NAN);
    }
    // A line drawn exactly over an earlier one (GPipe and 1F1B with uniform stages) would vanish: say so.
    for (const PlotSeries& earlier : series)
      if (earlier.x == line.x && earlier.y == line.y) {
        line.label += " (= " + earlier.label + ")";
        break;
      }
    series.push_back(std::move(line));
  }
  const double budget = cells.empty() ? 0 : cells.front().budget_s;
  PlotOptions o{objective + ": final loss - f* at " + format_shortest(budget) + " time units (tuned step)",
                "pipeline stages S", "final loss - f* (mean over seeds)", true};
  o.log_x = true;
  o.markers = true;
  return render_line_plot(series, o);
}

}  // namespace

std::string sweep_csv(const std::vector<ConvergeSweepCell>& cells) {
  std::string out;
  for (std::size_t i = 0; i < kColumns.size(); ++i) out += (i ? "," : "") + kColumns[i];
  out += "\n";
  for (const ConvergeSweepCell& c : cells) out += csv_row(c);
  return out;
}

std::string sweep_jsonl(const std::vector<ConvergeSweepCell>& cells) {
  std::string out;
  auto finite = [](const std::vector<double>& v) {
    Json list = Json::array();
    for (double x : v) list.push_back(finite_or_null(x));
    return list;
  };
  for (const ConvergeSweepCell& c : cells) {
    for (std::size_t i = 0; i < c.runs.size(); ++i) {
      const ConvergeSweepRun& r = c.runs[i];
      Json row{{"objective", c.objective},
               {"stages", c.stages},
               {"schedule", to_string(c.schedule)},
               {"microbatches", c.microbatches},
               {"replicas", c.replicas},
               {"local_steps", c.local_steps},
               {"budget_s", c.budget_s},
               {"log2_step", r.log2_step},
               {"step_size", std::ldexp(1.0, r.log2_step)},
               {"final_gap", finite_or_null(r.mean_gap)},
               {"final_loss", finite_or_null(r.mean_final_loss)},
               {"final_loss_per_seed", finite(r.final_loss)},
               {"min_loss_per_seed", finite(r.min_loss)},
               {"initial_loss_per_seed", finite(r.initial_loss)},
               {"reference_minimum_per_seed", c.minimum},
               {"final_time_s", r.final_time_s},
               {"updates", r.updates},
               {"backwards", r.backwards},
               {"diverged", r.diverged},
               {"chosen", static_cast<int>(i) == c.best}};
      out += row.dump() + "\n";
    }
  }
  return out;
}

std::string sweep_table(const std::vector<ConvergeSweepCell>& cells) {
  std::string out;
  const std::vector<Schedule> schedules = distinct(cells, schedule_key);
  char text[128];
  for (const std::string& objective : distinct(cells, objective_key)) {
    out += objective + ": final loss - f* at the budget, mean over seeds (log2 of the tuned step size; * = edge of " +
           "the grid); " + minimum_note(cells, objective) + "\n";
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
        for (const ConvergeSweepCell& c : cells)
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

std::string sweep_svg(const std::vector<ConvergeSweepCell>& cells) {
  const std::vector<std::string> objectives = distinct(cells, objective_key);
  constexpr int kWidth = 720, kHeight = 440;
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "version=\"1.1\" width=\"" +
      std::to_string(kWidth * objectives.size()) + "\" height=\"" + std::to_string(kHeight) + "\">\n";
  for (std::size_t i = 0; i < objectives.size(); ++i) {
    std::string inner = panel(cells, objectives[i]);
    inner.erase(0, inner.find("<svg") + 4);  // drop the XML declaration; the panel becomes a nested, placed <svg>
    out += "<svg x=\"" + std::to_string(kWidth * i) + "\" y=\"0\"" + inner;
  }
  return out + "</svg>\n";
}

}  // namespace placesim
