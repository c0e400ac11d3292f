#include "strategies/analytic/ComputeModel.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "strategies/placement/DataPlan.hpp"

namespace placesim {

namespace {

// Where the kernel primitives (gemm_time_at, flash_attention_time_s, elementwise_time_s) add their seconds by class
// while a pass is costed (PassTimes::*_classes); none outside a Tally.
thread_local ClassSeconds* tally_to = nullptr;

// Adds the seconds the primitives cost in its scope to `to` (and, when nested, to it only).
class Tally {
 public:
  explicit Tally(ClassSeconds& to) : previous_(tally_to) { tally_to = &to; }
  ~Tally() { tally_to = previous_; }
  Tally(const Tally&) = delete;
  Tally& operator=(const Tally&) = delete;

 private:
  ClassSeconds* previous_;
};

double tallied(double seconds, double ClassSeconds::*cls) {
  if (tally_to) tally_to->*cls += seconds;
  return seconds;
}

// The memory-bound share of a pass of `pass_s` seconds: what its GEMMs, attention and launch floor leave.
void settle(ClassSeconds& c, double pass_s) {
  c.memory = pass_s - c.gemm - c.attention - c.launch;
}

// Shapes of one layer on one tensor-parallel rank for one micro-batch. T counts tokens (micro_batch x seq_len);
// `norm_tokens` is T / tp under sequence parallelism, where norms, dropout and residual adds run on a slice.
struct LayerShape {
  double T = 0, norm_tokens = 0, s = 0, h = 0, kv = 0, f = 0, tp = 1, d = 0;
  double q = 0;          // query width heads x head_dim (hidden unless head_dim is given)
  double qk = 0, v = 0;  // per-head query/key and value dimensions (MLA: head_dim + rope, v_head_dim)
  const ModelSpec* model = nullptr;
  double heads = 0;  // attention heads on this rank, times micro_batch: the batch of the score GEMMs
  // Query-key pairs per head and sequence this rank's causal attention computes: s^2 / 2, or with context
  // parallelism (2 cp chunks, rank i holding chunks i and 2cp-1-i) s^2 / (2 cp) on every rank.
  double pairs = 0;
  double el = 2;  // bytes per activation element
  double gb = 2;  // bytes per gradient element
  bool gated = false, dropout = true, rotary = false, flash = false, bias = true, fused_accumulation = true;
  bool cast_accumulation = false;
  bool eager = false;             // training.kernels = eager: PyTorch eager's unfused element-wise kernels
  bool unfused_rms_norm = false;  // eager kernels decompose the RMSNorm (decomposed_rms_norm)
  bool repeat_kv = false;         // grouped keys and values (ModelSpec::grouped_kv)
  AttentionKernel attention_kernel = AttentionKernel::Fused;
  DType dtype = DType::BF16;
  bool fp8 = false;             // training.fp8: the linears' GEMMs in FP8, with their casts
  bool fp8_tensorwise = false;  // training.fp8_scaling = tensorwise: torchao's dynamic casts (fp8_cast_s)
  bool fp8_current = false;     // training.fp8_scaling = current: Transformer Engine's amax pass before each cast
  bool fp8_mx = false;          // training.fp8_scaling = mxfp8: block scales, rowwise and columnwise copies
  // Share of a weight's FP8 cast each forward pays: 1 when the parameters are gathered per use (a fresh 16-bit copy
  // each micro-batch), else 1 / micro-batches (Transformer Engine casts on a step's first micro-batch and keeps the
  // FP8 weight and its transpose until the step ends: Megatron-Core's is_first_microbatch).
  double weight_cast_share = 1;
};

LayerShape shape_of(const Experiment& e) {
  const ModelSpec& m = e.model;
  LayerShape L;
  L.tp = static_cast<double>(e.strategy.tp);
  L.s = static_cast<double>(local_seq_len(e));
  L.T = static_cast<double>(e.training.micro_batch) * L.s;
  L.pairs =
      static_cast<double>(m.seq_len) * static_cast<double>(m.seq_len) / (2.0 * static_cast<double>(e.strategy.cp));
  L.norm_tokens = e.strategy.sp ? L.T / L.tp : L.T;
  L.h = static_cast<double>(m.hidden);
  L.d = static_cast<double>(m.head_dim());
  L.kv = static_cast<double>(m.kv_heads) * L.d;
  L.q = static_cast<double>(m.heads) * L.d;
  L.qk = static_cast<double>(m.qk_head_dim());
  L.v = static_cast<double>(m.v_dim());
  L.model = &m;
  L.f = static_cast<double>(m.ffn);
  L.heads = static_cast<double>(e.training.micro_batch) * static_cast<double>(m.heads) / L.tp;
  L.el = e.training.activation_bytes();
  L.gb = e.training.grad_bytes();
  L.fused_accumulation = e.training.grad_accumulation_fusion;
  L.cast_accumulation = e.training.grad_accumulation_cast;
  L.gated = m.gated_mlp;
  L.dropout = m.dropout;
  L.rotary = !m.learned_positions;
  L.flash = m.flash_attention;
  L.bias = m.bias;
  L.dtype = e.training.dtype;
  L.eager = e.training.kernels == Kernels::Eager;
  L.unfused_rms_norm = decomposed_rms_norm(m, e.training);
  L.repeat_kv = m.grouped_kv();
  L.attention_kernel = e.training.attention_kernel;
  L.fp8 = e.training.fp8;
  L.fp8_tensorwise = L.fp8 && e.training.fp8_scaling == Fp8Scaling::Tensorwise;
  L.fp8_current = L.fp8 && e.training.fp8_scaling == Fp8Scaling::Current;
  L.fp8_mx = L.fp8 && e.training.fp8_scaling == Fp8Scaling::Mxfp8;
  L.weight_cast_share = holds_unit_buffer(e.strategy, State::Parameters) || L.fp8_tensorwise
                            ? 1.0
                            : 1.0 / static_cast<double>(std::max<std::int64_t>(1, e.strategy.microbatches));
  return L;
}

void require_memory_bandwidth(const AcceleratorSpec& acc) {
  if (!(acc.hbm_bw_Bps > 0))
    throw InputError("accelerator " + acc.name + ": hbm_bw is required by the compute model (memory-bound kernels)");
}

// The linears of a layer as (tokens x out) = (tokens x in)(in x out) on one tp rank.
struct Linear {
  double in = 0, out = 0;
};

struct LayerLinears {
  Linear qkv, proj, fc1, fc2;
  /// Multi-head latent attention's other projections (qkv is then the query's up projection, proj the output):
  /// the key/value up projection (tp-sharded), and the down projections (replicated over tp: with sequence
  /// parallelism each rank runs them on its own share of the tokens).
  std::vector<Linear> mla, mla_replicated;
};

LayerLinears linears_of(const LayerShape& L) {
  LayerLinears lin{{L.h, (L.q + 2 * L.kv) / L.tp},
                   {L.q / L.tp, L.h},
                   {L.h, (L.gated ? 2 : 1) * L.f / L.tp},
                   {L.f / L.tp, L.h},
                   {},
                   {}};
  const ModelSpec& m = *L.model;
  if (m.mla()) {
    const double heads = static_cast<double>(m.heads), r = static_cast<double>(m.kv_lora_rank);
    const double rq = static_cast<double>(m.q_lora_rank);
    lin.qkv = {rq > 0 ? rq : L.h, heads * L.qk / L.tp};
    lin.proj = {heads * L.v / L.tp, L.h};
    if (rq > 0) lin.mla_replicated.push_back({L.h, rq});
    lin.mla_replicated.push_back({L.h, r + static_cast<double>(m.qk_rope_head_dim)});
    lin.mla.push_back({r, heads * (L.d + L.v) / L.tp});
  }
  return lin;
}

// A GEMM of the layer's linears: in FP8 under training.fp8 (fp8_gemm_time_s; MX block-scaled under mxfp8,
// mxfp8_gemm_time_s), else in the training dtype.
double linear_gemm_s(const GemmShape& g, const LayerShape& L, const AcceleratorSpec& acc, double extra_bytes = 0) {
  if (L.fp8_mx) return mxfp8_gemm_time_s(g, acc, extra_bytes);
  return L.fp8 ? fp8_gemm_time_s(g, acc, extra_bytes) : gemm_time_s(g, L.dtype, acc, extra_bytes);
}

// The cast of `elems` 16-bit elements to FP8; 0 without training.fp8.
// - delayed (Transformer Engine's fused cast-transpose, fp8_cast_transpose_fused): one kernel reads them and writes
//   their FP8 copy and its FP8 transpose (the layout the linear's other two GEMMs read), (el + 2) bytes an element;
// - current (Transformer Engine's Float8CurrentScalingQuantizer::quantize_impl, TransformerEngine d0067d0
//   pytorch/csrc/quantizer.cpp): an amax kernel reads them first (el), then the same cast-transpose, (2 el + 2);
//   the scale kernel and a tensor-parallel group's amax all-reduce are not costed (one scalar each);
// - mxfp8 (Transformer Engine's MXFP8Quantizer, d0067d0 docs/features/low_precision_training/mxfp8): one kernel reads
//   them and writes the rowwise and the columnwise FP8 copy (1 + 1) with an E8M0 scale per 32 elements each
//   (2 / 32), el + 2 + 1/16 bytes an element; each block's amax is taken inside the kernel. The scales' swizzle into
//   the GEMM's layout is fused with the cast where no communication follows, and is a pass over the scales alone
//   (1/32 of the bytes) where it does: not costed;
// - tensorwise (torchao's hp_tensor_to_float8_dynamic): the amax reduction reads them (el bytes), then the scaled cast
//   reads them again and writes the FP8 copy (el + 1), and the transposes are separate (fp8_relayout_s). Eager, each
//   pass is a kernel of its own; compiled, the two count as one launch. (torchao measured a compiled Float8Linear,
//   forward and backward, at 0.80 times bf16's speed at M, K, N = 1024, 2048, 1024, where launches dominate: this
//   model gives 0.56 on the h100-sxm profile, a launch per pass 0.48; docs/validation.md, 'Float8 casts'.)
double fp8_cast_s(double elems, const LayerShape& L, const AcceleratorSpec& acc) {
  if (!L.fp8) return 0;
  if (L.fp8_tensorwise)
    return elementwise_time_s((2 * L.el + 1) * elems, acc) + (L.eager ? acc.profile.kernel_latency_s : 0);
  if (L.fp8_mx) return elementwise_time_s((L.el + 2 + 2.0 / kMxfp8Block) * elems, acc);
  return elementwise_time_s(((L.fp8_current ? 2 : 1) * L.el + 2) * elems, acc);
}
// torchao's FP8 operand copied into the layout torch._scaled_mm takes (preprocess_addmm: a.contiguous() of the row
// operand, b.t().contiguous().t() of the column one): a read and a write of one byte an element, a launch of its own.
// Only under tensorwise scaling: Transformer Engine's cast wrote the transpose already.
double fp8_relayout_s(double elems, const LayerShape& L, const AcceleratorSpec& acc) {
  return L.fp8_tensorwise ? elementwise_time_s(2 * elems, acc) : 0;
}

// Forward: under FP8 the input is cast (with its transpose, for the weight gradient, under delayed scaling) and the
// weight's cast is shared by the micro-batches that reuse it (weight_cast_share; torchao casts it every forward).
double linear_forward_s(const Linear& x, const LayerShape& L, const AcceleratorSpec& acc) {
  return linear_gemm_s({L.T, x.out, x.in}, L, acc) + fp8_cast_s(L.T * x.in, L, acc) +
         L.weight_cast_share * fp8_cast_s(x.in * x.out, L, acc);
}
// Input gradient: under FP8 the output gradient is cast first (with its transpose, for the weight gradient, under
// delayed scaling); torchao copies the FP8 weight into column-major order for this GEMM.
double linear_dgrad_s(const Linear& x, const LayerShape& L, const AcceleratorSpec& acc) {
  return linear_gemm_s({L.T, x.in, x.out}, L, acc) + fp8_cast_s(L.T * x.out, L, acc) +
         fp8_relayout_s(x.in * x.out, L, acc);
}
// The weight gradient accumulates into an fp32 main-grad buffer (read and written once per micro-batch) inside the
// GEMM; without that fusion the GEMM writes a fresh gradient and an add kernel reads it and the buffer and writes the
// buffer back. torchao (tensorwise FP8) first copies the FP8 output gradient and the saved FP8 input into the layouts
// this GEMM takes.
double linear_wgrad_s(const Linear& x, const LayerShape& L, const AcceleratorSpec& acc) {
  const double relayout = fp8_relayout_s(L.T * x.out, L, acc) + fp8_relayout_s(L.T * x.in, L, acc);
  if (L.fused_accumulation) return relayout + linear_gemm_s({x.in, x.out, L.T}, L, acc, 8.0 * x.in * x.out);
  // DeepSpeed's BF16_Optimizer first casts the 16-bit gradient to an fp32 temporary (read 2, write 4), then adds it.
  const double accumulate = L.cast_accumulation ? (L.el + 4) + 3 * L.gb : L.el + 2 * L.gb;
  return relayout + linear_gemm_s({x.in, x.out, L.T}, L, acc) + elementwise_time_s(accumulate * x.in * x.out, acc);
}

// Eager PyTorch kernels, each a memory-bound pass (bytes read + written; `rows` = tokens, whose per-row scalars are
// fp32). The sequences follow torchtitan's Llama (torchtitan/models/norms.py RMSNorm, models/llama/model.py
// apply_rotary_emb, repeat_kv, FeedForward; the same decompositions as Hugging Face's LlamaRMSNorm and SwiGLU) and
// autograd's derivative formulas for each op. The 16-bit <-> fp32 casts vanish in fp32 training.
//
// RMSNorm forward: x.float(), pow(2), mean(-1), + eps, rsqrt, x * rsqrt, type_as(x), * weight.
double eager_rms_norm_forward_s(double n, double rows, const LayerShape& L, const AcceleratorSpec& acc) {
  const bool cast = L.el != 4;
  return (cast ? elementwise_time_s((L.el + 4) * n, acc) : 0) + elementwise_time_s(8 * n, acc) +
         elementwise_time_s(4 * n + 4 * rows, acc) + 2 * elementwise_time_s(8 * rows, acc) +
         elementwise_time_s(8 * n + 4 * rows, acc) + (cast ? elementwise_time_s((4 + L.el) * n, acc) : 0) +
         elementwise_time_s(2 * L.el * n, acc);
}

// RMSNorm backward, in reverse: * weight (grad x weight; grad x normed and its sum over the tokens for the weight's
// gradient), type_as, x * rsqrt (grad x rsqrt; grad x x and its row sum), rsqrt and mean (a row kernel, then the
// expand / h), pow (x^1, x 2, x grad), the two gradients of x.float() added, the cast back.
double eager_rms_norm_backward_s(double n, double rows, const LayerShape& L, const AcceleratorSpec& acc) {
  const bool cast = L.el != 4;
  return elementwise_time_s(2 * L.el * n, acc) + elementwise_time_s(3 * L.el * n, acc) +
         elementwise_time_s(L.el * n, acc) + (cast ? elementwise_time_s((L.el + 4) * n, acc) : 0) +
         elementwise_time_s(8 * n + 4 * rows, acc) + elementwise_time_s(12 * n, acc) +
         elementwise_time_s(4 * n + 4 * rows, acc) + elementwise_time_s(12 * rows, acc) +
         elementwise_time_s(4 * n + 4 * rows, acc) + 2 * elementwise_time_s(8 * n, acc) +
         elementwise_time_s(12 * n, acc) + elementwise_time_s(12 * n, acc) +
         (cast ? elementwise_time_s((4 + L.el) * n, acc) : 0);
}

// A norm over `rows` tokens of the hidden size: fused (LayerNorm or RMSNorm: one kernel reads the input and writes
// the output; the backward reads the input and the gradient and writes the input's gradient). Eager LayerNorm is
// ATen's native_layer_norm, one kernel each way: as fused.
double norm_forward_s(double rows, const LayerShape& L, const AcceleratorSpec& acc) {
  if (L.unfused_rms_norm) return eager_rms_norm_forward_s(rows * L.h, rows, L, acc);
  return elementwise_time_s(2 * L.el * rows * L.h, acc);
}

double norm_backward_s(double rows, const LayerShape& L, const AcceleratorSpec& acc) {
  if (L.unfused_rms_norm) return eager_rms_norm_backward_s(rows * L.h, rows, L, acc);
  return elementwise_time_s(3 * L.el * rows * L.h, acc);
}

// Rotary embedding of the queries and keys: fused, one kernel reading and writing each element; eager (torchtitan's
// complex form), per tensor x.float(), the complex product with the frequencies (fp32 in and out) and type_as; its
// backward the cast, the product with the conjugate frequencies and the cast back.
double rotary_s(const LayerShape& L, const AcceleratorSpec& acc) {
  if (!L.rotary) return 0;
  if (!L.eager) return elementwise_time_s(2 * L.el * L.T * (L.q + L.kv) / L.tp, acc);
  const bool cast = L.el != 4;
  double t = 0;
  for (double width : {L.q, L.kv}) {
    const double n = L.T * width / L.tp;
    t += (cast ? 2 * elementwise_time_s((L.el + 4) * n, acc) : 0) + elementwise_time_s(8 * n, acc);
  }
  return t;
}

// Eager grouped-query attention copies each key and value head to its query heads before the attention (repeat_kv:
// expand and reshape) and sums the copies' gradients back after it; fused attention reads the shared heads in place.
double repeat_kv_s(const LayerShape& L, const AcceleratorSpec& acc) {
  if (!(L.eager && L.repeat_kv)) return 0;
  return 2 * elementwise_time_s(L.el * L.T * (L.kv + L.q) / L.tp, acc);
}

// Norms, bias-dropout-residual and the MLP activation, forward: bytes per token-element read and written.
double pointwise_forward_s(const LayerShape& L, const AcceleratorSpec& acc) {
  const double hidden = L.norm_tokens * L.h, inner = L.T * L.f / L.tp;
  double residual = 2 * elementwise_time_s((L.dropout ? 3 * L.el + 1 : 3 * L.el) * hidden, acc);
  // Eager dropout is a kernel of its own (input in, output and mask out) before the add.
  if (L.eager && L.dropout)
    residual = 2 * (elementwise_time_s((2 * L.el + 1) * hidden, acc) + elementwise_time_s(3 * L.el * hidden, acc));
  // Gated activation: fused SwiGLU reads both inputs and writes the product; eager runs SiLU, then the product.
  double activation = elementwise_time_s((L.gated ? 3 : 2) * L.el * inner, acc);
  if (L.eager && L.gated)
    activation = elementwise_time_s(2 * L.el * inner, acc) + elementwise_time_s(3 * L.el * inner, acc);
  return 2 * norm_forward_s(L.norm_tokens, L, acc) + residual + (inner > 0 ? activation : 0) + rotary_s(L, acc) +
         repeat_kv_s(L, acc);
}

double pointwise_backward_s(const LayerShape& L, const AcceleratorSpec& acc) {
  const double hidden = L.norm_tokens * L.h, inner = L.T * L.f / L.tp;
  // Dropout backward (gradient and mask in, gradient out), then the residual branch's gradient is added in.
  double residual = 2 * elementwise_time_s(((L.dropout ? 2 * L.el + 1 : 0) + 3 * L.el) * hidden, acc);
  if (L.eager && L.dropout)
    residual = 2 * (elementwise_time_s((2 * L.el + 1) * hidden, acc) + elementwise_time_s(3 * L.el * hidden, acc));
  // Gated: fused, one kernel reads both inputs and the gradient and writes both gradients; eager, the product's two
  // gradients (gradient x the other factor, one kernel each), then SiLU's backward (gradient and input in).
  double activation = elementwise_time_s((L.gated ? 5 : 3) * L.el * inner, acc);
  if (L.eager && L.gated) activation = 3 * elementwise_time_s(3 * L.el * inner, acc);
  return 2 * norm_backward_s(L.norm_tokens, L, acc) + residual + (inner > 0 ? activation : 0) + rotary_s(L, acc) +
         repeat_kv_s(L, acc);
}

// Attention scores and their weighted sum over V, unfused: two batched GEMMs around a softmax (and dropout) that
// read and write the s x s score matrix of every head.
double attention_core_forward_s(const LayerShape& L, const AcceleratorSpec& acc) {
  const double scores = L.heads * L.s * L.s;
  double t = gemm_time_s({L.s, L.s, L.d, L.heads}, L.dtype, acc) + gemm_time_s({L.s, L.d, L.s, L.heads}, L.dtype, acc);
  t += elementwise_time_s(2 * L.el * scores, acc);
  if (L.dropout) t += elementwise_time_s((2 * L.el + 1) * scores, acc);
  return t;
}

double attention_core_backward_s(const LayerShape& L, const AcceleratorSpec& acc) {
  const double scores = L.heads * L.s * L.s;
  double t = gemm_time_s({L.s, L.d, L.s, L.heads}, L.dtype, acc) +
             gemm_time_s({L.s, L.d, L.s, L.heads}, L.dtype, acc);  // dQ, dK
  t += gemm_time_s({L.s, L.s, L.d, L.heads}, L.dtype, acc);        // d(scores) = dO V^T
  t += gemm_time_s({L.s, L.d, L.s, L.heads}, L.dtype, acc);        // dV
  t += elementwise_time_s(3 * L.el * scores, acc);                 // softmax backward
  if (L.dropout) t += elementwise_time_s((2 * L.el + 1) * scores, acc);
  return t;
}

// Flash attention: 4 d FLOPs per query-key pair and head forward; the backward recomputes the scores and does 2.5x
// the forward's. A causal kernel skips the masked blocks: s^2 / 2 pairs per sequence (calibration counts a
// measurement's FLOPs the same way, strategies/calibrate/Calibration.cpp).
double flash_forward_flops(const LayerShape& L) {
  return 2.0 * L.heads * L.pairs * (L.qk + L.v);  // 4 d per pair and head when qk = v = d
}

// The fused attention kernel of L doing `flops`: the profile's kernel at this rank's sequence length and query-key
// head dimension (its measured curve), at training.attention_kernel's measured speed there.
double fused_attention_time_s(const LayerShape& L, double flops, const AcceleratorSpec& acc) {
  const double speed = attention_kernel_speed(L.attention_kernel, acc, L.s, L.qk);
  return flash_attention_time_s(flops, L.dtype, acc, L.s, L.qk, speed);
}

double attention_forward_s(const LayerShape& L, const AcceleratorSpec& acc) {
  return L.flash ? fused_attention_time_s(L, flash_forward_flops(L), acc) : attention_core_forward_s(L, acc);
}

double attention_backward_s(const LayerShape& L, const AcceleratorSpec& acc) {
  return L.flash ? fused_attention_time_s(L, 2.5 * flash_forward_flops(L), acc) : attention_core_backward_s(L, acc);
}

// The attention output is permuted back to [tokens, heads x head_dim] by a copy, in both passes.
double layout_copy_s(const LayerShape& L, const AcceleratorSpec& acc) {
  return elementwise_time_s(2 * L.el * L.T * static_cast<double>(L.model->heads) * L.v / L.tp, acc);
}

// Bias gradients are reductions of each linear's output gradient over the tokens.
double bias_gradients_s(const LayerShape& L, const LayerLinears& lin, const AcceleratorSpec& acc) {
  if (!L.bias) return 0;
  double t = 0;
  for (const Linear& x : {lin.qkv, lin.proj, lin.fc1, lin.fc2})
    if (x.in > 0 && x.out > 0) t += elementwise_time_s(L.el * L.T * x.out, acc);
  return t;
}

// Kernels one layer's pass launches on one device.
struct LayerKernels {
  double forward = 0, backward = 0;
};

LayerKernels layer_kernels(const LayerShape& L) {
  LayerKernels k;
  if (L.eager) {
    // Eager: the fused count's kernels plus those each decomposition adds (the eager functions above).
    LayerShape fused = L;
    fused.eager = false;
    k = layer_kernels(fused);
    const double cast = L.el != 4 ? 2 : 0;
    if (L.unfused_rms_norm) {
      k.forward += 2 * (6 + cast - 1);    // 8 kernels per norm (6 in fp32) instead of 1
      k.backward += 2 * (12 + cast - 1);  // 14 (12 in fp32) instead of 1
    }
    if (L.rotary) {
      k.forward += 2 * (1 + cast) - 1;  // per tensor: the product and the two casts, q and k apart
      k.backward += 2 * (1 + cast) - 1;
    }
    if (L.repeat_kv) {
      k.forward += 2;
      k.backward += 2;
    }
    if (L.gated) {
      k.forward += 1;
      k.backward += 2;
    }
    if (L.dropout) {
      k.forward += 2;
      k.backward += 2;
    }
    if (L.fp8_tensorwise) {  // each cast's amax reduction a kernel of its own
      k.forward += 4 * 2;
      k.backward += 4;
    }
    return k;
  }
  // Forward: 4 linears, the attention (1 fused kernel; 2 GEMMs, softmax and dropout unfused), its layout copy, 2 norms,
  // 2 residual adds (with dropout), the activation, rotary embedding.
  const double attention_forward = L.flash ? 1 : 3 + (L.dropout ? 1 : 0);
  k.forward = 4 + attention_forward + 1 + 2 + 2 + 1 + (L.rotary ? 1 : 0);
  // Backward: dgrad and wgrad of 4 linears (and 4 accumulation adds unfused), the attention (1 fused; 4 GEMMs,
  // softmax and dropout unfused), layout copy, 2 norms, 2 residuals, activation, rotary, 4 bias-gradient reductions.
  const double attention_backward = L.flash ? 1 : 5 + (L.dropout ? 1 : 0);
  k.backward =
      8 + (L.fused_accumulation ? 0 : 4) + attention_backward + 1 + 2 + 2 + 1 + (L.rotary ? 1 : 0) + (L.bias ? 4 : 0);
  // FP8, delayed: a cast-transpose before each linear forward (its input) and backward (its output gradient); the
  // weights' casts, once per step, are not counted. Tensorwise (torchao): per linear, forward the casts of the input
  // and of the weight; backward the output gradient's cast and three operand copies (fp8_relayout_s); compiled, a
  // cast is one launch (eager adds the amax kernels above).
  if (L.fp8_tensorwise) {
    k.forward += 4 * 2;
    k.backward += 4 * 4;
  } else if (L.fp8) {  // current scaling: an amax, a scale and a cast kernel per cast
    k.forward += L.fp8_current ? 4 * 3 : 4;
    k.backward += L.fp8_current ? 4 * 3 : 4;
  }
  return k;
}

}  // namespace

namespace {

// (a^q + b^q)^(1/q), the soft roofline of two times, written as hi * (1 + (lo/hi)^q)^(1/q): the plain form
// underflows to 0 once a^q does (a below about 17 us at q = 64), where this one tends to max(a, b) as it should.
double soft_maximum(double a, double b, double q) {
  const double hi = std::max(a, b), lo = std::min(a, b);
  if (hi <= 0) return 0;
  return hi * std::pow(1 + std::pow(lo / hi, q), 1 / q);
}

// The GEMM model of ComputeProfile at `peak`, with `el` bytes per element of A, B and C.
double gemm_time_at(const GemmShape& g, double peak, double el, const AcceleratorSpec& acc, double extra_bytes) {
  require_memory_bandwidth(acc);
  const ComputeProfile& p = acc.profile;
  const double tile = p.gemm_tile;
  const double padded = std::ceil(g.m / tile) * tile * std::ceil(g.n / tile) * tile;
  double quantization = g.m * g.n / padded;
  if (p.gemm_sms > 0) {
    const double tiles = std::ceil(g.m / tile) * std::ceil(g.n / tile) * g.batch;
    quantization *= tiles / (std::ceil(tiles / p.gemm_sms) * p.gemm_sms);
  }
  const double rate = peak * p.gemm_peak_efficiency * quantization * g.k / (g.k + p.gemm_k_overhead);
  const double compute = 2 * g.m * g.n * g.k * g.batch / rate;
  const double memory =
      (el * g.batch * (g.m * g.k + g.k * g.n + g.m * g.n) + extra_bytes) / (acc.hbm_bw_Bps * p.memory_efficiency);
  return tallied(p.gemm_latency_s + soft_maximum(compute, memory, p.gemm_roofline_p), &ClassSeconds::gemm);
}

}  // namespace

double gemm_time_s(const GemmShape& g, DType dtype, const AcceleratorSpec& acc, double extra_bytes) {
  return gemm_time_at(g, acc.peak_flops(dtype), dtype == DType::FP32 ? 4 : 2, acc, extra_bytes);
}

namespace {

// The FP8 GEMM model at `share` of the FP8 peak; refused without FP8 tensor cores.
double fp8_gemm_at(const GemmShape& g, const AcceleratorSpec& acc, double share, double extra_bytes) {
  if (!(acc.peak_fp8_flops > 0))
    throw InputError("training.fp8=true runs the linear layers on FP8 tensor cores, but accelerator " + acc.name +
                     " has none (no peak_fp8_flops: A100 has no FP8 tensor cores); set training.fp8=false, or give "
                     "cluster.accelerator.peak_fp8_flops for a custom accelerator");
  return gemm_time_at(g, acc.peak_fp8_flops * share, 2, acc, extra_bytes);
}

}  // namespace

double mxfp8_gemm_time_s(const GemmShape& g, const AcceleratorSpec& acc, double extra_bytes) {
  if (!(acc.mxfp8_gemm_factor > 0))
    throw InputError(
        "training.fp8_scaling=mxfp8 runs the linear layers on MX block-scaled FP8 tensor cores, but "
        "accelerator " +
        acc.name +
        " has none (no mxfp8_gemm_factor: MXFP8 needs Blackwell, SM 10.0 or later); set "
        "training.fp8_scaling to delayed or current, or give cluster.accelerator.mxfp8_gemm_factor for "
        "a custom accelerator");
  // The FP8 GEMM model at the FP8 peak times the measured MX/per-tensor kernel ratio; its bytes are counted as FP8's
  // (the scales, 1/32 of the operands, are left out).
  return fp8_gemm_at(g, acc, acc.mxfp8_gemm_factor, extra_bytes);
}

double fp8_gemm_time_s(const GemmShape& g, const AcceleratorSpec& acc, double extra_bytes) {
  return fp8_gemm_at(g, acc, 1, extra_bytes);
}

double elementwise_time_s(double bytes, const AcceleratorSpec& acc) {
  require_memory_bandwidth(acc);
  return acc.profile.kernel_latency_s + bytes / (acc.hbm_bw_Bps * acc.profile.memory_efficiency);
}

namespace {

// Linear in log2 of x over the points xs (clamped at the ends).
double log_interpolate(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  const std::size_t n = xs.size();
  const double lx = std::log2(std::clamp(x, xs[0], xs[n - 1]));
  for (std::size_t i = 1; i < n; ++i)
    if (lx <= std::log2(xs[i])) {
      const double a = std::log2(xs[i - 1]), b = std::log2(xs[i]);
      return ys[i - 1] + (ys[i] - ys[i - 1]) * (lx - a) / (b - a);
    }
  return ys[n - 1];
}

// A value measured per head dimension (sorted ascending), at `head_dim`: linear in log2 of the head dimension
// between the measured ones, clamped outside them; one measured head dimension stands for all.
template <class At>
double across_head_dims(const std::vector<const AttentionSeries*>& series, double head_dim, At at) {
  std::vector<double> dims, values;
  for (const AttentionSeries* s : series) {
    dims.push_back(s->head_dim);
    values.push_back(at(*s));
  }
  return dims.size() == 1 ? values[0] : log_interpolate(dims, values, head_dim);
}

// The benchmark's forward + backward throughput of `kernel` at seq and head_dim.
double benchmark_tflops(const AttentionBenchmark& b, const std::string& kernel, double seq, double head_dim) {
  return across_head_dims(b.of(kernel), head_dim, [&](const AttentionSeries& s) {
    std::vector<double> v;
    for (std::size_t i = 0; i < b.seq.size(); ++i) v.push_back(s.fwd_bwd(i));
    return log_interpolate(b.seq, v, seq);
  });
}

// The speed of `kernel` over `base` in one benchmark at seq and head_dim: their ratio at each measured length and
// head dimension both were measured at, interpolated.
double benchmark_ratio(const AttentionBenchmark& b, const std::string& kernel, const std::string& base, double seq,
                       double head_dim) {
  std::vector<const AttentionSeries*> both;
  for (const AttentionSeries* s : b.of(kernel))
    for (const AttentionSeries* t : b.of(base))
      if (t->head_dim == s->head_dim) both.push_back(s);
  return across_head_dims(both, head_dim, [&](const AttentionSeries& s) {
    const AttentionSeries* t = nullptr;
    for (const AttentionSeries* x : b.of(base))
      if (x->head_dim == s.head_dim) t = x;
    std::vector<double> ratio;
    for (std::size_t i = 0; i < b.seq.size(); ++i) ratio.push_back(s.fwd_bwd(i) / t->fwd_bwd(i));
    return log_interpolate(b.seq, ratio, seq);
  });
}

bool measures_both(const AttentionBenchmark& b, const std::string& kernel, const std::string& base) {
  for (const AttentionSeries* s : b.of(kernel))
    for (const AttentionSeries* t : b.of(base))
      if (t->head_dim == s->head_dim) return true;
  return false;
}

// The kernels a profile's benchmarks measured, as "fa2, flash1, ...".
std::string measured_kernels(const AttentionData& a) {
  std::vector<std::string> names{"fused"};
  for (const AttentionBenchmark& b : a.benchmarks)
    for (const AttentionSeries& s : b.series)
      if (std::find(names.begin(), names.end(), s.kernel) == names.end()) names.push_back(s.kernel);
  for (const AttentionStandIn& s : a.stand_ins) names.push_back(s.kernel);
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

const AttentionStandIn* attention_stand_in(AttentionKernel k, const ComputeProfile& p) {
  for (const AttentionStandIn& s : p.attention.stand_ins)
    if (s.kernel == to_string(k)) return &s;
  return nullptr;
}

double attention_kernel_speed(AttentionKernel k, const AcceleratorSpec& acc, double seq, double head_dim) {
  const AttentionData& a = acc.profile.attention;
  std::string kernel = to_string(k);
  if (k == AttentionKernel::Fused || kernel == a.kernel) return 1;
  if (const AttentionStandIn* s = attention_stand_in(k, acc.profile)) kernel = s->by;
  if (kernel == a.kernel) return 1;
  for (const AttentionBenchmark& b : a.benchmarks)
    if (measures_both(b, kernel, a.kernel)) return benchmark_ratio(b, kernel, a.kernel, seq, head_dim);
  throw InputError("training.attention_kernel=" + to_string(k) +
                   ": that kernel's speed is not measured on accelerator " + acc.name + " (its profile measures " +
                   measured_kernels(a) + "; fused = " + (a.title.empty() ? "the profile's own kernel" : a.title) + ")");
}

double fused_attention_shape(const ComputeProfile& p, double seq, double head_dim) {
  const AttentionData& a = p.attention;
  for (const AttentionBenchmark& b : a.benchmarks)
    if (!b.of(a.kernel).empty())
      return benchmark_tflops(b, a.kernel, seq, head_dim) /
             benchmark_tflops(b, a.kernel, a.reference_seq, a.reference_head_dim);
  return 1;
}

double flash_attention_time_s(double flops, DType dtype, const AcceleratorSpec& acc, double seq, double head_dim,
                              double speed) {
  const double shape = fused_attention_shape(acc.profile, seq, head_dim);
  return tallied(acc.profile.kernel_latency_s +
                     flops / (acc.peak_flops(dtype) * acc.profile.flash_attention_efficiency * shape * speed),
                 &ClassSeconds::attention);
}

double attention_forward_flops(const Experiment& e) {
  return e.model.opaque() ? 0 : flash_forward_flops(shape_of(e));
}

namespace {

// A layer of shape L with its MLP of inner size L.f (0: none) and `extra` linears besides the attention's and MLP's.
PassTimes layer_times_of(const Experiment& e, const LayerShape& L, const std::vector<Linear>& extra,
                         const AcceleratorSpec& acc) {
  const LayerLinears lin = linears_of(L);
  PassTimes t;
  std::vector<Linear> all{lin.qkv, lin.proj, lin.fc1, lin.fc2};
  all.insert(all.end(), lin.mla.begin(), lin.mla.end());
  all.insert(all.end(), extra.begin(), extra.end());
  std::erase_if(all, [](const Linear& x) { return !(x.in > 0 && x.out > 0); });
  LayerShape own = L;  // the replicated down projections run on the rank's sequence-parallel tokens
  own.T = L.norm_tokens;
  {
    Tally tally(t.forward_classes);
    for (const Linear& x : all) t.forward_s += linear_forward_s(x, L, acc);
    for (const Linear& x : lin.mla_replicated) t.forward_s += linear_forward_s(x, own, acc);
    t.attention_forward_s = attention_forward_s(L, acc);
    t.forward_s += pointwise_forward_s(L, acc) + t.attention_forward_s + layout_copy_s(L, acc);
  }
  settle(t.forward_classes, t.forward_s);
  {
    Tally tally(t.backward_classes);
    for (const Linear& x : all) {
      const double dgrad = linear_dgrad_s(x, L, acc), wgrad = linear_wgrad_s(x, L, acc);
      t.backward_s += dgrad + wgrad;
      t.weight_s += wgrad;
    }
    for (const Linear& x : lin.mla_replicated) {
      const double dgrad = linear_dgrad_s(x, own, acc), wgrad = linear_wgrad_s(x, own, acc);
      t.backward_s += dgrad + wgrad;
      t.weight_s += wgrad;
    }
    t.attention_backward_s = attention_backward_s(L, acc);
    const double bias = bias_gradients_s(L, lin, acc);
    t.backward_s += pointwise_backward_s(L, acc) + t.attention_backward_s + layout_copy_s(L, acc) + bias;
    t.weight_s += bias;
  }
  settle(t.backward_classes, t.backward_s);
  // Host-bound passes (training.launch_overhead): a pass lasts at least its kernels' issue time.
  const double launch = e.training.launch_overhead_s;
  if (launch > 0) {
    const LayerKernels k = layer_kernels(L);
    t.forward_classes.launch = std::max(0.0, k.forward * launch - t.forward_s);
    t.backward_classes.launch = std::max(0.0, k.backward * launch - t.backward_s);
    t.forward_s = std::max(t.forward_s, k.forward * launch);
    t.backward_s = std::max(t.backward_s, k.backward * launch);
  }
  if (e.training.recompute == Recompute::Full) {
    t.recompute_s = t.forward_s;
    t.recompute_classes = t.forward_classes;
  }
  Tally tally(t.recompute_classes);
  if (e.training.recompute == Recompute::SelectiveOp) {
    // torchtitan's op-level SAC: the forward's element-wise kernels and its 2nd, 4th and 6th matmul (k, o, and the
    // gated MLP's second up projection or the plain MLP's down projection) run again before the backward.
    const Linear k_proj{L.h, L.kv / L.tp}, second = L.gated ? Linear{L.h, L.f / L.tp} : lin.fc2;
    t.recompute_s = pointwise_forward_s(L, acc) + linear_forward_s(k_proj, L, acc) +
                    linear_forward_s(lin.proj, L, acc) + linear_forward_s(second, L, acc);
    settle(t.recompute_classes, t.recompute_s);
    if (launch > 0) {
      t.recompute_classes.launch = std::max(0.0, (3 + 6) * launch - t.recompute_s);
      t.recompute_s = std::max(t.recompute_s, (3 + 6) * launch);
    }
  }
  // Flash attention recomputes its scores inside the backward kernel already: selective recompute adds nothing.
  if (e.training.recompute == Recompute::Selective && !L.flash) {
    t.recompute_s = attention_core_forward_s(L, acc);
    settle(t.recompute_classes, t.recompute_s);
  }
  return t;
}

}  // namespace

PassTimes layer_times(const Experiment& e, const AcceleratorSpec& acc) {
  if (e.model.opaque()) return {};
  return layer_times_of(e, shape_of(e), {}, acc);
}

PassTimes moe_dense_times(const Experiment& e, const AcceleratorSpec& acc) {
  const ModelSpec& m = e.model;
  if (!m.moe()) return {};
  LayerShape L = shape_of(e);
  L.f = static_cast<double>(m.shared_experts * m.shared_ffn);  // the shared experts run as one MLP of their width
  // The router scores each rank's own tokens (its sequence-parallel share): a GEMM to the experts, replicated weights.
  LayerShape router = L;
  router.T = L.norm_tokens;
  router.fp8 = false;  // Transformer Engine's FP8 covers the experts' and the layer's linears, not the router
  PassTimes t = layer_times_of(e, L, {}, acc);
  const Linear gate{L.h, static_cast<double>(m.experts)};
  {
    Tally tally(t.forward_classes);
    t.forward_s += linear_forward_s(gate, router, acc);
  }
  settle(t.forward_classes, t.forward_s);
  {
    Tally tally(t.backward_classes);
    const double dgrad = linear_dgrad_s(gate, router, acc), wgrad = linear_wgrad_s(gate, router, acc);
    t.backward_s += dgrad + wgrad;
    t.weight_s += wgrad;
  }
  settle(t.backward_classes, t.backward_s);
  if (e.training.recompute == Recompute::Full) {
    t.recompute_s = t.forward_s;
    t.recompute_classes = t.forward_classes;
  }
  return t;
}

PassTimes expert_times(const Experiment& e, const AcceleratorSpec& acc, double pairs) {
  const ModelSpec& m = e.model;
  if (!m.moe() || pairs <= 0) return {};
  const LayerShape L = shape_of(e);
  // The rank's experts / ep experts run as one grouped GEMM per matrix (Megatron-Core's GroupedMLP), each expert on
  // its share of the pairs; the tokens are permuted into expert order before and back after (a copy each way), and
  // the combine weights them by their routing probabilities.
  const double local = static_cast<double>(m.experts / e.strategy.ep), per = pairs / local;
  const double fe = static_cast<double>(m.moe_ffn), up = (m.gated_mlp ? 2 : 1) * fe;
  const GemmShape fc1{per, up, L.h, local}, fc2{per, L.h, fe, local};
  const GemmShape fc1_dgrad{per, L.h, up, local}, fc2_dgrad{per, fe, L.h, local};
  const GemmShape fc1_wgrad{L.h, up, per, local}, fc2_wgrad{fe, L.h, per, local};
  const double fused = L.fused_accumulation ? 8.0 * local : 0;  // the fp32 main grads read and written in place
  const double permute = 2 * L.el * pairs * L.h;
  PassTimes t;
  // Under FP8 (Transformer Engine's grouped linear) each matrix's input and output gradient are cast with their
  // transposes, and the rank's expert weights once per step (or per micro-batch when gathered).
  const double weights = local * L.h * (up + fe);
  t.forward_s = linear_gemm_s(fc1, L, acc) + linear_gemm_s(fc2, L, acc) +
                elementwise_time_s((m.gated_mlp ? 3 : 2) * L.el * pairs * fe, acc) +
                2 * elementwise_time_s(permute, acc) + elementwise_time_s(3 * L.el * pairs * L.h, acc) +
                fp8_cast_s(pairs * (L.h + fe), L, acc) + L.weight_cast_share * fp8_cast_s(weights, L, acc);
  settle(t.forward_classes, t.forward_s);
  Tally backward(t.backward_classes);
  const double fc1_dgrad_s = linear_gemm_s(fc1_dgrad, L, acc), fc2_dgrad_s = linear_gemm_s(fc2_dgrad, L, acc);
  const double fc1_wgrad_s = linear_gemm_s(fc1_wgrad, L, acc, fused * L.h * up);
  const double fc2_wgrad_s = linear_gemm_s(fc2_wgrad, L, acc, fused * fe * L.h);
  // The W pass of a split backward: the two weight-gradient grouped GEMMs.
  t.weight_s = fc1_wgrad_s + fc2_wgrad_s;
  t.backward_s = fc1_dgrad_s + fc2_dgrad_s + fc1_wgrad_s + fc2_wgrad_s +
                 elementwise_time_s((m.gated_mlp ? 5 : 3) * L.el * pairs * fe, acc) +
                 2 * elementwise_time_s(permute, acc) + elementwise_time_s(3 * L.el * pairs * L.h, acc) +
                 fp8_cast_s(pairs * (up + L.h), L, acc);
  settle(t.backward_classes, t.backward_s);
  if (e.training.recompute == Recompute::Full) {
    t.recompute_s = t.forward_s;
    t.recompute_classes = t.forward_classes;
  }
  return t;
}

ColumnLinearBackward column_linear_backward(const Experiment& e, const AcceleratorSpec& acc) {
  if (e.model.opaque()) return {};
  const LayerShape L = shape_of(e);
  const LayerLinears lin = linears_of(L);
  return {linear_dgrad_s(lin.qkv, L, acc), linear_wgrad_s(lin.qkv, L, acc), linear_dgrad_s(lin.fc1, L, acc),
          linear_wgrad_s(lin.fc1, L, acc)};
}

PassTimes logit_times(const Experiment& e, const AcceleratorSpec& acc) {
  if (e.model.opaque()) return {};
  LayerShape L = shape_of(e);
  L.fp8 = false;  // the output layer stays 16-bit under FP8 (Megatron-Core's and torchtitan's recipes)
  const Linear head{L.h, static_cast<double>(e.model.vocab) / L.tp};
  const double logits = L.T * head.out;
  PassTimes t;
  // Final norm, the logits GEMM and Megatron-LM's vocab-parallel cross entropy in fp32 (its default, without
  // --fp16-lm-cross-entropy; megatron/mpu/cross_entropy.py), per logit: forward the cast to fp32 (16-bit in, 4 out),
  // max (4), subtract the max (4 + 4), exp (4 + 4), sum (4) and divide into the softmax kept for the backward
  // (4 + 4); backward the scale by the loss gradient (4 + 4) and the cast back (4 in, 16-bit out).
  // Eager (torchtitan: F.cross_entropy(pred.float(), labels)): the cast to fp32, log_softmax (two reads, one write)
  // and the gather of the target's entry; backward the zero-filled gradient with the target scattered in,
  // log_softmax's backward (the gradient twice and the output in, one write) and the cast back; under compiled
  // kernels it is costed as Megatron's (compiled kernels are costed as fused).
  // Fused (training.loss_kernel = fused, flash-attn's xentropy kernel on the 16-bit logits): forward two reads of the
  // logits (a row's max, then its sum of exponentials; the log-sum-exp and the target's entry per token are
  // negligible), backward one read and one write.
  const double cast = L.el != 4 ? 1 : 0;
  const LossKernel loss = e.training.loss_kernel;
  {
    Tally tally(t.forward_classes);
    t.forward_s = norm_forward_s(L.norm_tokens, L, acc) + linear_forward_s(head, L, acc);
    if (loss == LossKernel::Fused) {
      t.forward_s += elementwise_time_s(2 * L.el * logits, acc);
    } else if (loss == LossKernel::PyTorch && e.training.kernels != Kernels::Compiled) {
      t.forward_s += cast * elementwise_time_s((L.el + 4) * logits, acc);
      t.forward_s += elementwise_time_s(12 * logits, acc);
    } else {
      t.forward_s += elementwise_time_s((L.el + 4 + 4 + 8 + 8 + 4 + 8) * logits, acc);
    }
  }
  settle(t.forward_classes, t.forward_s);
  Tally tally(t.backward_classes);
  if (loss == LossKernel::Fused) {
    t.backward_s = elementwise_time_s(2 * L.el * logits, acc);
  } else if (loss == LossKernel::PyTorch && e.training.kernels != Kernels::Compiled) {
    t.backward_s = elementwise_time_s(4 * logits, acc) + elementwise_time_s(16 * logits, acc) +
                   cast * elementwise_time_s((4 + L.el) * logits, acc);
  } else {
    t.backward_s = elementwise_time_s((8 + 4 + L.el) * logits, acc);
  }
  t.backward_s += linear_dgrad_s(head, L, acc);
  t.backward_s += linear_wgrad_s(head, L, acc);
  t.backward_s += norm_backward_s(L.norm_tokens, L, acc);
  settle(t.backward_classes, t.backward_s);
  if (e.training.recompute == Recompute::Full) t.recompute_s = 0;  // the head's input is the checkpoint
  return t;
}

PassTimes embedding_times(const Experiment& e, const AcceleratorSpec& acc) {
  if (e.model.opaque()) return {};
  const LayerShape L = shape_of(e);
  const double x = L.T * L.h;
  const bool positions = e.model.learned_positions;
  PassTimes t;
  // Row gather, position add, dropout forward; backward scatters the gradient into the fp32 main grad.
  t.forward_s = elementwise_time_s(2 * L.el * x, acc) + (positions ? elementwise_time_s(3 * L.el * x, acc) : 0) +
                (L.dropout ? elementwise_time_s((2 * L.el + 1) * x, acc) : 0);
  t.backward_s =
      elementwise_time_s((L.el + 8) * x, acc) + (L.dropout ? elementwise_time_s((2 * L.el + 1) * x, acc) : 0);
  settle(t.forward_classes, t.forward_s);
  settle(t.backward_classes, t.backward_s);
  return t;
}

double optimizer_step_s(double elements, const Experiment& e, const AcceleratorSpec& acc) {
  if (elements <= 0) return 0;
  return elementwise_time_s(elements * optimizer_step_bytes(e.training), acc);
}

double host_optimizer_step_s(double elements, const Experiment& e, double host_flops, double host_mem_bw_Bps) {
  if (elements <= 0) return 0;
  if (!(host_flops > 0) || !(host_mem_bw_Bps > 0))
    throw InputError("host optimizer step needs positive host FLOP/s and memory bandwidth");
  // Adam: moment updates, bias corrections, sqrt, divide and weight decay, about 14 FLOP per element (SGD with
  // momentum about 4); the step is bound by whichever of arithmetic and memory traffic is slower.
  const double flops = e.training.optimizer == Optimizer::Adam ? 14 : 4;
  return std::max(elements * flops / host_flops, elements * optimizer_step_bytes(e.training) / host_mem_bw_Bps);
}

}  // namespace placesim
