// A watchdog for waits on a device and on the compiler, and a reporter for crashes. A kernel
// that never ends (a user snippet with an endless loop) makes the driver's wait (clFinish,
// cuStreamSynchronize) block forever, and no API call can take the device back from it; a kernel
// that faults (a store to a bad address) ends the whole process on PoCL, which runs kernels in
// it. The command line therefore sets a timeout and asks for crash reports; every wait on the
// device or the compiler is a Wait, and when one outlives the timeout, or the process takes a
// SIGSEGV, SIGBUS or SIGILL, the watchdog's threads say what was running (the Activities of the
// waiting thread), let them record what they need (the tuner marks its candidate as failed), and
// end the process through the expiry handler, which must not return.
// Off (no thread, Waits cost a branch) until configure() sets a timeout above 0 or
// report_crashes() is called; the library's API does neither.
#pragma once
#include <functional>
#include <string>

namespace kplay::watchdog {

// `message`: what timed out or crashed, ready to print. `recorded`: an Activity recorded it, so
// that a fresh process can go on without it.
using Expiry = std::function<void(const std::string& message, bool recorded)>;

// Sets the timeout (seconds; 0 turns the watchdog off) and what ends the process; an empty
// expiry prints the message on stderr and calls _exit(exit_status).
void configure(double seconds, int exit_status, Expiry expiry = {});
double timeout_seconds();  // 0: off

// From now on a SIGSEGV, SIGBUS or SIGILL, on any thread, is reported: the faulting thread's
// handler only wakes a reporter thread (async-signal-safe), which names the Wait in progress (the
// faulting thread's own, else the oldest wait on the device: PoCL faults on its worker threads
// while kplay waits in clFinish), lets its Activities record the failure, calls the expiry
// configure() set and otherwise prints "kplay: error: the kernel crashed (signal N, ...) while
// running ..." and exits with `exit_status`. Should the reporter not end the process within
// seconds, the handler writes a shorter message itself and exits. Every Wait installs the
// handlers again (a library may have replaced them since: PoCL's LLVM does). A fault on a thread
// whose stack has overflowed runs the handler only where that thread has an alternate signal
// stack (the main thread's is set here; the kplay command gives every thread one,
// cli/thread_signal_stacks.cpp); elsewhere the process ends by the signal, as without this.
void report_crashes(int exit_status);

// What ended a Wait: a timeout (signal 0), or the crash signal.
struct Failure {
  int signal = 0;
  bool crashed() const { return signal != 0; }
};

// What a Wait waits for: the device (a kernel that may never end), or the compiler (a source
// whose compiling may never end, e.g. macros that expand exponentially); the message says which.
enum class WaitFor { device, compiler };

// A wait on the device (or the compiler) by the current thread; the watchdog fires when it lasts
// longer than the timeout. `what` is a string literal, e.g. "synchronize".
class Wait {
 public:
  explicit Wait(const char* what, WaitFor on = WaitFor::device);
  ~Wait();
  Wait(const Wait&) = delete;
  Wait& operator=(const Wait&) = delete;

 private:
  unsigned long long id_ = 0;  // 0: the watchdog is off
};

// What the current thread is doing, for the message ("selu forward f32, 4096 elements"); nested
// ones print outermost first. `on_failure`, when set, runs on a watchdog thread if a Wait of this
// thread under it times out or crashes; it must not wait on the device, and returns true when it
// recorded the failure. Activities are destroyed in reverse order of construction.
class Activity {
 public:
  explicit Activity(std::string label, std::function<bool(const Failure&)> on_failure = {});
  ~Activity();
  Activity(const Activity&) = delete;
  Activity& operator=(const Activity&) = delete;

  const std::string& label() const { return label_; }
  bool record(const Failure& failure) const;  // runs on_failure, if any; exceptions count as not recorded

 private:
  std::string label_;
  std::function<bool(const Failure&)> on_failure_;
};

}  // namespace kplay::watchdog
