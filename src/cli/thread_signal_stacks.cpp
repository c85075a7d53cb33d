// Every thread of the kplay command gets an alternate signal stack, so that the crash report
// (util/watchdog.hpp, report_crashes) also runs for a fault on a thread whose stack overflowed: a
// user snippet's large private array overflows the stack of the PoCL worker thread running it,
// and without a stack of its own no handler can run and the process ends silently by SIGSEGV.
// PoCL creates those threads itself, so the command defines pthread_create, exported from the
// executable (CMakeLists.txt) so that it interposes for every library, libpocl loaded by the
// OpenCL loader included; it starts each thread through a trampoline that sets the stack up and
// calls glibc's pthread_create underneath. Part of the executable only: never of the libraries.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kSignalStackBytes = 1 << 16;

struct Start {
  void* (*routine)(void*);
  void* arg;
};

// Set up as the thread starts; taken down by its thread_local destructor, which runs at
// pthread_exit too, before the memory goes.
struct SignalStack {
  void* memory = nullptr;
  SignalStack() {
    memory = std::malloc(kSignalStackBytes);
    if (!memory) return;
    stack_t st{};
    st.ss_sp = memory;
    st.ss_size = kSignalStackBytes;
    if (::sigaltstack(&st, nullptr) != 0) {
      std::free(memory);
      memory = nullptr;
    }
  }
  ~SignalStack() {
    if (!memory) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
    std::free(memory);
  }
  SignalStack(const SignalStack&) = delete;
  SignalStack& operator=(const SignalStack&) = delete;
};

void* trampoline(void* p) {
  const Start start = *static_cast<Start*>(p);
  delete static_cast<Start*>(p);
  thread_local SignalStack stack;
  return start.routine(start.arg);
}

using PthreadCreate = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg) {
  static const auto real = reinterpret_cast<PthreadCreate>(::dlsym(RTLD_NEXT, "pthread_create"));
  if (!real) return EAGAIN;
  auto* start = new (std::nothrow) Start{routine, arg};
  if (!start) return real(thread, attr, routine, arg);
  const int rc = real(thread, attr, trampoline, start);
  if (rc != 0) delete start;
  return rc;
}
