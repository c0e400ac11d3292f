#include "sim/cli/Cli.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/cli/Commands.hpp"
#include "strategies/analytic/ExperimentFile.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/output/OutputPolicy.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

Args::Args(const std::vector<std::string>& argv, const std::vector<FlagSpec>& flags, const std::string& command) {
  auto find = [&](const std::string& name) -> const FlagSpec* {
    for (const auto& f : flags)
      if (f.name == name) return &f;
    return nullptr;
  };
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg.rfind("--", 0) != 0) {
      positional_.push_back(arg);
      continue;
    }
    std::string value;
    bool inline_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    const FlagSpec* spec = find(arg);
    if (!spec) {
      std::vector<std::string> names;
      for (const auto& f : flags) names.push_back(f.name);
      std::string guess = nearest(arg, names);
      throw InputError("unknown option " + arg + (guess.empty() ? "" : " (did you mean " + guess + "?)") +
                       "; see placesim " + command + " --help");
    }
    if (spec->value_name.empty()) {
      if (inline_value) throw InputError("option " + arg + " takes no value");
      values_[arg].push_back("");
    } else {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw InputError("option " + arg + " needs a value " + spec->value_name);
        value = argv[++i];
      }
      if (!spec->repeatable && values_.count(arg)) throw InputError("option " + arg + " given twice");
      values_[arg].push_back(value);
    }
  }
}

std::optional<std::string> Args::value(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::values(const std::string& flag) const {
  auto it = values_.find(flag);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

namespace {

/// The lines of a help text with continuation lines (those starting with a space) joined to the line before.
std::vector<std::string> logical_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    if (first == 0) {
      out.push_back(line);
    } else {
      if (out.empty()) throw std::logic_error("help text starts with a continuation line: " + line);
      out.back() += " " + line.substr(first);
    }
  }
  return out;
}

FlagSpec flag_line(const std::string& line) {
  const auto gap = line.find("  ");
  if (gap == std::string::npos) throw std::logic_error("flag table line without help: " + line);
  const std::string left = line.substr(0, gap);
  const auto space = left.find(' ');
  FlagSpec f;
  f.name = left.substr(0, space);
  f.value_name = space == std::string::npos ? "" : left.substr(space + 1);
  f.help = line.substr(line.find_first_not_of(' ', gap));
  f.repeatable = f.help.find("(repeatable)") != std::string::npos;
  return f;
}

}  // namespace

std::vector<FlagSpec> flag_table(const std::string& text) {
  std::vector<FlagSpec> flags;
  for (const std::string& line : logical_lines(text)) flags.push_back(flag_line(line));
  return flags;
}

Command command_from_help(const std::string& help, std::function<int(const Args&)> run, std::vector<FlagSpec> before,
                          const std::vector<FlagSpec>& after) {
  const std::vector<std::string> lines = logical_lines(help);
  if (lines.size() < 2) throw std::logic_error("command help without a usage line and a summary: " + help);
  Command c;
  const auto space = lines[0].find(' ');
  c.name = lines[0].substr(0, space);
  c.usage = space == std::string::npos ? "" : lines[0].substr(space + 1);
  c.summary = lines[1];
  c.flags = std::move(before);
  for (std::size_t i = 2; i < lines.size(); ++i) c.flags.push_back(flag_line(lines[i]));
  c.flags.insert(c.flags.end(), after.begin(), after.end());
  c.run = std::move(run);
  return c;
}

std::vector<FlagSpec> experiment_flags() {
  return flag_table(R"(
--model NAME              use this model preset instead of the file's model
--model-hf CONFIG.json    use a Hugging Face config.json as the model
--strategy PRESET         use this strategy preset (the file's strategy fields still override it)
--stack NAME              run with this training stack's defaults (placesim stacks; or a stack file .json)
--set PATH=VALUE          set any experiment field, e.g. --set strategy.dp=64 (repeatable)
--device-memory SIZE      device memory to check the plan against, e.g. 80GiB
)");
}

Json default_experiment_json() {
  return Json::parse(R"({
    "name": "default: GPT-3 175B, Megatron-LM 3D (TP 8, PP 8, DP 16, SP, selective recompute) on 128 DGX A100, unfused attention as in 2021",
    "stack": "megatron-lm-2022",
    "model": {"preset": "gpt3-175b", "flash_attention": false},
    "training": {"global_batch": 1536, "micro_batch": 1, "recompute": "selective"},
    "strategy": {"preset": "megatron-3d", "tp": 8, "pp": 8, "dp": 16, "sp": true, "schedule": "1f1b"},
    "cluster": {"preset": "dgx-a100", "nodes": 128}
  })");
}

