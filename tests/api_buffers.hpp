// Device buffers for API tests, the way a user would hold them: CUDA device pointers in the
// primary context, or cl_mem objects of the test's own OpenCL context and queue.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kplay/kplay.hpp"

namespace kplay::test {

class UserDevice {
 public:
  virtual ~UserDevice() = default;
  virtual void* allocate(std::size_t bytes) = 0;  // freed with the UserDevice
  virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void finish() = 0;
  virtual Stream stream() = 0;
  // CUDA pointers can be offset by bytes; cl_mem objects cannot (they then return nullptr).
  virtual void* offset(void* base, std::size_t bytes) = 0;
  virtual std::vector<Dtype> dtypes() = 0;
};

// nullptr (and a reason) when the backend has no device here.
std::unique_ptr<UserDevice> cuda_user_device(std::string* why);
std::unique_ptr<UserDevice> opencl_user_device(std::string* why);

}  // namespace kplay::test
