// Compile-time proof that kplay's own CUDA declarations (cuda_api.hpp) say what the toolkit's
// cuda.h, cudaTypedefs.h and nvrtc.h say: for every entry point kplay uses, the same parameter
// and return types (kplay's enums and opaque handles standing for the toolkit's, enums of the same
// size), the driver's at the ABI version kplay asks cuGetProcAddress for; and the same value for
// every constant. Built (as an object library, before the runtime layer) wherever the toolkit's
// headers are found, so a build fails when they diverge. Defines nothing.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/cuda_api.hpp"

// kplay's signatures, taken before cuda.h is included: cuda.h defines macros for some of the
// names (cuMemAlloc -> cuMemAlloc_v2), which would rename them on the way; below, ## keeps a
// name from being expanded.
namespace kplay_sig {
namespace k = kplay::rt::cuda::api;
#define KPLAY_CU_FN(name, abi_version) using sig_##name = decltype(&k::name);
#include "runtime/cuda/cuda_driver_functions.inc"
#undef KPLAY_CU_FN
#define KPLAY_NVRTC_FN(name) using sig_##name = decltype(&k::name);
#include "runtime/cuda/nvrtc_functions.inc"
#undef KPLAY_NVRTC_FN
using sig_cuGetProcAddress = decltype(&k::cuGetProcAddress);
}  // namespace kplay_sig

#include <cuda.h>
#include <cudaTypedefs.h>
#include <nvrtc.h>

