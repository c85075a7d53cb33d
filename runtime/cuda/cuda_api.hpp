// kplay's own declarations of the CUDA driver API and NVRTC: exactly the types, constants and
// entry points kplay uses, so that the CUDA backend builds without the CUDA toolkit (both
// libraries are opened with dlopen at run time; their headers were needed only to compile).
// In kplay's namespace, so that they compile beside the toolkit's cuda.h and nvrtc.h:
// cuda_api_check.cpp, built wherever those are found, asserts that both declare the same.
//
// The driver's functions are resolved through cuGetProcAddress with kDriverAbiVersion, which
// picks the ABI version of each (cuMemAlloc -> cuMemAlloc_v2, ...); their signatures here are
// those of that version (cuda_driver_functions.inc names it per function). The functions are
// declared only, never defined: kplay takes their types with decltype for the pointers it loads.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kplay::rt::cuda {

// The CUDA version whose driver ABI kplay calls: CUDA 12.0, the first with cuGetProcAddress_v2.
// Fixed rather than the toolkit's CUDA_VERSION: a newer version may return a newer ABI of a
// function (CUDA 13.0's cuCtxGetDevice takes a context too), which a driver older than it lacks.
constexpr int kDriverAbiVersion = 12000;

// Driver API types (cuda.h). The enums list only the values kplay names; their underlying type is
// fixed, as the toolkit's is in effect (unsigned int), so that every value a library returns is one.
enum CUresult : unsigned { CUDA_SUCCESS = 0 };
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // CUdeviceptr_v2 on 64-bit platforms
using cuuint64_t = std::uint64_t;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;

enum CUdevice_attribute : unsigned {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
  CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
};
enum CUfunction_attribute : unsigned {
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
};
enum CUpointer_attribute : unsigned { CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9 };
// The extensible launch configuration, for the occupancy of a cluster kernel only (kplay passes no
// attributes: its cluster kernels carry their size in __cluster_dims__). Laid out as cuda.h's;
// cuda_api_check.cpp asserts each field's offset.
struct CUlaunchAttribute_st;
struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute_st* attrs;
  unsigned int numAttrs;
};
using CUlaunchConfig = CUlaunchConfig_st;
enum CUstreamCaptureStatus : unsigned { CU_STREAM_CAPTURE_STATUS_NONE = 0 };
enum CUdriverProcAddressQueryResult : unsigned {};  // cuGetProcAddress_v2 writes it; kplay reads none
// Flag values of cuStreamCreate, cuEventCreate and cuGetProcAddress (enums CUstream_flags,
// CUevent_flags, CUdriverProcAddress_flags in cuda.h; the functions take them as integers).
enum CUstream_flags : unsigned { CU_STREAM_NON_BLOCKING = 0x1 };
enum CUevent_flags : unsigned { CU_EVENT_DEFAULT = 0x0 };
enum CUdriverProcAddress_flags : unsigned { CU_GET_PROC_ADDRESS_DEFAULT = 0 };
// The legacy default stream's handle (cuda.h: #define CU_STREAM_LEGACY ((CUstream)0x1)).
constexpr std::uintptr_t kStreamLegacyHandle = 0x1;

// NVRTC types (nvrtc.h).
enum nvrtcResult : unsigned { NVRTC_SUCCESS = 0 };
struct _nvrtcProgram;  // NOLINT(bugprone-reserved-identifier): nvrtc.h's name for the handle's type
using nvrtcProgram = _nvrtcProgram*;

namespace api {
// Driver API entry points, at the ABI of kDriverAbiVersion (cudaTypedefs.h's PFN_<name>_v<N>).
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* symbolStatus);  // _v2, found with dlsym
CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int* driverVersion);
CUresult cuGetErrorName(CUresult error, const char** pStr);
CUresult cuGetErrorString(CUresult error, const char** pStr);
CUresult cuDeviceGetCount(int* count);
CUresult cuDeviceGet(CUdevice* device, int ordinal);
CUresult cuDeviceGetName(char* name, int len, CUdevice dev);
CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev);
CUresult cuDeviceTotalMem(std::size_t* bytes, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuCtxPushCurrent(CUcontext ctx);
CUresult cuCtxPopCurrent(CUcontext* pctx);
CUresult cuCtxGetCurrent(CUcontext* pctx);
CUresult cuCtxGetDevice(CUdevice* device);
CUresult cuModuleLoadData(CUmodule* module, const void* image);
CUresult cuModuleUnload(CUmodule hmod);
CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra);
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize,
                                                     std::size_t dynamicSMemSize);
CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func, const CUlaunchConfig* config);
CUresult cuMemAlloc(CUdeviceptr* dptr, std::size_t bytesize);
CUresult cuMemFree(CUdeviceptr dptr);
CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void* srcHost, std::size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr srcDevice, std::size_t ByteCount);
CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, std::size_t ByteCount, CUstream hStream);
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, std::size_t N, CUstream hStream);
CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr);
CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags);
CUresult cuStreamDestroy(CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus);
CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags);
CUresult cuEventDestroy(CUevent hEvent);
CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult cuEventSynchronize(CUevent hEvent);
CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd);

// NVRTC entry points (found with dlsym by these names).
nvrtcResult nvrtcVersion(int* major, int* minor);
const char* nvrtcGetErrorString(nvrtcResult result);
nvrtcResult nvrtcGetNumSupportedArchs(int* numArchs);
nvrtcResult nvrtcGetSupportedArchs(int* supportedArchs);
nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name, int numHeaders,
                               const char* const* headers, const char* const* includeNames);
nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog);
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char* const* options);
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, std::size_t* logSizeRet);
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log);
nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, std::size_t* ptxSizeRet);
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* ptx);
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, std::size_t* cubinSizeRet);
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin);
}  // namespace api

}  // namespace kplay::rt::cuda
