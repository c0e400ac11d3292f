#pragma once
#include <cstddef>

namespace placesim {

/// out[j] = sum over k = 0 .. length-1 of row_at(j)[k] * x[k], for j in [0, count).
///
/// Every sum starts at 0 and adds the terms in increasing k, whether a row is handled in a group of four or alone:
/// the result is bit-for-bit that of the plain loop, so a block of a gradient equals the same slice of the full
/// gradient. Four rows at a time give four independent addition chains; a single chain is latency-bound.
template <class RowAt>
void dot_rows(RowAt row_at, std::size_t count, const double* x, std::size_t length, double* out) {
  std::size_t j = 0;
  for (; j + 4 <= count; j += 4) {
    const double* r0 = row_at(j);
    const double* r1 = row_at(j + 1);
    const double* r2 = row_at(j + 2);
    const double* r3 = row_at(j + 3);
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (std::size_t k = 0; k < length; ++k) {
      s0 += r0[k] * x[k];
      s1 += r1[k] * x[k];
      s2 += r2[k] * x[k];
      s3 += r3[k] * x[k];
    }
    out[j] = s0;
    out[j + 1] = s1;
    out[j + 2] = s2;
    out[j + 3] = s3;
  }
  for (; j < count; ++j) {
    const double* r = row_at(j);
    double s = 0;
    for (std::size_t k = 0; k < length; ++k) s += r[k] * x[k];
    out[j] = s;
  }
}

}  // namespace placesim
