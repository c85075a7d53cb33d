// kplay._core: the C++ API (kplay/kplay.hpp) for Python, through nanobind.
//
// The launch functions take raw integers (device pointer or cl_mem, stream or cl_command_queue)
// so the per-call path is a string, a few integers and one C++ call; turning tensors of torch,
// CuPy, JAX or pyopencl into those integers is the job of the Python layer (kplay/_arrays.py).
// kplay::Error becomes a Python exception of kplay's hierarchy carrying kplay's message.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "kplay/admin.hpp"
#include "kplay/kplay.h"
#include "kplay/kplay.hpp"
#include "kplay/launcher.hpp"
#include "kplay/limits.hpp"
#include "torch_bridge.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// Python exception types, created once at import (see NB_MODULE below).
PyObject* error_base = nullptr;       // kplay.Error(RuntimeError)
PyObject* error_argument = nullptr;   // kplay.InvalidArgumentError(Error, ValueError)
PyObject* error_no_device = nullptr;  // kplay.NoDeviceError(Error)
PyObject* error_unsupported = nullptr;
PyObject* error_compile = nullptr;

PyObject* exception_for(kplay::ErrorCode code) {
  switch (code) {
    case kplay::ErrorCode::invalid_argument:
    case kplay::ErrorCode::invalid_config: return error_argument;
    case kplay::ErrorCode::no_device: return error_no_device;
    case kplay::ErrorCode::unsupported: return error_unsupported;
    case kplay::ErrorCode::compile_failed: return error_compile;
    default: return error_base;
  }
}

kplay::Dtype dtype_from_code(int code) {
  switch (code) {
    case KPLAY_F32: return kplay::Dtype::f32;
    case KPLAY_F16: return kplay::Dtype::f16;
    case KPLAY_BF16: return kplay::Dtype::bf16;
    case KPLAY_F64: return kplay::Dtype::f64;
  }
  throw kplay::Error(kplay::ErrorCode::invalid_argument, "unknown dtype code " + std::to_string(code));
}

kplay::Stream make_stream(int backend, std::uintptr_t stream) {
  if (backend != KPLAY_BACKEND_CUDA && backend != KPLAY_BACKEND_OPENCL)
    throw kplay::Error(kplay::ErrorCode::invalid_argument, "unknown backend code " + std::to_string(backend));
  return {backend == KPLAY_BACKEND_CUDA ? kplay::Backend::cuda : kplay::Backend::opencl,
          reinterpret_cast<void*>(stream)};
}

const void* as_ptr(std::uintptr_t p) { return reinterpret_cast<const void*>(p); }
void* as_mut(std::uintptr_t p) { return reinterpret_cast<void*>(p); }

kplay::OutDtype out_dtype_from_code(int code) {
  switch (code) {
    case 0: return kplay::OutDtype::same;
    case KPLAY_FP8_E4M3: return kplay::OutDtype::f8e4m3;
    case KPLAY_FP8_E5M2: return kplay::OutDtype::f8e5m2;
  }
  throw kplay::Error(kplay::ErrorCode::invalid_argument, "unknown output dtype code " + std::to_string(code));
}

// A gated operand from (pointer, offset in elements, row pitch in elements).
kplay::GatedIn gin(std::uintptr_t p, std::int64_t offset, std::int64_t ld) { return {as_ptr(p), ld, offset}; }
kplay::GatedOut gout(std::uintptr_t p, std::int64_t offset, std::int64_t ld) { return {as_mut(p), ld, offset}; }

kplay::Fp8Output fp8_output(int out_dtype, std::uintptr_t scale_ptr, float scale) {
  kplay::Fp8Output o;
  o.type = out_dtype_from_code(out_dtype);
  o.scale_device = reinterpret_cast<const float*>(scale_ptr);
  o.scale = scale;
  return o;
}

kplay::View2D view(std::int64_t rows, std::int64_t cols, std::int64_t ld_in, std::int64_t ld_out) {
  kplay::View2D v;
  v.rows = rows;
  v.cols = cols;
  v.ld_in = ld_in;
  v.ld_out = ld_out;
  return v;
}

nb::dict device_dict(const kplay::DeviceDescription& d) {
  nb::dict r;
  r["backend"] = d.backend;
  r["index"] = d.index;
  r["name"] = d.name;
  r["platform"] = d.platform;
  r["arch"] = d.arch;
  r["driver_version"] = d.driver_version;
  r["compiler_version"] = d.compiler_version;
  r["memory_bytes"] = d.memory_bytes;
  r["compute_units"] = d.compute_units;
  r["max_block"] = d.max_block;
  r["compile_target"] = d.compile_target;
  r["note"] = d.note;
  return r;
}

