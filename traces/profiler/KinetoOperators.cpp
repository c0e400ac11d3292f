#include "traces/profiler/KinetoOperators.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

namespace placesim::kineto {

namespace {

double product(const std::vector<double>& d, std::size_t from, std::size_t to) {
  double p = 1;
  for (std::size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

/// C = A B as torch.matmul reads A [..., m, k] and B [..., k, n] (a vector operand is one row or column). With a
/// 2-D B the rows of A's leading dims stack into one GEMM; with batched B they are `batch` GEMMs.
std::optional<GemmShape> matmul_shape(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return std::nullopt;
  const std::size_t ra = a.size(), rb = b.size();
  double m = ra >= 2 ? a[ra - 2] : 1, k = a.back();
  const double kb = rb >= 2 ? b[rb - 2] : b[0], n = rb >= 2 ? b.back() : 1;
  double batch = ra > 2 ? product(a, 0, ra - 2) : 1;
  if (rb <= 2) m *= batch, batch = 1;
  if (kb != k || !(m > 0 && n > 0 && k > 0)) return std::nullopt;
  return GemmShape{0, m, n, k, batch, 0};
}

/// aten::linear: input [..., k], weight [n, k].
std::optional<GemmShape> linear_shape(const std::vector<double>& input, const std::vector<double>& weight) {
  if (input.empty() || weight.size() != 2 || weight[1] != input.back()) return std::nullopt;
  const double m = product(input, 0, input.size() - 1), n = weight[0], k = input.back();
  if (!(m > 0 && n > 0 && k > 0)) return std::nullopt;
  return GemmShape{0, m, n, k, 1, 0};
}

/// The matrix-multiply operators whose shapes are read, and which inputs are the operands A and B.
struct GemmOperator {
  std::string_view name;
  std::size_t a, b;
  bool linear;
};
constexpr GemmOperator kGemmOperators[] = {
    {"aten::mm", 0, 1, false},      {"aten::addmm", 1, 2, false},  {"aten::bmm", 0, 1, false},
    {"aten::baddbmm", 1, 2, false}, {"aten::matmul", 0, 1, false}, {"aten::linear", 0, 1, true},
};

}  // namespace

double elements(const std::vector<double>& dims) {
  return product(dims, 0, dims.size());
}

std::optional<GemmShape> gemm_shape(std::string_view name, std::span<const OperatorInput> inputs) {
  for (const GemmOperator& op : kGemmOperators) {
    if (name != op.name) continue;
    if (op.b >= inputs.size() || !inputs[op.a].dims || !inputs[op.b].dims) return std::nullopt;
    const std::vector<double>&a = *inputs[op.a].dims, &b = *inputs[op.b].dims;
    std::optional<GemmShape> s = op.linear ? linear_shape(a, b) : matmul_shape(a, b);
    if (s) s->elem_bytes = dtype_bytes(inputs[op.a].type);
    return s;
  }
  return std::nullopt;
}

const char* collective_op(std::string_view name) {
  // Letters only, lower case, up to a kernel's signature or template arguments: "all_to_all" and "AllToAll" meet.
  std::string letters;
  for (char c : name) {
    if (c == '(' || c == '<') break;
    if (std::isalpha(static_cast<unsigned char>(c))) letters += static_cast<char>(std::tolower(c));
  }
  // sendrecv before send and recv, which it contains.
  static constexpr std::pair<std::string_view, const char*> kOps[] = {
      {"allreduce", "allreduce"}, {"reducescatter", "reduce_scatter"},
      {"allgather", "allgather"}, {"alltoall", "alltoall"},
      {"broadcast", "broadcast"}, {"sendrecv", "sendrecv"},
      {"send", "send"},           {"recv", "recv"},
      {"barrier", "barrier"},
  };
  for (const auto& [key, op] : kOps)
    if (letters.find(key) != std::string::npos) return op;
  return "";
}

int dtype_bytes(std::string_view type) {
  if (type.starts_with("c10::")) type.remove_prefix(5);
  std::string t(type);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t.starts_with("float8")) return 1;
  // The "Input type" spellings (C++ names: "long int", "unsigned char") and record_param_comms dtype (ScalarType
  // names: "Long", "Byte", "Char"), lower-cased.
  static constexpr std::pair<std::string_view, int> kTypes[] = {
      {"float", 4},
      {"float32", 4},
      {"double", 8},
      {"float64", 8},
      {"bfloat16", 2},
      {"half", 2},
      {"float16", 2},
      {"long int", 8},
      {"long", 8},
      {"int64", 8},
      {"int", 4},
      {"int32", 4},
      {"short int", 2},
      {"short", 2},
      {"int16", 2},
      {"unsigned char", 1},
      {"signed char", 1},
      {"char", 1},
      {"byte", 1},
      {"bool", 1},
      {"uint8", 1},
      {"int8", 1},
      {"complex<float>", 8},
      {"complex<double>", 16},
  };
  for (const auto& [name, bytes] : kTypes)
    if (t == name) return bytes;
  return 0;
}

}  // namespace placesim::kineto
