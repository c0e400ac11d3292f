#include "sim/converge/CharLm.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "sim/converge/Random.hpp"
#include "sim/converge/SyntheticData.hpp"
#include "workloads/json/Error.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

namespace {

namespace fs = std::filesystem;

// "convergence.text=PATH": the field an explicit text path came from.
std::string text_field(const std::string& path) {
  return "convergence.text=" + path;
}

// The regular file `file`, refused past kMaxCharLmText bytes by its size before reading and by the bytes read (see
// read_input_file), the refusal naming `field`.
std::string read_whole_file(const fs::path& file, const std::string& field) {
  try {
    return read_input_file(file.string(), kMaxCharLmText);
  } catch (const InputError& e) {
    throw InputError(field + ": " + e.what());
  }
}

void check_size(std::uint64_t bytes, const std::string& field) {
  if (bytes > kMaxCharLmText)
    throw InputError(field + " holds more than " + std::to_string(kMaxCharLmText) + " bytes of text");
}

// The regular files of `folder` (symlinks followed) in sorted name order, each file read once however many names
// lead to it; `files` counts the files read.
std::string read_folder(const fs::path& folder, const std::string& field, int& files) {
  std::vector<fs::path> names;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error))
    names.push_back(it->path());
  if (error) throw InputError(field + " cannot be listed: " + error.message());
  std::sort(names.begin(), names.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });
  std::set<fs::path> seen;
  std::string text;
  files = 0;
  for (const fs::path& name : names) {
    std::error_code ec;
    if (!fs::is_regular_file(name, ec)) continue;  // follows symlinks; skips folders and dangling links
    const fs::path real = fs::canonical(name, ec);
    if (ec || !seen.insert(real).second) continue;
    text += read_whole_file(name, field);
    ++files;
    check_size(text.size(), field);
  }
  return text;
}

std::string folder_source(const std::string& folder, int files) {
  return folder + " (" + std::to_string(files) + (files == 1 ? " file)" : " files)");
}

// tanh(y) = -expm1(-2y) / (2 + expm1(-2y)) for y >= 0, odd: accurate to a few ulps everywhere, never NaN.
double tanh_of(double y) {
  const double t = std::expm1(-2 * std::fabs(y));  // in [-1, 0]
  const double r = (0.0 - t) / (2 + t);
  return y < 0 ? -r : r;
}

// A dense layer, out = W in + b, with W row-major rows x cols.
void dense_forward(const double* w, const double* b, const double* in, std::size_t rows, std::size_t cols,
                   double* out) {
  for (std::size_t r = 0; r < rows; ++r) {
    const double* row = w + r * cols;
    double a = b[r];
    for (std::size_t c = 0; c < cols; ++c) a += row[c] * in[c];
    out[r] = a;
  }
}

// The dense layer's backward pass for the output gradient `d_out`: adds to the gradients of W and b, and sets
// d_in = W^T d_out.
void dense_backward(const double* w, const double* in, const double* d_out, std::size_t rows, std::size_t cols,
                    double* g_w, double* g_b, double* d_in) {
  std::fill(d_in, d_in + cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const double* row = w + r * cols;
    double* g_row = g_w + r * cols;
    g_b[r] += d_out[r];
    for (std::size_t c = 0; c < cols; ++c) {
      g_row[c] += d_out[r] * in[c];
      d_in[c] += row[c] * d_out[r];
    }
  }
}

}  // namespace

CharLmText load_char_lm_text(const std::string& path, const std::string& default_folder) {
  if (!path.empty()) {
    const std::string field = text_field(path);
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    CharLmText text;
    if (fs::is_directory(status)) {
      int files = 0;
      text.bytes = read_folder(path, field, files);
      text.source = folder_source(path, files);
    } else if (fs::is_regular_file(status)) {
      text.bytes = read_whole_file(path, field);
      text.source = path;
    } else {
      throw InputError(field + " is neither a readable file nor a folder");
    }
    if (text.bytes.empty()) throw InputError(field + " holds no text");
    return text;
  }
  std::error_code ec;
  if (!default_folder.empty() && fs::is_directory(default_folder, ec)) {
    try {
      int files = 0;
      CharLmText text{read_folder(default_folder, text_field(default_folder), files), ""};
      text.source = folder_source(default_folder, files);
      if (!text.bytes.empty()) return text;
    } catch (const InputError&) {
      // An unreadable system folder is as good as a missing one: fall back.
    }
  }
  return CharLmText{std::string(char_lm_fallback_text()), "built-in fallback text"};
}

