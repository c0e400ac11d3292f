#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace placesim {

/// Progress of a long run on stderr. On a terminal a bar with count, rate and ETA is redrawn in place (at most
/// five times a second); otherwise (a log file, a Slurm job) a plain line is printed every `interval_s`.
/// Thread-safe.
class Progress {
 public:
  /// `label` starts each line ("placesim sweep"); `total` is the number of points this run evaluates.
  Progress(std::string label, std::uint64_t total, bool terminal, double interval_s = 10);

  /// Counts `n` more finished points and redraws when due.
  void advance(std::uint64_t n);
  /// Redraws when due (for callers waiting on slow points).
  void tick();
  /// Replaces the number of points the run evaluates (a search learns after each batch how many candidates its
  /// bound still lets through); never below the points finished.
  void set_total(std::uint64_t total);
  /// Ends the bar (a final newline on a terminal).
  void finish();

  /// Points finished per second so far.
  double rate() const;
  double elapsed_s() const;

 private:
  void draw_locked(bool final);
  std::string line_locked() const;

  std::string label_;
  std::uint64_t total_ = 0, done_ = 0;
  bool terminal_;
  double interval_s_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
  mutable std::mutex mutex_;
};

/// "1:02:03", "4:05" or "7 s" for a duration in seconds.
std::string format_duration(double seconds);

}  // namespace placesim
