// kplay_fuzz: a bounded random-corpus fuzzer for the targets of fuzz_targets.hpp that needs no
// clang or libFuzzer. It mutates the seeds (bit flips, byte edits, inserted tokens, splices,
// cuts) deterministically from --seed, for --seconds or --runs (divided by the target's cost),
// whichever ends first. Built with clang, tests/fuzz/libfuzzer_main.cpp runs the same targets
// coverage-guided instead (KPLAY_LIBFUZZER).
//   kplay_fuzz TARGET|all [--seconds S] [--runs N] [--seed K]
//   kplay_fuzz TARGET --input FILE      runs one input (to reproduce a finding)
//   kplay_fuzz TARGET|all --write-corpus DIR   writes the seeds as DIR/TARGET/seed-N, the form
//                                       of the checked-in corpus libFuzzer starts from
//   kplay_fuzz TARGET|all --check-corpus DIR   exit 1 where DIR does not hold them so
// Exit 0: no finding. On a finding (an exception the target does not allow) it prints the
// target and the input (C-escaped) and exits 1; a crash or sanitizer report ends the process,
// and an input that runs longer than 10 s is reported as a hang by the watchdog (exit 1).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "fuzz_targets.hpp"

namespace {

using kplay::fuzz::Target;

std::string current_target;
std::string current_input;

std::string escaped(const std::string& bytes) {
  std::string out;
  for (const unsigned char c : bytes) {
    char buf[8];
    if (c == '\\' || c == '"')
      out += '\\', out += static_cast<char>(c);
    else if (c >= 32 && c < 127)
      out += static_cast<char>(c);
    else
      std::snprintf(buf, sizeof buf, "\\x%02x", c), out += buf;
  }
  return out;
}

void report(const char* what) {
  std::fprintf(stderr, "kplay_fuzz: %s in target '%s' on input (%zu bytes):\n\"%s\"\n", what, current_target.c_str(),
               current_input.size(), escaped(current_input).c_str());
}

extern "C" void on_hang(int) {
  report("HANG (one input ran longer than 10 s)");
  _exit(1);
}

// Tokens that parsers of this project care about, for insertion.
const char* const kTokens[] = {"x",
                               "^",
                               "+",
                               "2^63",
                               "18446744073709551615",
                               "-",
                               "0",
                               "--",
                               "--vec",
                               "--block",
                               "--grid",
                               "grid-stride:",
                               "one-shot",
                               "null",
                               "[]",
                               "{}",
                               "\"",
                               ",",
                               ":",
                               "1e999",
                               "-1",
                               "(",
                               ")",
                               "=",
                               "..",
                               "/",
                               "\xff",
                               "\xc3\xa9",
                               "true",
                               "\"binaries\""};

std::string mutate(const std::string& seed, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  std::string s = seed;
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    const std::size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 7) {
      case 0:
        if (!s.empty()) s[pos % s.size()] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:
        if (!s.empty()) s[pos % s.size()] = static_cast<char>(rng());
        break;
      case 2: s.insert(pos, 1, static_cast<char>(rng())); break;
      case 3:
        if (!s.empty()) s.erase(pos % s.size(), 1 + rng() % 8);
        break;
      case 4: s.insert(pos, kTokens[rng() % (sizeof kTokens / sizeof kTokens[0])]); break;
      case 5: {  // splice a piece of another corpus entry
        const std::string& other = corpus[rng() % corpus.size()];
        if (!other.empty()) {
          const std::size_t from = rng() % other.size();
          s.insert(pos, other.substr(from, 1 + rng() % 32));
        }
        break;
      }
      default:  // repeat a piece (long inputs, deep nesting)
        if (!s.empty()) {
          const std::string piece = s.substr(pos % s.size(), 1 + rng() % 4);
          for (int k = static_cast<int>(rng() % 64); k > 0; --k) s.insert(pos, piece);
        }
    }
  }
  if (s.size() > 1u << 16) s.resize(1u << 16);
  return s;
}

