#pragma once
#include <cmath>
#include <cstdint>

namespace placesim {

/// SplitMix64 (Steele, Lea & Flood, OOPSLA 2014; Vigna's public-domain reference code): the state advances by the
/// golden-ratio increment and each output is the state passed through a 64-bit finalizer. Written out here, with
/// only integer and correctly rounded IEEE operations downstream, so that every platform and standard library
/// produces the same bits (std::normal_distribution does not).
class SplitMix64 {
 public:
  static constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ull;

  /// The SplitMix64 output finalizer: a bijection on 64-bit words that spreads every input bit.
  static constexpr std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  /// The k-th output (k = 0, 1, ...) of the stream seeded with `seed`, without generating the ones before it.
  static constexpr std::uint64_t at(std::uint64_t seed, std::uint64_t k) { return mix(seed + (k + 1) * kGamma); }

  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() { return mix(state_ += kGamma); }

  /// Uniform on [0, 1): the top 53 bits scaled exactly.
  double uniform() { return to_unit(next()); }

  /// Mean 0, variance 1: uniform on [-sqrt 3, sqrt 3). Not Gaussian on purpose; every objective mixes coordinates
  /// through a rotation, whose sums make the data approximately Gaussian anyway.
  double standard() { return to_standard(next()); }

  /// Index in [0, n): modulo reduction, whose bias (at most n / 2^64) is far below anything observable here.
  std::uint64_t below(std::uint64_t n) { return next() % n; }

  static double to_unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }
  static double to_standard(std::uint64_t bits) { return (2 * to_unit(bits) - 1) * std::sqrt(3.0); }

 private:
  std::uint64_t state_;
};

/// A stream key for (seed, purpose, a, b): each component is folded in through the finalizer, so nearby
/// inputs (micro-batch 7 and 8, replica 0 and 1) give unrelated streams.
constexpr std::uint64_t derive_key(std::uint64_t seed, std::uint64_t purpose, std::uint64_t a = 0,
                                   std::uint64_t b = 0) {
  std::uint64_t h = SplitMix64::mix(seed + SplitMix64::kGamma);
  h = SplitMix64::mix(h ^ (purpose + SplitMix64::kGamma));
  h = SplitMix64::mix(h ^ (a + 2 * SplitMix64::kGamma));
  return SplitMix64::mix(h ^ (b + 3 * SplitMix64::kGamma));
}

}  // namespace placesim
