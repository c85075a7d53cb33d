// A backend base for tests that compile and launch nothing real: no memory, no timing. Tests
// derive from it and define compile, load and launch as their check needs.
#pragma once
#include <functional>
#include <string>

#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "runtime/backend.hpp"
#include "runtime/backend_factory.hpp"

namespace kplay::test {

class MemorylessBackend : public rt::Backend {
 public:
  explicit MemorylessBackend(const std::string& backend) { info_.backend = backend; }
  const rt::DeviceInfo& info() const override { return info_; }
  const TargetLimits& limits() const override { return limits_; }
  Dialect dialect() const override { return rt::dialect_of("cuda"); }
  rt::DevicePtr allocate(std::uint64_t) override { return {}; }
  void release(rt::DevicePtr) noexcept override {}
  void upload(rt::DevicePtr, const void*, std::uint64_t) override {}
  void download(void*, rt::DevicePtr, std::uint64_t) override {}
  void fill_bytes(rt::DevicePtr, unsigned char, std::uint64_t) override {}
  void copy(rt::DevicePtr, rt::DevicePtr, std::uint64_t) override {}
  double time_ms(const std::function<void()>& work) override {
    work();
    return 0;
  }
  void synchronize() override {}

 protected:
  rt::DeviceInfo info_;
  TargetLimits limits_;
};

}  // namespace kplay::test
