// Hostile and unlucky inputs: files that are not regular files or are too large, numbers out of
// range on the command line, kernels that never end (--timeout), full disks and failing output
// files. The cases that launch kernels need an OpenCL device (PoCL in CI) and skip with a message
// without one.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "db_test_support.hpp"
#include "device_fixture.hpp"
#include "kplay/error.hpp"
#include "tuner/tuner.hpp"
#include "util/bounded_file.hpp"
#include "util/watchdog.hpp"

using namespace kplay;
using kplay::test::CliResult;
using kplay::test::TempDir;

namespace {

// Every command here runs under timeout(1): a regression that hangs fails the test (status 137)
// instead of hanging it.
CliResult kplay_cli(const std::string& args, const std::string& env = "", int seconds = 120) {
  return test::run_cli(args, env + (env.empty() ? "" : " ") + "timeout -s KILL " + std::to_string(seconds));
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool opencl_or_skip() {
  std::string why;
  if (test::backend_available("opencl", &why)) return true;
  MESSAGE("skipped, no OpenCL device: " << why);
  return false;
}

// A snippet whose kernel never ends: the loop's condition is a constant, so no compiler may assume
// that it terminates and remove it.
const char* kEndlessSnippet =
    "/* loop.h: never ends */\n"
    "KP_FN KP_C kp_act_forward(KP_C x) {\n"
    "  for (;;) x = x * KP_LIT(0.5) + KP_LIT(1.0);\n"
    "  return x;\n"
    "}\n";

// A small tmpfs at `dir`, unmounted on destruction; mounted() is false where this process may
// not mount one (not root, or no CAP_SYS_ADMIN in a container).
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& dir, const char* size) : dir_(dir) {
    ::mkdir(dir.c_str(), 0700);
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, (std::string("size=") + size).c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  // Fills what is left with one file, so the next write fails with ENOSPC.
  void fill() const {
    const int fd = ::open((dir_ + "/filler").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    REQUIRE(fd >= 0);
    std::vector<char> block(4096, 'x');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    ::close(fd);
  }

 private:
  std::string dir_;
  bool mounted_ = false;
};

}  // namespace

TEST_CASE("the bounded reader takes regular files within the limit and refuses everything else") {
  TempDir dir;
  test::write_file(dir.file("ok.h"), "hello");
  CHECK(read_bounded_file(dir.file("ok.h"), 5, "test file") == "hello");
  test::write_file(dir.file("big.h"), "hello!");
  auto refused = [](const std::function<void()>& f, ErrorCode code, const std::string& text) {
    try {
      f();
      FAIL("not refused, expected: " << text);
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(e.code() == code);
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
  };
  refused([&] { read_bounded_file(dir.file("big.h"), 5, "test file"); }, ErrorCode::invalid_argument,
          "test file is larger than 5 bytes (6 bytes)");
  refused([&] { read_bounded_file("/dev/zero", 1 << 20, "test file"); }, ErrorCode::invalid_argument,
          "is a character device, not a regular file");
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);  // no writer: opening it to read would wait
  refused([&] { read_bounded_file(dir.file("fifo"), 1 << 20, "test file"); }, ErrorCode::invalid_argument,
          "is a FIFO (named pipe)");
  refused([&] { read_bounded_file(dir.path(), 1 << 20, "test file"); }, ErrorCode::invalid_argument, "is a directory");
  REQUIRE(::symlink("/dev/zero", dir.file("zero.h").c_str()) == 0);
  refused([&] { read_bounded_file(dir.file("zero.h"), 1 << 20, "test file"); }, ErrorCode::invalid_argument,
          "character device");
  refused([&] { read_bounded_file(dir.file("missing.h"), 1 << 20, "test file"); }, ErrorCode::invalid_argument,
          "cannot be opened (no such file)");

  // A stream (stdin) is read to its end or one byte past the limit, never further.
  const int zero = ::open("/dev/zero", O_RDONLY);
  REQUIRE(zero >= 0);
  refused([&] { read_bounded_stream(zero, 1 << 16, "the stream"); }, ErrorCode::invalid_argument,
          "the stream is larger than 64 KiB");
  ::close(zero);
}

TEST_CASE("kplay refuses devices, FIFOs and oversized files as imports, snippets and templates, promptly") {
  TempDir dir;
  REQUIRE(::mkfifo(dir.file("fifo.h").c_str(), 0600) == 0);
  REQUIRE(::symlink("/dev/zero", dir.file("zero.h").c_str()) == 0);
  test::write_file(dir.file("huge.h"), "KP_FN KP_C kp_act_forward(KP_C x) { return x; }\n" + std::string(1 << 20, ' '));
  const std::string db = " --db " + dir.file("k.db");
  struct Case {
    std::string args, message;
  } cases[] = {
      {"db import /dev/zero" + db, "import file '/dev/zero' is a character device"},
      {"db import " + dir.file("fifo.h") + db, "is a FIFO (named pipe)"},
      {"db import " + dir.path() + db, "is a directory"},
      {"db import - < /dev/zero" + db, "the import on standard input is larger than 64 MiB"},
      {"emit --act /dev/zero", "activation snippet '/dev/zero' is a character device"},
      {"emit --act " + dir.file("fifo.h"), "is a FIFO (named pipe)"},
      {"emit --act " + dir.file("zero.h"), "is a character device"},
      {"emit --act " + dir.file("huge.h"), "is larger than 1 MiB"},
      {"run --backend opencl --n 4096 --act /dev/zero", "activation snippet '/dev/zero' is a character device"},
  };
  for (const auto& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    const CliResult r = kplay_cli(c.args, "", 60);
    INFO("kplay " << c.args << "\n" << r.output);
    CHECK(r.status == 2);
    CHECK(r.has(c.message));
    CHECK(seconds_since(start) < 50);  // refused, not read until the timeout killed it
  }
  CHECK(kplay_cli("db list" + db).has("no tuning records"));  // nothing was imported

  // KPLAY_TEMPLATE_DIR with a FIFO where a template should be.
  const std::string templates = dir.file("templates");
  std::filesystem::copy(test::source_templates_dir(), templates, std::filesystem::copy_options::recursive);
  std::filesystem::remove(templates + "/activations/relu.h");
  REQUIRE(::mkfifo((templates + "/activations/relu.h").c_str(), 0600) == 0);
  const CliResult r = kplay_cli("emit --act relu", "KPLAY_TEMPLATE_DIR=" + templates, 60);
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(r.has("activations/relu.h (KPLAY_TEMPLATE_DIR) is a FIFO"));
}

TEST_CASE(
    "snippets and templates found through KPLAY_ACTIVATION_PATH or KPLAY_TEMPLATE_DIR are refused where others may "
    "write") {
  TempDir dir;
  const std::string acts = dir.file("acts");
  std::filesystem::create_directory(acts);
  test::write_file(acts + "/my_act.h", "KP_FN KP_C kp_act_forward(KP_C x) { return x * KP_LIT(0.5); }\n");
  // A folder anyone may write to, without the sticky bit: another user could have put the snippet there.
  REQUIRE(::chmod(acts.c_str(), 0777) == 0);
  CliResult r = kplay_cli("emit --act my_act", "KPLAY_ACTIVATION_PATH=" + acts);
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(r.has("refusing the activation snippet " + acts + "/my_act.h found on KPLAY_ACTIVATION_PATH"));
  CHECK(r.has("may be written by its group or by others"));
  REQUIRE(::chmod(acts.c_str(), 0755) == 0);  // the same folder, closed: the snippet is used
  r = kplay_cli("emit --act my_act", "KPLAY_ACTIVATION_PATH=" + acts);
  INFO(r.output);
  CHECK(r.status == 0);
  REQUIRE(::chmod((acts + "/my_act.h").c_str(), 0666) == 0);  // the file itself, writable by others
  r = kplay_cli("emit --act my_act", "KPLAY_ACTIVATION_PATH=" + acts);
  CHECK(r.status == 2);
  CHECK(r.has("refusing the activation snippet"));

  const std::string templates = dir.file("templates");
  std::filesystem::copy(test::source_templates_dir(), templates, std::filesystem::copy_options::recursive);
  r = kplay_cli("emit --act relu", "KPLAY_TEMPLATE_DIR=" + templates);
  INFO(r.output);
  CHECK(r.status == 0);
  for (const std::string& open : {templates, templates + "/activations"}) {
    REQUIRE(::chmod(open.c_str(), 0777) == 0);
    r = kplay_cli("emit --act relu", "KPLAY_TEMPLATE_DIR=" + templates);
    INFO(open << "\n" << r.output);
    CHECK(r.status == 2);
    CHECK(r.has("refusing the template " + templates + "/"));
    CHECK(r.has(open + " may be written by its group or by others"));
    REQUIRE(::chmod(open.c_str(), 0755) == 0);
  }
}

TEST_CASE("numbers on the command line are range-checked: exit 2 naming the flag, before any device work") {
  struct Case {
    const char* args;
    const char* message;
  } cases[] = {
      {"run --n 10 --in-offset 2^62", "--in-offset 2^62: at most 2^20"},
      {"run --n 10 --in-offset 4611686018427387904", "--in-offset 4611686018427387904: at most 2^20"},
      {"run --n 10 --in-offset -1", "--in-offset '-1'"},
      {"run --n 10 --out-offset 1048577", "--out-offset 1048577: at most 2^20"},
      {"run --n 0", "--n 0: there is nothing to do"},
      {"run --n 2^49", "--n 562949953421312: at most 2^48"},
      {"run --n 2^62+18446744073709551615", "does not fit in 64 bits"},
      {"run --n 10 --seed -1", "--seed: '-1' is not a whole number"},
      {"run --n 10 --seed 0x10", "--seed: '0x10' is not a whole number"},
      {"run --n 10 --repeat 0", "--repeat"},
      {"run --n 10 --repeat 100000", "--repeat"},
      {"run --n 10 --warmup -1", "--warmup"},
      {"run --n 10 --device -1", "--device"},
      {"run --n 10 --timeout -1", "--timeout -1: expected seconds from 0"},
      {"run --n 10 --timeout nan", "--timeout nan"},
      {"run --n 10 --timeout 1e300", "--timeout 1e300"},
      {"bench --n 0", "--n 0: there is nothing to do"},
      {"bench --n 4096 --repeat 0", "--repeat"},
      {"check --bound -1", "--bound -1: expected ulps above 0"},
      {"check --bound nan", "--bound nan"},
      {"check --bound 0", "--bound 0"},
      {"check --range=-inf:0", "--range '-inf:0'"},
      {"check --range=nan:1", "--range 'nan:1'"},
      {"check --seed -1", "--seed"},
      {"check --timeout inf", "--timeout inf"},
      {"autotune --n 0", "--n 0: there is nothing to do"},
      {"autotune --n 4096 --budget 0", "--budget"},
      {"autotune --n 4096 --budget -3", "--budget"},
      {"autotune --n 4096 --repeat 2", "--repeat"},
      {"autotune --n 4096 --seed -5", "--seed"},
      {"autotune --n 4096 --device 4294967296", "--device 4294967296: a device index is 0..65535"},
      {"autotune --n 4096 --device -1", "--device '-1'"},
      {"autotune --n 4096 --timeout -5", "--timeout -5"},
      {"db prune --max-mb 1e300 --db :memory:", "--max-mb 1e300: expected MiB from 0 to 2^30"},
      {"db prune --max-mb nan --db :memory:", "--max-mb nan"},
      {"db prune --max-mb inf --db :memory:", "--max-mb inf"},
      {"db prune --max-mb -1 --db :memory:", "--max-mb -1"},
      {"db show -1 --db :memory:", "'-1' is not a whole number"},
  };
  for (const auto& c : cases) {
    // --backend opencl: these are refused before a backend is made, with a device or without.
    const CliResult r =
        kplay_cli(std::string(c.args) + (std::string(c.args).rfind("db ", 0) == 0 ? "" : " --backend opencl"));
    INFO("kplay " << c.args << "\n" << r.output);
    CHECK(r.status == 2);
    CHECK(r.has(c.message));
  }
}

TEST_CASE("db prune --max-mb 1e300 is refused and deletes nothing (it once overflowed to 0 bytes)") {
  TempDir dir;
  const std::string path = dir.file("k.db");
  {
    auto db = test::open_db(path);
    db->put("binary-1", test::make_binary("b1", 3000));
    db->put("binary-2", test::make_binary("b2", 3000));
  }
  CHECK(kplay_cli("db prune --max-mb 1e300 --db " + path).status == 2);
  const CliResult r = kplay_cli("db path --db " + path);
  INFO(r.output);
  CHECK(r.has("2 binaries"));
  CHECK(kplay_cli("db prune --max-mb 1e9 --db " + path).has("removed 0 binaries; 2 remain"));
}

TEST_CASE("output files that cannot be written are an error: db export to /dev/full exits 1") {
  const CliResult r = kplay_cli("db export /dev/full --db :memory:");
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.has("db export /dev/full: cannot write (No space left on device)"));
  // To standard output: stderr stays on the pipe, stdout goes to /dev/full.
  const std::string cmd = "timeout -s KILL 60 " + test::cli_path() + " db export --db :memory: - 2>&1 >/dev/full";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[512];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int raw = pclose(p);
  INFO(out);
  CHECK(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == 1);
  CHECK(out.find("cannot write") != std::string::npos);
}

