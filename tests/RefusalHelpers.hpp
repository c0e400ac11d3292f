#pragma once
// Tables of refused inputs: each input with a piece of the message it must be refused with.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace placesim::test {

/// An input and a piece of the message it is refused with.
struct Refusal {
  std::string input;
  std::string message;
};

/// Checks that `refusal_of(input)`, the message an input is refused with, contains the expected piece for every row.
template <class RefusalOf>
void check_refusals(RefusalOf&& refusal_of, const std::vector<Refusal>& rows) {
  for (const Refusal& row : rows) {
    INFO("input " << row.input);
    CHECK_THAT(refusal_of(row.input), Catch::Contains(row.message));
  }
}

}  // namespace placesim::test
