// The character-level language model objective of the stale-SGD executor (sim/converge/CharLm): its text, its
// initial loss, its gradient, its batches and a stale run. Everything runs on the built-in fallback text, so no test
// depends on the machine's /usr/share/common-licenses.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/converge/CharLm.hpp"
#include "sim/converge/ConvergeSweep.hpp"
#include "sim/converge/Random.hpp"
#include "sim/converge/StaleSgd.hpp"
#include "sim/converge/SyntheticData.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/UpdateLogBuilders.hpp"

using namespace placesim;
using Catch::Contains;

namespace {

const std::string kFallbackFile = std::string(PLACESIM_SOURCE_DIR) + "/sim/converge/char-lm-fallback.txt";

CharLmText fallback() {
  return CharLmText{std::string(char_lm_fallback_text()), "fallback"};
}

CharLmShape shape_with(int eval_positions) {
  CharLmShape shape;
  shape.eval_positions = eval_positions;
  return shape;
}

std::size_t distinct_bytes(const std::string& text) {
  return std::set<char>(text.begin(), text.end()).size();
}

ConvergenceSpec parse(const std::string& text) {
  return parse_convergence(Json::parse(text));
}

// Sample standard deviation of theta0 over [begin, end).
double spread(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  double sum = 0, sum2 = 0;
  for (std::size_t k = begin; k < end; ++k) {
    sum += v[k];
    sum2 += v[k] * v[k];
  }
  const double n = static_cast<double>(end - begin), mean = sum / n;
  return std::sqrt(sum2 / n - mean * mean);
}

}  // namespace

TEST_CASE("char_lm: the built-in fallback text is the repository's file, English prose of a few kB") {
  const std::string file = test::read(kFallbackFile);
  CHECK(char_lm_fallback_text() == file);
  CHECK(file.size() > 4000);
  CHECK(distinct_bytes(file) == 64);  // counted independently with Python
}

TEST_CASE("char_lm: the model on the fallback text has the documented vocabulary, dimension and layout") {
  const CharLmObjective f(fallback(), CharLmShape{}, 1);
  const std::size_t V = distinct_bytes(fallback().bytes);
  CHECK(f.vocabulary() == static_cast<int>(V));
  CHECK(f.dimension() == static_cast<int>(V * 16 + 4 * 16 * 64 + 64 + 64 * V + V));
  CHECK(f.dimension() == 9344);
  const auto L = f.layout();
  CHECK(L.embedding == 0);
  CHECK(L.w1 == V * 16);
  CHECK(L.b1 == L.w1 + 64 * 64);
  CHECK(L.w2 == L.b1 + 64);
  CHECK(L.b2 == L.w2 + V * 64);
  CHECK(L.end == L.b2 + V);
  CHECK(f.positions() == fallback().bytes.size() - 4);
  CHECK(f.eval_positions() == 4096);
  CHECK(f.name() == "char_lm (fallback, " + std::to_string(fallback().bytes.size()) + " bytes, V=64)");
  // The vocabulary is the distinct bytes, sorted.
  CHECK(f.symbols().front() == '\n');
  CHECK(f.symbols().back() == 'z');
  CHECK(std::is_sorted(f.symbols().begin(), f.symbols().end()));
  // theta0: embeddings of variance 1, W1 of scale 1/sqrt(C*E) = 1/8, W2 of 0.01/sqrt(H) = 1/800, zero biases.
  const std::vector<double>& theta0 = f.initial();
  CHECK(spread(theta0, L.embedding, L.w1) == Approx(1.0).epsilon(0.05));
  CHECK(spread(theta0, L.w1, L.b1) == Approx(0.125).epsilon(0.05));
  CHECK(spread(theta0, L.w2, L.b2) == Approx(0.00125).epsilon(0.05));
  for (std::size_t k = L.b1; k < L.w2; ++k) CHECK(theta0[k] == 0);
  for (std::size_t k = L.b2; k < L.end; ++k) CHECK(theta0[k] == 0);
}

TEST_CASE("char_lm: the loss at initialisation (x = 0) is ln V within 1 %") {
  for (std::uint64_t seed : {1, 2, 3}) {
    const CharLmObjective f(fallback(), CharLmShape{}, seed);
    std::vector<double> zero(f.dimension(), 0.0), g(f.dimension());
    const double loss = f.evaluate(zero, g), ln_v = std::log(64.0);
    INFO("seed " << seed << ": loss " << loss);
    CHECK(std::fabs(loss - ln_v) < 0.01 * ln_v);
    CHECK(std::fabs(loss - ln_v) < 1e-3);  // the logits start within about 0.01 of each other
    double norm2 = 0;
    for (double v : g) norm2 += v * v;
    CHECK(norm2 > 1e-4);  // x = 0 is not a stationary point: the unigram frequencies pull b2 at once
  }
}

