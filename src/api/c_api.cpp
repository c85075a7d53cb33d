// The C API (kplay/kplay.h): each call catches every exception at the boundary and turns it
// into a status plus a thread-local message.
#include "kplay/kplay.h"

#include <cstring>
#include <string>

#include "kplay/kplay.hpp"

namespace {
thread_local std::string last_error;

kplay_status status_of(kplay::ErrorCode code) {
  switch (code) {
    case kplay::ErrorCode::invalid_argument: return KPLAY_ERROR_INVALID_ARGUMENT;
    case kplay::ErrorCode::invalid_config: return KPLAY_ERROR_INVALID_CONFIG;
    case kplay::ErrorCode::no_device: return KPLAY_ERROR_NO_DEVICE;
    case kplay::ErrorCode::compile_failed: return KPLAY_ERROR_COMPILE;
    case kplay::ErrorCode::runtime_failed: return KPLAY_ERROR_RUNTIME;
    case kplay::ErrorCode::unsupported: return KPLAY_ERROR_UNSUPPORTED;
    case kplay::ErrorCode::io_failed: return KPLAY_ERROR_IO;
    default: return KPLAY_ERROR_INTERNAL;
  }
}

template <class Fn>
kplay_status guarded(Fn fn) {
  try {
    fn();
    last_error.clear();
    return KPLAY_OK;
  } catch (const kplay::Error& e) {
    last_error = e.describe();
    return status_of(e.code());
  } catch (const std::exception& e) {
    last_error = e.what();
    return KPLAY_ERROR_INTERNAL;
  } catch (...) {
    last_error = "unknown error";
    return KPLAY_ERROR_INTERNAL;
  }
}

// A C caller may pass any int where the header declares an enum, and reading such a value as
// the C++ enum type is undefined (UBSan: "not a valid value for type"). So the codes are taken
// by reference and read as the ints they are before anything compares them.
template <class Enum>
int code_of(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
  int code = 0;
  std::memcpy(&code, &e, sizeof code);
  return code;
}

kplay::Dtype dtype_of(const kplay_dtype& d) {
  switch (code_of(d)) {
    case KPLAY_F32: return kplay::Dtype::f32;
    case KPLAY_F16: return kplay::Dtype::f16;
    case KPLAY_BF16: return kplay::Dtype::bf16;
    case KPLAY_F64: return kplay::Dtype::f64;
    default: break;
  }
  throw kplay::Error(kplay::ErrorCode::invalid_argument, "unknown dtype code " + std::to_string(code_of(d)));
}

kplay::Stream stream_of(const kplay_backend& b, void* handle) {
  const int code = code_of(b);
  if (code != KPLAY_BACKEND_CUDA && code != KPLAY_BACKEND_OPENCL)
    throw kplay::Error(kplay::ErrorCode::invalid_argument, "unknown backend code " + std::to_string(code));
  return {code == KPLAY_BACKEND_CUDA ? kplay::Backend::cuda : kplay::Backend::opencl, handle};
}

kplay::Saved saved_of(const kplay_saved& s) {
  const int code = code_of(s);
  if (code != KPLAY_SAVED_INPUT && code != KPLAY_SAVED_OUTPUT)
    throw kplay::Error(kplay::ErrorCode::invalid_argument, "unknown saved code " + std::to_string(code));
  return code == KPLAY_SAVED_INPUT ? kplay::Saved::input : kplay::Saved::output;
}

kplay::OutDtype fp8_of(const kplay_fp8& f) {
  switch (code_of(f)) {
    case KPLAY_FP8_E4M3: return kplay::OutDtype::f8e4m3;
    case KPLAY_FP8_E5M2: return kplay::OutDtype::f8e5m2;
    default: break;
  }
  throw kplay::Error(kplay::ErrorCode::invalid_argument, "unknown FP8 format code " + std::to_string(code_of(f)));
}

std::string name_of(const char* activation) {
  if (!activation) throw kplay::Error(kplay::ErrorCode::invalid_argument, "activation is a null pointer");
  return activation;
}
}  // namespace

extern "C" {

kplay_status kplay_forward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* in, void* out,
                           int64_t n, void* stream) {
  return guarded([&] { kplay::forward(name_of(activation), dtype_of(dtype), in, out, n, stream_of(backend, stream)); });
}

kplay_status kplay_backward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* grad_out,
                            const void* saved, kplay_saved saved_kind, void* grad_in, int64_t n, void* stream) {
  return guarded([&] {
    kplay::backward(name_of(activation), dtype_of(dtype), grad_out, saved, saved_of(saved_kind), grad_in, n,
                    stream_of(backend, stream));
  });
}

