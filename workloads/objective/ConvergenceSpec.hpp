#pragma once
#include <cstdint>
#include <string>

#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// The closed set of synthetic objectives the stale-SGD executor (sim/converge/StaleSgd) optimizes.
enum class ObjectiveKind { Quadratic, Logistic, LeastSquares, CharLm };

/// A seeded synthetic objective over R^dimension (definitions in sim/converge/Objectives.hpp). Every field is used by
/// every objective unless noted; `samples` and `batch_size` only by the finite-sum ones (logistic, least squares).
///
/// char_lm, the character-level language model of sim/converge/CharLm.hpp, uses only `batch_size` (positions per
/// micro-batch), `seed` and the fields marked char_lm: its dimension V*E + context*E*H + H + H*V + V follows from
/// the text's vocabulary V and is known once the text is read, so `dimension` is 0 in a parsed char_lm spec.
struct ObjectiveSpec {
  ObjectiveKind kind = ObjectiveKind::Quadratic;
  int dimension = 512;
  int samples = 1024;            ///< logistic / least squares: data set size n
  int batch_size = 16;           ///< logistic / least squares: samples per micro-batch, drawn with replacement;
                                 ///< when parsed, the default is min(16, samples); char_lm: text positions
  double condition_number = 10;  ///< kappa >= 1 of the Hessian (quadratic) or of the feature covariance
  double noise = 0.1;            ///< quadratic: gradient noise std per coordinate; least squares: target noise std;
                                 ///< logistic: label flip probability (<= 0.5)
  double l2 = 0;                 ///< lambda of the added (lambda/2)||x||^2
  std::uint64_t seed = 1;
  /// logistic / least squares: the data set. Rotated (placesim's): features of covariance Q diag(spectrum) Q^T with
  /// condition_number, w* of norm about 2, labels flipped with probability `noise`. Gaussian (the setup of Ilin &
  /// Richtarik's code, vectozavr/randomized-pipedream src/objectives/logistic.py): features and w* with independent
  /// mean-0 variance-1 coordinates, unscaled, logistic labels drawn +1 with probability sigma(a . w*); condition_number
  /// and noise are then unused.
  enum class Data { Rotated, Gaussian };
  Data data = Data::Rotated;
  /// logistic / least squares: std of a mean-0 noise added to every coordinate of a micro-batch gradient (the
  /// authors' gradient_noise_std; 0: none).
  double gradient_noise = 0;
  /// logistic / least squares: how a micro-batch picks its samples. Random: batch_size draws with replacement from
  /// a stream keyed by (seed, replica, micro-batch). Cyclic (the authors' code: build_batches and
  /// build_training_batch_schedule without shuffling): the data set cut into n / batch_size contiguous batches, and
  /// micro-batch m (numbered over the whole run, every replica's alike) takes batch m mod (n / batch_size); n must be
  /// a multiple of batch_size.
  enum class Batches { Random, Cyclic };
  Batches batches = Batches::Random;
  int context = 4;     ///< char_lm: characters the model sees before the one it predicts
  int embedding = 16;  ///< char_lm: E, the embedding width of each character
  int hidden = 64;     ///< char_lm: H, the width of the tanh hidden layer
  std::string text;    ///< char_lm: file or folder of the text; "" = /usr/share/common-licenses, or the
                       ///< built-in fallback text when that folder is missing or empty
};

/// An experiment's "convergence" section: which objective to optimize and how.
struct ConvergenceSpec {
  ObjectiveSpec objective;
  double step_size = 0.1;  ///< gamma: an Apply subtracts gamma times the mean of its accumulated gradients
  /// Record a point every this many Apply events; 0 = automatic (a multiple of stages x replicas, i.e. of one
  /// full-model update, chosen so that at most 128 points are recorded besides the first and the last).
  std::int64_t sample_every = 0;
};

/// Parses the "convergence" object: {"objective": "quadratic"|"logistic"|"least_squares", "dimension",
/// "samples", "batch_size", "condition_number", "noise", "l2", "seed", "step_size", "sample_every"}, or for
/// "objective": "char_lm" {"context", "embedding", "hidden", "batch_size", "seed", "text", "step_size",
/// "sample_every"}. Unknown keys, keys meaningless for the chosen objective (a "dimension" for char_lm, whose
/// dimension is derived) and out-of-range values throw InputError naming the dotted field and the value.
ConvergenceSpec parse_convergence(const Json& value);

std::string to_string(ObjectiveKind kind);

/// Largest dimension: the quadratic's rotation then holds about d/2 log2 d = 10^7 Givens rotations (240 MB).
inline constexpr std::int64_t kMaxDimension = std::int64_t{1} << 20;
/// Largest data set of logistic regression and least squares, samples x dimension doubles: 2^25 = 256 MiB (held
/// twice, by rows and in panels).
inline constexpr std::int64_t kMaxObjectiveDoubles = std::int64_t{1} << 25;
/// char_lm's layer sizes: at most kMaxCharLmContext characters of context, kMaxCharLmWidth for E and H, and at most
/// kMaxDimension parameters for the largest vocabulary (256 bytes); at most kMaxCharLmBatch positions per batch.
inline constexpr int kMaxCharLmContext = 64;
inline constexpr int kMaxCharLmWidth = 4096;
inline constexpr int kMaxCharLmBatch = 1 << 16;

}  // namespace placesim
