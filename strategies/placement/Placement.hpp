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

/// The data-parallel axes of the mesh, as a set: dp_shard (inner: its ranks are neighbours, inside a node when it
/// fits) and dp_replicate (outer). The data-parallel degree dp is their product.
using AxisSet = unsigned;
inline constexpr AxisSet kNoAxes = 0, kShardAxis = 1, kReplicateAxis = 2, kDataAxes = 3;
/// "dp_shard", "dp_replicate", "dp_shard+dp_replicate" or "none".
std::string axes_name(AxisSet axes);

/// The placement of the four states over the data-parallel axes: one mode per state per axis. TP and PP place states
/// along their own axes by construction (TP shards each layer's P/G/O, PP places whole layers on stages); activations
/// have one mode for both data axes (each replica computes its own samples' activations).
struct Placement {
  /// Modes along dp_shard, the whole data axis when dp_replicate = 1.
  Mode parameters = Mode::Replicated;
  Mode gradients = Mode::Replicated;
  Mode optimizer = Mode::Replicated;
  Mode activations = Mode::Replicated;
  /// Modes along dp_replicate; a mode given as one string applies to both axes.
  struct Across {
    Mode parameters = Mode::Replicated;
    Mode gradients = Mode::Replicated;
    Mode optimizer = Mode::Replicated;
    bool operator==(const Across&) const = default;
  } replicate;
  /// ZeRO++ hpZ (Wang et al., arXiv 2306.10209, §3.2): besides their primary shard over every axis they are
  /// sharded-with-gather along, parameters keep a secondary shard over dp_shard, cut from the forward's gather; the
  /// backward gathers from it over dp_shard alone.
  bool secondary = false;
  /// Equal in every mode (a search's candidates of different presets may resolve to the same placement).
  bool operator==(const Placement&) const = default;

  Mode mode(State s, AxisSet axis) const;
  /// Every state has the same mode along both data axes (and no secondary shard): the one-axis placement of old.
  bool uniform() const;
  bool same_along_data_axes() const;
  /// The axes along which state `s` is sharded (with or without gather); offloaded states count as sharded along
  /// both (the host holds one shard per data-parallel rank).
  AxisSet sharded_axes(State s) const;
};

std::string to_string(Mode m);
std::string to_string(State s);
/// Accepts the five names and their short forms R, S, SG, M, Off; anything else throws InputError naming `field`.
Mode parse_mode(const std::string& text, const std::string& field);
/// "R/S/S/R"-style summary in DESIGN's P/O/G/A order; when the axes differ, the dp_shard modes, " x ", the
/// dp_replicate ones ("SG/S/S/R x R/R/R/R"); hpZ's secondary shard adds "+hpZ" to the parameters.
std::string short_form(const Placement& p);
/// The short form of one mode: R, S, SG, M, Off.
std::string short_name(Mode m);

}  // namespace placesim
