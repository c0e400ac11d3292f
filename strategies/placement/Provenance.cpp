#include "strategies/placement/Provenance.hpp"

namespace placesim {

const Provenance::Entry* Provenance::find(std::string_view field) const {
  for (const Entry& e : entries)
    if (e.field == field) return &e;
  return nullptr;
}

bool Provenance::written(std::string_view field) const {
  const Entry* e = find(field);
  return e != nullptr && (e->origin == Origin::Experiment || e->origin == Origin::Word);
}

std::string Provenance::who(std::string_view field) const {
  const Entry* e = find(field);
  if (e == nullptr) return "placesim's default";
  switch (e->origin) {
    case Origin::Preset:
      return "the " + e->by + " preset's";
    case Origin::Stack:
      return "the " + e->by + " stack's default";
    case Origin::Word:
    case Origin::Experiment:
      break;
  }
  return std::string(field);
}

}  // namespace placesim