Json experiment_json_from_args(const Args& args, bool allow_default, std::string* base_dir,
                               const std::vector<std::string>* positional) {
  Json j;
  const auto& pos = positional ? *positional : args.positional();
  if (pos.size() > 1)
    throw InputError("expected one experiment file, got " + std::to_string(pos.size()) + " arguments");
  bool from_flags = args.has("--model") || args.has("--model-hf");
  if (!pos.empty() && pos.front() == "-") {
    j = parse_json_text(read_standard_input(kMaxJsonInputBytes), "<stdin>");
  } else if (!pos.empty()) {
    j = read_json_file(pos.front());
    if (base_dir) *base_dir = std::filesystem::path(pos.front()).parent_path().string();
  } else if (from_flags) {
    j = Json::object();
    if (!args.has("--strategy")) j["strategy"] = "dp";
  } else if (allow_default) {
    j = default_experiment_json();
    std::cerr << "placesim: no experiment file given; using the built-in default experiment\n";
  } else {
    throw InputError(
        "no experiment file given (placesim <command> EXPERIMENT.json, or --model NAME --strategy PRESET)");
  }
  if (!j.is_object()) throw InputError("the experiment must be a JSON object");
  if (auto m = args.value("--model")) j["model"] = *m;
  // A path on the command line is the shell's, relative to the current folder: made absolute when the experiment's
  // folder would otherwise resolve it (parse_model reads a relative hf_config from there).
  if (auto hf = args.value("--model-hf")) {
    std::filesystem::path p(*hf);
    const bool other_folder =
        !pos.empty() && pos.front() != "-" && std::filesystem::path(pos.front()).has_parent_path();
    if (other_folder && p.is_relative() && !p.empty()) p = std::filesystem::absolute(p);
    j["model"] = Json{{"hf_config", p.string()}};
  }
  if (auto s = args.value("--strategy")) set_path(j, "strategy.preset", *s);
  if (auto s = args.value("--stack")) j["stack"] = *s;
  for (const auto& assignment : args.values("--set")) {
    auto eq = assignment.find('=');
    if (eq == std::string::npos) throw InputError("--set " + assignment + ": expected PATH=VALUE");
    set_path(j, assignment.substr(0, eq), parse_cli_value(assignment.substr(eq + 1)));
  }
  return j;
}

Experiment experiment_from_args(const Args& args, bool allow_default, const std::vector<std::string>* positional,
                                Json* source, std::string* dir) {
  std::string base_dir;
  Json j = experiment_json_from_args(args, allow_default, &base_dir, positional);
  if (source) *source = j;
  if (dir) *dir = base_dir;
  // Every error of the experiment at once, under the name of its file.
  const auto& pos = positional ? *positional : args.positional();
  ErrorList errors(pos.empty() ? "the experiment" : pos.front() == "-" ? "<stdin>" : pos.front());
  Experiment e = parse_experiment(j, base_dir, errors);
  if (auto mem = args.value("--device-memory")) {
    e.device_memory_bytes = parse_bytes(*mem, "--device-memory");
    if (!(e.device_memory_bytes > 0)) throw InputError("--device-memory=" + *mem + " must be positive");
  }
  return e;
}

void refuse_abstract_pipeline(const Experiment& e, const std::string& command, const std::string& needs) {
  if (e.pipeline.is_null()) return;
  throw InputError("pipeline: the experiment is an abstract pipeline (stage times, no model, cluster or placement); " +
                   command + " needs " + needs +
                   ". Simulate it (placesim simulate: step time, bubble, staleness per stage) or compare its schedules "
                   "(placesim pipeline-sweep)");
}

void write_output(const std::string& path, const std::string& text) {
  OutputFile out(path.empty() ? "-" : path);
  out.write(text);
  out.close();
}

std::optional<std::int64_t> integer_flag(const Args& args, const std::string& flag, std::int64_t lowest,
                                         std::int64_t highest) {
  auto text = args.value(flag);
  if (!text) return std::nullopt;
  const Json v = parse_cli_value(*text);
  if (!v.is_number_integer() || v.get<std::int64_t>() < lowest || v.get<std::int64_t>() > highest)
    throw InputError(flag + "=" + *text + " must be an integer from " + std::to_string(lowest) + " to " +
                     std::to_string(highest));
  return v.get<std::int64_t>();
}

