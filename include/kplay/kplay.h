/* kplay/kplay.h — the JIT activation API for C (and Python, Rust, Julia through their FFIs).
 *
 * The same engine as kplay/kplay.hpp, whose comments describe buffers, streams, the kernel
 * database and thread-safety. Every function returns a status; on failure nothing was written
 * and kplay_last_error() returns a message for the calling thread (valid until its next call). */
#ifndef KPLAY_KPLAY_H
#define KPLAY_KPLAY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kplay_status {
  KPLAY_OK = 0,
  KPLAY_ERROR_INVALID_ARGUMENT = 1, /* null pointer, n < 0, unknown activation, overlap, ... */
  KPLAY_ERROR_INVALID_CONFIG = 2,
  KPLAY_ERROR_NO_DEVICE = 3,   /* backend not built, no driver, no device */
  KPLAY_ERROR_COMPILE = 4,     /* the kernel did not compile (message holds the log) */
  KPLAY_ERROR_RUNTIME = 5,     /* a driver call failed */
  KPLAY_ERROR_UNSUPPORTED = 6, /* e.g. a dtype the device cannot do */
  KPLAY_ERROR_IO = 7,
  KPLAY_ERROR_INTERNAL = 99
} kplay_status;

typedef enum kplay_backend { KPLAY_BACKEND_CUDA = 0, KPLAY_BACKEND_OPENCL = 1 } kplay_backend;
typedef enum kplay_dtype { KPLAY_F32 = 0, KPLAY_F16 = 1, KPLAY_BF16 = 2, KPLAY_F64 = 3 } kplay_dtype;
typedef enum kplay_saved { KPLAY_SAVED_INPUT = 0, KPLAY_SAVED_OUTPUT = 1 } kplay_saved;

/* CUDA: in/out are device pointers, stream a CUstream (NULL: legacy default stream).
 * OpenCL: in/out are cl_mem, stream the cl_command_queue (required). */
kplay_status kplay_forward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* in, void* out,
                           int64_t n, void* stream);
kplay_status kplay_backward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* grad_out,
                            const void* saved, kplay_saved saved_kind, void* grad_in, int64_t n, void* stream);

/* rows x cols with row pitches in elements; ld_in applies to every input. */
kplay_status kplay_forward_2d(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* in,
                              int64_t ld_in, void* out, int64_t ld_out, int64_t rows, int64_t cols, void* stream);
kplay_status kplay_backward_2d(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* grad_out,
                               const void* saved, kplay_saved saved_kind, int64_t ld_in, void* grad_in, int64_t ld_out,
                               int64_t rows, int64_t cols, void* stream);

/* Gated activations (see kplay::gated_forward in kplay.hpp): out = act(a) * b over rows x d, any
 * activation text as ACT ("silu", or "gated(silu)"). Each operand: a buffer (CUDA device pointer or
 * cl_mem), the element its data starts at, its row pitch in elements. _packed: a and b the halves
 * of one [rows, 2d] tensor x (and the gradients the halves of grad_x). Backward writes
 * grad_a = g act'(a) b and grad_b = g act(a). */
kplay_status kplay_gated_forward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* a,
                                 int64_t a_offset, int64_t ld_a, const void* b, int64_t b_offset, int64_t ld_b,
                                 void* out, int64_t out_offset, int64_t ld_out, int64_t rows, int64_t d, void* stream);
kplay_status kplay_gated_backward(kplay_backend backend, const char* activation, kplay_dtype dtype,
                                  const void* grad_out, int64_t grad_out_offset, int64_t ld_grad_out, const void* a,
                                  int64_t a_offset, int64_t ld_a, const void* b, int64_t b_offset, int64_t ld_b,
                                  void* grad_a, int64_t grad_a_offset, int64_t ld_grad_a, void* grad_b,
                                  int64_t grad_b_offset, int64_t ld_grad_b, int64_t rows, int64_t d, void* stream);
kplay_status kplay_gated_forward_packed(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* x,
                                        int64_t ld_x, void* out, int64_t ld_out, int64_t rows, int64_t d, void* stream);
kplay_status kplay_gated_backward_packed(kplay_backend backend, const char* activation, kplay_dtype dtype,
                                         const void* grad_out, int64_t ld_grad_out, const void* x, int64_t ld_x,
                                         void* grad_x, int64_t ld_grad_x, int64_t rows, int64_t d, void* stream);

/* FP8 output of a gated forward (CUDA, sm_89 and newer; KPLAY_ERROR_UNSUPPORTED elsewhere):
 * out = fp8(act(a) * b / scale), rounded to nearest even, saturating at +-448 (e4m3) or +-57344
 * (e5m2), NaN kept; the scale read from scale_device (one float32 in device memory) when not NULL,
 * else `scale`. out's offset and pitch count its one-byte elements. */
