#pragma once
#include <string>

#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// The model fields of a preset as JSON; an unknown name is an InputError naming `field` and the nearest preset.
Json model_preset(const std::string& name, const std::string& field);

}  // namespace placesim