TEST_CASE("the watchdog ends the process when a wait outlives the timeout, naming what was running") {
  // In a child process: the watchdog ends the process it runs in.
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  std::fflush(stdout);  // the child flushes stdout as it ends: not this process's buffer a second time
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    watchdog::configure(0.5, 42);
    {  // a wait that ends in time does nothing
      const watchdog::Wait quick("quick wait");
    }
    const watchdog::Activity outer("the outer job");
    const watchdog::Activity inner("the inner step", [](const watchdog::Failure&) {
      std::fprintf(stderr, "[recorded]\n");
      return true;
    });
    const watchdog::Wait wait("a wait that never ends");
    ::sleep(60);
    _exit(0);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  INFO(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 42);
  CHECK(out.find("[recorded]") != std::string::npos);
  CHECK(out.find("did not finish within 0.5 s (--timeout) while running the outer job, in the inner step (a wait "
                 "that never ends)") != std::string::npos);
  CHECK(out.find("quick wait") == std::string::npos);
}

TEST_SUITE("opencl") {
  TEST_CASE("an endless kernel under --timeout 5 ends run, check and bench with exit status 4 and a message") {
    if (!opencl_or_skip()) return;
    TempDir dir;
    test::write_file(dir.file("loop.h"), kEndlessSnippet);
    const std::string act = " --backend opencl --act " + dir.file("loop.h") + " --timeout 5";
    for (const std::string& cmd : {"run --n 4096 --db :memory:" + act, "check --sample 4096" + act,
                                   "bench --n 4096 --repeat 1 --warmup 0 --no-db" + act}) {
      const auto start = std::chrono::steady_clock::now();
      const CliResult r = kplay_cli(cmd, "", 300);
      const double took = seconds_since(start);
      INFO("kplay " << cmd << "\n" << r.output << "\ntook " << took << " s");
      CHECK(r.status == 4);
      CHECK(r.has("kplay: error: timeout: the device did not finish within 5 s (--timeout) while running "));
      CHECK(r.has("loop@"));
      CHECK(r.has("stopping with exit status 4"));
      CHECK(took >= 5);  // the watchdog's own bound; the compile before it has no bound here
    }
  }

  TEST_CASE("autotune records a candidate that never ends as failed and goes on in a fresh process") {
    if (!opencl_or_skip()) return;
    TempDir dir;
    // relu's snippet, made to loop forever for one-element vectors only. The local strategy starts
    // from the widest vector and block 256; its first neighbour in the space is the same with
    // one-element vectors (search_space.cpp enumerates the narrowest first).
    const std::string templates = dir.file("templates");
    std::filesystem::copy(test::source_templates_dir(), templates, std::filesystem::copy_options::recursive);
    test::write_file(templates + "/activations/relu.h",
                     "KP_FN KP_C kp_act_forward(KP_C x) {\n"
                     "#if KP_VEC == 1\n"
                     "  for (;;) x = x * KP_LIT(0.5) + KP_LIT(1.0);\n"
                     "#endif\n"
                     "  return (x > KP_LIT(0.0) || x != x) ? x : KP_LIT(0.0);\n"
                     "}\n");
    const std::string db = dir.file("k.db");
    const std::string args =
        "autotune --backend opencl --act relu --n 4096 --strategy local --budget 2 --timeout 5 "
        "--no-resume --db " +
        db;
    const CliResult r = kplay_cli(args, "KPLAY_TEMPLATE_DIR=" + templates, 600);
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.has("in candidate vec=1 block=256 per-thread=1"));
    CHECK(r.has("that candidate is recorded as failed; going on in a fresh process"));
    CHECK(r.has("going on after 1 kernel timeout(s)"));
    CHECK(r.has("rejected vec=1 block=256 per-thread=1 grid=one-shot cache=default fast-math=off: timed out"));
    CHECK(r.has("best config"));
    CHECK_FALSE(r.has("FAILED"));
    const CliResult show = kplay_cli("db show --db " + db);
    INFO(show.output);
    CHECK(show.has("candidates: 2 tried, 1 rejected"));
    CHECK(show.has("rejected: timed out: still running after --timeout (5 s)"));

    // A kernel that never ends in any config: after the default config times out too, the job fails.
    test::write_file(dir.file("loop.h"), kEndlessSnippet);
    const CliResult all = kplay_cli("autotune --backend opencl --act " + dir.file("loop.h") +
                                        " --n 4096 --strategy local --budget 4 --timeout 5 --db " + db,
                                    "", 600);
    INFO(all.output);
    CHECK(all.status == 1);
    CHECK(all.has("ran longer than --timeout: the kernel most likely never ends"));
    // In memory nothing is recorded for a fresh process: the timeout ends autotune (exit 4).
    const CliResult memory = kplay_cli("autotune --backend opencl --act " + dir.file("loop.h") +
                                           " --n 4096 --strategy local --budget 4 --timeout 5 --db :memory:",
                                       "", 600);
    INFO(memory.output);
    CHECK(memory.status == 4);
    CHECK(memory.has("autotune cannot go on in a fresh process"));
  }

  TEST_CASE("bench --csv/--json to a file that cannot be written is an error (exit 1)") {
    if (!opencl_or_skip()) return;
    for (const char* flag : {"--csv", "--json"}) {
      const CliResult r = kplay_cli(std::string("bench --backend opencl --act relu --n 4096 --repeat 1 --warmup 0 "
                                                "--no-db ") +
                                    flag + " /dev/full");
      INFO(r.output);
      CHECK(r.status == 1);
      CHECK(r.has(std::string(flag) + " /dev/full: cannot write (No space left on device)"));
    }
    const CliResult r = kplay_cli("bench --backend opencl --act relu --n 4096 --csv /no/such/dir/x.csv --no-db");
    CHECK(r.status == 1);
    CHECK(r.has("--csv /no/such/dir/x.csv: cannot write"));
    CHECK_FALSE(r.has("activation dir"));  // refused before the sweep
  }

  TEST_CASE("autotune on a full disk keeps its measurements, reports them, says they were not stored, exits 1") {
    if (!opencl_or_skip()) return;
    TempDir dir;
    const std::string mnt = dir.file("mnt");
    SmallTmpfs fs(mnt, "2m");
    std::string db = mnt + "/k.db";
    if (fs.mounted()) {
      REQUIRE(kplay_cli("db clear --db " + db).has("cleared " + db));  // a writing command makes the file
      fs.fill();
    } else if (::geteuid() != 0) {
      MESSAGE("no tmpfs (" << std::strerror(errno) << "): a read-only directory instead");
      ::mkdir(mnt.c_str(), 0700);
      ::chmod(mnt.c_str(), 0500);
    } else {
      MESSAGE("skipped: root may not mount a tmpfs here, and a read-only directory does not stop root");
      return;
    }
    const CliResult r =
        kplay_cli("autotune --backend opencl --act relu --n 4096 --strategy local --budget 2 --db " + db);
    INFO(r.output);
    CHECK(r.status == 1);
    CHECK(r.has("relu       forward  f32   4096"));
    CHECK(r.has("(NOT STORED)"));
    CHECK(r.has("were NOT stored in the database"));
    CHECK_FALSE(r.has("FAILED"));
    CHECK(std::regex_search(r.output, std::regex("4096 +[0-9.]+ +[0-9.]+%")));  // GB/s and % of copy
  }

  TEST_CASE("tune() on a database whose disk fills up after opening keeps the record and says why it was not stored") {
    if (!opencl_or_skip()) return;
    TempDir dir;
    const std::string mnt = dir.file("mnt");
    SmallTmpfs fs(mnt, "4m");
    if (!fs.mounted()) {
      MESSAGE("skipped: no tmpfs here (" << std::strerror(errno) << ")");
      return;
    }
    test::Warnings warnings;
    auto db = test::open_db(mnt + "/k.db", &warnings);
    REQUIRE(db->persistent());
    rt::Backend* backend = test::shared_backend("opencl");
    REQUIRE(backend != nullptr);
    Engine engine(*backend, db.get());
    fs.fill();
    KernelSpec spec;
    spec.activation = "relu";
    TuneOptions o;
    o.n = 4096;
    o.strategy = "local";
    o.budget = 2;
    o.repeats = 3;
    TuneTimes times;
    const TuningRecord rec = tune(engine, *db, spec, o, &times);
    INFO(warnings.all());
    CHECK(rec.best_gbps > 0);
    CHECK(rec.candidates.size() == 2);
    CHECK_FALSE(times.not_stored.empty());
    CHECK(db->list_tuning().empty());
  }

  TEST_CASE("PoCL's kernel cache is never in a folder another user may write, and the run still passes") {
    if (!opencl_or_skip()) return;
    TempDir dir;
    // A cache home anyone may write to (no sticky bit), with a file planted where PoCL would look.
    const std::string open = dir.file("open-cache");
    std::filesystem::create_directories(open + "/pocl/kcache");
    test::write_file(open + "/pocl/kcache/planted", "not a kernel");
    for (const std::string& d : {open, open + "/pocl", open + "/pocl/kcache"}) REQUIRE(::chmod(d.c_str(), 0777) == 0);
    const auto listing = [&] {
      std::vector<std::string> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(open)) files.push_back(e.path().string());
      return files;
    };
    const std::vector<std::string> before = listing();
    const std::string run = "run --backend opencl --act relu --n 1000 --db :memory:";
    struct Case {
      std::string env, warning;
    } cases[] = {
        {"env -u POCL_CACHE_DIR XDG_CACHE_HOME=" + open, "PoCL's kernel cache cannot go where it would"},
        {"POCL_CACHE_DIR=" + open + "/pocl/kcache", "POCL_CACHE_DIR " + open + "/pocl/kcache is refused"},
    };
    for (const auto& c : cases) {
      const CliResult r = kplay_cli(run, c.env, 300);
      INFO(c.env << "\n" << r.output);
      CHECK(r.status == 0);
      CHECK(r.has(c.warning));
      CHECK(r.has("PoCL's kernel cache is off for this run"));
      CHECK(listing() == before);  // PoCL neither wrote nor built there
      const std::smatch private_folder = [&] {
        std::smatch m;
        std::regex_search(r.output, m, std::regex("off for this run \\([^)]*\\), in (/tmp/kplay-pocl-\\w+)"));
        return m;
      }();
      REQUIRE(private_folder.size() == 2);
      CHECK_FALSE(std::filesystem::exists(private_folder[1].str()));  // removed at exit
    }
  }
}
