// The fuzz targets of fuzz_targets.hpp: sizes and shapes, activation names, the config flags of
// the command line, `kplay db import` documents, and the files kplay reads (imports and snippets
// through the bounded reader, whatever kind of file the path names).
#include "fuzz_targets.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli/config_flags.hpp"
#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "database/kernel_database.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "spec/user_activations.hpp"
#include "util/bounded_file.hpp"
#include "util/size_parse.hpp"

namespace kplay::fuzz {
namespace {

std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

void sizes(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  try {
    parse_count(text);
  } catch (const Error&) {
  }
  try {
    const auto shape = parse_shape(text);
    if (shape.empty()) throw std::logic_error("parse_shape accepted '" + text + "' as an empty shape");
    shape_string(shape);
    shape_elements(shape);
  } catch (const Error&) {
  }
}

void activation(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  try {
    // The activation parser under test. Path-like text is left out: it names a file to open.
    if (text.find('/') != std::string::npos) return;
    const ResolvedActivation act = resolve_activation(text);
    KernelSpec spec;
    spec.activation = act.canonical;
    resolve_config(spec, KernelConfig{}, TargetLimits{});
    render_kernel(spec, resolve_config(spec, KernelConfig{}, TargetLimits{}), rt::dialect_of("opencl"));
  } catch (const Error&) {
  }
}

// Bytes split at NUL or newline into argv, parsed as `kplay run`'s knobs, then checked.
void config_flags(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args = {"kplay"};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    const char ch = static_cast<char>(data[i]);
    if (ch == '\0' || ch == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current += ch;
    }
  }
  args.push_back(current);
  if (args.size() > 64) return;
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  CLI::App app("fuzz");
  cli::ConfigFlags flags;
  cli::add_config_flags(app, flags, true, cli::KnobDefaults::fixed);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    const KernelConfig config = flags.config();
    const TargetLimits limits = cli::generic_limits(flags.backend);
    for (const auto& name : flags.activation_list()) resolve_config(flags.spec(name), config, limits);
  } catch (const CLI::Error&) {
  } catch (const Error&) {
  }
}

// Bytes that are not JSON become edits of a valid export, so most inputs get past the parser:
// each 3 bytes pick a node (a walk of up to 6 steps) and replace it with a hostile value.
nlohmann::json edited_export(const std::uint8_t* data, std::size_t size) {
  static const nlohmann::json values[] = {nullptr,
                                          -1,
                                          0,
                                          48,
                                          1u << 31,
                                          std::numeric_limits<std::int64_t>::max(),
                                          std::numeric_limits<std::uint64_t>::max(),
                                          1e308,
                                          -0.0,
                                          true,
                                          "",
                                          "../../etc/passwd",
                                          std::string(300, 'a'),
                                          std::string("a\x01b"),
                                          "selu",
                                          "one-shot",
                                          "grid-stride:0",
                                          nlohmann::json::array(),
                                          nlohmann::json::object(),
                                          "0123456789abcdef"};
  nlohmann::json doc = export_seed();
  for (std::size_t i = 0; i + 2 < size; i += 3) {
    nlohmann::json* node = &doc;
    for (int depth = data[i + 1] % 7; depth > 0 && (node->is_object() || node->is_array()) && !node->empty(); --depth) {
      auto it = node->begin();
      std::advance(it, data[i] % node->size());
      node = &*it;
    }
    if (data[i + 2] == 255 && doc.is_object() && !doc.empty())
      doc.erase(doc.begin());  // drop a top-level field
    else
      *node = values[data[i + 2] % (sizeof values / sizeof values[0])];
  }
  return doc;
}

// The whole `kplay db import` path after reading the file: parse, check, write (in memory).
void import_document(const std::uint8_t* data, std::size_t size) {
  nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) doc = edited_export(data, size);
  static const std::unique_ptr<KernelDatabase> db = [] {  // one for all inputs: opening costs more than importing
    KernelDatabase::Options o;
    o.path = ":memory:";
    o.warn = [](const std::string& m) { throw std::logic_error("database warning during import: " + m); };
    return std::make_unique<KernelDatabase>(o);
  }();
  try {
    db->import_json(doc);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::invalid_argument)
      throw std::logic_error(std::string("import failed with an error other than invalid input: ") + e.what());
  }
}

