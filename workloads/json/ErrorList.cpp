#include "workloads/json/ErrorList.hpp"

#include <cctype>

namespace placesim {

namespace {

std::string several(const std::string& origin, const std::vector<std::string>& shown, std::size_t total) {
  if (total == 1 && shown.size() == 1) return shown.front();
  std::string text = origin + ": " + std::to_string(total) + " errors:";
  for (const std::string& m : shown) text += "\n  " + m;
  if (total > shown.size()) text += "\n  ... and " + std::to_string(total - shown.size()) + " more";
  return text;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Whether `message` names `field` at `at`: not inside a longer name, and a section alone ("model") only as the head of
// a field ("model.") or with its value ("model=").
bool names_at(std::string_view message, std::string_view field, std::size_t at) {
  if (at > 0 && (name_char(message[at - 1]) || message[at - 1] == '.')) return false;
  const char next = at + field.size() < message.size() ? message[at + field.size()] : '\0';
  if (field.find('.') == std::string_view::npos) return next == '.' || next == '=';
  return !name_char(next);
}

}  // namespace

InputErrors::InputErrors(const std::string& origin, std::vector<std::string> shown, std::size_t total)
    : InputError(several(origin, shown, total)), messages(std::move(shown)), total(total) {}

ErrorList::ErrorList(std::string origin) : origin_(std::move(origin)) {}

void ErrorList::add(const std::string& message) {
  if (!seen_.insert(message).second) return;
  ++total_;
  if (shown_.size() < kShownErrors) shown_.push_back(message);
}

bool ErrorList::add_check(const std::string& message) {
  if (names_failed(message)) return false;
  add(message);
  return true;
}

void ErrorList::fail(const std::string& field) {
  if (!field.empty()) failed_.push_back(field);
}

bool ErrorList::failed(std::string_view field) const {
  for (const std::string& f : failed_)
    if (field == f || (field.size() > f.size() && field.compare(0, f.size(), f) == 0 && field[f.size()] == '.'))
      return true;
  return false;
}

bool ErrorList::failed_within(std::string_view object) const {
  if (object.empty()) return !failed_.empty();
  if (failed(object)) return true;
  for (const std::string& f : failed_)
    if (f.size() > object.size() && f.compare(0, object.size(), object) == 0 && f[object.size()] == '.') return true;
  return false;
}

bool ErrorList::names_failed(std::string_view message) const {
  for (const std::string& f : failed_)
    for (std::size_t at = message.find(f); at != std::string_view::npos; at = message.find(f, at + 1))
      if (names_at(message, f, at)) return true;
  return false;
}

void ErrorList::throw_if_any() const {
  if (!empty()) throw InputErrors(origin_, shown_, total_);
}

}  // namespace placesim