TEST_CASE("char_lm: the gradient matches central finite differences in every parameter group") {
  // A short evaluation set keeps this fast; x is a random offset, so that every layer is far from its start.
  const CharLmObjective f(fallback(), shape_with(48), 5);
  const int d = f.dimension();
  const std::vector<double> x = standard_vector(d, 0.1, 77);
  std::vector<double> g(d), scratch(d);
  f.evaluate(x, g);
  const auto L = f.layout();
  const std::size_t bounds[] = {L.embedding, L.w1, L.b1, L.w2, L.b2, L.end};
  const char* names[] = {"embedding", "W1", "b1", "W2", "b2"};
  for (int group = 0; group < 5; ++group) {
    // 10 coordinates of the group whose gradient exceeds 1e-4 (where a difference quotient has ample precision:
    // its rounding error is about 1e-16 x f / h = 5e-11), evenly spread, and 6 arbitrary ones.
    std::vector<std::size_t> large, sample;
    for (std::size_t k = bounds[group]; k < bounds[group + 1]; ++k)
      if (std::fabs(g[k]) > 1e-4) large.push_back(k);
    INFO(names[group] << ": " << large.size() << " coordinates with |g| > 1e-4");
    REQUIRE(large.size() >= 10);
    for (std::size_t i = 0; i < 10; ++i) sample.push_back(large[i * large.size() / 10]);
    const std::size_t width = bounds[group + 1] - bounds[group];
    for (std::size_t i = 0; i < 6; ++i) sample.push_back(bounds[group] + (2 * i + 1) * width / 12);
    for (std::size_t k : sample) {
      const double h = 1e-5;
      std::vector<double> up = x, down = x;
      up[k] += h;
      down[k] -= h;
      const double slope = (f.evaluate(up, scratch) - f.evaluate(down, scratch)) / (2 * h);
      INFO(names[group] << " coordinate " << k << ": gradient " << g[k] << ", difference quotient " << slope);
      if (std::fabs(g[k]) > 1e-4)
        CHECK(std::fabs(g[k] - slope) < 1e-5 * std::fabs(g[k]));
      else
        CHECK(std::fabs(g[k] - slope) < 1e-9);
    }
  }
}

TEST_CASE("char_lm: a block of a micro-batch gradient is bit for bit the slice of the whole vector") {
  const CharLmObjective f(fallback(), shape_with(64), 2);
  const int d = f.dimension();
  const std::vector<double> x = standard_vector(d, 0.05, 3);
  std::vector<double> whole(d), block(d);
  f.sample_gradient(x, SampleKey{1, 17}, 0, d, whole);
  for (int blocks : {4, 7}) {
    BlockSplit split(d, blocks);
    for (int s = 0; s < blocks; ++s) {
      f.sample_gradient(x, SampleKey{1, 17}, split.begin(s), split.end(s), block);
      for (int k = split.begin(s); k < split.end(s); ++k) REQUIRE(block[k - split.begin(s)] == whole[k]);
    }
  }
  // The micro-batch gradient is the mean gradient of its positions.
  const MicrobatchState state = f.prepare(x, SampleKey{1, 17});
  std::vector<double> direct(d);
  f.loss_and_gradient(x, state.samples, direct);
  CHECK(direct == whole);
}

TEST_CASE("char_lm: the same (seed, replica, micro-batch) draws the same positions, as the finite sums do") {
  const CharLmObjective f(fallback(), shape_with(64), 9);
  const std::vector<double> zero(f.dimension(), 0.0), moved = standard_vector(f.dimension(), 0.1, 4);
  const MicrobatchState a = f.prepare(zero, SampleKey{1, 17});
  CHECK(a.samples.size() == 16);
  CHECK(f.prepare(moved, SampleKey{1, 17}).samples == a.samples);  // whatever the model
  CHECK(f.prepare(zero, SampleKey{1, 18}).samples != a.samples);
  CHECK(f.prepare(zero, SampleKey{0, 17}).samples != a.samples);
  CHECK(CharLmObjective(fallback(), shape_with(64), 10).prepare(zero, SampleKey{1, 17}).samples != a.samples);
  // Position j is output j of the SplitMix64 stream keyed (seed, Batch, replica, micro-batch), modulo P.
  SplitMix64 stream(derive_key(9, static_cast<std::uint64_t>(RandomStream::Batch), 1, 17));
  for (std::uint32_t p : a.samples) CHECK(p == stream.next() % f.positions());
  // A logistic regression of P samples with the same seed draws the same indices.
  FiniteSumObjective logistic(FiniteSumObjective::Loss::Logistic, 1, std::vector<double>(f.positions(), 1.0),
                              std::vector<double>(f.positions(), 1.0), 16, 0, 9);
  CHECK(logistic.prepare(std::vector<double>{0.0}, SampleKey{1, 17}).samples == a.samples);
}

