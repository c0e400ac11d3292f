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

std::vector<double> exposed_communication(const SimResult& r) {
  std::vector<double> out(r.devices.size(), -1);
  for (std::size_t x = 0; x < r.devices.size(); ++x) {
    const auto rep = static_cast<std::size_t>(r.folding.representative(static_cast<int>(x)));
    if (out[rep] < 0) out[rep] = r.devices[rep].exposed_communication_s();
    out[x] = out[rep];
  }
  return out;
}

}  // namespace placesim