// A private folder for the files target, made once per process and removed at its end.
struct ScratchDir {
  std::string path;
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

const std::string& scratch_dir() {
  static const ScratchDir dir{[] {
    char templ[] = "/tmp/kplay-fuzz-XXXXXX";
    const char* made = ::mkdtemp(templ);
    if (!made) throw std::logic_error("cannot make a scratch folder for the files target");
    std::string d = made;
    ::mkfifo((d + "/fifo.h").c_str(), 0600);
    ::symlink("/dev/zero", (d + "/zero.h").c_str());
    ::mkdir((d + "/dir.h").c_str(), 0700);
    return d;
  }()};
  return dir.path;
}

// The first byte picks what the path names: mostly a regular file holding the rest, else a FIFO
// without a writer, /dev/zero, a symlink to it, a directory or nothing. The rest goes through
// both readers of files: a snippet by path (the bounded reader, then registration) and `kplay db
// import` (the bounded reader, parse, check, write in memory). Refusals are kplay::Error; a hang
// (a FIFO opened for reading, /dev/zero read to the end) is the watchdog's finding.
void files(const std::uint8_t* data, std::size_t size) {
  static unsigned long long count = 0;
  const std::string& dir = scratch_dir();
  const unsigned kind = size ? data[0] % 8 : 0;
  const std::string body = size ? text_of(data + 1, size - 1) : std::string();
  std::string path = dir + "/in-" + std::to_string(++count) + ".h";
  switch (kind) {
    case 5: path = dir + "/fifo.h"; break;
    case 6: path = data[0] & 8 ? dir + "/zero.h" : std::string("/dev/zero"); break;
    case 7: path = data[0] & 8 ? dir + "/dir.h" : dir + "/missing.h"; break;
    default: {
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f) throw std::logic_error("cannot write " + path);
      std::fwrite(body.data(), 1, body.size(), f);
      std::fclose(f);
    }
  }
  auto allowed = [](const Error& e) {
    if (e.code() != ErrorCode::invalid_argument && e.code() != ErrorCode::io_failed)
      throw std::logic_error(std::string("reading a file failed with an unexpected error: ") + e.what());
  };
  try {
    const std::string text = read_bounded_file(path, 4096, "fuzz input");
    if (text.size() > 4096) throw std::logic_error("read_bounded_file returned more than its limit");
    if (kind >= 5) throw std::logic_error("read_bounded_file read " + path + ", which is not a regular file");
  } catch (const Error& e) {
    allowed(e);
  }
  try {
    find_user_activation(path);
  } catch (const Error& e) {
    allowed(e);
  }
  try {
    const nlohmann::json doc = nlohmann::json::parse(read_bounded_file(path, 64u << 20, "import file"), nullptr, false);
    if (!doc.is_discarded()) {
      static const std::unique_ptr<KernelDatabase> db = [] {
        KernelDatabase::Options o;
        o.path = ":memory:";
        return std::make_unique<KernelDatabase>(o);
      }();
      db->import_json(doc);
    }
  } catch (const Error& e) {
    allowed(e);
  }
  if (kind < 5) std::remove(path.c_str());
}