kplay_status kplay_forward_2d(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* in,
                              int64_t ld_in, void* out, int64_t ld_out, int64_t rows, int64_t cols, void* stream) {
  return guarded([&] {
    kplay::forward_2d(name_of(activation), dtype_of(dtype), in, out, {rows, cols, ld_in, ld_out},
                      stream_of(backend, stream));
  });
}

kplay_status kplay_backward_2d(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* grad_out,
                               const void* saved, kplay_saved saved_kind, int64_t ld_in, void* grad_in, int64_t ld_out,
                               int64_t rows, int64_t cols, void* stream) {
  return guarded([&] {
    kplay::backward_2d(name_of(activation), dtype_of(dtype), grad_out, saved, saved_of(saved_kind), grad_in,
                       {rows, cols, ld_in, ld_out}, stream_of(backend, stream));
  });
}

kplay_status kplay_gated_forward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* a,
                                 int64_t a_offset, int64_t ld_a, const void* b, int64_t b_offset, int64_t ld_b,
                                 void* out, int64_t out_offset, int64_t ld_out, int64_t rows, int64_t d, void* stream) {
  return guarded([&] {
    kplay::gated_forward(name_of(activation), dtype_of(dtype), {a, ld_a, a_offset}, {b, ld_b, b_offset},
                         {out, ld_out, out_offset}, rows, d, stream_of(backend, stream));
  });
}

kplay_status kplay_gated_backward(kplay_backend backend, const char* activation, kplay_dtype dtype,
                                  const void* grad_out, int64_t grad_out_offset, int64_t ld_grad_out, const void* a,
                                  int64_t a_offset, int64_t ld_a, const void* b, int64_t b_offset, int64_t ld_b,
                                  void* grad_a, int64_t grad_a_offset, int64_t ld_grad_a, void* grad_b,
                                  int64_t grad_b_offset, int64_t ld_grad_b, int64_t rows, int64_t d, void* stream) {
  return guarded([&] {
    kplay::gated_backward(name_of(activation), dtype_of(dtype), {grad_out, ld_grad_out, grad_out_offset},
                          {a, ld_a, a_offset}, {b, ld_b, b_offset}, {grad_a, ld_grad_a, grad_a_offset},
                          {grad_b, ld_grad_b, grad_b_offset}, rows, d, stream_of(backend, stream));
  });
}

int64_t kplay_prelu_workspace_bytes(kplay_dtype dtype, int64_t n, int64_t channels, int64_t inner) {
  try {
    return kplay::prelu_workspace_bytes(dtype_of(dtype), {n, channels, inner});
  } catch (...) {
    return -1;  // a shape prelu refuses; kplay_prelu_backward says why
  }
}

kplay_status kplay_prelu_forward(kplay_backend backend, kplay_dtype dtype, const void* in, const void* weight,
                                 void* out, int64_t n, int64_t channels, int64_t inner, void* stream) {
  return guarded([&] {
    kplay::prelu_forward(dtype_of(dtype), in, weight, out, {n, channels, inner}, stream_of(backend, stream));
  });
}

kplay_status kplay_prelu_backward(kplay_backend backend, kplay_dtype dtype, const void* grad_out, const void* in,
                                  const void* weight, void* grad_in, void* grad_weight, void* workspace, int64_t n,
                                  int64_t channels, int64_t inner, void* stream) {
  return guarded([&] {
    kplay::prelu_backward(dtype_of(dtype), grad_out, in, weight, grad_in, grad_weight, workspace, {n, channels, inner},
                          stream_of(backend, stream));
  });
}

kplay_status kplay_rrelu_forward(kplay_backend backend, kplay_dtype dtype, const void* in, void* out, int64_t n,
                                 double lower, double upper, int training, uint64_t seed, uint64_t offset,
                                 void* stream) {
  return guarded([&] {
    kplay::rrelu_forward(dtype_of(dtype), in, out, n, lower, upper, training != 0, seed, offset,
                         stream_of(backend, stream));
  });
}

kplay_status kplay_rrelu_backward(kplay_backend backend, kplay_dtype dtype, const void* grad_out, const void* in,
                                  void* grad_in, int64_t n, double lower, double upper, int training, uint64_t seed,
                                  uint64_t offset, void* stream) {
  return guarded([&] {
    kplay::rrelu_backward(dtype_of(dtype), grad_out, in, grad_in, n, lower, upper, training != 0, seed, offset,
                          stream_of(backend, stream));
  });
}

