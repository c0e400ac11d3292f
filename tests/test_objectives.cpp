// Seeded objectives of the stale-SGD executor (sim/converge/Objectives, sim/converge/SyntheticData,
// sim/converge/Random).
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "sim/converge/Objectives.hpp"
#include "sim/converge/Random.hpp"
#include "sim/converge/SyntheticData.hpp"

using namespace placesim;

namespace {

ObjectiveSpec small(ObjectiveKind kind) {
  ObjectiveSpec o;
  o.kind = kind;
  o.dimension = 21;
  o.samples = 50;
  o.batch_size = 7;
  o.l2 = 0.01;
  o.seed = 3;
  return o;
}

std::vector<double> point(int d, std::uint64_t key) {
  return standard_vector(d, 0.5, key);
}

// The gradient of micro-batch 9 at a seeded point equals the full gradient there, to the last bit.
void check_sample_is_full_gradient(const ObjectiveSpec& spec) {
  auto f = make_objective(spec);
  std::vector<double> x = point(spec.dimension, 2), full(spec.dimension), sample(spec.dimension);
  f->evaluate(x, full);
  f->sample_gradient(x, SampleKey{0, 9}, 0, spec.dimension, sample);
  CHECK(sample == full);
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

}  // namespace

TEST_CASE("SplitMix64 reproduces the reference generator's outputs for seed 1234567") {
  // First outputs of Vigna's splitmix64.c seeded with 1234567, recomputed independently in Python.
  SplitMix64 rng(1234567);
  CHECK(rng.next() == 6457827717110365317ull);
  CHECK(rng.next() == 3203168211198807973ull);
  CHECK(rng.next() == 9817491932198370423ull);
  CHECK(rng.next() == 4593380528125082431ull);
  CHECK(rng.next() == 16408922859458223821ull);
  CHECK(SplitMix64::at(1234567, 2) == 9817491932198370423ull);
}

TEST_CASE("Standard draws have mean 0 and variance 1") {
  std::vector<double> v = standard_vector(100000, 1.0, 11);
  double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double variance = dot(v, v) / v.size() - mean * mean;
  CHECK(std::fabs(mean) < 0.01);
  CHECK(std::fabs(variance - 1) < 0.01);
  double widest = 0;
  for (double x : v) widest = std::max(widest, std::fabs(x));
  CHECK(widest <= std::sqrt(3.0));
  CHECK(widest > 1.73);
}

TEST_CASE("Blocks split the coordinates as evenly as possible with the larger blocks first") {
  BlockSplit split(10, 4);
  CHECK(split.begin(0) == 0);
  CHECK(split.begin(1) == 3);
  CHECK(split.begin(2) == 6);
  CHECK(split.begin(3) == 8);
  CHECK(split.end(3) == 10);
  BlockSplit one_each(5, 5);
  for (int s = 0; s < 5; ++s) CHECK(one_each.size(s) == 1);
}

TEST_CASE("The butterfly rotation is orthogonal and dense") {
  const int d = 37;
  ButterflyRotation q(d, 5);
  std::vector<double> u = point(d, 1), v = point(d, 2), qu = u, qv = v;
  q.apply(qu.data());
  q.apply(qv.data());
  CHECK(dot(qu, qv) == Approx(dot(u, v)).margin(1e-12));
  CHECK(dot(qu, qu) == Approx(dot(u, u)).epsilon(1e-13));
  std::vector<double> e0(d, 0.0);
  e0[0] = 1;
  q.apply(e0.data());
  for (double x : e0) CHECK(x != 0);  // every output coordinate depends on input 0
}

TEST_CASE("The generated quadratic's Hessian is symmetric with the requested spectrum") {
  ObjectiveSpec spec;
  spec.dimension = 24;
  spec.condition_number = 50;
  spec.noise = 0;
  spec.seed = 9;
  const int d = spec.dimension;
  std::vector<double> spectrum = linear_spectrum(d, 50);
  CHECK(spectrum.front() == Approx(0.02));
  CHECK(spectrum.back() == 1);
  auto f = make_objective(spec);
  // The Hessian applied to v is the change of the gradient along v: f is quadratic, so exactly A v up to rounding.
  std::vector<double> g0(d), g1(d), zero(d, 0.0);
  auto hessian_times = [&](const std::vector<double>& v) {
    f->evaluate(zero, g0);
    f->evaluate(v, g1);
    std::vector<double> av(d);
    for (int i = 0; i < d; ++i) av[i] = g1[i] - g0[i];
    return av;
  };
  std::vector<double> u = point(d, 1), v = point(d, 2);
  CHECK(dot(hessian_times(u), v) == Approx(dot(u, hessian_times(v))).epsilon(1e-12));
  // Eigenvectors are the columns of Q (the seed's rotation stream): A (Q e_k) = lambda_k (Q e_k).
  ButterflyRotation q(d, derive_key(9, static_cast<std::uint64_t>(RandomStream::Rotation)));
  for (int k : {0, 7, d - 1}) {
    std::vector<double> e(d, 0.0);
    e[k] = 1;
    q.apply(e.data());
    std::vector<double> ae = hessian_times(e);
    for (int i = 0; i < d; ++i) CHECK(ae[i] == Approx(spectrum[k] * e[i]).margin(1e-12));
  }
}

TEST_CASE("A dense quadratic Hessian must be exactly symmetric") {
  CHECK_THROWS_AS(QuadraticObjective({1, 2, 2.5, 1}, {0, 0}, 0, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(QuadraticObjective({1, 2, 2}, {0, 0}, 0, 0, 1), std::invalid_argument);
  CHECK_NOTHROW(QuadraticObjective({1, 2, 2, 1}, {0, 0}, 0, 0, 1));
}

TEST_CASE("The transpose of the butterfly rotation undoes it") {
  ButterflyRotation q(19, 3);
  std::vector<double> v = point(19, 5), w = v;
  q.apply(w.data());
  q.apply_transpose(w.data());
  for (int i = 0; i < 19; ++i) CHECK(w[i] == Approx(v[i]).margin(1e-14));
}

TEST_CASE("Each objective's gradient matches central finite differences") {
  for (ObjectiveKind kind : {ObjectiveKind::Quadratic, ObjectiveKind::Logistic, ObjectiveKind::LeastSquares}) {
    auto f = make_objective(small(kind));
    const int d = f->dimension();
    std::vector<double> x = point(d, 4), g(d), scratch(d);
    f->evaluate(x, g);
    for (int k : {0, 5, d - 1}) {
      const double h = 1e-5;
      std::vector<double> up = x, down = x;
      up[k] += h;
      down[k] -= h;
      double slope = (f->evaluate(up, scratch) - f->evaluate(down, scratch)) / (2 * h);
      CHECK(g[k] == Approx(slope).epsilon(1e-6).margin(1e-8));
    }
  }
}

TEST_CASE("A block of a micro-batch gradient is bit for bit the slice of the whole vector") {
  for (ObjectiveKind kind : {ObjectiveKind::Quadratic, ObjectiveKind::Logistic, ObjectiveKind::LeastSquares}) {
    auto f = make_objective(small(kind));
    const int d = f->dimension();
    std::vector<double> x = point(d, 6), whole(d), block(d);
    f->sample_gradient(x, SampleKey{1, 17}, 0, d, whole);
    BlockSplit split(d, 4);
    for (int s = 0; s < 4; ++s) {
      f->sample_gradient(x, SampleKey{1, 17}, split.begin(s), split.end(s), block);
      for (int k = split.begin(s); k < split.end(s); ++k) CHECK(block[k - split.begin(s)] == whole[k]);
    }
  }
}

TEST_CASE("Micro-batches differ by index and by replica and repeat exactly") {
  auto f = make_objective(small(ObjectiveKind::Logistic));
  const int d = f->dimension();
  std::vector<double> x = point(d, 8), a(d), again(d), other(d), replica(d);
  f->sample_gradient(x, SampleKey{0, 3}, 0, d, a);
  f->sample_gradient(x, SampleKey{0, 3}, 0, d, again);
  f->sample_gradient(x, SampleKey{0, 4}, 0, d, other);
  f->sample_gradient(x, SampleKey{1, 3}, 0, d, replica);
  CHECK(a == again);
  CHECK(a != other);
  CHECK(a != replica);
}

// Cyclic batches (the authors' build_batches without shuffling): 50 samples in 10 contiguous batches of 5; micro-batch
// m takes batch m mod 10 whatever its replica, and the 10 batches partition the data, so their gradients average to
// the full gradient (the l2 term is in every one).
TEST_CASE("Cyclic batches take the data set's contiguous batches in turn and average to the full gradient") {
  for (ObjectiveKind kind : {ObjectiveKind::Logistic, ObjectiveKind::LeastSquares}) {
    ObjectiveSpec spec = small(kind);
    spec.batch_size = 5;
    spec.batches = ObjectiveSpec::Batches::Cyclic;
    auto f = make_objective(spec);
    const int d = f->dimension();
    std::vector<double> x = point(d, 4), full(d), sum(d, 0.0), g(d), g13(d), replica(d), next(d);
    f->evaluate(x, full);
    for (int m = 0; m < 10; ++m) {
      f->sample_gradient(x, SampleKey{0, m}, 0, d, g);
      for (int k = 0; k < d; ++k) sum[k] += g[k] / 10;
    }
    for (int k = 0; k < d; ++k) CHECK(sum[k] == Approx(full[k]).margin(1e-14));
    f->sample_gradient(x, SampleKey{0, 3}, 0, d, g);
    f->sample_gradient(x, SampleKey{0, 13}, 0, d, g13);
    f->sample_gradient(x, SampleKey{2, 3}, 0, d, replica);
    f->sample_gradient(x, SampleKey{0, 4}, 0, d, next);
    CHECK(g == g13);
    CHECK(g == replica);
    CHECK(g != next);
  }
}

TEST_CASE("With one sample the micro-batch gradient is the full gradient") {
  for (ObjectiveKind kind : {ObjectiveKind::Logistic, ObjectiveKind::LeastSquares}) {
    ObjectiveSpec spec = small(kind);
    spec.samples = 1;
    spec.batch_size = 1;
    check_sample_is_full_gradient(spec);
  }
}

TEST_CASE("Without noise the quadratic's micro-batch gradient is its full gradient") {
  ObjectiveSpec spec = small(ObjectiveKind::Quadratic);
  spec.noise = 0;
  check_sample_is_full_gradient(spec);
}

TEST_CASE("Logistic regression starts at log 2 with labels of both signs") {
  ObjectiveSpec spec = small(ObjectiveKind::Logistic);
  spec.l2 = 0;
  auto f = make_objective(spec);
  std::vector<double> zero(spec.dimension, 0.0), g(spec.dimension);
  CHECK(f->evaluate(zero, g) == Approx(std::log(2.0)).epsilon(1e-14));
  // The gradient at 0 is -1/(2n) sum y_j a_j: nonzero unless labels carry no information.
  CHECK(std::sqrt(dot(g, g)) > 0.05);
}

TEST_CASE("Objectives are rebuilt identically from their spec and differ across seeds") {
  for (ObjectiveKind kind : {ObjectiveKind::Quadratic, ObjectiveKind::Logistic, ObjectiveKind::LeastSquares}) {
    ObjectiveSpec spec = small(kind);
    auto a = make_objective(spec), b = make_objective(spec);
    spec.seed = 4;
    auto c = make_objective(spec);
    std::vector<double> x = point(spec.dimension, 1), g(spec.dimension);
    double fa = a->evaluate(x, g), fb = b->evaluate(x, g), fc = c->evaluate(x, g);
    CHECK(fa == fb);
    CHECK(fa != fc);
  }
}