std::vector<FlagSpec> with_flags(std::vector<FlagSpec> base, const std::vector<FlagSpec>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

void write_flag_output(const Args& args, const std::string& flag, const std::function<std::string()>& text) {
  if (auto path = args.value(flag)) write_output(*path, text());
}

std::ostream& summary_stream(const std::string& path) {
  return path == "-" ? std::cerr : std::cout;
}

std::vector<Command> all_commands() {
  return {command_analyze(),        command_check(),    command_simulate(),       command_sweep(),  command_search(),
          command_pipeline_sweep(), command_converge(), command_converge_sweep(), command_verify(), command_calibrate(),
          command_compare(),        command_presets(),  command_stacks()};
}

namespace {

// The output policy (check_outputs) and the paths' writability, before any work: a typo or an output naming an
// input does not cost a whole simulation or sweep. (sweep --slurm creates the folder of its results, shards and
// logs; sweep merge checks its own OUT against its shards.)
void check_command_outputs(const Command& command, const Args& args) {
  std::vector<std::string> input_flags = command.input_flags;
  input_flags.insert(input_flags.end(), {"--sweep", "--model-hf"});
  std::vector<std::string> inputs = args.positional();
  for (const std::string& flag : input_flags)
    for (const std::string& v : args.values(flag)) inputs.push_back(v);
  std::vector<OutputPath> outputs;
  for (const char* flag : {"--out", "--report", "--trace", "--svg", "--csv", "--jsonl", "--out-csv", "--out-jsonl",
                           "--profiler-trace", "--simulated-trace"}) {
    if (std::find(input_flags.begin(), input_flags.end(), flag) != input_flags.end()) continue;
    if (auto path = args.value(flag)) {
      if (args.has("--slurm")) continue;
      check_output_path(flag, *path);
      outputs.push_back({flag, *path});
    }
  }
  bool has_force = false;
  for (const FlagSpec& f : command.flags) has_force = has_force || f.name == "--force";
  check_outputs(outputs, inputs, args.has("--force"), has_force ? "--force" : "");
}

void print_help(const std::vector<Command>& commands) {
  std::cout << "placesim " PLACESIM_VERSION
               " - placement-driven simulator of distributed training\n\n"
               "usage: placesim <command> [arguments]   (placesim <command> --help for its options)\n\ncommands:\n";
  for (const auto& c : commands)
    std::cout << "  " << c.name << std::string(16 - c.name.size(), ' ') << c.summary << "\n";
}

void print_command_help(const Command& c) {
  std::cout << "usage: placesim " << c.name << " " << c.usage << "\n\n" << c.summary << "\n\noptions:\n";
  for (const auto& f : c.flags) {
    std::string left = f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    std::cout << "  " << left << std::string(left.size() < 26 ? 26 - left.size() : 1, ' ') << f.help << "\n";
  }
  std::cout << "  --help                    show this help\n";
}

}  // namespace

int run_cli(int argc, char** argv) {
  std::vector<Command> commands = all_commands();
  std::vector<std::string> rest(argv + 1, argv + argc);
  if (rest.empty() || rest[0] == "--help" || rest[0] == "-h" || rest[0] == "help") {
    print_help(commands);
    return rest.empty() ? 2 : 0;
  }
  if (rest[0] == "--version") {
    std::cout << "placesim " PLACESIM_VERSION "\n";
    return 0;
  }
  const std::string name = rest[0];
  rest.erase(rest.begin());
  const Command* command = nullptr;
  for (const auto& c : commands)
    if (c.name == name) command = &c;
  if (!command) {
    std::vector<std::string> names;
    for (const auto& c : commands) names.push_back(c.name);
    std::string guess = nearest(name, names);
    std::cerr << "placesim: unknown command '" << name << "'"
              << (guess.empty() ? "" : "; did you mean '" + guess + "'?") << " (placesim --help lists the commands)\n";
    return 2;
  }
  for (const auto& a : rest)
    if (a == "--help" || a == "-h") {
      print_command_help(*command);
      return 0;
    }
  try {
    Args args(rest, command->flags, command->name);
    check_command_outputs(*command, args);
    return command->run(args);
  } catch (const InputError& e) {
    std::cerr << "placesim " << name << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // The size guards refuse what they can foresee; what slips past them is still the input's size, not a bug.
    std::cerr << "placesim " << name << ": error: out of memory: the experiment is too large for this machine "
              << "(use a smaller mesh or sweep, --fidelity analytic, or analyze)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "placesim " << name << ": internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace placesim
