#pragma once
#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/json/Error.hpp"

namespace placesim {

/// How many errors of one input a message lists; the others are counted ("... and K more").
inline constexpr std::size_t kShownErrors = 20;

/// Every error of one input, thrown together by ErrorList::throw_if_any. what() is the message itself when there is
/// one (the format of a single InputError), else "<origin>: N errors:" and a line "  <message>" for each of the
/// first kShownErrors, then "  ... and K more" when there were more.
struct InputErrors : InputError {
  InputErrors(const std::string& origin, std::vector<std::string> shown, std::size_t total);
  std::vector<std::string> messages;  ///< the first kShownErrors, in the order found
  std::size_t total = 0;              ///< every error, shown or not
};

/// The errors of one input (an experiment file), collected instead of thrown one at a time. A reader given a list
/// (ObjectReader's `errors`) records a field that fails to parse, marks it failed and goes on with the field's
/// fallback; a section parser that throws is recorded by attempt(). Cross-field checks then run on what parsed: an
/// error of theirs that names a failed field judged a fallback, not the input, and is dropped (every message names the
/// fields it judges, so naming is depending). Identical messages count once.
class ErrorList {
 public:
  /// `origin` names the input in the message of several errors (a file name).
  explicit ErrorList(std::string origin);

  /// Records `message` (an unknown key: its suggestion may name a failed field without depending on it).
  void add(const std::string& message);
  /// Records `message` unless it names a field marked failed; returns whether it was recorded.
  bool add_check(const std::string& message);
  /// Marks `field` failed: a dotted path ("model.seq_len") or a whole section ("model").
  void fail(const std::string& field);
  /// Whether `field` or an object holding it was marked failed.
  bool failed(std::string_view field) const;
  /// Whether `object` or a field anywhere under it was marked failed.
  bool failed_within(std::string_view object) const;

  /// Runs `check`; an InputError it throws is recorded with add_check (every message of an InputErrors).
  /// Returns whether `check` finished.
  template <class Check>
  bool attempt(Check&& check) {
    try {
      check();
      return true;
    } catch (const InputErrors& e) {
      for (const std::string& m : e.messages) add_check(m);
    } catch (const InputError& e) {
      add_check(e.what());
    }
    return false;
  }

  bool empty() const { return total_ == 0; }
  std::size_t size() const { return total_; }
  /// The first kShownErrors messages.
  const std::vector<std::string>& messages() const { return shown_; }
  /// Throws InputErrors holding every message when there is one.
  void throw_if_any() const;

 private:
  bool names_failed(std::string_view message) const;

  std::string origin_;
  std::vector<std::string> shown_;
  std::set<std::string, std::less<>> seen_;  ///< every message recorded, to count a repeated one once
  std::size_t total_ = 0;
  std::vector<std::string> failed_;
};

/// Runs `read`, the parse of the section `name` of an input. Without a list an InputError propagates; with one it is
/// recorded (ErrorList::attempt) and the section marked failed. Returns whether `read` finished.
template <class Read>
bool read_section(ErrorList* errors, const std::string& name, Read&& read) {
  if (errors == nullptr) {
    read();
    return true;
  }
  if (errors->attempt(read)) return true;
  errors->fail(name);
  return false;
}

}  // namespace placesim
