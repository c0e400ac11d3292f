#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace placesim {

/// Where the fields of an experiment's training and strategy sections came from: the experiment itself (its file,
/// --set, a sweep axis), its strategy preset, or its training stack. Filled when the experiment is parsed; a report
/// lists what the preset and the stack supplied, and resolution derives a default only for a field nobody wrote.
struct Provenance {
  enum class Origin { Experiment, Preset, Stack, Word };
  struct Entry {
    std::string field;  ///< dotted: "training.kernels", "strategy.placement"
    Origin origin = Origin::Experiment;
    std::string value;   ///< as written, compact JSON
    std::string by;      ///< the preset's or the stack's name
    std::string source;  ///< the stack setting's source
    std::string note;    ///< a word's meaning, a condition that held
  };
  std::vector<Entry> entries;

  const Entry* find(std::string_view field) const;
  /// The field has a value from any origin.
  bool present(std::string_view field) const { return find(field) != nullptr; }
  /// The experiment wrote the field (not its preset or stack).
  bool written(std::string_view field) const;
  /// "training.kernels (the torchtitan-2024-12 stack)" style: who decided the field, for messages.
  std::string who(std::string_view field) const;
};

}  // namespace placesim
