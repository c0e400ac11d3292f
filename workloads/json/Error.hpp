#pragma once
#include <stdexcept>
#include <string>

namespace placesim {

/// Bad user input: a message that names the field and the value. main() turns it into exit code 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace placesim
