// The shipped tunings: tuning records per device class that come with kplay, read-only, as the
// layer below the user's kernel database in the config lookup (src/tuner/config_lookup.hpp):
// the user's tuning for this device, else the shipped one for its device class, else the device
// model. One file per device class, in the `kplay db export` format (tuning_json.hpp) with a
// provenance per record, written by `kplay db export --ship` (tools/ship_defaults.sh) and checked
// on reading as `kplay db import` checks a document (import_validation.hpp). Found in, first:
// $KPLAY_SHIPPED_TUNINGS ("off": no shipped layer), else beside the loaded library or command:
// <dir>/../share/kplay/tunings (installed, and the build tree's tests), <dir>/share/kplay/tunings
// (the build tree), <dir>/tunings (the Python package). A directory that is missing, or a file
// that cannot be read or fails a check, never fails a caller: one warning, and the model serves.
// See docs/design.md, "Shipped tunings".
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernel_database.hpp"
#include "runtime/backend.hpp"
#include "tuning_json.hpp"

namespace kplay {

// What a shipped tuning applies to: the stable part of the device fingerprint (backend, device
// name, architecture), without the driver and compiler versions, which change far more often than
// the best launch shape does. The name carries the memory ("NVIDIA H100 80GB HBM3", "NVIDIA
// H100 PCIe"; a MIG slice has its own), so devices of one architecture with other memory systems
// are other classes.
struct DeviceClass {
  std::string backend, name, arch;
  bool operator==(const DeviceClass& o) const { return backend == o.backend && name == o.name && arch == o.arch; }
};
DeviceClass device_class(const rt::DeviceInfo& device);
DeviceClass device_class(const TuningRecord& record);
std::string to_string(const DeviceClass& c);  // "cuda NVIDIA H100 80GB HBM3 sm_90"
// The class's file: lowercase letters, digits and '_', other runs as '-', ".json":
// "cuda-nvidia-h100-80gb-hbm3-sm_90.json".
std::string shipped_file_name(const DeviceClass& c);

// Largest shipped file read, as for `kplay db import`.
constexpr std::uint64_t kMaxShippedFileBytes = 64u << 20;

// The shipped records of one file, checked: the document as `kplay db import` checks it, and every
// record with a provenance that names its GPU and command. Throws Error(invalid_argument) naming
// the file and the field, or Error(io_failed) when it cannot be read.
std::vector<TuningRecord> read_shipped_file(const std::string& path);
// The same for a file's text, `path` naming it in messages.
std::vector<TuningRecord> read_shipped_text(const std::string& text, const std::string& path);

// Writes a shipped file (`kplay db export --ship`): `text` is first checked as read_shipped_text
// checks it, then written to a new file in the same folder and renamed over `path`, so a failed
// write leaves the old file whole. A target that is not a regular file (a symlink, a FIFO, a
// directory) is refused with Error(invalid_argument); a failed write is Error(io_failed).
void write_shipped_file(const std::string& path, const std::string& text);

// The shipped files of the tuning records in `doc` (a `kplay db export` document), one per device
// class: file name (shipped_file_name) -> text. Each record gets its provenance (its device's
// driver and compiler versions from the document, `kplay_version`, its date in UTC, `command`)
// and keeps its winning candidate alone; records are sorted by kernel and size, one per line, so
// a regenerated file differs from the old one where the data does. The provenances are written
// once each, in a table the records index (format version 2, tuning_json.hpp).
std::map<std::string, std::string> shipped_documents(const TuningDocument& doc, const std::string& command,
                                                     const std::string& kplay_version);

class ShippedTunings {
 public:
  struct Options {
    // The directory; "" looks as the header says ($KPLAY_SHIPPED_TUNINGS, then beside the
    // library); "off" is no shipped layer.
    std::string dir;
    std::function<void(const std::string&)> warn;  // once per problem; default: stderr
  };
  explicit ShippedTunings(Options options);

  // The process's own, used by the config lookup: Options{} on first use.
  static ShippedTunings& process();

  // The nearest size bucket of this device's class for spec (ties: the larger bucket, then the
  // newer record), or nullopt; `why_not` then says why (no directory, no file for the class, a
  // damaged file, no record for this kernel), for the lookup's message.
  std::optional<TuningRecord> find(const rt::DeviceInfo& device, const KernelSpec& spec, std::uint64_t n,
                                   std::string* why_not = nullptr);
  // Every record of every file in the directory, by file, for `kplay db list --layer shipped`.
  std::vector<TuningRecord> list();
  // The file find() reads for this device's class ("" without a directory).
  std::string file_for(const rt::DeviceInfo& device);
  // The directory in use, "" when none (not found, or off); `status` says which.
  std::string dir();
  std::string status();

 private:
  struct File {
    bool loaded = false;
    std::vector<TuningRecord> records;
    std::string problem;  // why it is not used ("" when it is, or does not exist)
    bool exists = false;
  };
  void locate();  // under mutex_
  File& load(const std::string& name);
  void warn(const std::string& key, const std::string& message);

  Options options_;
  std::mutex mutex_;
  bool located_ = false;
  std::string dir_, status_;
  std::map<std::string, File> files_;  // by file name
  std::map<std::string, bool> warned_;
};

}  // namespace kplay
