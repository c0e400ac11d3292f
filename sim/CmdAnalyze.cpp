#include <iostream>

#include "sim/Commands.hpp"
#include "strategies/Analytic.hpp"
#include "strategies/Strategy.hpp"
#include "strategies/Validity.hpp"
#include "traces/Report.hpp"

namespace placesim {

Command command_analyze() {
  Command c;
  c.name = "analyze";
  c.summary = "memory, communication and FLOPs per device derived from the placement (no simulation)";
  c.usage = "[EXPERIMENT.json] [--out FILE] [--table] [options]";
  c.flags = experiment_flags();
  c.flags.push_back({"--out", "FILE", "write the JSON report here (default: stdout)"});
  c.flags.push_back({"--table", "", "print a readable table (the JSON report then goes only to --out)"});
  c.run = [](const Args& args) {
    Experiment e = experiment_from_args(args, true);
    check_validity(e);
    Analysis a = analyze(e);
    check_fits(e, a);
    std::string out = args.value("--out").value_or("");
    if (args.has("--table")) {
      std::cout << analysis_table(e, a);
      if (!out.empty()) write_output(out, dump(analysis_report(e, a)));
    } else {
      write_output(out, dump(analysis_report(e, a)));
    }
    return 0;
  };
  return c;
}

Command command_check() {
  Command c;
  c.name = "check";
  c.summary = "validate an experiment: gradient integrity, state consistency, divisibility, memory fit";
  c.usage = "EXPERIMENT.json [options]";
  c.flags = experiment_flags();
  c.run = [](const Args& args) {
    Experiment e = experiment_from_args(args, false);
    check_validity(e);
    check_fits(e, analyze(e));
    std::cout << "valid: " << e.name << ": " << e.model.name << " with " << e.strategy.preset << " "
              << short_form(e.strategy.placement) << " on dp " << e.strategy.dp << " x tp " << e.strategy.tp
              << " x pp " << e.strategy.pp << "\n";
    return 0;
  };
  return c;
}

Command command_presets() {
  Command c;
  c.name = "presets";
  c.summary = "list the model and strategy presets";
  c.usage = "[--json]";
  c.flags = {{"--json", "", "print the presets as JSON"}};
  c.run = [](const Args& args) {
    auto models = model_preset_list();
    auto strategies = strategy_preset_list();
    if (args.has("--json")) {
      Json j{{"models", Json::object()}, {"strategies", Json::object()}};
      for (const auto& [n, d] : models) j["models"][n] = d;
      for (const auto& [n, d] : strategies) j["strategies"][n] = d;
      std::cout << dump(j);
      return 0;
    }
    std::cout << "models:\n";
    for (const auto& [n, d] : models) std::cout << "  " << n << std::string(16 - n.size(), ' ') << d << "\n";
    std::cout << "strategies:\n";
    for (const auto& [n, d] : strategies) std::cout << "  " << n << std::string(16 - n.size(), ' ') << d << "\n";
    return 0;
  };
  return c;
}

}  // namespace placesim
