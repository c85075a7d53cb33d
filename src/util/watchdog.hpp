// A watchdog for waits on a device. A kernel that never ends (a user snippet with an endless
// loop) makes the driver's wait (clFinish, cuStreamSynchronize) block forever, and no API call
// can take the device back from it. The command line therefore sets a timeout; every wait on the
// device is a Wait, and when one outlives the timeout the watchdog's thread says what was running
// (the Activities of the waiting thread), lets them record what they need (the tuner marks its
// candidate as failed), and ends the process through the expiry handler, which must not return.
// Off (no thread, Waits cost a branch) until configure() sets a timeout above 0; the library's
// API never does.
#pragma once
#include <functional>
#include <string>

namespace kplay::watchdog {

// `message`: what timed out, ready to print. `recorded`: an Activity recorded what timed out,
// so that a fresh process can go on without it.
using Expiry = std::function<void(const std::string& message, bool recorded)>;

// Sets the timeout (seconds; 0 turns the watchdog off) and what ends the process; an empty
// expiry prints the message on stderr and calls _exit(exit_status).
void configure(double seconds, int exit_status, Expiry expiry = {});
double timeout_seconds();  // 0: off

// A wait on the device by the current thread; the watchdog fires when it lasts longer than the
// timeout. `what` is a string literal, e.g. "synchronize".
class Wait {
 public:
  explicit Wait(const char* what);
  ~Wait();
  Wait(const Wait&) = delete;
  Wait& operator=(const Wait&) = delete;

 private:
  unsigned long long id_ = 0;  // 0: the watchdog is off
};

// What the current thread is doing, for the message ("selu forward f32, 4096 elements"); nested
// ones print outermost first. `on_timeout`, when set, runs on the watchdog's thread if a Wait
// of this thread under it times out; it must not wait on the device, and returns true when it
// recorded what timed out. Activities are destroyed in reverse order of construction.
class Activity {
 public:
  explicit Activity(std::string label, std::function<bool()> on_timeout = {});
  ~Activity();
  Activity(const Activity&) = delete;
  Activity& operator=(const Activity&) = delete;

  const std::string& label() const { return label_; }
  bool record() const;  // runs on_timeout, if any; exceptions count as not recorded

 private:
  std::string label_;
  std::function<bool()> on_timeout_;
};

}  // namespace kplay::watchdog
