#pragma once
// Running the placesim binary in a test and checking how it exits.
#include <catch2/catch.hpp>
#include <string>

#include "tests/Helpers.hpp"

namespace placesim::test {

/// What `placesim <arguments>` printed (stdout and stderr), having checked that it exited with `exit_code`
/// (0: success, 2: a refusal of the input, 3: an invalid plan).
inline std::string cli_output(const std::string& arguments, int exit_code) {
  std::string out;
  const int rc = run_placesim(arguments, &out);
  INFO("placesim " << arguments << "\n" << out);
  CHECK(rc == exit_code);
  return out;
}

}  // namespace placesim::test
