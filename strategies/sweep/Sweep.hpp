#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/graph/SimResult.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// JSON that keeps the keys of an object in the order they were written (the order of a sweep's axes).
using OrderedJson = nlohmann::ordered_json;

/// One axis of a sweep: a field path and its values, or several paths varied together (a joint axis, written
/// "strategy.dp,strategy.tp,strategy.pp" with one array of values per point).
struct SweepAxis {
  std::vector<std::string> paths;
  std::vector<std::vector<Json>> values;  ///< values[k][p]: the k-th value of paths[p]

  std::string name() const;  ///< the paths joined by ',' as written in the file
  std::size_t size() const { return values.size(); }
};

enum class SweepMode { Analyze, Simulate };

/// A condition on the value of one axis path; a point that fails it is skipped (counted, not written).
struct ValueFilter {
  std::string path;
  std::optional<double> min, max;
  std::vector<Json> in, not_in;  ///< empty = no condition

  bool accepts(const Json& value) const;
};

struct SweepFilters {
  bool mesh_matches_cluster = false;  ///< skip points whose dp x tp x pp differs from the cluster's GPU count
  /// Points the experiment's training stack cannot run (its data's cannot_run) are invalid, with the stack's reason
  /// (search sets it: it never ranks a plan the stack cannot run; a sweep costs them with a warning unless set).
  bool stack_can_run = false;
  std::vector<ValueFilter> values;
};

/// A parameter sweep: a base experiment and axes whose Cartesian product gives the points.
///
/// Point order: axes in the order the file writes them, the last axis varying fastest (nested loops). Point
/// `index` has coordinate c_a = (index / stride_a) % size_a with stride_a the product of the later axes' sizes.
/// Each point is the base with every axis value set at its path (JsonReader's set_path), shallower paths first and
/// equal depths in file order, so that an axis "strategy" is applied before "strategy.tp" and a preset switched by
/// "strategy.preset" is re-resolved with the other strategy fields on top.
struct SweepSpec {
  Json base;
  std::string base_dir;  ///< resolves relative paths inside the base (hf_config)
  std::vector<SweepAxis> axes;
  SweepFilters filters;
  SweepMode mode = SweepMode::Analyze;
  Fidelity fidelity = Fidelity::Flow;  ///< simulate mode: how each point's collectives are simulated
  std::vector<std::string> figures;    ///< dotted report paths written with every point
  /// Identifies the sweep in every row it writes: 16 hex digits of the FNV-1a 64-bit hash of the sweep file's bytes
  /// (parse_sweep_text), or of the sweep object's compact JSON (parse_sweep). Any edit of the file changes it.
  std::string hash;

  std::uint64_t points() const;
  /// Every axis path, in file order (joint axes expanded).
  std::vector<std::string> paths() const;
};

/// Parses sweep text (see docs/sweeps.md); errors name the sweep field and value. Validates axis paths and values
/// against the experiment schema (validate_axis_paths, validate_batch_axes, validate_axis_values).
SweepSpec parse_sweep_text(const std::string& text, const std::string& origin, const std::string& base_dir);
/// Parses a sweep object (the axes keep the object's key order).
SweepSpec parse_sweep(const OrderedJson& value, const std::string& base_dir);
/// Reads and parses a sweep file.
SweepSpec load_sweep(const std::string& path);

/// The values of one axis: a non-empty list, or a range {"from", "to", "step"} (arithmetic) or {"from", "to",
/// "times"} (geometric), both inclusive of `to` when they reach it. Integer bounds give integer values. A range
/// that never ends or is empty is an InputError naming `field`.
std::vector<Json> axis_values(const Json& spec, const std::string& field);

/// The figures a row carries when the sweep does not list any: memory, communication and FLOPs, and in simulate
/// mode the simulated step time, MFU and throughput.
std::vector<std::string> default_figures(SweepMode mode);

/// 16 lower-case hex digits of the FNV-1a 64-bit hash of `bytes`.
std::string fnv1a_hex(std::string_view bytes);

/// Per axis, the index of its value at point `index` (< spec.points()).
std::vector<std::size_t> point_coords(const SweepSpec& spec, std::uint64_t index);
/// The experiment JSON of a point: the base with the axis values applied (see SweepSpec).
Json point_experiment(const SweepSpec& spec, const std::vector<std::size_t>& coords);
/// The axis paths in application order, as (axis, path) positions.
std::vector<std::pair<std::size_t, std::size_t>> application_order(const SweepSpec& spec);

/// True when the sweep's points have a cluster: the base has one or an axis sets one.
bool sweep_has_cluster(const SweepSpec& spec);

/// Throws InputError naming the axis when applying its first value to the base makes the experiment parser refuse
/// a key (an unknown field), or when its path cannot be set (it crosses a number or a list).
void validate_axis_paths(const SweepSpec& spec);

/// Throws InputError listing every axis value that can never be valid: set with the other axes at their first
/// values, the part of the experiment its path lies in (its section; training, strategy and stack together) refuses
/// it for itself -- an unknown word or preset, a wrong type, out of the field's range, an unknown key inside it --
/// naming no other field. Values only invalid together with others (tp not dividing the heads) are left to the
/// points. Values a value filter skips are not checked; of an axis of more than 4096 values, the first and last 2048.
void validate_axis_values(const SweepSpec& spec);

/// Throws InputError, with the recipe, when an axis sets strategy.microbatches while training.global_batch is given
/// (by the base or another axis), or the reverse: global_batch = microbatches x micro_batch x dp fixes one from the
/// other, so at most one value of the axis could agree. A joint axis setting both is accepted.
void validate_batch_axes(const SweepSpec& spec);

/// `--shard i/N`: this process evaluates the points whose index % N == i.
struct Shard {
  std::uint64_t index = 0, count = 1;
  bool contains(std::uint64_t point) const { return point % count == index; }
  /// How many of `points` points fall in this shard.
  std::uint64_t size(std::uint64_t points) const;
};

/// Parses "i/N" with 0 <= i < N; anything else is an InputError naming --shard.
Shard parse_shard(const std::string& text);

/// The values the axes of a sweep file would materialise, counted without building them (0 without axes): the
/// pre-count parse_sweep applies its limits to.
double count_axis_values(const Json& sweep);

}  // namespace placesim