kplay_status kplay_gated_forward_packed(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* x,
                                        int64_t ld_x, void* out, int64_t ld_out, int64_t rows, int64_t d,
                                        void* stream) {
  return guarded([&] {
    kplay::gated_forward_packed(name_of(activation), dtype_of(dtype), x, ld_x, out, ld_out, rows, d,
                                stream_of(backend, stream));
  });
}

kplay_status kplay_gated_backward_packed(kplay_backend backend, const char* activation, kplay_dtype dtype,
                                         const void* grad_out, int64_t ld_grad_out, const void* x, int64_t ld_x,
                                         void* grad_x, int64_t ld_grad_x, int64_t rows, int64_t d, void* stream) {
  return guarded([&] {
    kplay::gated_backward_packed(name_of(activation), dtype_of(dtype), grad_out, ld_grad_out, x, ld_x, grad_x,
                                 ld_grad_x, rows, d, stream_of(backend, stream));
  });
}

kplay_status kplay_gated_forward_fp8(kplay_backend backend, const char* activation, kplay_dtype dtype, kplay_fp8 fp8,
                                     const void* a, int64_t a_offset, int64_t ld_a, const void* b, int64_t b_offset,
                                     int64_t ld_b, void* out, int64_t out_offset, int64_t ld_out, int64_t rows,
                                     int64_t d, const float* scale_device, float scale, void* stream) {
  return guarded([&] {
    kplay::Fp8Output o;
    o.type = fp8_of(fp8);
    o.scale_device = scale_device;
    o.scale = scale;
    kplay::gated_forward(name_of(activation), dtype_of(dtype), {a, ld_a, a_offset}, {b, ld_b, b_offset},
                         {out, ld_out, out_offset}, rows, d, stream_of(backend, stream), o);
  });
}

kplay_status kplay_softmax_forward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* x,
                                   int64_t ld_x, void* y, int64_t ld_y, int64_t rows, int64_t cols, void* stream) {
  return guarded([&] {
    kplay::softmax_forward(name_of(activation), dtype_of(dtype), x, ld_x, y, ld_y, rows, cols,
                           stream_of(backend, stream));
  });
}

kplay_status kplay_softmax_backward(kplay_backend backend, const char* activation, kplay_dtype dtype, const void* y,
                                    int64_t ld_y, const void* grad_out, int64_t ld_grad_out, void* grad_in,
                                    int64_t ld_grad_in, int64_t rows, int64_t cols, void* stream) {
  return guarded([&] {
    kplay::softmax_backward(name_of(activation), dtype_of(dtype), y, ld_y, grad_out, ld_grad_out, grad_in, ld_grad_in,
                            rows, cols, stream_of(backend, stream));
  });
}

kplay_status kplay_softmax_forward_strided(kplay_backend backend, const char* activation, kplay_dtype dtype,
                                           const void* x, int64_t ld_x, void* y, int64_t ld_y, int64_t outer,
                                           int64_t cols, int64_t inner, void* stream) {
  return guarded([&] {
    kplay::softmax_forward_strided(name_of(activation), dtype_of(dtype), x, ld_x, y, ld_y, outer, cols, inner,
                                   stream_of(backend, stream));
  });
}

kplay_status kplay_softmax_backward_strided(kplay_backend backend, const char* activation, kplay_dtype dtype,
                                            const void* y, int64_t ld_y, const void* grad_out, int64_t ld_grad_out,
                                            void* grad_in, int64_t ld_grad_in, int64_t outer, int64_t cols,
                                            int64_t inner, void* stream) {
  return guarded([&] {
    kplay::softmax_backward_strided(name_of(activation), dtype_of(dtype), y, ld_y, grad_out, ld_grad_out, grad_in,
                                    ld_grad_in, outer, cols, inner, stream_of(backend, stream));
  });
}

int kplay_supports_saved_output(const char* activation) {
  try {
    return activation && kplay::supports_saved_output(activation) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

kplay_status kplay_register_activation(const char* name, const char* source) {
  return guarded([&] {
    if (!name || !source)
      throw kplay::Error(kplay::ErrorCode::invalid_argument,
                         std::string(!name ? "name" : "source") + " is a null pointer");
    kplay::register_activation(name, source);
  });
}

const char* kplay_last_error(void) { return last_error.c_str(); }

}  // extern "C"
