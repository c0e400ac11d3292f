#include "workloads/objective/ConvergenceSpec.hpp"

#include <algorithm>

#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

constexpr EnumName<ObjectiveKind> kObjectiveKindNames[] = {{ObjectiveKind::Quadratic, "quadratic"},
                                                           {ObjectiveKind::Logistic, "logistic"},
                                                           {ObjectiveKind::LeastSquares, "least_squares"},
                                                           {ObjectiveKind::CharLm, "char_lm"}};

// The quadratic uses its full gradient plus noise: a data-set size or batch would silently mean nothing.
void refuse_data_fields(ObjectReader& r) {
  for (const char* key : {"samples", "batch_size", "batches"})
    if (r.has(key))
      throw InputError(r.field(key) + " has no meaning for objective quadratic (its micro-batch gradient is the " +
                       "full gradient plus seeded noise)");
}

void parse_data(ObjectReader& r, const Json& value, ObjectiveSpec& o) {
  std::int64_t samples = r.get_positive_int("samples", o.samples);
  std::int64_t batch = r.get_positive_int("batch_size", std::min<std::int64_t>(o.batch_size, samples));
  const char* blamed = value.contains("samples") ? "samples" : "dimension";
  r.check(samples * std::int64_t{o.dimension} <= kMaxObjectiveDoubles, blamed,
          "gives samples x dimension = " + std::to_string(samples) + " x " + std::to_string(o.dimension) +
              " feature values, more than " + std::to_string(kMaxObjectiveDoubles));
  r.check(batch <= samples, "batch_size", "exceeds samples=" + std::to_string(samples));
  o.batches = r.get_choice("batches", {"random", "cyclic"}, "random") == "cyclic" ? ObjectiveSpec::Batches::Cyclic
                                                                                  : ObjectiveSpec::Batches::Random;
  r.check(o.batches == ObjectiveSpec::Batches::Random || samples % batch == 0, "batches",
          "cyclic needs samples a multiple of batch_size (" + std::to_string(samples) + " samples, batches of " +
              std::to_string(batch) + ")");
  o.samples = static_cast<int>(samples);
  o.batch_size = static_cast<int>(batch);
}

// The language model's fields mean nothing to the synthetic objectives.
void refuse_char_lm_fields(ObjectReader& r, ObjectiveKind kind) {
  for (const char* key : {"context", "embedding", "hidden", "text"})
    r.check(!r.has(key), key, "has no meaning for objective " + to_string(kind) + " (only char_lm reads it)");
}

// char_lm: the text is the data and the layer sizes with the text's vocabulary give the dimension, so the synthetic
// objectives' fields are refused rather than ignored.
void parse_char_lm(ObjectReader& r, ObjectiveSpec& o) {
  r.check(!r.has("dimension"), "dimension",
          "cannot be given for objective char_lm: its dimension is derived from the text's vocabulary V and the "
          "layer sizes, V*E + context*E*H + H + H*V + V");
  for (const char* key : {"samples", "condition_number", "noise", "l2"})
    r.check(!r.has(key), key, "has no meaning for objective char_lm (its data is the text)");
  o.dimension = 0;
  o.context = r.get_int_in("context", o.context, 1, kMaxCharLmContext);
  o.embedding = r.get_int_in("embedding", o.embedding, 1, kMaxCharLmWidth);
  o.hidden = r.get_int_in("hidden", o.hidden, 1, kMaxCharLmWidth);
  o.batch_size = r.get_int_in("batch_size", o.batch_size, 1, kMaxCharLmBatch);
  const std::int64_t c = o.context, e = o.embedding, h = o.hidden;
  const std::int64_t most = 256 * e + c * e * h + h + h * 256 + 256;  // V = 256, every byte value
  const char* blamed = r.has("hidden") ? "hidden" : r.has("embedding") ? "embedding" : "context";
  r.check(most <= kMaxDimension, blamed,
          "gives up to " + std::to_string(most) + " parameters (V*E + context*E*H + H + H*V + V with context=" +
              std::to_string(c) + ", E=" + std::to_string(e) + ", H=" + std::to_string(h) +
              " and up to V=256 distinct bytes), more than " + std::to_string(kMaxDimension));
  if (r.has("text")) {
    o.text = r.get_string("text", "");
    r.check(!o.text.empty(), "text", "must name a file or a folder");
  }
}

void parse_synthetic(ObjectReader& r, const Json& value, ObjectiveSpec& o) {
  std::int64_t d = r.get_positive_int("dimension", o.dimension);
  r.check(d <= kMaxDimension, "dimension", "is too large (at most " + std::to_string(kMaxDimension) + ")");
  o.dimension = static_cast<int>(d);
  if (o.kind == ObjectiveKind::Quadratic) {
    refuse_data_fields(r);
  } else {
    parse_data(r, value, o);
  }
  o.condition_number = r.get_number("condition_number", o.condition_number);
  r.check(o.condition_number >= 1, "condition_number", "must be at least 1");
  o.noise = r.get_number("noise", o.noise);
  r.check(o.noise >= 0, "noise", "must not be negative");
  r.check(o.kind != ObjectiveKind::Logistic || o.noise <= 0.5, "noise",
          "is a label flip probability for objective logistic and must not exceed 0.5");
  if (o.kind != ObjectiveKind::Quadratic) {
    o.data = r.get_choice("data", {"rotated", "gaussian"}, "rotated") == "gaussian" ? ObjectiveSpec::Data::Gaussian
                                                                                    : ObjectiveSpec::Data::Rotated;
    r.check(o.data == ObjectiveSpec::Data::Rotated || o.kind == ObjectiveKind::Logistic, "data",
            "gaussian is the logistic regression of Ilin & Richtarik's code; least squares has rotated data only");
    o.gradient_noise = r.get_number("gradient_noise", 0);
    r.check(o.gradient_noise >= 0, "gradient_noise", "must not be negative");
  } else {
    for (const char* key : {"data", "gradient_noise"})
      if (r.has(key)) throw InputError(r.field(key) + " has no meaning for objective quadratic (its noise is `noise`)");
  }
  o.l2 = r.get_number("l2", o.l2);
  r.check(o.l2 >= 0, "l2", "must not be negative");
}

ObjectiveSpec parse_objective(ObjectReader& r, const Json& value) {
  ObjectiveSpec o;
  o.kind = get_enum(r, "objective", kObjectiveKindNames, ObjectiveKind::Quadratic);
  if (o.kind == ObjectiveKind::CharLm) {
    parse_char_lm(r, o);
  } else {
    refuse_char_lm_fields(r, o.kind);
    parse_synthetic(r, value, o);
  }
  std::int64_t seed = r.get_int("seed", static_cast<std::int64_t>(o.seed));
  r.check(seed >= 0, "seed", "must not be negative");
  o.seed = static_cast<std::uint64_t>(seed);
  return o;
}

}  // namespace

ConvergenceSpec parse_convergence(const Json& value) {
  ConvergenceSpec spec;
  ObjectReader r(value, "convergence");
  spec.objective = parse_objective(r, value);
  spec.step_size = r.get_number("step_size", spec.step_size);
  r.check(spec.step_size > 0, "step_size", "must be positive");
  spec.sample_every = r.get_positive_int("sample_every", 0);
  r.finish();
  return spec;
}

std::string to_string(ObjectiveKind kind) {
  return name_of(kObjectiveKindNames, kind, "quadratic");
}

}  // namespace placesim
