#include "strategies/graph/SimResult.hpp"

#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

constexpr EnumName<Fidelity> kFidelityNames[] = {
    {Fidelity::Analytic, "analytic"}, {Fidelity::Flow, "flow"}, {Fidelity::Full, "full"}};

}  // namespace

const char* to_string(Fidelity f) {
  return name_of(kFidelityNames, f, "full");
}

Fidelity parse_fidelity(const std::string& text, const std::string& field) {
  if (auto f = value_named(kFidelityNames, text)) return *f;
  throw InputError(field + "=" + text + " is not one of: " + joined_names(kFidelityNames, " "));
}

std::vector<double> exposed_communication(const SimResult& r) {
  std::vector<double> out(r.devices.size(), -1), of_source(r.devices.size(), -1);
  for (std::size_t x = 0; x < r.devices.size(); ++x) {
    const auto source = static_cast<std::size_t>(r.folding.source(static_cast<int>(x)));
    if (of_source[source] < 0) of_source[source] = r.devices[x].exposed_communication_s();
    out[x] = of_source[source];
  }
  return out;
}

}  // namespace placesim
