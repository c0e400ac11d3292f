#pragma once
#include <cstdint>
#include <string>

namespace placesim {

// Each parser reads a number with its unit, or a bare number in SI units when it is plausible as one; a bare number
// out of these bounds is refused, naming `field` and suggesting units, as it is surely a value meant in another unit
// (bandwidth 400 for 400 Gbps, size 80 for 80 GB, latency 2 for 2 us):
//   bandwidth  >= 1e6 B/s (1 MB/s)        size  >= 1e6 B (1 MB)
//   time       <= 0.01 s (10 ms; every time read so is a latency)    FLOP/s  >= 1e9 (1 GFLOP/s)
// Zero and negative bare numbers pass, for the caller's sign rule to refuse.

/// "80GiB", "80GB", "512MB", "1.5TB" or a plain number of bytes -> bytes. Throws InputError naming `field`.
double parse_bytes(const std::string& text, const std::string& field);
/// "400Gbps", "900GB/s", "25 GB/s", "100Gb/s" or a plain number of bytes/s -> bytes per second.
double parse_bandwidth(const std::string& text, const std::string& field);
/// "2us", "1.5 ms", "500ns", "1s" or a plain number of seconds -> seconds.
double parse_time(const std::string& text, const std::string& field);
/// "10min", "2h", "1.5d", "600s" or a plain number of seconds -> seconds (no bound on a bare number: these are
/// durations of a run, not latencies).
double parse_duration(const std::string& text, const std::string& field);
/// "312TFLOPS", "989 TFLOP/s", "1.2PFLOPS" or a plain number -> FLOP per second.
double parse_flops(const std::string& text, const std::string& field);

/// A bare JSON number given where `unit` reads strings: `value` itself (SI) unless out of the bounds above, then an
/// InputError that starts with `shown` (the field and the value as written, "cluster.nic_bw=400").
double read_bare_number(double (*unit)(const std::string& text, const std::string& field), double value,
                        const std::string& shown);

/// Human-readable decimal size, e.g. 31.4 GB (three significant digits).
std::string format_bytes(double bytes);
/// Human-readable seconds, e.g. 12.3 ms.
std::string format_seconds(double seconds);

}  // namespace placesim
