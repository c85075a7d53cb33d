// The device watchdog; see watchdog.hpp.
#include "watchdog.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace kplay::watchdog {
namespace {

using Clock = std::chrono::steady_clock;

struct Entry {
  Clock::time_point deadline;
  const char* what;
  const std::vector<const Activity*>* activities;  // the waiting thread's, alive while it waits
};

// Never destroyed: the watchdog's thread is detached and may still wait on it at exit.
struct State {
  std::mutex mutex;
  std::condition_variable wake;
  double seconds = 0;
  int exit_status = 4;
  Expiry expiry;
  std::map<unsigned long long, Entry> waits;
  unsigned long long next_id = 1;
  bool thread_started = false;
};

State& state() {
  static State* s = new State;  // NOLINT(cppcoreguidelines-owning-memory): intentionally leaked
  return *s;
}

// The current thread's activities, outermost first; changed under the state's mutex.
std::vector<const Activity*>& activities() {
  thread_local std::vector<const Activity*> stack;
  return stack;
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

// With the mutex held: the waiting thread cannot leave its Wait (whose destructor takes the mutex),
// so its activities stay alive until the process ends.
[[noreturn]] void fire(State& s, const Entry& e) {
  std::string doing;
  for (const Activity* a : *e.activities) doing += (doing.empty() ? "" : ", in ") + a->label();
  const std::string message = "timeout: the device did not finish within " + seconds_text(s.seconds) +
                              " s (--timeout)" + (doing.empty() ? "" : " while running " + doing) + " (" + e.what +
                              "); the kernel may never end";
  bool recorded = false;
  for (auto it = e.activities->rbegin(); it != e.activities->rend(); ++it) recorded = (*it)->record() || recorded;
  if (s.expiry) s.expiry(message, recorded);
  std::fflush(stdout);
  std::fprintf(stderr, "\nkplay: error: %s; stopping with exit status %d\n", message.c_str(), s.exit_status);
  std::fflush(stderr);
  _exit(s.exit_status);
}

void watch() {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    if (s.waits.empty()) {
      s.wake.wait(lock);
      continue;
    }
    const auto first = std::min_element(s.waits.begin(), s.waits.end(), [](const auto& a, const auto& b) {
      return a.second.deadline < b.second.deadline;
    });
    if (Clock::now() >= first->second.deadline) fire(s, first->second);
    // A copy: wait_until reads the deadline again after waking, and by then the Wait that owned the
    // entry may have ended and erased it.
    const Clock::time_point deadline = first->second.deadline;
    s.wake.wait_until(lock, deadline);
  }
}

}  // namespace

void configure(double seconds, int exit_status, Expiry expiry) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.seconds = seconds > 0 ? seconds : 0;
  s.exit_status = exit_status;
  s.expiry = std::move(expiry);
}

double timeout_seconds() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.seconds;
}

Wait::Wait(const char* what) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.seconds <= 0) return;
  id_ = s.next_id++;
  const auto span = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.seconds));
  s.waits[id_] = Entry{Clock::now() + span, what, &activities()};
  if (!s.thread_started) {
    s.thread_started = true;
    std::thread(watch).detach();
  }
  s.wake.notify_all();
}

Wait::~Wait() {
  if (id_ == 0) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.waits.erase(id_);
}

Activity::Activity(std::string label, std::function<bool()> on_timeout)
    : label_(std::move(label)), on_timeout_(std::move(on_timeout)) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  activities().push_back(this);
}

Activity::~Activity() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto& stack = activities();
  if (!stack.empty() && stack.back() == this) stack.pop_back();
}

bool Activity::record() const {
  if (!on_timeout_) return false;
  try {
    return on_timeout_();
  } catch (...) {
    return false;
  }
}

}  // namespace kplay::watchdog
