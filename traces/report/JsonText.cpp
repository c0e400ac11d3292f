#include "traces/report/JsonText.hpp"

#include <array>
#include <charconv>
#include <cmath>

namespace placesim {

void append_json_string(std::string& out, std::string_view text) {
  static const char* const hex = "0123456789abcdef";
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += hex[(c >> 4) & 0xf];
          out += hex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_json_number(std::string& out, double v) {
  std::array<char, 32> buffer{};
  if (!std::isfinite(v)) v = 0;
  std::to_chars_result r{};
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
    r = std::to_chars(buffer.data(), buffer.data() + buffer.size(), static_cast<std::int64_t>(v));
  else
    r = std::to_chars(buffer.data(), buffer.data() + buffer.size(), v);
  out.append(buffer.data(), r.ptr);
}

void append_us(std::string& out, std::int64_t ns) {
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  out += std::to_string(ns / 1000);
  out += '.';
  std::int64_t frac = ns % 1000;
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + frac / 10 % 10);
  out += static_cast<char>('0' + frac % 10);
}

void append_fixed(std::string& out, double v, int decimals) {
  std::array<char, 64> buffer{};
  if (!std::isfinite(v)) v = 0;
  auto r = std::to_chars(buffer.data(), buffer.data() + buffer.size(), v, std::chars_format::fixed, decimals);
  out.append(buffer.data(), r.ptr);
}

void append_xml_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters even escaped; a space keeps the document well-formed.
        out += static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' ? ' ' : c;
    }
  }
}

}  // namespace placesim
