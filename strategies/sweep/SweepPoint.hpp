#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/placement/ClusterFit.hpp"
#include "strategies/sweep/Sweep.hpp"

namespace placesim {

/// What became of one sweep point. Invalid points are written with their reason; filtered points are skipped and
/// counted; an error is an internal failure (an exception that is not bad input, or a simulator that crashed).
enum class PointStatus { Ok, Invalid, Filtered, Error };
const char* to_string(PointStatus s);

struct PointOutcome {
  PointStatus status = PointStatus::Ok;
  std::string reason;     ///< why the point is invalid, filtered or failed; names the field or rule
  bool analyzed = false;  ///< the analysis is this point's (ok, or its memory does not fit)
};

/// Evaluates sweep points analytically: applies the axis values, parses, checks the mesh against the cluster,
/// validity and memory fit, and analyzes. Not shared between threads: each keeps its last point and its caches.
///
/// Sections of the experiment that no axis touches, and sections whose axes repeat a combination of values, are
/// parsed once and reused (a sweep of a million points mostly re-reads the same model and cluster); the result is
/// the experiment parse_experiment() gives for the point's JSON (tests/test_sweep.cpp compares both).
class PointEvaluator {
 public:
  /// `device_memory_bytes` > 0 replaces the cluster's accelerator memory as the capacity checked.
  /// `reuse_sections` = false parses every point's JSON whole (the reference the cached path is tested against).
  PointEvaluator(const SweepSpec& spec, double device_memory_bytes, bool reuse_sections = true);
  ~PointEvaluator();
  PointEvaluator(const PointEvaluator&) = delete;
  PointEvaluator& operator=(const PointEvaluator&) = delete;

  /// Evaluates point `index` (< spec.points()).
  PointOutcome evaluate(std::uint64_t index);

  /// Of the last evaluated point: axis value indices, experiment (valid once parsed) and analysis (when analyzed).
  const std::vector<std::size_t>& coords() const { return coords_; }
  const Experiment& experiment() const { return experiment_; }
  const Analysis& analysis() const { return analysis_; }

 private:
  struct Sections;
  std::optional<std::string> filtered_by_value() const;
  std::optional<ClusterFit> build_whole();
  std::optional<ClusterFit> build_from_sections();
  PointOutcome check_and_analyze(const std::optional<ClusterFit>& cluster);

  const SweepSpec& spec_;
  double device_memory_bytes_;
  std::vector<std::pair<std::size_t, std::size_t>> filter_positions_;  ///< (axis, path) of each value filter
  std::vector<std::size_t> coords_;
  Experiment experiment_;
  Analysis analysis_;
  bool analyzed_ = false;
  std::unique_ptr<Sections> sections_;  ///< the parse caches; null when every point is parsed whole
};

}  // namespace placesim