namespace {
namespace kp = kplay::rt::cuda;

static_assert(CUDA_VERSION >= kp::kDriverAbiVersion, "the toolkit is older than the driver ABI kplay declares");

// The toolkit's type for each of kplay's: the same type, but for kplay's own enums and handles.
template <class T>
struct Toolkit {
  using type = T;
};
template <class T>
struct Toolkit<T*> {
  using type = typename Toolkit<T>::type*;
};
template <class T>
struct Toolkit<const T> {
  using type = const typename Toolkit<T>::type;
};
template <class R, class... A>
struct Toolkit<R (*)(A...)> {
  using type = typename Toolkit<R>::type (*)(typename Toolkit<A>::type...);
};
#define KPLAY_SAME_TYPE(kplay_type, toolkit_type) \
  template <>                                     \
  struct Toolkit<kp::kplay_type> {                \
    using type = toolkit_type;                    \
  };
KPLAY_SAME_TYPE(CUctx_st, ::CUctx_st)
KPLAY_SAME_TYPE(CUmod_st, ::CUmod_st)
KPLAY_SAME_TYPE(CUfunc_st, ::CUfunc_st)
KPLAY_SAME_TYPE(CUstream_st, ::CUstream_st)
KPLAY_SAME_TYPE(CUevent_st, ::CUevent_st)
KPLAY_SAME_TYPE(_nvrtcProgram, ::_nvrtcProgram)
KPLAY_SAME_TYPE(CUlaunchAttribute_st, ::CUlaunchAttribute_st)
KPLAY_SAME_TYPE(CUlaunchConfig_st, ::CUlaunchConfig_st)
// The one struct kplay lays out itself: the same size, and every field at the same offset with
// the toolkit's type.
#define KPLAY_SAME_FIELD(field)                                                                                        \
  static_assert(                                                                                                       \
      offsetof(kp::CUlaunchConfig_st, field) == offsetof(::CUlaunchConfig_st, field) &&                                \
          std::is_same_v<Toolkit<decltype(kp::CUlaunchConfig_st::field)>::type, decltype(::CUlaunchConfig_st::field)>, \
      "CUlaunchConfig." #field " differs");
static_assert(sizeof(kp::CUlaunchConfig_st) == sizeof(::CUlaunchConfig_st), "CUlaunchConfig's size differs");
KPLAY_SAME_FIELD(gridDimX)
KPLAY_SAME_FIELD(gridDimY)
KPLAY_SAME_FIELD(gridDimZ)
KPLAY_SAME_FIELD(blockDimX)
KPLAY_SAME_FIELD(blockDimY)
KPLAY_SAME_FIELD(blockDimZ)
KPLAY_SAME_FIELD(sharedMemBytes)
KPLAY_SAME_FIELD(hStream)
KPLAY_SAME_FIELD(attrs)
KPLAY_SAME_FIELD(numAttrs)
// Enums, which must also agree in size and signedness (the values are checked below).
#define KPLAY_SAME_ENUM(name)                                                                                     \
  KPLAY_SAME_TYPE(name, ::name)                                                                                   \
  static_assert(                                                                                                  \
      std::is_enum_v<::name> && sizeof(kp::name) == sizeof(::name) &&                                             \
          std::is_signed_v<std::underlying_type_t<kp::name>> == std::is_signed_v<std::underlying_type_t<::name>>, \
      "kplay's " #name " is not the toolkit's size");
KPLAY_SAME_ENUM(CUresult)
KPLAY_SAME_ENUM(CUdevice_attribute)
KPLAY_SAME_ENUM(CUpointer_attribute)
KPLAY_SAME_ENUM(CUfunction_attribute)
KPLAY_SAME_ENUM(CUstreamCaptureStatus)
KPLAY_SAME_ENUM(CUdriverProcAddressQueryResult)
KPLAY_SAME_ENUM(CUstream_flags)
KPLAY_SAME_ENUM(CUevent_flags)
KPLAY_SAME_ENUM(CUdriverProcAddress_flags)
KPLAY_SAME_ENUM(nvrtcResult)

// Plain types kplay spells its own way.
static_assert(std::is_same_v<kp::CUdevice, ::CUdevice>);
static_assert(std::is_same_v<kp::CUdeviceptr, ::CUdeviceptr>);
static_assert(std::is_same_v<kp::cuuint64_t, ::cuuint64_t>);

// Each driver function: kplay's signature is the one its .inc line names (PFN_<name>_v<N>, the
// ABI that cuGetProcAddress returns for kDriverAbiVersion). Not cuda.h's own declaration, which
// follows the toolkit's CUDA_VERSION (CUDA 13.0's cuEventElapsedTime is cuEventElapsedTime_v2).
#define KPLAY_CU_FN(name, abi_version)                                                                       \
  static_assert((abi_version) <= kp::kDriverAbiVersion, #name ": ABI version newer than kDriverAbiVersion"); \
  static_assert(std::is_same_v<Toolkit<kplay_sig::sig_##name>::type, PFN_##name##_v##abi_version>,           \
                "kplay's " #name " is not PFN_" #name "_v" #abi_version);
#include "runtime/cuda/cuda_driver_functions.inc"
#undef KPLAY_CU_FN
static_assert(std::is_same_v<Toolkit<kplay_sig::sig_cuGetProcAddress>::type, PFN_cuGetProcAddress_v12000>,
              "kplay's cuGetProcAddress is not cuGetProcAddress_v2");

#define KPLAY_NVRTC_FN(name)                                                             \
  static_assert(std::is_same_v<Toolkit<kplay_sig::sig_##name>::type, decltype(&::name)>, \
                "kplay's " #name " is not nvrtc.h's");
#include "runtime/cuda/nvrtc_functions.inc"
#undef KPLAY_NVRTC_FN

// Every constant kplay names.
#define KPLAY_SAME_VALUE(name) \
  static_assert(static_cast<long long>(kp::name) == static_cast<long long>(::name), #name " differs");
KPLAY_SAME_VALUE(CUDA_SUCCESS)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)
KPLAY_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
KPLAY_SAME_VALUE(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
KPLAY_SAME_VALUE(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
KPLAY_SAME_VALUE(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
KPLAY_SAME_VALUE(CU_STREAM_CAPTURE_STATUS_NONE)
KPLAY_SAME_VALUE(CU_STREAM_NON_BLOCKING)
KPLAY_SAME_VALUE(CU_EVENT_DEFAULT)
KPLAY_SAME_VALUE(CU_GET_PROC_ADDRESS_DEFAULT)
KPLAY_SAME_VALUE(NVRTC_SUCCESS)

// CU_STREAM_LEGACY is a cast, not a constant expression: its spelling is what is compared.
#define KPLAY_TEXT(x) KPLAY_TEXT_(x)
#define KPLAY_TEXT_(x) #x
constexpr bool same_text(const char* a, const char* b) { return *a == *b && (*a == '\0' || same_text(a + 1, b + 1)); }
static_assert(kp::kStreamLegacyHandle == 0x1 && same_text(KPLAY_TEXT(CU_STREAM_LEGACY), "((CUstream)0x1)"),
              "CU_STREAM_LEGACY is no longer the handle 0x1");
}  // namespace