bool run_one(const Target& t, const std::string& input) {
  current_input = input;
  alarm(10);
  try {
    t.run(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  } catch (const std::exception& e) {
    report((std::string("UNEXPECTED EXCEPTION: ") + e.what()).c_str());
    return false;
  } catch (...) {
    report("UNEXPECTED EXCEPTION of unknown type");
    return false;
  }
  alarm(0);
  return true;
}

// Runs one target; returns the number of inputs tried, or -1 on a finding.
long fuzz(const Target& t, double seconds, long runs, std::uint64_t seed) {
  current_target = t.name;
  std::mt19937_64 rng(seed);
  std::vector<std::string> corpus = t.seeds;
  long n = 0;
  for (const auto& s : corpus)
    if (!run_one(t, s)) return -1;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  const long most = std::max(1L, runs / t.cost);
  while (n < most && std::chrono::steady_clock::now() < end) {
    const std::string input = mutate(corpus[rng() % corpus.size()], corpus, rng);
    if (!run_one(t, input)) return -1;
    ++n;
    // Keep some mutants as new starting points, so edits accumulate (bounded corpus).
    if (rng() % 16 == 0) {
      if (corpus.size() < 256)
        corpus.push_back(input);
      else
        corpus[t.seeds.size() + rng() % (corpus.size() - t.seeds.size())] = input;
    }
  }
  return n;
}

// --check-corpus: whether DIR/TARGET/seed-N holds each seed as --write-corpus writes it (ctest
// runs it on tests/fuzz/corpus, so the committed corpus cannot drift from the seeds).
int check_corpus(const std::string& which, const std::string& dir) {
  int bad = 0;
  for (const auto& t : kplay::fuzz::targets()) {
    if (which != "all" && which != t.name) continue;
    for (std::size_t i = 0; i < t.seeds.size(); ++i) {
      const std::string path = dir + "/" + t.name + "/seed-" + std::to_string(i);
      std::ifstream in(path, std::ios::binary);
      const std::string held((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in.is_open() || held != t.seeds[i]) {
        std::fprintf(stderr, "kplay_fuzz: %s is not seed %zu of target '%s' (kplay_fuzz all --write-corpus %s)\n",
                     path.c_str(), i, t.name, dir.c_str());
        ++bad;
      }
    }
  }
  return bad ? 1 : 0;
}

int write_corpus(const std::string& which, const std::string& dir) {
  for (const auto& t : kplay::fuzz::targets()) {
    if (which != "all" && which != t.name) continue;
    const std::string folder = dir + "/" + t.name;
    std::filesystem::create_directories(folder);
    for (std::size_t i = 0; i < t.seeds.size(); ++i) {
      std::ofstream out(folder + "/seed-" + std::to_string(i), std::ios::binary | std::ios::trunc);
      out << t.seeds[i];
      if (!out) {
        std::fprintf(stderr, "kplay_fuzz: cannot write %s/seed-%zu\n", folder.c_str(), i);
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = argc > 1 ? argv[1] : "";
  double seconds = 10;
  long runs = 1L << 40;
  std::uint64_t seed = 1;
  std::string input_file, corpus_dir, check_dir;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seconds")
      seconds = std::atof(argv[i + 1]);
    else if (flag == "--runs")
      runs = std::atol(argv[i + 1]);
    else if (flag == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--input")
      input_file = argv[i + 1];
    else if (flag == "--write-corpus")
      corpus_dir = argv[i + 1];
    else if (flag == "--check-corpus")
      check_dir = argv[i + 1];
    else
      which.clear();
  }
  bool known = which == "all";
  for (const auto& t : kplay::fuzz::targets()) known = known || which == t.name;
  if (!known || argc % 2 != 0) {
    std::fprintf(stderr,
                 "usage: kplay_fuzz TARGET|all [--seconds S] [--runs N] [--seed K] [--input FILE] "
                 "[--write-corpus DIR] [--check-corpus DIR]; targets:");
    for (const auto& t : kplay::fuzz::targets()) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, "\n");
    return 64;
  }
  if (!corpus_dir.empty()) return write_corpus(which, corpus_dir);
  if (!check_dir.empty()) return check_corpus(which, check_dir);
  signal(SIGALRM, on_hang);
  if (!input_file.empty()) {
    std::ifstream in(input_file, std::ios::binary);
    const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto& t : kplay::fuzz::targets())
      if (which == t.name) {
        current_target = t.name;
        return run_one(t, input) ? 0 : 1;
      }
    return 64;
  }
  for (const auto& t : kplay::fuzz::targets()) {
    if (which != "all" && which != t.name) continue;
    const auto start = std::chrono::steady_clock::now();
    const long n = fuzz(t, seconds, runs, seed);
    if (n < 0) return 1;
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("kplay_fuzz: %-12s %8ld inputs in %.1f s, no finding (seed %llu)\n", t.name, n, took,
                static_cast<unsigned long long>(seed));
  }
  return 0;
}