CharLmObjective::CharLmObjective(CharLmText text, CharLmShape shape, std::uint64_t seed) : shape_(shape), seed_(seed) {
  const std::string& bytes = text.bytes;
  const std::size_t C = shape_.context, E = shape_.embedding, H = shape_.hidden;
  if (bytes.size() <= C)
    throw InputError("convergence.context=" + std::to_string(C) + " leaves no character to predict in the text (" +
                     text.source + ", " + std::to_string(bytes.size()) + " bytes)");
  bool present[256] = {};
  for (char c : bytes) present[static_cast<unsigned char>(c)] = true;
  std::uint8_t id_of[256] = {};
  for (int b = 0; b < 256; ++b)
    if (present[b]) {
      id_of[b] = static_cast<std::uint8_t>(symbols_.size());
      symbols_.push_back(static_cast<char>(b));
    }
  ids_.reserve(bytes.size());
  for (char c : bytes) ids_.push_back(id_of[static_cast<unsigned char>(c)]);
  const std::size_t V = symbols_.size();

  layout_.embedding = 0;
  layout_.w1 = V * E;
  layout_.b1 = layout_.w1 + H * C * E;
  layout_.w2 = layout_.b1 + H;
  layout_.b2 = layout_.w2 + V * H;
  layout_.end = layout_.b2 + V;
  if (layout_.end > static_cast<std::size_t>(kMaxDimension))
    throw InputError("convergence: objective char_lm has " + std::to_string(layout_.end) +
                     " parameters (V*E + context*E*H + H + H*V + V with V=" + std::to_string(V) + "), more than " +
                     std::to_string(kMaxDimension));

  theta0_.assign(layout_.end, 0.0);
  SplitMix64 rng(derive_key(seed, static_cast<std::uint64_t>(RandomStream::Init)));
  const double w1_scale = 1 / std::sqrt(static_cast<double>(C * E));
  const double w2_scale = 0.01 / std::sqrt(static_cast<double>(H));
  for (std::size_t k = layout_.embedding; k < layout_.w1; ++k) theta0_[k] = rng.standard();
  for (std::size_t k = layout_.w1; k < layout_.b1; ++k) theta0_[k] = w1_scale * rng.standard();
  for (std::size_t k = layout_.w2; k < layout_.b2; ++k) theta0_[k] = w2_scale * rng.standard();

  const std::size_t evaluated = std::min<std::size_t>(std::max(shape_.eval_positions, 1), positions());
  eval_.resize(evaluated);
  for (std::size_t p = 0; p < evaluated; ++p) eval_[p] = static_cast<std::uint32_t>(p);
  name_ = "char_lm (" + text.source + ", " + std::to_string(bytes.size()) + " bytes, V=" + std::to_string(V) + ")";
}

double CharLmObjective::loss_and_gradient(std::span<const double> x, std::span<const std::uint32_t> positions,
                                          std::span<double> gradient) const {
  const std::size_t V = symbols_.size(), E = shape_.embedding, C = shape_.context, H = shape_.hidden, CE = C * E;
  const std::size_t d = layout_.end;
  std::vector<double> theta(d);
  for (std::size_t k = 0; k < d; ++k) theta[k] = theta0_[k] + x[k];
  const double* emb = theta.data() + layout_.embedding;
  const double* w1 = theta.data() + layout_.w1;
  const double* b1 = theta.data() + layout_.b1;
  const double* w2 = theta.data() + layout_.w2;
  const double* b2 = theta.data() + layout_.b2;
  std::fill(gradient.begin(), gradient.begin() + d, 0.0);
  double* g_emb = gradient.data() + layout_.embedding;
  double* g_w1 = gradient.data() + layout_.w1;
  double* g_b1 = gradient.data() + layout_.b1;
  double* g_w2 = gradient.data() + layout_.w2;
  double* g_b2 = gradient.data() + layout_.b2;

  std::vector<double> e(CE), h(H), z(V), dz(V), dh(H), da(H), de(CE);
  double sum = 0;
  for (const std::uint32_t p : positions) {
    const std::uint8_t* context = ids_.data() + p;
    const std::size_t target = ids_[p + C];
    // Forward: e = the context's embeddings, h = tanh(W1 e + b1), z = W2 h + b2.
    for (std::size_t c = 0; c < C; ++c) std::copy_n(emb + context[c] * E, E, e.data() + c * E);
    dense_forward(w1, b1, e.data(), H, CE, h.data());
    for (std::size_t i = 0; i < H; ++i) h[i] = tanh_of(h[i]);
    dense_forward(w2, b2, h.data(), V, H, z.data());
    double top = -std::numeric_limits<double>::infinity();
    for (const double a : z) top = std::max(top, a);
    // Loss: log sum exp(z) - z[target], the exponentials shifted by the largest logit.
    double total = 0;
    for (std::size_t v = 0; v < V; ++v) {
      dz[v] = std::exp(z[v] - top);
      total += dz[v];
    }
    sum += top + std::log(total) - z[target];
    // Backward: dz = softmax(z) - onehot(target).
    for (std::size_t v = 0; v < V; ++v) dz[v] /= total;
    dz[target] -= 1;
    dense_backward(w2, h.data(), dz.data(), V, H, g_w2, g_b2, dh.data());
    for (std::size_t i = 0; i < H; ++i) da[i] = dh[i] * (1 - h[i] * h[i]);
    dense_backward(w1, e.data(), da.data(), H, CE, g_w1, g_b1, de.data());
    for (std::size_t c = 0; c < C; ++c) {
      double* g_row = g_emb + context[c] * E;
      for (std::size_t q = 0; q < E; ++q) g_row[q] += de[c * E + q];
    }
  }
  const double count = static_cast<double>(positions.size());
  for (std::size_t k = 0; k < d; ++k) gradient[k] /= count;
  return sum / count;
}

double CharLmObjective::evaluate(std::span<const double> x, std::span<double> gradient) const {
  return loss_and_gradient(x, eval_, gradient);
}

MicrobatchState CharLmObjective::prepare(std::span<const double> x, SampleKey key) const {
  MicrobatchState state;
  state.samples = draw_batch(seed_, key, shape_.batch_size, positions());
  state.values.resize(layout_.end);
  loss_and_gradient(x, state.samples, state.values);
  return state;
}

void CharLmObjective::block_gradient(std::span<const double>, SampleKey, const MicrobatchState& state, int begin,
                                     int end, std::span<double> out) const {
  std::copy(state.values.begin() + begin, state.values.begin() + end, out.begin());
}

}  // namespace placesim
