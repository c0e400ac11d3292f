#pragma once
#include <memory>
#include <string>
#include <vector>

#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// One default a training stack runs with: the experiment field it sets (dotted, "training.kernels"), its value as
/// the experiment would write it, the condition under which the stack applies it ("" = always; see
/// strategies/placement/Condition.hpp) and where that behaviour is documented or coded. A field may have several
/// settings with conditions: the first whose condition holds applies.
struct StackSetting {
  std::string field;
  Json value;
  std::string when;
  std::string source;
};

/// A word that means the stack's own thing: an experiment that writes `field` = `word` under this stack gets
/// `means` (torchtitan's "selective" activation checkpointing is its op-level SAC, placesim's "selective-op").
struct StackWord {
  std::string field, word, means, source;
};

/// Memory a stack holds beyond what placesim counts per device: the CUDA context and library handles, the
/// communicators' buffers (both reserved outright), and the share of the peak its allocator may lose to
/// fragmentation (a warning threshold: placesim's peak is itself an estimate).
struct StackMemory {
  double context_bytes = 0;
  double communicator_bytes = 0;
  double fragmentation = 0;
  std::string source;
  double reserve_bytes() const { return context_bytes + communicator_bytes; }
};

/// A plan the stack cannot run (DeepSpeed's pipeline engine refuses ZeRO stages 2 and 3): where `when` holds, the
/// report warns that no run of this stack executes the plan and a search never ranks it.
struct StackLimit {
  std::string when, why;
};

/// A training stack as data (workloads/stack/stacks/<name>.json): the defaults it runs with, each with its source.
/// An experiment names one ("stack": "nemo-24.07", or a path to a file of this form); its strategy preset names one
/// otherwise. Resolution: stack, then preset, then the experiment's own fields (which win).
struct StackSpec {
  std::string name;
  /// The family whose published runs give a prediction's error bar (megatron, pytorch-fsdp, deepspeed).
  std::string family;
  std::string title;    ///< one line: what it is
  std::string version;  ///< the code or release the settings were read from
  std::string file;     ///< where it was loaded from
  std::vector<StackSetting> settings;
  std::vector<StackWord> words;
  std::vector<StackLimit> cannot_run;
  /// The strategy presets (placements) the stack can run, and where that is read from: what `placesim search`
  /// tries for an experiment that names the stack.
  std::vector<std::string> presets;
  std::string presets_source;
  /// What placesim knows this stack pays and does not cost, each with where the evidence is (printed in summaries).
  std::vector<std::string> caveats;
  StackMemory memory;
};

/// Reads a stack file's JSON; `origin` names it in errors.
StackSpec parse_stack(const Json& value, const std::string& origin);
/// The built-in stacks, by name.
std::vector<std::string> builtin_stack_names();
/// A built-in stack, or a stack file when `name` ends in ".json" (relative paths against `base_dir`). Unknown names
/// are refused naming `field` and the nearest built-in one.
std::shared_ptr<const StackSpec> find_stack(const std::string& name, const std::string& field,
                                            const std::string& base_dir);
/// The stack of an experiment that names none and whose strategy preset names none.
inline constexpr const char* kDefaultStack = "megatron-lm-2022";

}  // namespace placesim
