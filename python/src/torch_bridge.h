// The table of C functions kplay._core hands kplay._torch_ops (as the PyCapsule
// kplay._core.torch_bridge), so that the PyTorch operators launch through the one kplay runtime of
// the process: one engine per device, one kernel cache, the user activations registered through
// kplay.register_activation. Linking kplay's core into the torch extension as well would give it
// a second runtime that knows none of those.
//
// Plain C types across the boundary, no C++ exceptions: each call returns 0, or a kplay::ErrorCode
// with *message pointing at a thread-local text that lives until the thread's next failing call.
#pragma once

#include <cstdint>

#define KPLAY_TORCH_BRIDGE_NAME "kplay._core.torch_bridge"
// Bumped whenever the table below changes; _torch_ops refuses a table of another version.
#define KPLAY_TORCH_BRIDGE_VERSION 5

struct KplayTorchBridge {
  int version;
  // A prepared kplay::Launcher for CUDA device `device` (never freed: the extension caches it for
  // the life of the process). dtype: KPLAY_F32/F16/BF16/F64.
  int (*launcher_cuda)(const char* activation, int dtype, int backward, int saved_output, int device, void** launcher,
                       const char** message);
  // launcher->launch(in, in1, out, n, stream, PointerChecks::vouched).
  int (*launch)(const void* launcher, const void* in, const void* in1, void* out, std::int64_t n, void* stream,
                const char** message);
  // kplay::forward_2d on CUDA.
  int (*forward_2d)(const char* activation, int dtype, const void* in, std::int64_t ld_in, void* out,
                    std::int64_t ld_out, std::int64_t rows, std::int64_t cols, void* stream, const char** message);
  // Whether autograd saves the forward output (1) or the input (0) for backward, into *result:
  // the registry's saves_output for a built-in, kplay::supports_saved_output for a user activation
  // (kplay.torch.saves_output says the same in Python). Fails for an unknown activation or bad
  // parameters.
  int (*saves_output)(const char* activation, int* result, const char** message);

  // ---- gated activations (kplay::Launcher's launch_gated_forward/backward) ----
  // A prepared launcher of gated(ACT) for CUDA device `device`, never freed; `activation` is ACT or
  // gated(ACT). out_dtype: 0 (the input's) or KPLAY_FP8_E4M3 / KPLAY_FP8_E5M2 (forward only).
  int (*gated_launcher_cuda)(const char* activation, int dtype, int backward, int out_dtype, int device,
                             void** launcher, const char** message);
  // out = act(a) * b over rows x d, each operand a CUDA pointer (its first element) and a row pitch
  // in elements; vouched pointer checks (kplay's checks of pitches and overlap still run). scale: FP8's.
  int (*launch_gated_forward)(const void* launcher, const void* a, std::int64_t ld_a, const void* b, std::int64_t ld_b,
                              void* out, std::int64_t ld_out, std::int64_t rows, std::int64_t d, float scale,
                              void* stream, const char** message);
  // grad_a = g act'(a) b, grad_b = g act(a), in one kernel.
  int (*launch_gated_backward)(const void* launcher, const void* grad_out, std::int64_t ld_grad_out, const void* a,
                               std::int64_t ld_a, const void* b, std::int64_t ld_b, void* grad_a,
                               std::int64_t ld_grad_a, void* grad_b, std::int64_t ld_grad_b, std::int64_t rows,
                               std::int64_t d, void* stream, const char** message);
  // PReLU and RReLU on CUDA (kplay/kplay.hpp's prelu_forward/backward, rrelu_forward/backward):
  // contiguous operands of n elements; prelu's weight of `channels` elements with `inner` elements
  // per (sample, channel); its backward writes grad_in and/or grad_weight (nullptr: not
  // computed) through a workspace of prelu_workspace_bytes. rrelu's training draws from (seed,
  // offset + i).
  int (*prelu_forward)(int dtype, const void* in, const void* weight, void* out, std::int64_t n, std::int64_t channels,
                       std::int64_t inner, void* stream, const char** message);
  int (*prelu_workspace_bytes)(int dtype, std::int64_t n, std::int64_t channels, std::int64_t inner,
                               std::int64_t* bytes, const char** message);
  int (*prelu_backward)(int dtype, const void* grad_out, const void* in, const void* weight, void* grad_in,
                        void* grad_weight, void* workspace, std::int64_t n, std::int64_t channels, std::int64_t inner,
                        void* stream, const char** message);
  int (*rrelu_forward)(int dtype, const void* in, void* out, std::int64_t n, double lower, double upper,
                       std::uint64_t seed, std::uint64_t offset, void* stream, const char** message);
  int (*rrelu_backward)(int dtype, const void* grad_out, const void* in, void* grad_in, std::int64_t n, double lower,
                        double upper, std::uint64_t seed, std::uint64_t offset, void* stream, const char** message);
  // The softmax family (kplay::Launcher::launch_strided_rows of a launcher from launcher_cuda made
  // for softmax, log_softmax or softmin, backward with saved_output): each operand [outer, cols,
  // inner] (inner 1: outer rows of cols contiguous elements), a CUDA pointer and its pitch between
  // outer blocks in elements; vouched pointer checks (overlap and pitches still run). Forward:
  // in = x, out = y; backward: in = grad, in1 = y, out = grad_in.
  int (*launch_rows)(const void* launcher, const void* in, std::int64_t ld_in, const void* in1, std::int64_t ld_in1,
                     void* out, std::int64_t ld_out, std::int64_t outer, std::int64_t cols, std::int64_t inner,
                     void* stream, const char** message);
};