// DLPack dtype -> kplay dtype code, or -1 when kplay cannot take it.
int dlpack_dtype_code(const nb::dlpack::dtype& t) {
  if (t.lanes != 1) return -1;
  if (t.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float)) {
    if (t.bits == 32) return KPLAY_F32;
    if (t.bits == 16) return KPLAY_F16;
    if (t.bits == 64) return KPLAY_F64;
  }
  if (t.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat) && t.bits == 16) return KPLAY_BF16;
  return -1;
}

// ---- the table for kplay._torch_ops (torch_bridge.h) ----------------------------------------

thread_local std::string bridge_message;

// Runs f; a kplay::Error (or any other exception) becomes its code and message.
template <class F>
int bridged(const char** message, F&& f) noexcept {
  try {
    f();
    return 0;
  } catch (const kplay::Error& e) {
    bridge_message = e.code() == kplay::ErrorCode::compile_failed ? e.describe() : e.what();
    *message = bridge_message.c_str();
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    bridge_message = e.what();
  } catch (...) {
    bridge_message = "unknown C++ exception";
  }
  *message = bridge_message.c_str();
  return static_cast<int>(kplay::ErrorCode::runtime_failed);
}

// Built-ins whose registry entry saves the input, by name (the rest ask supports_saved_output).
bool builtin_saves_input(const std::string& activation) {
  std::string name = activation.substr(0, activation.find('('));
  while (!name.empty() && name.back() == ' ') name.pop_back();
  for (const auto& a : kplay::builtin_activations())
    if (name == a.name) return !a.saves_output;
  return false;
}

// The gated text of ACT: ACT itself where it is gated(...) already (a launcher of gated(ACT) is
// made from its text; kplay::gated_forward takes either form, and so does the torch op).
std::string gated_text(const char* activation) {
  std::string_view t(activation);
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  return t.substr(0, 6) == "gated(" ? std::string(t) : "gated(" + std::string(t) + ")";
}

