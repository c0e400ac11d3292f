#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace placesim {

/// Appends `text` as a JSON string literal (quoted, escaped; control characters as \u00XX).
void append_json_string(std::string& out, std::string_view text);

/// Appends a JSON number: an integer when `v` is integral and exactly representable, else the shortest text that
/// reads back as the same double (locale-independent, so output is byte-identical everywhere). Non-finite → 0.
void append_json_number(std::string& out, double v);

/// Appends `ns` nanoseconds as microseconds with exactly three decimals ("12.345"); exact, no floating point.
void append_us(std::string& out, std::int64_t ns);

/// Appends `v` with `decimals` fixed decimals (for SVG coordinates), locale-independent.
void append_fixed(std::string& out, double v, int decimals);

/// Appends `text` escaped for XML character data and attribute values.
void append_xml_escaped(std::string& out, std::string_view text);

}  // namespace placesim
