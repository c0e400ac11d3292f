#include "sim/sweep/Progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "workloads/json/Numbers.hpp"

namespace placesim {

namespace {

constexpr double kTerminalRedraw_s = 0.2;
constexpr int kBarWidth = 24;

std::string format_rate(double per_s) {
  return format_scaled(per_s, {{1e6, 1e6, "%.2fM"}, {1e4, 1e3, "%.1fk"}, {0, 1, "%.3g"}});
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld s", s);
  return buf;
}

Progress::Progress(std::string label, std::uint64_t total, bool terminal, double interval_s)
    : label_(std::move(label)), total_(total), terminal_(terminal), interval_s_(interval_s) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double Progress::rate() const {
  std::lock_guard lock(mutex_);
  double t = elapsed_s();
  return t > 0 ? static_cast<double>(done_) / t : 0;
}

void Progress::advance(std::uint64_t n) {
  std::lock_guard lock(mutex_);
  done_ += n;
  draw_locked(false);
}

void Progress::set_total(std::uint64_t total) {
  std::lock_guard lock(mutex_);
  total_ = std::max(total, done_);
}

void Progress::tick() {
  std::lock_guard lock(mutex_);
  draw_locked(false);
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (terminal_ && drawn_) {
    draw_locked(true);
    std::cerr << "\n";
  }
}

std::string Progress::line_locked() const {
  double t = elapsed_s();
  double rate = t > 0 ? static_cast<double>(done_) / t : 0;
  double fraction = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1;
  double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : NAN;
  char pct[16];
  std::snprintf(pct, sizeof pct, "%5.1f%%", 100 * fraction);
  std::string out = label_ + ": ";
  if (terminal_) {
    int filled = static_cast<int>(fraction * kBarWidth);
    out += "[" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "] ";
  }
  out += pct + std::string(" ") + std::to_string(done_) + "/" + std::to_string(total_) + " points, " +
         format_rate(rate) + " points/s, ";
  out += done_ == total_ ? "took " + format_duration(t) : "ETA " + format_duration(eta);
  return out;
}

void Progress::draw_locked(bool final) {
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_draw_).count();
  if (!final && since < (terminal_ ? kTerminalRedraw_s : interval_s_)) return;
  last_draw_ = now;
  drawn_ = true;
  if (terminal_)
    std::cerr << "\r" << line_locked() << "\033[K" << std::flush;  // \033[K clears what a longer line left
  else
    std::cerr << line_locked() << "\n" << std::flush;
}

}  // namespace placesim
