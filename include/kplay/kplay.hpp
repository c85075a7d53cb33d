// kplay/kplay.hpp — the JIT activation API for C++.
//
// Activations are named as on the command line: "selu", "leaky_relu(negative_slope=0.2)",
// "gelu(approximate=tanh)", a snippet file "./my_act.h", or a registered name (see
// register_activation); docs/activations.md lists them with their parameters and accuracy.
//
// forward()/backward() run an activation on the caller's device buffers, on the caller's
// stream. The first call for a (device, activation, direction, dtype) compiles the kernel
// (or loads it from the kernel database) with the configuration tuned for the nearest problem
// size on this device (falling back to the same architecture, then to a built-in default);
// later calls cost a hash lookup. kplay never tunes implicitly: run `kplay autotune` for that.
//
// Memory: kplay allocates no device memory and never copies the caller's data; these kernels
// need no scratch space. Buffers are:
//   - CUDA: device pointers (CUdeviceptr or cudaMalloc'ed pointers) of the device the pointers
//     belong to; kernels run in that device's primary context (the CUDA runtime's). The stream
//     is a CUstream / cudaStream_t; nullptr means the legacy default stream.
//   - OpenCL: cl_mem objects; the stream is the cl_command_queue (required) whose context and
//     device the buffers belong to.
// In place is allowed (out == in, grad_in == grad_out); any other overlap is refused.
//
// Errors: kplay::Error (kplay/error.hpp) with a message, and nothing is written: null
// pointers, n < 0, unknown activation, a dtype the device cannot do, partial overlap, a pointer
// that is not device memory (CUDA can tell), saved output for an activation whose derivative
// does not follow from it.
//
// Thread-safety: every function may be called from several threads at once, for several
// devices in one process.
#pragma once

#include <cstdint>
#include <string>

#include "kplay/error.hpp"
#include "kplay/types.hpp"

