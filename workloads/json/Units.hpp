#pragma once
#include <cstdint>
#include <string>

namespace placesim {

/// "80GiB", "80GB", "512MB", "1.5TB" or a plain number of bytes -> bytes. Throws InputError naming `field`.
double parse_bytes(const std::string& text, const std::string& field);
/// "400Gbps", "900GB/s", "25 GB/s", "100Gb/s" or a plain number of bytes/s -> bytes per second.
double parse_bandwidth(const std::string& text, const std::string& field);
/// "2us", "1.5 ms", "500ns", "1s" or a plain number of seconds -> seconds.
double parse_time(const std::string& text, const std::string& field);
/// "312TFLOPS", "989 TFLOP/s", "1.2PFLOPS" or a plain number -> FLOP per second.
double parse_flops(const std::string& text, const std::string& field);

/// Human-readable decimal size, e.g. 31.4 GB (three significant digits).
std::string format_bytes(double bytes);
/// Human-readable seconds, e.g. 12.3 ms.
std::string format_seconds(double seconds);

}  // namespace placesim