TEST_CASE("char_lm: stale SGD with PipeDream-like delays over 4 stages lowers the loss well below ln V") {
  const CharLmObjective f(fallback(), shape_with(512), 1);
  ConvergenceSpec spec;
  spec.step_size = 0.125;
  spec.sample_every = 160;  // 11 points: the full objective costs more than the 1600 updates
  const ConvergenceResult r = run_convergence(test::pipedream_like_log(4, 400), spec, f);
  const double ln_v = std::log(64.0);
  CHECK(r.updates == 1600);
  REQUIRE(r.points.size() == 11);
  CHECK_FALSE(r.diverged);
  CHECK(std::fabs(r.points.front().loss - ln_v) < 1e-3);
  INFO("final loss " << r.points.back().loss);
  CHECK(r.points.back().loss < ln_v - 1.5);  // 2.66 nats or less per character, from 4.16 (measured: 2.15)
  CHECK(r.points.back().loss < r.points[r.points.size() / 2].loss);  // still falling in the second half
}

TEST_CASE("char_lm: the text is a file, a folder's files in name order each read once, or the fallback") {
  test::TempDir dir;
  std::filesystem::create_directory(dir / "texts");
  test::write(dir / "texts/b", "BBB");
  test::write(dir / "texts/a", "AA");
  std::filesystem::create_symlink(dir / "texts/a", dir / "texts/c-link-to-a");  // a duplicate by resolved path
  std::filesystem::create_directory(dir / "texts/d-folder");                    // not a regular file
  std::filesystem::create_symlink(dir / "missing", dir / "texts/e-dangling");
  test::write(dir / "texts/f", "F");
  const CharLmText folder = load_char_lm_text(dir / "texts");
  CHECK(folder.bytes == "AABBBF");
  CHECK(folder.source == dir / "texts" + " (3 files)");
  // The default folder is read the same way; missing or empty, the fallback text is used.
  CHECK(load_char_lm_text("", dir / "texts").bytes == "AABBBF");
  CHECK(load_char_lm_text("", dir / "no-such-folder").bytes == char_lm_fallback_text());
  std::filesystem::create_directory(dir / "empty");
  CHECK(load_char_lm_text("", dir / "empty").source == "built-in fallback text");
  // An explicit path must hold text.
  const CharLmText file = load_char_lm_text(dir / "texts/b");
  CHECK(file.bytes == "BBB");
  CHECK(file.source == dir / "texts/b");
  CHECK_THROWS_WITH(load_char_lm_text(dir / "nothing"),
                    "convergence.text=" + (dir / "nothing") + " is neither a readable file nor a folder");
  // Past the text limit: refused by its size before reading, naming the field and the limit; a sparse file of one
  // byte more than the limit costs no disk.
  {
    std::ofstream big(dir / "big", std::ios::binary);
    big.seekp(static_cast<std::streamoff>(kMaxCharLmText));
    big.put('x');
  }
  CHECK_THROWS_WITH(load_char_lm_text(dir / "big"), Contains("convergence.text=" + (dir / "big") + ": ") &&
                                                        Contains(std::to_string(kMaxCharLmText + 1)) &&
                                                        Contains(std::to_string(kMaxCharLmText)));
  std::filesystem::create_directory(dir / "big-folder");
  std::filesystem::create_symlink(dir / "big", dir / "big-folder/big");
  CHECK_THROWS_WITH(load_char_lm_text(dir / "big-folder"), Contains("convergence.text=" + (dir / "big-folder")));
  test::write(dir / "void", "");
  CHECK_THROWS_WITH(load_char_lm_text(dir / "void"), Contains("holds no text"));
  CHECK_THROWS_WITH(load_char_lm_text(dir / "empty"), Contains("holds no text"));
  CHECK_THROWS_WITH(CharLmObjective(load_char_lm_text(dir / "texts/b"), CharLmShape{}, 1),
                    Contains("convergence.context=4 leaves no character to predict"));
}

