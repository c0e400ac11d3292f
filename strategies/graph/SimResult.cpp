#include "strategies/graph/SimResult.hpp"

#include "workloads/json/Error.hpp"

namespace placesim {

const char* to_string(Fidelity f) {
  return f == Fidelity::Analytic ? "analytic" : f == Fidelity::Flow ? "flow" : "full";
}

Fidelity parse_fidelity(const std::string& text, const std::string& field) {
  if (text == "analytic") return Fidelity::Analytic;
  if (text == "flow") return Fidelity::Flow;
  if (text == "full") return Fidelity::Full;
  throw InputError(field + "=" + text + " is not one of: analytic flow full");
}

}  // namespace placesim
