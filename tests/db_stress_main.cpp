// kplay_db_stress: a second process for the kernel database tests (tests/test_database_reliability.cpp).
//   stress DB WORKER KEYS     put/get KEYS shared keys, save tunings and progress; exit 0 if all
//                             reads were consistent and no warning came
//   hold-lock DB KEY READY MS take lock(KEY), create READY, hold it MS milliseconds, exit 0
//   write-forever DB READY    write binaries and tunings in a loop until killed; READY after a few
//   create DB GO              wait for GO to exist, then open DB (all start together), write and
//                             read back one binary and one tuning; exit 0 only if the database was
//                             persistent, both read back, and no warning came
//   read-only DB KEY          with files limited to 1 KiB (every write fails, as on a full disk):
//                             open DB, which must be read-only; exit 0 if KEY's binary and the
//                             tunings are served, saving a tuning is refused and a put is not kept
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "database/kernel_database.hpp"
#include "kplay/error.hpp"

using namespace kplay;

namespace {

bool warned = false;

std::unique_ptr<KernelDatabase> open(const std::string& path) {
  KernelDatabase::Options o;
  o.path = path;
  o.warn = [](const std::string& m) {
    warned = true;
    std::fprintf(stderr, "kplay_db_stress: warning: %s\n", m.c_str());
  };
  return std::make_unique<KernelDatabase>(o);
}

rt::Binary binary_for(int key, int worker, std::size_t size) {
  rt::Binary b;
  b.format = "cubin";
  b.bytes.assign(size, static_cast<char>(key * 31 + worker));
  b.bytes[0] = static_cast<char>(worker);
  return b;
}

TuningRecord tuning_for(int i, int worker) {
  TuningRecord r;
  r.fingerprint = "5eed5eed5eed5eed";  // shaped as a fingerprint: `db verify` checks records as an import would
  r.backend = "cuda";
  r.device_name = "Stress GPU";
  r.arch = "sm_90";
  r.spec.activation = i % 2 ? "selu" : "relu";
  r.spec.dtype = i % 3 ? Dtype::f32 : Dtype::f16;
  r.n = 1ull << (10 + i % 8);
  r.best.block = 64 << (worker % 4);
  r.best_ms = 0.1 * (i + 1);
  r.best_gbps = 100.0 + i;
  r.copy_gbps = 200;
  r.strategy = "stress";
  for (int k = 0; k < 5; ++k) {
    CandidateResult c;
    c.config.block = 32 << k;
    c.ok = (32 << k) != 2 * r.best.block;  // one rejected, never the best
    c.median_ms = 0.2 * k;
    c.rejection = c.ok ? "" : "wrong output";
    r.candidates.push_back(c);
  }
  return r;
}

int stress(const std::string& path, int worker, int keys) {
  auto db = open(path);
  if (!db->persistent()) return 2;
  int failures = 0;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < keys; ++i) {
      const std::string key = "stress-key-" + std::to_string(i);
      db->put(key, binary_for(i, worker, 512 + (i % 7) * 300));
      rt::Binary b;
      // Either worker's version is fine; a torn or missing one is not (nothing is evicted here).
      if (!db->get(key, b) || b.bytes.size() != 512u + (i % 7) * 300 || b.format != "cubin") ++failures;
      if (i % 10 == 0) db->save_tuning(tuning_for(i / 10, worker));
      if (i % 25 == 0) {
        CandidateResult c;
        c.config.block = 32 << (i % 5);
        c.ok = true;
        db->save_progress("run-" + std::to_string(worker), c);
      }
    }
  db->clear_progress("run-" + std::to_string(worker));
  if (failures) std::fprintf(stderr, "kplay_db_stress: %d inconsistent reads\n", failures);
  return failures == 0 && !warned ? 0 : 1;
}

int hold_lock(const std::string& path, const std::string& key, const std::string& ready, int ms) {
  auto db = open(path);
  auto lock = db->lock(key);
  if (!lock) return 2;
  std::ofstream(ready) << "held\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return 0;
}

int write_forever(const std::string& path, const std::string& ready) {
  auto db = open(path);
  if (!db->persistent()) return 2;
  for (long i = 0;; ++i) {
    db->put("forever-" + std::to_string(i % 300), binary_for(static_cast<int>(i), 1, 4096 + (i % 13) * 1000));
    if (i % 5 == 0) db->save_tuning(tuning_for(static_cast<int>(i % 40), 1));
    if (i == 20) std::ofstream(ready) << "writing\n";
  }
}

int read_only(const std::string& path, const std::string& key) {
  ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead of killing us
  const rlimit limit{1024, 1024};
  if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
  auto db = open(path);
  if (!db->persistent() || db->writable()) return 2;
  rt::Binary b;
  if (!db->get(key, b)) return 3;
  if (db->list_tuning().empty()) return 4;
  try {
    db->save_tuning(tuning_for(0, 1));
    return 5;
  } catch (const Error&) {
  }
  db->put("not-kept", binary_for(1, 1, 100));
  if (db->get("not-kept", b)) return 6;
  return 0;
}

// Waits for `go` so that many processes open the database in the same instant.
int create(const std::string& path, const std::string& go) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::ifstream(go)) {
    if (std::chrono::steady_clock::now() > end) return 3;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  auto db = open(path);
  if (!db->persistent()) return 2;
  const std::string key = "create-" + std::to_string(getpid());
  db->put(key, binary_for(7, static_cast<int>(getpid() % 100), 600));
  rt::Binary b;
  if (!db->get(key, b) || b.bytes.size() != 600) return 1;
  db->save_tuning(tuning_for(1, 1));
  if (db->list_tuning().empty()) return 1;
  return warned ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "stress" && argc == 5) return stress(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  if (mode == "hold-lock" && argc == 6) return hold_lock(argv[2], argv[3], argv[4], std::atoi(argv[5]));
  if (mode == "write-forever" && argc == 4) return write_forever(argv[2], argv[3]);
  if (mode == "create" && argc == 4) return create(argv[2], argv[3]);
  if (mode == "read-only" && argc == 4) return read_only(argv[2], argv[3]);
  std::fprintf(stderr,
               "usage: kplay_db_stress stress DB WORKER KEYS | hold-lock DB KEY READY MS | "
               "write-forever DB READY | create DB GO | read-only DB KEY\n");
  return 64;
}