const char* kExport = R"({"format": "kplay-tuning", "version": 1, "exported_unix": 1700000000,
 "devices": [{"fingerprint": "2ec32f65d7949f08", "backend": "cuda", "index": 0, "name": "GPU A",
   "platform": "", "arch": "sm_90", "driver_version": "13.0", "compiler_version": "13.0",
   "memory_bytes": 85899345920, "compute_units": 132, "max_threads_per_unit": 2048,
   "max_block": 1024, "l2_bytes": 52428800, "compile_target": "sm_90", "note": ""}],
 "tunings": [{"fingerprint": "2ec32f65d7949f08", "backend": "cuda", "device_name": "GPU A",
   "arch": "sm_90", "spec": {"activation": "selu", "direction": "backward", "dtype": "bf16",
   "saved": "output"}, "n": 1048576, "size_bucket": 20,
   "best": {"vec": 8, "block": 256, "per_thread": 4, "fast_math": false, "grid": "grid-stride",
   "waves": 4, "cache": "streaming"}, "best_ms": 0.25, "best_gbps": 900.0, "copy_gbps": 1000.0,
   "strategy": "exhaustive", "created_unix": 1700000000,
   "candidates": [{"config": {"vec": 8, "block": 256, "per_thread": 4, "fast_math": false,
     "grid": "grid-stride", "waves": 4, "cache": "streaming"}, "ok": true, "median_ms": 0.25,
     "spread_ms": 0.01, "gbps": 900.0, "rejection": ""},
    {"config": {"vec": 0, "block": 1024, "per_thread": 1, "fast_math": true,
     "grid": "one-shot", "waves": 0, "cache": "default"}, "ok": false, "median_ms": 0,
     "spread_ms": 0, "gbps": 0, "rejection": "wrong output"}]}]})";

// The shipped form (format version 2): the record's provenance an index into the table.
std::string shipped_export() {
  nlohmann::json j = nlohmann::json::parse(kExport);
  j["version"] = 2;
  j["provenances"] = nlohmann::json::array({{{"gpu", "GPU A"},
                                             {"driver", "13.0"},
                                             {"compiler", "13.0"},
                                             {"kplay", "0.1.0"},
                                             {"date", "2023-11-14"},
                                             {"command", "tools/ship_defaults.sh --sizes 1048576"}}});
  j["tunings"][0]["provenance"] = 0;
  return j.dump();
}

// Seeds for config_flags: arguments joined by NUL, as the target splits them.
std::string argv_bytes(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : std::string(1, '\0')) + a;
  return out;
}

// Edits for db_pages: (offset, byte) as 3 + 1 bytes.
std::string page_edits(const std::vector<std::pair<std::uint32_t, std::uint8_t>>& edits) {
  std::string out;
  for (const auto& [offset, byte] : edits)
    for (const std::uint32_t b : {offset & 0xffu, (offset >> 8) & 0xffu, (offset >> 16) & 0xffu, std::uint32_t{byte}})
      out += static_cast<char>(b);
  return out;
}

}  // namespace

nlohmann::json export_seed() {
  static const nlohmann::json seed = nlohmann::json::parse(kExport);
  return seed;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"sizes", sizes, {"1000", "2^31+5", "4096x393216", "1x1x1", "0", "-1", "18446744073709551616", "2^64", "1e9"}},
      {"activation",
       activation,
       {"selu", "relu", "leaky_relu(negative_slope=0.2)", "SELU", "", "gated(silu)", "gated(gelu(approximate=tanh))",
        "gated(hardtanh(-2, 2))"}},
      {"config-flags",
       config_flags,
       {argv_bytes({"--act", "selu,relu", "--vec", "4", "--block", "256"}),
        argv_bytes({"--grid", "grid-stride:8", "--cache", "streaming", "--backend", "opencl"}),
        argv_bytes({"--dtype", "bf16", "--direction", "backward", "--saved", "output", "--per-thread", "4"}),
        argv_bytes({"--fast-math", "--device", "0"}),
        argv_bytes({"--act", "gated(silu),gated(all)", "--out-dtype", "f8e4m3", "--direction", "backward"})}},
      {"import",
       import_document,
       {kExport, R"({"format": "kplay-tuning", "version": 1, "tunings": []})", shipped_export()}},
      {"files",
       files,
       {std::string("\0", 1) + "KP_FN KP_C kp_act_forward(KP_C x) { return x; }", std::string("\1") + kExport, "\5",
        "\6", "\16", "\7", "\17"}},
      // The file as stored; its header's page size and page count; a byte of the first and of a
      // later page (where the tables' rows lie in a small file).
      {"db-pages",
       db_pages,
       {"", page_edits({{16, 0x20}}), page_edits({{28, 0x7f}}), page_edits({{4200, 0x41}}),
        page_edits({{9000, 0xff}, {9001, 0xfe}})},
       20},
  };
  return all;
}

}  // namespace kplay::fuzz
