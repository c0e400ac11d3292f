#pragma once
#include <string>

namespace placesim {

/// How one training state is placed over the devices of the data-parallel axis (DESIGN §1).
enum class Mode {
  Replicated,         ///< every device holds all of it
  Sharded,            ///< every device holds 1/N, never the whole
  ShardedWithGather,  ///< 1/N resident, all-gathered into a transient full unit while in use
  Materialized,       ///< exists only while live: checkpoints kept, the rest recomputed
  Offloaded,          ///< held in host memory, moved over PCIe when needed
};

enum class State { Parameters, Gradients, Optimizer, Activations };

/// One mode per state: the strategy's placement along the data-parallel axis. TP and PP place states along their
/// own axes by construction (TP shards each layer's P/G/O, PP places whole layers on stages).
struct Placement {
  Mode parameters = Mode::Replicated;
  Mode gradients = Mode::Replicated;
  Mode optimizer = Mode::Replicated;
  Mode activations = Mode::Replicated;
};

std::string to_string(Mode m);
std::string to_string(State s);
/// Accepts the five names and their short forms R, S, SG, M, Off; anything else throws InputError naming `field`.
Mode parse_mode(const std::string& text, const std::string& field);
/// "R/S/S/R"-style summary in DESIGN's P/O/G/A order.
std::string short_form(const Placement& p);

}  // namespace placesim
