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
  std::vector<double> out(r.devices.size(), -1);
  for (std::size_t x = 0; x < r.devices.size(); ++x) {
    const auto rep = static_cast<std::size_t>(r.folding.representative(static_cast<int>(x)));
    if (out[rep] < 0) out[rep] = r.devices[rep].exposed_communication_s();
    out[x] = out[rep];
  }
  return out;
}

}  // namespace placesim