typedef enum kplay_fp8 { KPLAY_FP8_E4M3 = 1, KPLAY_FP8_E5M2 = 2 } kplay_fp8;
kplay_status kplay_gated_forward_fp8(kplay_backend backend, const char* activation, kplay_dtype dtype, kplay_fp8 fp8,
                                     const void* a, int64_t a_offset, int64_t ld_a, const void* b, int64_t b_offset,
                                     int64_t ld_b, void* out, int64_t out_offset, int64_t ld_out, int64_t rows,
                                     int64_t d, const float* scale_device, float scale, void* stream);

/* The softmax family over rows (see kplay::softmax_forward in kplay.hpp): activation "softmax",
 * "log_softmax" or "softmin" along each row of rows x cols elements, each operand with its own row
 * pitch in elements. Backward takes the saved output y and the incoming gradient and writes
 * grad_in (y (g - sum(g y)); softmin y (sum(g y) - g); log_softmax g - exp(y) sum(g)). The output
 * may not overlap an input. */
kplay_status kplay_softmax_forward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* x,
                                   int64_t ld_x, void* y, int64_t ld_y, int64_t rows, int64_t cols, void* stream);
kplay_status kplay_softmax_backward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* y,
                                    int64_t ld_y, const void* grad_out, int64_t ld_grad_out, void* grad_in,
                                    int64_t ld_grad_in, int64_t rows, int64_t cols, void* stream);
/* The same over a dimension that is not the last (kplay::softmax_forward_strided): each operand
 * [outer, cols, inner] with its pitch in elements between outer blocks, each of the outer x inner
 * rows cols elements inner apart. */
kplay_status kplay_softmax_forward_strided(kplay_backend backend, const char* activation, kplay_dtype dtype,
                                           const void* x, int64_t ld_x, void* y, int64_t ld_y, int64_t outer,
                                           int64_t cols, int64_t inner, void* stream);
kplay_status kplay_softmax_backward_strided(kplay_backend backend, const char* activation, kplay_dtype dtype,
                                            const void* y, int64_t ld_y, const void* grad_out, int64_t ld_grad_out,
                                            void* grad_in, int64_t ld_grad_in, int64_t outer, int64_t cols,
                                            int64_t inner, void* stream);

/* PReLU and RReLU (see kplay::prelu_forward and kplay::rrelu_forward in kplay.hpp): prelu's weight
 * of `channels` elements (one per channel of dim 1, or one), `inner` elements per (sample,
 * channel); its backward writes grad_in and/or grad_weight (NULL: not computed) through a workspace
 * of kplay_prelu_workspace_bytes. rrelu in training (training != 0) draws each slope from
 * (seed, offset + i), and its backward draws the same ones again. */
int64_t kplay_prelu_workspace_bytes(kplay_dtype dtype, int64_t n, int64_t channels, int64_t inner);
kplay_status kplay_prelu_forward(kplay_backend backend, kplay_dtype dtype, const void* in, const void* weight,
                                 void* out, int64_t n, int64_t channels, int64_t inner, void* stream);
kplay_status kplay_prelu_backward(kplay_backend backend, kplay_dtype dtype, const void* grad_out, const void* in,
                                  const void* weight, void* grad_in, void* grad_weight, void* workspace, int64_t n,
                                  int64_t channels, int64_t inner, void* stream);
kplay_status kplay_rrelu_forward(kplay_backend backend, kplay_dtype dtype, const void* in, void* out, int64_t n,
                                 double lower, double upper, int training, uint64_t seed, uint64_t offset,
                                 void* stream);
kplay_status kplay_rrelu_backward(kplay_backend backend, kplay_dtype dtype, const void* grad_out, const void* in,
                                  void* grad_in, int64_t n, double lower, double upper, int training, uint64_t seed,
                                  uint64_t offset, void* stream);

/* 1 if backward accepts KPLAY_SAVED_OUTPUT for this activation, 0 if not or unknown. */
int kplay_supports_saved_output(const char* activation);

/* Registers a user activation from snippet text (see kplay::register_activation in kplay.hpp).
 * KPLAY_ERROR_INVALID_ARGUMENT for a bad name or a snippet without kp_act_forward. */
kplay_status kplay_register_activation(const char* name, const char* source);

/* The library's version, e.g. "0.1.0". */
const char* kplay_version(void);

/* Message of the calling thread's last failed call; "" if none. */
const char* kplay_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* KPLAY_KPLAY_H */
