#pragma once
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

namespace placesim::test {

inline bool entity_at(const std::string& xml, std::size_t at) {
  for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
    if (xml.compare(at, std::strlen(e), e) == 0) return true;
  return false;
}

inline bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':';
}

/// Why `xml` is not well-formed (as far as placesim's SVG goes: one root element, balanced tags, quoted
/// attributes, no raw '<' or stray '&' in text or attribute values), or "" when it is.
inline std::string xml_problem(const std::string& xml) {
  std::vector<std::string> open;
  int roots = 0;
  for (std::size_t i = 0; i < xml.size();) {
    if (xml.compare(i, 2, "<?") == 0) {
      auto end = xml.find("?>", i);
      if (end == std::string::npos) return "unterminated <?";
      i = end + 2;
    } else if (xml.compare(i, 2, "</") == 0) {
      auto end = xml.find('>', i);
      if (end == std::string::npos) return "unterminated end tag";
      std::string name = xml.substr(i + 2, end - i - 2);
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
      i = end + 1;
    } else if (xml[i] == '<') {
      std::size_t j = i + 1;
      while (j < xml.size() && name_char(xml[j])) ++j;
      std::string name = xml.substr(i + 1, j - i - 1);
      if (name.empty()) return "a '<' that starts no tag at " + std::to_string(i);
      for (;;) {
        while (j < xml.size() && std::isspace(static_cast<unsigned char>(xml[j]))) ++j;
        if (j >= xml.size()) return "unterminated <" + name;
        if (xml[j] == '>' || xml.compare(j, 2, "/>") == 0) break;
        std::size_t attr = j;
        while (j < xml.size() && name_char(xml[j])) ++j;
        if (j == attr || j + 1 >= xml.size() || xml[j] != '=' || (xml[j + 1] != '"' && xml[j + 1] != '\''))
          return "malformed attribute in <" + name + ">";
        auto close = xml.find(xml[j + 1], j + 2);
        if (close == std::string::npos) return "unterminated attribute in <" + name + ">";
        for (std::size_t k = j + 2; k < close; ++k)
          if (xml[k] == '<' || (xml[k] == '&' && !entity_at(xml, k))) return "unescaped character in <" + name + ">";
        j = close + 1;
      }
      if (open.empty() && ++roots > 1) return "a second root element <" + name + ">";
      if (xml[j] == '>') open.push_back(name);
      i = j + (xml[j] == '>' ? 1 : 2);
    } else {
      if (xml[i] == '&' && !entity_at(xml, i)) return "a stray '&' at " + std::to_string(i);
      if (open.empty() && !std::isspace(static_cast<unsigned char>(xml[i]))) return "text outside the root";
      ++i;
    }
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return roots == 1 ? "" : "no root element";
}

}  // namespace placesim::test
