#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "strategies/placement/Experiment.hpp"

namespace placesim {

/// One command-line flag of a subcommand.
struct FlagSpec {
  std::string name;        ///< "--out"
  std::string value_name;  ///< "FILE"; empty for a switch
  std::string help;
  bool repeatable = false;
};

/// Parsed arguments of one subcommand: positionals and flags. Unknown flags are refused, naming the nearest.
class Args {
 public:
  Args(const std::vector<std::string>& argv, const std::vector<FlagSpec>& flags, const std::string& command);
  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::optional<std::string> value(const std::string& flag) const;
  std::vector<std::string> values(const std::string& flag) const;

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::vector<std::string>> values_;
};

/// A subcommand of the `placesim` CLI.
struct Command {
  std::string name;
  std::string summary;
  std::string usage;  ///< the arguments after the command name
  std::vector<FlagSpec> flags;
  std::function<int(const Args&)> run;
  /// Flags whose values are files the command reads (besides its positional files, --sweep and --model-hf): an
  /// output may not name one of them (check_outputs).
  std::vector<std::string> input_flags;
};

/// A flag table written as its --help text, one flag a line: `--name VALUE` (VALUE absent for a switch), two or more
/// spaces, the help; a line that starts with a space continues the previous help. A flag whose help says
/// "(repeatable)" may be given more than once.
std::vector<FlagSpec> flag_table(const std::string& text);

/// A command from its --help text: the first line `NAME USAGE`, the second the summary, then the command's own flag
/// table (flag_table's form; a line starting with a space continues the one before, in all three parts). `before`
/// and `after` are shared flag groups listed before and after the command's own flags.
Command command_from_help(const std::string& help, std::function<int(const Args&)> run,
                          std::vector<FlagSpec> before = {}, const std::vector<FlagSpec>& after = {});

/// The flags of the commands that read an experiment: --model, --model-hf, --strategy, --set and --device-memory
/// (search leaves --device-memory to its sweep flags).
std::vector<FlagSpec> experiment_flags();
/// The experiment JSON named by the arguments: the positional file ("-" reads stdin), else an empty experiment when
/// --model or --model-hf is given, else the built-in default when `allow_default`; --model / --model-hf /
/// --strategy / --set applied on top. Sets `*base_dir` (when not null) to the file's directory, which relative
/// paths in the experiment are read from. Throws InputError when no experiment is named.
/// `positional`, when given, stands for the command line's positional arguments (a command whose other positionals
/// are not the experiment passes the experiment's alone).
Json experiment_json_from_args(const Args& args, bool allow_default, std::string* base_dir,
                               const std::vector<std::string>* positional = nullptr);
/// Parses the experiment named by the arguments, with --device-memory applied.
/// `source` and `base_dir`, when given, receive the experiment's JSON (after --set) and the folder of its file.
Experiment experiment_from_args(const Args& args, bool allow_default,
                                const std::vector<std::string>* positional = nullptr, Json* source = nullptr,
                                std::string* base_dir = nullptr);
/// Throws InputError when `e` is an abstract pipeline (a "pipeline" section of stage times, without a model, cluster
/// or placement): `command` (e.g. "analyze") derives its figures from the placement, which such an experiment lacks,
/// and would answer with zeros or with a one-device placement instead.
void refuse_abstract_pipeline(const Experiment& e, const std::string& command, const std::string& needs);
/// The built-in default experiment (GPT-3 175B, Megatron-LM 3D on 128 DGX A100 nodes).
Json default_experiment_json();

/// The integer value of `flag`, or nullopt when it is not given; anything but an integer from `lowest` to `highest`
/// is an InputError "FLAG=TEXT must be an integer from LOWEST to HIGHEST".
std::optional<std::int64_t> integer_flag(const Args& args, const std::string& flag, std::int64_t lowest,
                                         std::int64_t highest);

/// `base` followed by `more`: a shared flag group and then a command's own flags.
std::vector<FlagSpec> with_flags(std::vector<FlagSpec> base, const std::vector<FlagSpec>& more);

/// Writes `text` to `path`, or to stdout when path is empty or "-".
void write_output(const std::string& path, const std::string& text);
/// When `flag` is given, writes `text()` to the file it names (stdout for "-"); `text` runs only then.
void write_flag_output(const Args& args, const std::string& flag, const std::function<std::string()>& text);
/// Where a command prints its summary: stderr when its main output goes to stdout as `path` "-", else stdout.
std::ostream& summary_stream(const std::string& path);

/// The subcommands in the order `placesim --help` lists them (the command_*() functions of Commands.hpp).
std::vector<Command> all_commands();

/// The CLI: dispatches to a subcommand; returns the process exit code (0 ok, 2 bad input, 1 internal error).
int run_cli(int argc, char** argv);

}  // namespace placesim