TEST_CASE("char_lm: the convergence section reads the model's fields and refuses the others") {
  const ConvergenceSpec s = parse(R"({"objective": "char_lm", "context": 3, "embedding": 8, "hidden": 32,
                                      "batch_size": 4, "seed": 7, "text": "a.txt", "step_size": 0.2})");
  CHECK(s.objective.kind == ObjectiveKind::CharLm);
  CHECK(s.objective.context == 3);
  CHECK(s.objective.embedding == 8);
  CHECK(s.objective.hidden == 32);
  CHECK(s.objective.batch_size == 4);
  CHECK(s.objective.seed == 7);
  CHECK(s.objective.text == "a.txt");
  CHECK(s.objective.dimension == 0);  // derived when the text is read
  const ConvergenceSpec d = parse(R"({"objective": "char_lm"})");
  CHECK(d.objective.context == 4);
  CHECK(d.objective.embedding == 16);
  CHECK(d.objective.hidden == 64);
  CHECK(d.objective.batch_size == 16);
  CHECK(d.objective.text.empty());
  CHECK(to_string(ObjectiveKind::CharLm) == "char_lm");

  CHECK_THROWS_WITH(parse(R"({"objective": "char_lm", "dimension": 512})"),
                    Contains("convergence.dimension=512 cannot be given for objective char_lm: its dimension is "
                             "derived from the text's vocabulary V and the layer sizes, V*E + context*E*H + H + "
                             "H*V + V"));
  for (const char* key : {"samples", "condition_number", "noise", "l2"})
    CHECK_THROWS_WITH(parse(std::string(R"({"objective": "char_lm", ")") + key + R"(": 2})"),
                      "convergence." + std::string(key) +
                          "=2 has no meaning for objective char_lm (its data is the "
                          "text)");
  CHECK_THROWS_WITH(parse(R"({"objective": "quadratic", "context": 4})"),
                    "convergence.context=4 has no meaning for objective quadratic (only char_lm reads it)");
  CHECK_THROWS_WITH(parse(R"({"objective": "logistic", "text": "a.txt"})"),
                    R"(convergence.text="a.txt" has no meaning for objective logistic (only char_lm reads it))");
  CHECK_THROWS_WITH(parse(R"({"objective": "char_lm", "context": 0})"), Contains("convergence.context=0"));
  CHECK_THROWS_WITH(parse(R"({"objective": "char_lm", "hidden": 5000})"), Contains("convergence.hidden=5000"));
  CHECK_THROWS_WITH(parse(R"({"objective": "char_lm", "text": ""})"),
                    Contains("convergence.text=\"\" must name a file or a folder"));
  CHECK_THROWS_WITH(parse(R"({"objective": "char_lm", "context": 64, "embedding": 64, "hidden": 512})"),
                    Contains("convergence.hidden=512 gives up to 2245376 parameters"));
}

TEST_CASE("char_lm: make_objective builds the model on the named text with the derived dimension") {
  ConvergenceSpec spec = parse(R"({"objective": "char_lm", "context": 3, "embedding": 8, "hidden": 32, "seed": 4,
                                   "step_size": 0.125})");
  spec.objective.text = kFallbackFile;
  const auto f = make_objective(spec.objective);
  const int V = 64;
  CHECK(f->dimension() == V * 8 + 3 * 8 * 32 + 32 + 32 * V + V);
  CHECK_THAT(f->name(), Contains("char_lm (" + kFallbackFile + ", ") && Contains("V=64)"));
  // run_convergence builds it from the spec (whose dimension is 0) and checks the derived dimension.
  const ConvergenceResult r = run_convergence(test::pipedream_like_log(2, 3), spec);
  CHECK(r.dimension == f->dimension());
  CHECK(r.updates == 6);
  spec.objective.text = kFallbackFile + ".missing";
  CHECK_THROWS_WITH(run_convergence(test::pipedream_like_log(2, 3), spec),
                    Contains("convergence.text=" + kFallbackFile + ".missing is neither"));
}

TEST_CASE("char_lm: converge-sweep takes the language model with f* = 0 (its gap is the loss in nats per char)") {
  ConvergeSweepSpec spec = parse_converge_sweep(
      Json::parse(R"({"objectives": [{"objective": "char_lm", "text": ")" + kFallbackFile +
                  R"(", "hidden": 8, "embedding": 4}], "stages": [2], "schedules": ["pipedream"], "budget_s": 40,
                  "min_log2_step": -2, "max_log2_step": -1, "seeds": 2})"),
      quick_converge_sweep());
  spec.threads = 1;
  const std::vector<ConvergeSweepCell> cells = run_converge_sweep(spec);
  REQUIRE(cells.size() == 1);
  CHECK(cells[0].minimum == std::vector<double>{0, 0});
  const ConvergeSweepRun& best = cells[0].runs[static_cast<std::size_t>(cells[0].best)];
  CHECK(best.mean_gap == best.mean_final_loss);
  CHECK(best.mean_final_loss < best.initial_loss[0]);
}