const KplayTorchBridge torch_bridge = {
    KPLAY_TORCH_BRIDGE_VERSION,
    [](const char* act, int dtype, int backward, int saved_output, int device, void** launcher, const char** msg) {
      return bridged(msg, [&] {
        *launcher = new kplay::Launcher(kplay::Launcher::cuda(
            act, dtype_from_code(dtype), backward ? kplay::Direction::backward : kplay::Direction::forward,
            saved_output ? kplay::Saved::output : kplay::Saved::input, device));
      });
    },
    [](const void* launcher, const void* in, const void* in1, void* out, std::int64_t n, void* stream,
       const char** msg) {
      return bridged(msg, [&] {
        static_cast<const kplay::Launcher*>(launcher)->launch(in, in1, out, n, stream, kplay::PointerChecks::vouched);
      });
    },
    [](const char* act, int dtype, const void* in, std::int64_t ld_in, void* out, std::int64_t ld_out,
       std::int64_t rows, std::int64_t cols, void* stream, const char** msg) {
      return bridged(msg, [&] {
        kplay::forward_2d(act, dtype_from_code(dtype), in, out, view(rows, cols, ld_in, ld_out),
                          {kplay::Backend::cuda, stream});
      });
    },
    [](const char* act, int* result, const char** msg) {
      return bridged(msg, [&] {
        const bool can = kplay::supports_saved_output(act);  // also refuses unknown names and bad parameters
        *result = can && !builtin_saves_input(act) ? 1 : 0;
      });
    },
    // ---- gated activations ----
    [](const char* act, int dtype, int backward, int out_dtype, int device, void** launcher, const char** msg) {
      return bridged(msg, [&] {
        *launcher = new kplay::Launcher(kplay::Launcher::cuda(
            gated_text(act), dtype_from_code(dtype), backward ? kplay::Direction::backward : kplay::Direction::forward,
            kplay::Saved::input, device, out_dtype_from_code(out_dtype)));
      });
    },
    [](const void* launcher, const void* a, std::int64_t ld_a, const void* b, std::int64_t ld_b, void* out,
       std::int64_t ld_out, std::int64_t rows, std::int64_t d, float scale, void* stream, const char** msg) {
      return bridged(msg, [&] {
        kplay::Fp8Output o;
        o.scale = scale;
        static_cast<const kplay::Launcher*>(launcher)->launch_gated_forward(
            {a, ld_a, 0}, {b, ld_b, 0}, {out, ld_out, 0}, rows, d, stream, kplay::PointerChecks::vouched, o);
      });
    },
    [](const void* launcher, const void* g, std::int64_t ld_g, const void* a, std::int64_t ld_a, const void* b,
       std::int64_t ld_b, void* ga, std::int64_t ld_ga, void* gb, std::int64_t ld_gb, std::int64_t rows, std::int64_t d,
       void* stream, const char** msg) {
      return bridged(msg, [&] {
        static_cast<const kplay::Launcher*>(launcher)->launch_gated_backward({g, ld_g, 0}, {a, ld_a, 0}, {b, ld_b, 0},
                                                                             {ga, ld_ga, 0}, {gb, ld_gb, 0}, rows, d,
                                                                             stream, kplay::PointerChecks::vouched);
      });
    },
    // PReLU and RReLU (training), on CUDA.
    [](int dtype, const void* in, const void* weight, void* out, std::int64_t n, std::int64_t channels,
       std::int64_t inner, void* stream, const char** msg) {
      return bridged(msg, [&] {
        kplay::prelu_forward(dtype_from_code(dtype), in, weight, out, {n, channels, inner},
                             {kplay::Backend::cuda, stream});
      });
    },
    [](int dtype, std::int64_t n, std::int64_t channels, std::int64_t inner, std::int64_t* bytes, const char** msg) {
      return bridged(msg, [&] { *bytes = kplay::prelu_workspace_bytes(dtype_from_code(dtype), {n, channels, inner}); });
    },
    [](int dtype, const void* grad_out, const void* in, const void* weight, void* grad_in, void* grad_weight,
       void* workspace, std::int64_t n, std::int64_t channels, std::int64_t inner, void* stream, const char** msg) {
      return bridged(msg, [&] {
        kplay::prelu_backward(dtype_from_code(dtype), grad_out, in, weight, grad_in, grad_weight, workspace,
                              {n, channels, inner}, {kplay::Backend::cuda, stream});
      });
    },
    [](int dtype, const void* in, void* out, std::int64_t n, double lower, double upper, std::uint64_t seed,
       std::uint64_t offset, void* stream, const char** msg) {
      return bridged(msg, [&] {
        kplay::rrelu_forward(dtype_from_code(dtype), in, out, n, lower, upper, true, seed, offset,
                             {kplay::Backend::cuda, stream});
      });
    },
    [](int dtype, const void* grad_out, const void* in, void* grad_in, std::int64_t n, double lower, double upper,
       std::uint64_t seed, std::uint64_t offset, void* stream, const char** msg) {
      return bridged(msg, [&] {
        kplay::rrelu_backward(dtype_from_code(dtype), grad_out, in, grad_in, n, lower, upper, true, seed, offset,
                              {kplay::Backend::cuda, stream});
      });
    },
    // The softmax family, on CUDA.
    [](const void* launcher, const void* in, std::int64_t ld_in, const void* in1, std::int64_t ld_in1, void* out,
       std::int64_t ld_out, std::int64_t outer, std::int64_t cols, std::int64_t inner, void* stream, const char** msg) {
      return bridged(msg, [&] {
        static_cast<const kplay::Launcher*>(launcher)->launch_strided_rows(
            in, ld_in, in1, ld_in1, out, ld_out, outer, cols, inner, stream, kplay::PointerChecks::vouched);
      });
    },
};

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "kplay's C++ API (low level; use the functions of the kplay package)";

  error_base = PyErr_NewException("kplay.Error", PyExc_RuntimeError, nullptr);
  error_argument =
      PyErr_NewException("kplay.InvalidArgumentError", PyTuple_Pack(2, error_base, PyExc_ValueError), nullptr);
  error_no_device = PyErr_NewException("kplay.NoDeviceError", error_base, nullptr);
  error_unsupported = PyErr_NewException("kplay.UnsupportedError", error_base, nullptr);
  error_compile = PyErr_NewException("kplay.CompileError", error_base, nullptr);
  m.attr("Error") = nb::handle(error_base);
  m.attr("InvalidArgumentError") = nb::handle(error_argument);
  m.attr("NoDeviceError") = nb::handle(error_no_device);
  m.attr("UnsupportedError") = nb::handle(error_unsupported);
  m.attr("CompileError") = nb::handle(error_compile);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const kplay::Error& e) {
      // A compile error's message alone does not say why; the log and options do.
      const std::string text = e.code() == kplay::ErrorCode::compile_failed ? e.describe() : e.what();
      PyErr_SetString(exception_for(e.code()), text.c_str());
    }
  });

  m.attr("BACKEND_CUDA") = static_cast<int>(KPLAY_BACKEND_CUDA);
  m.attr("BACKEND_OPENCL") = static_cast<int>(KPLAY_BACKEND_OPENCL);
  m.attr("F32") = static_cast<int>(KPLAY_F32);
  m.attr("F16") = static_cast<int>(KPLAY_F16);
  m.attr("BF16") = static_cast<int>(KPLAY_BF16);
  m.attr("F64") = static_cast<int>(KPLAY_F64);

  // The hot path: integers in, one C++ call, the GIL released (a first call may compile).
  m.def(
      "forward",
      [](const std::string& act, int dtype, std::uintptr_t in, std::uintptr_t out, std::int64_t n, int backend,
         std::uintptr_t stream) {
        kplay::forward(act, dtype_from_code(dtype), as_ptr(in), as_mut(out), n, make_stream(backend, stream));
      },
      "activation"_a, "dtype"_a, "in_ptr"_a, "out_ptr"_a, "n"_a, "backend"_a, "stream"_a,
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "backward",
      [](const std::string& act, int dtype, std::uintptr_t grad_out, std::uintptr_t saved, bool saved_output,
         std::uintptr_t grad_in, std::int64_t n, int backend, std::uintptr_t stream) {
        kplay::backward(act, dtype_from_code(dtype), as_ptr(grad_out), as_ptr(saved),
                        saved_output ? kplay::Saved::output : kplay::Saved::input, as_mut(grad_in), n,
                        make_stream(backend, stream));
      },
      "activation"_a, "dtype"_a, "grad_out_ptr"_a, "saved_ptr"_a, "saved_output"_a, "grad_in_ptr"_a, "n"_a, "backend"_a,
      "stream"_a, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "forward_2d",
      [](const std::string& act, int dtype, std::uintptr_t in, std::int64_t ld_in, std::uintptr_t out,
         std::int64_t ld_out, std::int64_t rows, std::int64_t cols, int backend, std::uintptr_t stream) {
        kplay::forward_2d(act, dtype_from_code(dtype), as_ptr(in), as_mut(out), view(rows, cols, ld_in, ld_out),
                          make_stream(backend, stream));
      },
      "activation"_a, "dtype"_a, "in_ptr"_a, "ld_in"_a, "out_ptr"_a, "ld_out"_a, "rows"_a, "cols"_a, "backend"_a,
      "stream"_a, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "backward_2d",
      [](const std::string& act, int dtype, std::uintptr_t grad_out, std::uintptr_t saved, bool saved_output,
         std::int64_t ld_in, std::uintptr_t grad_in, std::int64_t ld_out, std::int64_t rows, std::int64_t cols,
         int backend, std::uintptr_t stream) {
        kplay::backward_2d(act, dtype_from_code(dtype), as_ptr(grad_out), as_ptr(saved),
                           saved_output ? kplay::Saved::output : kplay::Saved::input, as_mut(grad_in),
                           view(rows, cols, ld_in, ld_out), make_stream(backend, stream));
      },
      "activation"_a, "dtype"_a, "grad_out_ptr"_a, "saved_ptr"_a, "saved_output"_a, "ld_in"_a, "grad_in_ptr"_a,
      "ld_out"_a, "rows"_a, "cols"_a, "backend"_a, "stream"_a, nb::call_guard<nb::gil_scoped_release>());

  // The softmax family over rows (kplay::softmax_forward/backward_strided): each operand [rows,
  // cols, inner] (inner 1, the default: rows of cols contiguous elements), a pointer (CUDA) or cl_mem
  // (OpenCL) and its pitch in elements between those rows (outer blocks); backward from the saved
  // output.
  m.def(
      "softmax_forward",
      [](const std::string& act, int dtype, std::uintptr_t x, std::int64_t ld_x, std::uintptr_t y, std::int64_t ld_y,
         std::int64_t rows, std::int64_t cols, int backend, std::uintptr_t stream, std::int64_t inner) {
        kplay::softmax_forward_strided(act, dtype_from_code(dtype), as_ptr(x), ld_x, as_mut(y), ld_y, rows, cols, inner,
                                       make_stream(backend, stream));
      },
      "activation"_a, "dtype"_a, "x_ptr"_a, "ld_x"_a, "y_ptr"_a, "ld_y"_a, "rows"_a, "cols"_a, "backend"_a, "stream"_a,
      "inner"_a = 1, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "softmax_backward",
      [](const std::string& act, int dtype, std::uintptr_t y, std::int64_t ld_y, std::uintptr_t g, std::int64_t ld_g,
         std::uintptr_t grad_in, std::int64_t ld_grad_in, std::int64_t rows, std::int64_t cols, int backend,
         std::uintptr_t stream, std::int64_t inner) {
        kplay::softmax_backward_strided(act, dtype_from_code(dtype), as_ptr(y), ld_y, as_ptr(g), ld_g, as_mut(grad_in),
                                        ld_grad_in, rows, cols, inner, make_stream(backend, stream));
      },
      "activation"_a, "dtype"_a, "y_ptr"_a, "ld_y"_a, "grad_out_ptr"_a, "ld_grad_out"_a, "grad_in_ptr"_a,
      "ld_grad_in"_a, "rows"_a, "cols"_a, "backend"_a, "stream"_a, "inner"_a = 1,
      nb::call_guard<nb::gil_scoped_release>());

  // Gated activations (kplay::gated_forward/backward): out = act(a) * b over rows x d, each operand
  // a pointer (CUDA) or cl_mem (OpenCL), an offset and a row pitch in elements. The [rows, 2d]
  // layout is a = (x, 0, ld_x), b = (x, d, ld_x). out_dtype: 0, or OUT_F8E4M3 / OUT_F8E5M2 (FP8
  // forward on CUDA sm_89+, out = fp8(act(a) * b / scale), the scale read from scale_ptr (a device
  // float32) where not 0, else `scale`; out's offset and pitch in its one-byte elements).
  m.attr("OUT_SAME") = 0;
  m.attr("OUT_F8E4M3") = static_cast<int>(KPLAY_FP8_E4M3);
  m.attr("OUT_F8E5M2") = static_cast<int>(KPLAY_FP8_E5M2);
  m.def(
      "gated_forward",
      [](const std::string& act, int dtype, std::uintptr_t a, std::int64_t a_offset, std::int64_t ld_a,
         std::uintptr_t b, std::int64_t b_offset, std::int64_t ld_b, std::uintptr_t out, std::int64_t out_offset,
         std::int64_t ld_out, std::int64_t rows, std::int64_t d, int backend, std::uintptr_t stream, int out_dtype,
         std::uintptr_t scale_ptr, float scale) {
        kplay::gated_forward(act, dtype_from_code(dtype), gin(a, a_offset, ld_a), gin(b, b_offset, ld_b),
                             gout(out, out_offset, ld_out), rows, d, make_stream(backend, stream),
                             fp8_output(out_dtype, scale_ptr, scale));
      },
      "activation"_a, "dtype"_a, "a_ptr"_a, "a_offset"_a, "ld_a"_a, "b_ptr"_a, "b_offset"_a, "ld_b"_a, "out_ptr"_a,
      "out_offset"_a, "ld_out"_a, "rows"_a, "d"_a, "backend"_a, "stream"_a, "out_dtype"_a = 0, "scale_ptr"_a = 0,
      "scale"_a = 1.0f, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "gated_backward",
      [](const std::string& act, int dtype, std::uintptr_t g, std::int64_t g_offset, std::int64_t ld_g,
         std::uintptr_t a, std::int64_t a_offset, std::int64_t ld_a, std::uintptr_t b, std::int64_t b_offset,
         std::int64_t ld_b, std::uintptr_t ga, std::int64_t ga_offset, std::int64_t ld_ga, std::uintptr_t gb,
         std::int64_t gb_offset, std::int64_t ld_gb, std::int64_t rows, std::int64_t d, int backend,
         std::uintptr_t stream) {
        kplay::gated_backward(act, dtype_from_code(dtype), gin(g, g_offset, ld_g), gin(a, a_offset, ld_a),
                              gin(b, b_offset, ld_b), gout(ga, ga_offset, ld_ga), gout(gb, gb_offset, ld_gb), rows, d,
                              make_stream(backend, stream));
      },
      "activation"_a, "dtype"_a, "grad_out_ptr"_a, "grad_out_offset"_a, "ld_grad_out"_a, "a_ptr"_a, "a_offset"_a,
      "ld_a"_a, "b_ptr"_a, "b_offset"_a, "ld_b"_a, "grad_a_ptr"_a, "grad_a_offset"_a, "ld_grad_a"_a, "grad_b_ptr"_a,
      "grad_b_offset"_a, "ld_grad_b"_a, "rows"_a, "d"_a, "backend"_a, "stream"_a,
      nb::call_guard<nb::gil_scoped_release>());

  // ---- PReLU and RReLU (kplay/kplay.hpp: prelu_forward/backward, rrelu_forward/backward) ----
  // prelu: contiguous x of n elements, weight of `channels` elements (one per channel of dim 1, or
  // one), inner = the elements per (sample, channel); backward writes grad_in and/or grad_weight
  // (0: not computed) and needs `workspace` of prelu_workspace_bytes. rrelu: training draws each
  // slope from (seed, offset + i); evaluation is leaky_relu with the mean slope.
  m.def(
      "prelu_forward",
      [](int dtype, std::uintptr_t in, std::uintptr_t weight, std::uintptr_t out, std::int64_t n, std::int64_t channels,
         std::int64_t inner, int backend, std::uintptr_t stream) {
        kplay::prelu_forward(dtype_from_code(dtype), as_ptr(in), as_ptr(weight), as_mut(out), {n, channels, inner},
                             make_stream(backend, stream));
      },
      "dtype"_a, "in_ptr"_a, "weight_ptr"_a, "out_ptr"_a, "n"_a, "channels"_a, "inner"_a, "backend"_a, "stream"_a,
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "prelu_workspace_bytes",
      [](int dtype, std::int64_t n, std::int64_t channels, std::int64_t inner) {
        return kplay::prelu_workspace_bytes(dtype_from_code(dtype), {n, channels, inner});
      },
      "dtype"_a, "n"_a, "channels"_a, "inner"_a);
  m.def(
      "prelu_backward",
      [](int dtype, std::uintptr_t grad_out, std::uintptr_t in, std::uintptr_t weight, std::uintptr_t grad_in,
         std::uintptr_t grad_weight, std::uintptr_t workspace, std::int64_t n, std::int64_t channels,
         std::int64_t inner, int backend, std::uintptr_t stream) {
        kplay::prelu_backward(dtype_from_code(dtype), as_ptr(grad_out), as_ptr(in), as_ptr(weight), as_mut(grad_in),
                              as_mut(grad_weight), as_mut(workspace), {n, channels, inner},
                              make_stream(backend, stream));
      },
      "dtype"_a, "grad_out_ptr"_a, "in_ptr"_a, "weight_ptr"_a, "grad_in_ptr"_a, "grad_weight_ptr"_a, "workspace_ptr"_a,
      "n"_a, "channels"_a, "inner"_a, "backend"_a, "stream"_a, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "rrelu_forward",
      [](int dtype, std::uintptr_t in, std::uintptr_t out, std::int64_t n, double lower, double upper, bool training,
         std::uint64_t seed, std::uint64_t offset, int backend, std::uintptr_t stream) {
        kplay::rrelu_forward(dtype_from_code(dtype), as_ptr(in), as_mut(out), n, lower, upper, training, seed, offset,
                             make_stream(backend, stream));
      },
      "dtype"_a, "in_ptr"_a, "out_ptr"_a, "n"_a, "lower"_a, "upper"_a, "training"_a, "seed"_a, "offset"_a, "backend"_a,
      "stream"_a, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "rrelu_backward",
      [](int dtype, std::uintptr_t grad_out, std::uintptr_t in, std::uintptr_t grad_in, std::int64_t n, double lower,
         double upper, bool training, std::uint64_t seed, std::uint64_t offset, int backend, std::uintptr_t stream) {
        kplay::rrelu_backward(dtype_from_code(dtype), as_ptr(grad_out), as_ptr(in), as_mut(grad_in), n, lower, upper,
                              training, seed, offset, make_stream(backend, stream));
      },
      "dtype"_a, "grad_out_ptr"_a, "in_ptr"_a, "grad_in_ptr"_a, "n"_a, "lower"_a, "upper"_a, "training"_a, "seed"_a,
      "offset"_a, "backend"_a, "stream"_a, nb::call_guard<nb::gil_scoped_release>());

  // A prepared launch path (kplay/launcher.hpp) for one (activation, dtype, direction, saved kind)
  // on one device; launch() takes integers only. vouched=True skips the pointer checks (device
  // memory of this device, primary context, overlap) for callers that know them to hold.
  nb::class_<kplay::Launcher>(m, "Launcher")
      .def_static(
          "cuda",
          [](const std::string& act, int dtype, bool backward, bool saved_output, int device, int out_dtype) {
            return kplay::Launcher::cuda(
                act, dtype_from_code(dtype), backward ? kplay::Direction::backward : kplay::Direction::forward,
                saved_output ? kplay::Saved::output : kplay::Saved::input, device, out_dtype_from_code(out_dtype));
          },
          "activation"_a, "dtype"_a, "backward"_a, "saved_output"_a, "device"_a, "out_dtype"_a = 0)
      .def_static(
          "opencl",
          [](const std::string& act, int dtype, bool backward, bool saved_output, std::uintptr_t queue) {
            return kplay::Launcher::opencl(
                act, dtype_from_code(dtype), backward ? kplay::Direction::backward : kplay::Direction::forward,
                saved_output ? kplay::Saved::output : kplay::Saved::input, reinterpret_cast<void*>(queue));
          },
          "activation"_a, "dtype"_a, "backward"_a, "saved_output"_a, "queue"_a)
      .def(
          "launch",
          [](const kplay::Launcher& l, std::uintptr_t in, std::uintptr_t in1, std::uintptr_t out, std::int64_t n,
             std::uintptr_t stream, bool vouched) {
            l.launch(as_ptr(in), as_ptr(in1), as_mut(out), n, reinterpret_cast<void*>(stream),
                     vouched ? kplay::PointerChecks::vouched : kplay::PointerChecks::full);
          },
          "in_ptr"_a, "in1_ptr"_a, "out_ptr"_a, "n"_a, "stream"_a, "vouched"_a = false,
          nb::call_guard<nb::gil_scoped_release>())
      // A gated launcher's launches (made for "gated(ACT)"): the operands of gated_forward and
      // gated_backward above; the scale for FP8 output (scale_ptr 0: the value).
      .def(
          "launch_gated_forward",
          [](const kplay::Launcher& l, std::uintptr_t a, std::int64_t a_offset, std::int64_t ld_a, std::uintptr_t b,
             std::int64_t b_offset, std::int64_t ld_b, std::uintptr_t out, std::int64_t out_offset, std::int64_t ld_out,
             std::int64_t rows, std::int64_t d, std::uintptr_t stream, bool vouched, std::uintptr_t scale_ptr,
             float scale) {
            kplay::Fp8Output o;
            o.scale_device = reinterpret_cast<const float*>(scale_ptr);
            o.scale = scale;
            l.launch_gated_forward(gin(a, a_offset, ld_a), gin(b, b_offset, ld_b), gout(out, out_offset, ld_out), rows,
                                   d, reinterpret_cast<void*>(stream),
                                   vouched ? kplay::PointerChecks::vouched : kplay::PointerChecks::full, o);
          },
          "a_ptr"_a, "a_offset"_a, "ld_a"_a, "b_ptr"_a, "b_offset"_a, "ld_b"_a, "out_ptr"_a, "out_offset"_a, "ld_out"_a,
          "rows"_a, "d"_a, "stream"_a, "vouched"_a = false, "scale_ptr"_a = 0, "scale"_a = 1.0f,
          nb::call_guard<nb::gil_scoped_release>())
      .def(
          "launch_gated_backward",
          [](const kplay::Launcher& l, std::uintptr_t g, std::int64_t g_offset, std::int64_t ld_g, std::uintptr_t a,
             std::int64_t a_offset, std::int64_t ld_a, std::uintptr_t b, std::int64_t b_offset, std::int64_t ld_b,
             std::uintptr_t ga, std::int64_t ga_offset, std::int64_t ld_ga, std::uintptr_t gb, std::int64_t gb_offset,
             std::int64_t ld_gb, std::int64_t rows, std::int64_t d, std::uintptr_t stream, bool vouched) {
            l.launch_gated_backward(gin(g, g_offset, ld_g), gin(a, a_offset, ld_a), gin(b, b_offset, ld_b),
                                    gout(ga, ga_offset, ld_ga), gout(gb, gb_offset, ld_gb), rows, d,
                                    reinterpret_cast<void*>(stream),
                                    vouched ? kplay::PointerChecks::vouched : kplay::PointerChecks::full);
          },
          "grad_out_ptr"_a, "grad_out_offset"_a, "ld_grad_out"_a, "a_ptr"_a, "a_offset"_a, "ld_a"_a, "b_ptr"_a,
          "b_offset"_a, "ld_b"_a, "grad_a_ptr"_a, "grad_a_offset"_a, "ld_grad_a"_a, "grad_b_ptr"_a, "grad_b_offset"_a,
          "ld_grad_b"_a, "rows"_a, "d"_a, "stream"_a, "vouched"_a = false, nb::call_guard<nb::gil_scoped_release>())
      // A row activation's launcher (softmax, log_softmax, softmin): forward in = x, out = y;
      // backward in = grad_out, in1 = y (saved output), out = grad_in; each with its pitch between
      // rows (inner > 1: each operand [rows, cols, inner], the rows' elements inner apart).
      .def(
          "launch_rows",
          [](const kplay::Launcher& l, std::uintptr_t in, std::int64_t ld_in, std::uintptr_t in1, std::int64_t ld_in1,
             std::uintptr_t out, std::int64_t ld_out, std::int64_t rows, std::int64_t cols, std::uintptr_t stream,
             bool vouched, std::int64_t inner) {
            l.launch_strided_rows(as_ptr(in), ld_in, as_ptr(in1), ld_in1, as_mut(out), ld_out, rows, cols, inner,
                                  reinterpret_cast<void*>(stream),
                                  vouched ? kplay::PointerChecks::vouched : kplay::PointerChecks::full);
          },
          "in_ptr"_a, "ld_in"_a, "in1_ptr"_a, "ld_in1"_a, "out_ptr"_a, "ld_out"_a, "rows"_a, "cols"_a, "stream"_a,
          "vouched"_a = false, "inner"_a = 1, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("activation", [](const kplay::Launcher& l) { return l.spec().activation; })
      .def_prop_ro("device", &kplay::Launcher::device);

  m.def("supports_saved_output", &kplay::supports_saved_output, "activation"_a);
  // For kplay._torch_ops (torch_bridge.h); the table is static, the capsule only points at it.
  m.attr("torch_bridge") =
      nb::steal(PyCapsule_New(const_cast<KplayTorchBridge*>(&torch_bridge), KPLAY_TORCH_BRIDGE_NAME, nullptr));
  m.def("version", [] { return std::string(KPLAY_PYTHON_VERSION); });
  m.def("activations", [] {
    std::vector<std::string> names;
    for (const auto& a : kplay::builtin_activations()) names.emplace_back(a.name);
    return names;
  });
  // The registry's description of each built-in: what kplay.torch, kplay.nn and the torch-name
  // table are built from. A parameter: (name, default or None when required, choice words).
  m.def("builtin_activations", [] {
    nb::list out;
    for (const auto& a : kplay::builtin_activations()) {
      nb::dict d;
      d["name"] = a.name;
      nb::list params;
      for (const auto& p : a.parameters) {
        nb::object def = nb::none();
        if (!p.choices.empty())
          def = nb::str(p.choices.at(static_cast<std::size_t>(p.default_value)).c_str());
        else if (p.default_value == p.default_value)  // not NaN
          def = nb::float_(p.default_value);
        params.append(nb::make_tuple(p.name, def, p.choices));
      }
      d["parameters"] = params;
      d["has_backward"] = a.has_backward;
      d["saves_output"] = a.saves_output;
      d["torch_class"] = a.torch_class;
      d["torch_inplace"] = a.torch_inplace;
      out.append(d);
    }
    return out;
  });

  m.def("backends", [] {
    nb::list out;
    for (const auto& r : kplay::backends()) {
      nb::dict b;
      b["backend"] = r.backend;
      b["available"] = r.available;
      b["status"] = r.status;
      nb::list devs;
      for (const auto& d : r.devices) devs.append(device_dict(d));
      b["devices"] = devs;
      out.append(b);
    }
    return out;
  });

  // (pointer, dtype code or -1, shape, strides in elements, DLPack device type, device id) of any
  // object with __dlpack__; the pointer includes the byte offset.
  m.def("dlpack_info", [](nb::ndarray<> a) {
    std::vector<std::int64_t> shape, strides;
    for (std::size_t i = 0; i < a.ndim(); ++i) {
      shape.push_back(a.shape(i));
      strides.push_back(a.stride(i));
    }
    return std::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), dlpack_dtype_code(a.dtype()), shape, strides,
                           a.device_type(), a.device_id());
  });

  // The bounds of kplay/limits.hpp, which kplay.autotune checks its arguments against before
  // they become C++ integers (kplay/_arguments.py), as the command line checks its flags.
  m.def("limits", [] {
    nb::dict d;
    d["max_elements"] = kplay::kMaxElements;
    d["max_launches"] = kplay::kMaxLaunches;
    d["min_repeats"] = kplay::kMinTuneRepeats;
    d["max_budget"] = kplay::kMaxTuneBudget;
    d["max_device"] = std::numeric_limits<int>::max();
    return d;
  });
  m.def(
      "autotune",
      [](const std::string& activation, std::uint64_t n, const std::string& dtype, const std::string& direction,
         const std::string& saved, const std::string& backend, int device, const std::string& strategy, int budget,
         int warmup, int repeats, bool resume, const std::string& db_path) {
        kplay::TuneRequest r;
        r.activation = activation;
        r.n = n;
        r.dtype = kplay::parse_dtype(dtype);
        r.direction = kplay::parse_direction(direction);
        r.saved = kplay::parse_saved(saved);
        r.backend = backend;
        r.device = device;
        r.strategy = strategy;
        r.budget = budget;
        r.warmup = warmup;
        r.repeats = repeats;
        r.resume = resume;
        r.db_path = db_path;
        return kplay::autotune(r);
      },
      "activation"_a, "n"_a, "dtype"_a, "direction"_a, "saved"_a, "backend"_a, "device"_a, "strategy"_a, "budget"_a,
      "warmup"_a, "repeats"_a, "resume"_a, "db_path"_a, nb::call_guard<nb::gil_scoped_release>());

  // Kernel database helpers; db_path "" means the default ($KPLAY_DB, else the cache dir).
  m.def(
      "db_path", [](const std::string& p) { return kplay::db::path(p); }, "db_path"_a);
  m.def(
      "db_export", [](const std::string& p) { return kplay::db::export_json(p); }, "db_path"_a);
  m.def(
      "db_import", [](const std::string& p, const std::string& text) { return kplay::db::import_json(p, text); },
      "db_path"_a, "text"_a);
  m.def(
      "db_clear", [](const std::string& p) { kplay::db::clear(p); }, "db_path"_a);
  m.def(
      "db_stats",
      [](const std::string& p) {
        const auto s = kplay::db::stats(p);
        nb::dict r;
        r["path"] = s.path;
        r["persistent"] = s.persistent;
        r["binaries"] = s.binaries;
        r["binary_bytes"] = s.binary_bytes;
        r["tunings"] = s.tunings;
        r["devices"] = s.devices;
        return r;
      },
      "db_path"_a);
}