namespace kplay {

enum class Backend { cuda, opencl };

// The caller's queue of work: a CUstream / cudaStream_t, or a cl_command_queue.
struct Stream {
  Backend backend = Backend::cuda;
  void* handle = nullptr;
};

// Flat, contiguous buffers of n elements.
void forward(const std::string& activation, Dtype dtype, const void* in, void* out, std::int64_t n, Stream stream = {});
void backward(const std::string& activation, Dtype dtype, const void* grad_out, const void* saved, Saved saved_kind,
              void* grad_in, std::int64_t n, Stream stream = {});

// 2-D views: rows x cols elements, row pitches in elements (>= cols), e.g. a column slice of a
// larger matrix. Rows that are contiguous (pitch == cols) take the flat path.
struct View2D {
  std::int64_t rows = 0, cols = 0;
  std::int64_t ld_in = 0, ld_out = 0;  // ld_in: pitch of every input (grad_out and saved alike)
};
void forward_2d(const std::string& activation, Dtype dtype, const void* in, void* out, const View2D& view,
                Stream stream = {});
void backward_2d(const std::string& activation, Dtype dtype, const void* grad_out, const void* saved, Saved saved_kind,
                 void* grad_in, const View2D& view, Stream stream = {});

// Gated activations: out = act(a) * b over rows x d elements, for any activation text ACT
// ("silu" is SwiGLU; "gated(silu)" is accepted as the same), in one kernel. Each operand is a
// buffer (CUDA device pointer or OpenCL cl_mem), the element its data starts at (CUDA pointers may
// as well be advanced; OpenCL needs it for b = x + d), and its own row pitch in elements (>= d
// where rows > 1): a slice of a wider tensor needs no copy. `_packed` takes the [rows, 2d] layout
// of vLLM, FlashInfer and TransformerEngine: a = x[:, :d], b = x[:, d:], both with x's pitch.
// Backward writes grad_a = g act'(a) b and grad_b = g act(a) (into two tensors, or the halves of
// one [rows, 2d] gradient). Exact in place is allowed (out over a with a's pitch; grad_a over a
// and grad_b over b); any other overlap is refused. Accuracy: docs/activations.md, "Gated
// activations".
struct GatedIn {
  const void* ptr = nullptr;
  std::int64_t ld = 0;      // row pitch, elements
  std::int64_t offset = 0;  // elements into the buffer
};
struct GatedOut {
  void* ptr = nullptr;
  std::int64_t ld = 0;
  std::int64_t offset = 0;
};
// FP8 output of a gated forward (CUDA, sm_89 and newer; elsewhere Error(unsupported)):
// out = fp8(act(a) * b / scale), rounded to nearest even, saturating at the format's largest
// finite value (+-448 for f8e4m3, +-57344 for f8e5m2), NaN kept. The scale is read on the device
// from scale_device (one float32, as vLLM's scale tensor) when given, else `scale`. The output's
// pitch and offset count its one-byte elements.
struct Fp8Output {
  OutDtype type = OutDtype::same;
  const float* scale_device = nullptr;
  float scale = 1.0f;
};
void gated_forward(const std::string& activation, Dtype dtype, GatedIn a, GatedIn b, GatedOut out, std::int64_t rows,
                   std::int64_t d, Stream stream = {}, const Fp8Output& fp8 = {});
void gated_backward(const std::string& activation, Dtype dtype, GatedIn grad_out, GatedIn a, GatedIn b, GatedOut grad_a,
                    GatedOut grad_b, std::int64_t rows, std::int64_t d, Stream stream = {});
void gated_forward_packed(const std::string& activation, Dtype dtype, const void* x, std::int64_t ld_x, void* out,
                          std::int64_t ld_out, std::int64_t rows, std::int64_t d, Stream stream = {},
                          const Fp8Output& fp8 = {});
void gated_backward_packed(const std::string& activation, Dtype dtype, const void* grad_out, std::int64_t ld_grad_out,
                           const void* x, std::int64_t ld_x, void* grad_x, std::int64_t ld_grad_x, std::int64_t rows,
                           std::int64_t d, Stream stream = {});

// The softmax family over rows: `activation` is "softmax", "log_softmax" or "softmin" (torch.nn's
// Softmax, LogSoftmax and Softmin along the last dimension of a [rows, cols] view; another
// dimension is a row of its own pitch where its elements are contiguous, e.g. Softmax2d's channels
// of a channels-last tensor). Each operand is rows x cols elements with its own row pitch in
// elements (>= cols where rows > 1): a column slice of a wider tensor needs no copy. Forward
// writes y = act(x) along each row. Backward takes the saved output y, as torch saves it, and the
// incoming gradient g, and writes grad_in = y (g - sum(g y)) (softmax), y (sum(g y) - g) (softmin),
// g - exp(y) sum(g) (log_softmax). A row with +inf or NaN, or all -inf, is NaN throughout, as
// torch's; rows or cols of 0 write nothing. The output may not overlap an input (no in place: a
// row is written only after all of it is read). The kernel (one block per row, or a thread-block
// cluster per row on sm_90, or an online two-pass) and its config come as for forward(): the
// database's tuning for the size where it holds rows of this length, else the row kernel's default
// for the row length. Accuracy: docs/accuracy.md; every dtype needs a device with float64 (the max
// and the sums are kept in double). Errors as forward's; a name that is not a row activation is
// Error(invalid_argument), and forward()/backward() refuse these names the same way.
void softmax_forward(const std::string& activation, Dtype dtype, const void* x, std::int64_t ld_x, void* y,
                     std::int64_t ld_y, std::int64_t rows, std::int64_t cols, Stream stream = {});
// The family over a dimension that is not the last, without a copy: each operand is [outer, cols,
// inner] (e.g. a contiguous [N, C, H, W] over dim 1: outer N, cols C, inner H W, as Softmax2d takes
// it) with its own pitch in elements between outer blocks (>= cols inner where outer > 1); each of
// the outer x inner rows is cols elements inner apart. A thread a row, so that a warp reads
// neighbouring rows together: one read of each element where cols <= 16, else two (the second from
// the cache; docs/design.md, "Strided rows"). Not tuned: the config is the row kernel's strided
// default. Otherwise as softmax_forward / softmax_backward (inner = 1 is their case).
void softmax_forward_strided(const std::string& activation, Dtype dtype, const void* x, std::int64_t ld_x, void* y,
                             std::int64_t ld_y, std::int64_t outer, std::int64_t cols, std::int64_t inner,
                             Stream stream = {});
void softmax_backward_strided(const std::string& activation, Dtype dtype, const void* y, std::int64_t ld_y,
                              const void* grad_out, std::int64_t ld_grad_out, void* grad_in, std::int64_t ld_grad_in,
                              std::int64_t outer, std::int64_t cols, std::int64_t inner, Stream stream = {});
void softmax_backward(const std::string& activation, Dtype dtype, const void* y, std::int64_t ld_y,
                      const void* grad_out, std::int64_t ld_grad_out, void* grad_in, std::int64_t ld_grad_in,
                      std::int64_t rows, std::int64_t cols, Stream stream = {});

// PReLU and RReLU as torch defines them (docs/activations.md, "PReLU and RReLU").
//
// PReLU: out = x > 0 ? x : w[c] x over n contiguous elements, with torch's channel (dim 1): for
// an input of shape [N, C, d2, ...], channels = C and inner = d2 * ... (1 for [N, C]); a weight of
// one element (channels = 1) serves every element. n must be a multiple of channels * inner.
// Backward writes grad_in = x > 0 ? g : w[c] g and grad_weight[c] = the sum of g x over channel
// c's elements where x > 0 is false (torch's), either of them or both (nullptr: not computed).
// The weight's gradient is deterministic: fixed ranges summed in float32 (float64 for f64)
// into `workspace`, prelu_workspace_bytes(dtype, shape) bytes of device memory (8-byte aligned;
// OpenCL: a cl_mem of its own), then added in order; its bound against the exact sum is
// docs/activations.md's. The weight is in the input's dtype, as torch's.
struct PreluShape {
  std::int64_t n = 0;
  std::int64_t channels = 1;  // the weight's length
  std::int64_t inner = 1;     // elements per (sample, channel): the product of the dims after dim 1
};
void prelu_forward(Dtype dtype, const void* in, const void* weight, void* out, const PreluShape& shape,
                   Stream stream = {});
std::int64_t prelu_workspace_bytes(Dtype dtype, const PreluShape& shape);
void prelu_backward(Dtype dtype, const void* grad_out, const void* in, const void* weight, void* grad_in,
                    void* grad_weight, void* workspace, const PreluShape& shape, Stream stream = {});

// RReLU (lower <= upper; torch's defaults 1/8 and 1/3). Evaluation (training false) is leaky_relu
// with the mean slope (lower + upper) / 2, as forward("rrelu(lower=.., upper=..)"). Training
// multiplies each x <= 0 by its own slope drawn uniformly in [lower, upper] from a counter-based
// hash of (seed, offset + i) (templates/common/slope.h; not torch's Philox stream), computed in
// the kernel and recomputed by backward from the same seed and offset, so nothing is saved
// between them: grad_in = x <= 0 ? g s : g. `offset` numbers the first element, so that a tensor
// processed in pieces draws as the whole would.
void rrelu_forward(Dtype dtype, const void* in, void* out, std::int64_t n, double lower, double upper, bool training,
                   std::uint64_t seed, std::uint64_t offset = 0, Stream stream = {});
void rrelu_backward(Dtype dtype, const void* grad_out, const void* in, void* grad_in, std::int64_t n, double lower,
                    double upper, bool training, std::uint64_t seed, std::uint64_t offset = 0, Stream stream = {});

// Whether backward() accepts Saved::output for this activation (with its parameters; e.g.
// leaky_relu only with a positive slope). Throws for an unknown activation.
bool supports_saved_output(const std::string& activation);

// Registers an activation of the user's: `source` is a snippet of the form of
// templates/activations/*.h (kp_act_forward required; kp_act_backward_from_input and
// kp_act_backward_from_output optional). Afterwards `name` works wherever an activation is named.
// Returns the name that keys its binaries and tunings ("name@<hash of source>"). Re-registering a
// name replaces its source for later calls. Throws Error(invalid_argument) for a name that is not
// an identifier or is a built-in's, or a snippet without kp_act_forward; compile errors come at
// the first call, with the compiler log naming "activation <name>" and the line.
std::string register_activation(const std::string& name, const std::string& source);

}  // namespace kplay
