// The device watchdog and crash reporter; see watchdog.hpp.
#include "watchdog.hpp"

#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace kplay::watchdog {
namespace {

using Clock = std::chrono::steady_clock;

struct Entry {
  Clock::time_point deadline;  // max(): no timeout (waits registered for crash reports only)
  const char* what;
  WaitFor on;
  long tid;                                        // the waiting thread
  const std::vector<const Activity*>* activities;  // the waiting thread's, alive while it waits
};

// Never destroyed: the watchdog's threads are detached and may still wait on it at exit.
struct State {
  std::mutex mutex;
  std::condition_variable wake;
  double seconds = 0;
  int exit_status = 4;
  int crash_status = 1;
  bool crashes = false;  // report_crashes() was called
  Expiry expiry;
  std::map<unsigned long long, Entry> waits;  // ids grow: the first is the oldest
  // The last device wait to end: a kernel still runs on PoCL's threads after its launch's wait, and
  // may fault before the host's next wait begins (a loaded machine widens that gap).
  std::optional<Entry> last_device;
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

long current_tid() {
  thread_local const long tid = static_cast<long>(::syscall(SYS_gettid));
  return tid;
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

std::string doing_text(const Entry& e) {
  std::string doing;
  for (const Activity* a : *e.activities) doing += (doing.empty() ? "" : ", in ") + a->label();
  return doing;
}

// With the mutex held: the waiting thread cannot leave its Wait (whose destructor takes the mutex),
// so its activities stay alive until the process ends. Records the failure, then the expiry.
[[noreturn]] void end_process(State& s, const Entry* e, const Failure& failure, const std::string& message,
                              int status) {
  bool recorded = false;
  if (e)
    for (auto it = e->activities->rbegin(); it != e->activities->rend(); ++it)
      recorded = (*it)->record(failure) || recorded;
  if (s.expiry) s.expiry(message, recorded);
  std::fflush(stdout);
  std::fprintf(stderr, "\nkplay: error: %s; stopping with exit status %d\n", message.c_str(), status);
  std::fflush(stderr);
  _exit(status);
}

[[noreturn]] void fire(State& s, const Entry& e) {
  const std::string doing = doing_text(e);
  const bool compiling = e.on == WaitFor::compiler;
  const std::string message =
      std::string(compiling ? "timeout: compiling did not finish within "
                            : "timeout: the device did not finish within ") +
      seconds_text(s.seconds) + " s (--timeout)" +
      (doing.empty() ? "" : (compiling ? " for " : " while running ") + doing) + " (" + e.what + ")" +
      (compiling ? "; the source may never finish compiling (a larger --timeout gives it more time)"
                 : "; the kernel may never end");
  end_process(s, &e, Failure{}, message, s.exit_status);
}

void watch() {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    const auto first = std::min_element(s.waits.begin(), s.waits.end(), [](const auto& a, const auto& b) {
      return a.second.deadline < b.second.deadline;
    });
    if (first == s.waits.end() || first->second.deadline == Clock::time_point::max()) {
      s.wake.wait(lock);
      continue;
    }
    if (Clock::now() >= first->second.deadline) fire(s, first->second);
    // A copy: wait_until reads the deadline again after waking, and by then the Wait that owned the
    // entry may have ended and erased it.
    const Clock::time_point deadline = first->second.deadline;
    s.wake.wait_until(lock, deadline);
  }
}

// The crash handler's side: what it may touch (async-signal-safe).
std::atomic<int> g_crash_signal{0};
std::atomic<long> g_crash_tid{0};
std::atomic<int> g_crash_status{1};
sem_t g_crash_wake;
constexpr int kReporterSeconds = 20;  // the reporter's time to record and end the process

void write_stderr(const char* text) {
  for (std::size_t left = std::strlen(text); left > 0;) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

void on_crash(int signal, siginfo_t*, void*) {
  int none = 0;
  if (g_crash_signal.compare_exchange_strong(none, signal)) {
    g_crash_tid = static_cast<long>(::syscall(SYS_gettid));
    ::sem_post(&g_crash_wake);
  }
  // The reporter ends the process (or replaces it: autotune goes on in a fresh one). Should it not
  // (it crashed too, or needs a lock this thread holds), say what little is known and end it here.
  timespec left{kReporterSeconds, 0};
  while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  char number[4] = {static_cast<char>('0' + signal / 10 % 10), static_cast<char>('0' + signal % 10), ')', '\0'};
  write_stderr("\nkplay: error: a kernel or kplay itself crashed (signal ");
  write_stderr(number[0] == '0' ? number + 1 : number);
  write_stderr("\n");
  _exit(g_crash_status.load());
}

// The handlers, installed again by every Wait while crashes are reported: PoCL's LLVM installs
// its own for the same signals when it first compiles (after report_crashes), with SA_RESETHAND.
// When the work-items of a faulting kernel fault on several threads at once, the first fault
// resets the disposition to the default before LLVM's handler can restore this one, and the
// second ends the process by the signal with no message (a kernel writing to address 64 did so in
// one run of six on PoCL, in every run under strace).
void install_crash_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  ::sigemptyset(&sa.sa_mask);
  // Not SIGFPE: PoCL handles integer division faults of kernels itself.
  for (int signal : {SIGSEGV, SIGBUS, SIGILL}) ::sigaction(signal, &sa, nullptr);
}

void report_crash() {
  while (::sem_wait(&g_crash_wake) != 0) {
  }
  const int signal = g_crash_signal.load();
  const long tid = g_crash_tid.load();
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  // The faulting thread's own wait; else the oldest wait on the device: PoCL runs kernels on its
  // own threads while kplay's waits in clFinish.
  const Entry* e = nullptr;
  for (const auto& [id, entry] : s.waits)
    if (entry.tid == tid) e = &entry;
  if (!e)
    for (const auto& [id, entry] : s.waits)
      if (entry.on == WaitFor::device) {
        e = &entry;
        break;
      }
  // No wait at all, on another thread than the last device wait's: that wait's kernel, still
  // running (a fault on that thread itself, outside any wait, is kplay's own).
  if (!e && s.waits.empty() && s.last_device && s.last_device->tid != tid) e = &*s.last_device;
  const char* name = ::strsignal(signal);
  std::string message =
      (e && e->on == WaitFor::compiler ? "the compiler crashed (signal " : "the kernel crashed (signal ") +
      std::to_string(signal) + ", " + (name ? name : "?") + ")";
  if (e) {
    const std::string doing = doing_text(*e);
    message += (doing.empty() ? "" : (e->on == WaitFor::compiler ? " for " : " while running ") + doing) + " (" +
               e->what + ")";
  } else {
    message = "kplay crashed (signal " + std::to_string(signal) + ", " + (name ? name : "?") +
              ") outside any kernel or compile";
  }
  end_process(s, e, Failure{signal}, message, s.crash_status);
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

void report_crashes(int exit_status) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.crashes) return;
    s.crashes = true;
    s.crash_status = exit_status;
  }
  g_crash_status = exit_status;
  ::sem_init(&g_crash_wake, 0, 0);
  std::thread(report_crash).detach();
  // The main thread's stack may be what overflowed: its handler runs on a stack of its own.
  static std::vector<char> alternate(1 << 16);
  stack_t st{};
  st.ss_sp = alternate.data();
  st.ss_size = alternate.size();
  ::sigaltstack(&st, nullptr);
  install_crash_handlers();
}

Wait::Wait(const char* what, WaitFor on) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.seconds <= 0 && !s.crashes) return;
  id_ = s.next_id++;
  const auto deadline =
      s.seconds > 0
          ? Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.seconds))
          : Clock::time_point::max();
  s.waits[id_] = Entry{deadline, what, on, current_tid(), &activities()};
  if (s.crashes) install_crash_handlers();
  if (s.seconds <= 0) return;
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
  const auto it = s.waits.find(id_);
  if (it == s.waits.end()) return;
  if (it->second.on == WaitFor::device) s.last_device = it->second;
  s.waits.erase(it);
}

Activity::Activity(std::string label, std::function<bool(const Failure&)> on_failure)
    : label_(std::move(label)), on_failure_(std::move(on_failure)) {
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

bool Activity::record(const Failure& failure) const {
  if (!on_failure_) return false;
  try {
    return on_failure_(failure);
  } catch (...) {
    return false;
  }
}

}  // namespace kplay::watchdog
