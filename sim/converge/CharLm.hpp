#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/converge/Objectives.hpp"

namespace placesim {

/// The bytes a character-level language model is trained on, and where they came from.
struct CharLmText {
  std::string bytes;
  std::string source;  ///< e.g. "/usr/share/common-licenses (14 files)", "built-in fallback text", a file's path
};

/// The folder read when no text is named: Debian's licence texts, present on every Debian and Ubuntu system.
inline constexpr const char* kCharLmDefaultFolder = "/usr/share/common-licenses";
/// Largest text read, in bytes (the licence texts are about 180 kB).
inline constexpr std::uint64_t kMaxCharLmText = std::uint64_t{1} << 26;
/// Text positions of the full objective (the first ones of the text; fewer when the text is shorter).
inline constexpr int kCharLmEvalPositions = 4096;

/// The text `path` names: a regular file, or a folder whose regular files are concatenated in sorted name order
/// (symlinks followed; a file reached twice, by its name and through a link, is read once: duplicates are skipped by
/// canonical path). With an empty `path`, `default_folder` read the same way, or the built-in fallback text when that
/// folder is missing or holds no bytes. Throws InputError naming convergence.text when `path` cannot be read, is
/// empty or exceeds kMaxCharLmText.
CharLmText load_char_lm_text(const std::string& path, const std::string& default_folder = kCharLmDefaultFolder);

/// The built-in fallback text: sim/converge/char-lm-fallback.txt (self-written English prose, about 4.4 kB),
/// compiled into the program so that it works wherever it runs.
std::string_view char_lm_fallback_text();

/// Layer sizes of CharLmObjective.
struct CharLmShape {
  int context = 4;                            ///< C: characters seen before the predicted one
  int embedding = 16;                         ///< E
  int hidden = 64;                            ///< H
  int batch_size = 16;                        ///< text positions per micro-batch
  int eval_positions = kCharLmEvalPositions;  ///< the full objective averages the first min(this, P) positions
};

/// A character-level language model, the closest thing to real training the stale-SGD executor runs. The vocabulary
/// is the V distinct bytes of the text, sorted. Position p (0 <= p < P = n - C of a text of n bytes) predicts byte
/// p + C from bytes p .. p + C - 1: their embeddings (rows of a V x E table) are concatenated (C*E values, oldest
/// first), passed through one hidden layer h = tanh(W1 e + b1) (W1: H x C*E) and a linear layer z = W2 h + b2
/// (W2: V x H) to V logits; the loss is the softmax cross-entropy -log softmax(z)[target], in nats per character.
/// fp64 throughout.
///
/// Parameters, flattened in this order, each matrix row-major (output x input): embedding (V x E), W1 (H x C*E),
/// b1 (H), W2 (V x H), b2 (V); d = V*E + C*E*H + H + H*V + V. The executor's x is the OFFSET from a seeded initial
/// parameter vector theta0 (theta = theta0 + x, so x = 0 is a non-symmetric start): from the Init stream of the
/// seed, embedding entries have variance 1 and W1's variance 1/(C*E) (scale 1/sqrt(fan-in)), W2's 1e-4/H (0.01 /
/// sqrt(H): the logits start within about 0.01 of each other, so the initial loss is ln V within 1e-4), and b1 =
/// b2 = 0.
///
/// f(x) = mean loss over the first min(eval_positions, P) positions (the evaluation set). Micro-batch (r, i) draws
/// batch_size positions with replacement by draw_batch(seed, (r, i), batch_size, P), as FiniteSumObjective draws its
/// samples; prepare() computes that batch's whole mean gradient and block_gradient() copies a slice of it, so a
/// block is bit for bit the slice of the full vector.
///
/// Determinism: only +, -, *, / in fixed loop orders, plus exp, expm1 (tanh) and log. Those come from the math
/// library, whose last bit may differ between libraries (glibc picks a variant by CPU), so as for the logistic
/// objective, runs are reproducible bit for bit on one machine.
class CharLmObjective final : public Objective {
 public:
  /// Throws InputError when the text has no position (n <= context) or the dimension exceeds kMaxDimension.
  CharLmObjective(CharLmText text, CharLmShape shape, std::uint64_t seed);

  /// "char_lm (SOURCE, N bytes, V=...)".
  std::string name() const override { return name_; }
  int dimension() const override { return static_cast<int>(theta0_.size()); }
  double evaluate(std::span<const double> x, std::span<double> gradient) const override;
  /// The state is the batch's positions (samples) and its whole mean gradient (values).
  MicrobatchState prepare(std::span<const double> x, SampleKey key) const override;
  void block_gradient(std::span<const double> x, SampleKey key, const MicrobatchState& state, int begin, int end,
                      std::span<double> out) const override;

  /// Where each parameter group starts in the flattened vector; `end` = d.
  struct Layout {
    std::size_t embedding, w1, b1, w2, b2, end;
  };
  Layout layout() const { return layout_; }
  int vocabulary() const { return static_cast<int>(symbols_.size()); }
  const std::string& symbols() const { return symbols_; }  ///< the V distinct bytes, sorted
  std::size_t text_bytes() const { return ids_.size(); }
  std::size_t positions() const { return ids_.size() - shape_.context; }  ///< P
  std::size_t eval_positions() const { return eval_.size(); }
  const CharLmShape& shape() const { return shape_; }
  const std::vector<double>& initial() const { return theta0_; }  ///< theta0

  /// Mean loss of `positions` at theta0 + x, and its gradient with respect to x (size d, overwritten).
  double loss_and_gradient(std::span<const double> x, std::span<const std::uint32_t> positions,
                           std::span<double> gradient) const;

 private:
  CharLmShape shape_;
  std::uint64_t seed_;
  std::string symbols_;
  std::vector<std::uint8_t> ids_;    ///< the text as vocabulary indices
  std::vector<std::uint32_t> eval_;  ///< 0 .. min(eval_positions, P) - 1
  Layout layout_;
  std::vector<double> theta0_;
  std::string name_;
};

}  // namespace placesim
