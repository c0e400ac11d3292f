#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// One value of an enum and the word that inputs, reports and messages spell it with. An enum's names are one table
/// of these, `constexpr EnumName<Mode> kModeNames[] = {{Mode::Replicated, "replicated"}, ...}`, read both ways: by
/// its to_string and by its parser, so that the two cannot disagree. The table's order is the order error messages
/// list the names in.
template <class E>
struct EnumName {
  E value;
  const char* name;
};

/// The name of `value` in `names`, or `fallback` for a value the table lacks.
template <class E, std::size_t N>
constexpr const char* name_of(const EnumName<E> (&names)[N], E value, const char* fallback = "?") {
  for (const EnumName<E>& n : names)
    if (n.value == value) return n.name;
  return fallback;
}

/// The value named `text` in `names`, or nothing for a word the table lacks.
template <class E, std::size_t N>
constexpr std::optional<E> value_named(const EnumName<E> (&names)[N], std::string_view text) {
  for (const EnumName<E>& n : names)
    if (text == n.name) return n.value;
  return std::nullopt;
}

/// Every name of `names`, in table order (for ObjectReader::get_choice and nearest()).
template <class E, std::size_t N>
std::vector<std::string> enum_names(const EnumName<E> (&names)[N]) {
  std::vector<std::string> out;
  for (const EnumName<E>& n : names) out.emplace_back(n.name);
  return out;
}

/// The names of `names` in table order with `separator` between them: "ring, tree, nvls".
template <class E, std::size_t N>
std::string joined_names(const EnumName<E> (&names)[N], std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += separator;
    out += names[i].name;
  }
  return out;
}

/// The field `key` read as one of the names of `names` (ObjectReader::get_choice: anything else is refused naming the
/// field, the value and the nearest name); `fallback` when it is absent, or failed with an error list.
template <class E, std::size_t N>
E get_enum(ObjectReader& r, std::string_view key, const EnumName<E> (&names)[N], E fallback) {
  return value_named(names, r.get_choice(key, enum_names(names), name_of(names, fallback))).value_or(fallback);
}

}  // namespace placesim
