// Semantic checks of an imported tuning document; see import_validation.hpp.
#include "import_validation.hpp"

#include <cctype>
#include <cmath>
#include <map>

#include "codegen/config_validation.hpp"
#include "engine/device_fingerprint.hpp"
#include "kplay/error.hpp"

namespace kplay {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, where + ": " + what);
}

// Printable ASCII or UTF-8 continuation bytes; no control characters, bounded.
void check_text(const std::string& text, const std::string& where, std::size_t max) {
  if (text.size() > max) bad(where, "longer than " + std::to_string(max) + " bytes");
  for (const char ch : text)
    if (std::iscntrl(static_cast<unsigned char>(ch)) && ch != '\n' && ch != '\t')
      bad(where, "contains a control character");
}

// Names end up in file names (lock files) and messages: no separators, no "..", no leading dot.
void check_name(const std::string& name, const std::string& where) {
  check_text(name, where, kMaxImportText);
  if (name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
      name.find("..") != std::string::npos || (!name.empty() && name[0] == '.'))
    bad(where, "'" + name + "' looks like a path, not a name");
}

void check_fingerprint(const std::string& fp, const std::string& where) {
  bool ok = fp.size() == 16;
  for (const char ch : fp)
    ok = ok && std::isxdigit(static_cast<unsigned char>(ch)) && !std::isupper(static_cast<unsigned char>(ch));
  if (!ok) bad(where, "'" + fp.substr(0, 40) + "' is not a device fingerprint (16 lowercase hex digits)");
}

void check_backend(const std::string& backend, const std::string& where) {
  if (backend != "cuda" && backend != "opencl") bad(where, "'" + backend + "' is not a backend (cuda or opencl)");
}

void check_time(double x, const std::string& where) {
  if (!std::isfinite(x)) bad(where, "expected a finite number");
  if (x > kMaxImportMs)
    bad(where, "expected at most " + std::to_string(kMaxImportMs / 1000) + " s of kernel time in ms");
}

// A bandwidth no device has: a measurement nobody made, and a number no report can print.
void check_gbps(double x, const std::string& where) {
  if (!std::isfinite(x)) bad(where, "expected a finite number");
  if (x > kMaxImportGbps) bad(where, "expected at most 1e6 GB/s (1 PB/s; the fastest memory moves about 5e3)");
}

// The limits a record's configs are checked against: the backend's, with CUDA's largest cluster
// (16 blocks, sm_90's non-portable size), so that a row tuning across a cluster imports; the
// device's own limits are checked again where the config is used (resolve_config at launch).
TargetLimits import_limits(const std::string& backend) {
  TargetLimits limits;
  limits.backend = backend;
  if (backend == "cuda") limits.max_cluster = 16;
  return limits;
}

// The command line's checks (config_validation.hpp), with the knob's name placed in the document.
// Stored as given (a round trip keeps every field), used only through resolve_config again.
void check_config(const KernelSpec& spec, const KernelConfig& c, const std::string& backend, const std::string& where) {
  const TargetLimits limits = import_limits(backend);
  try {
    resolve_config(spec, c, limits);
  } catch (const Error& e) {
    bad(where, e.what());
  }
}

// A tuner's record always picks its best among the candidates it measured and accepted; a record
// whose best is not one of them claims a measurement nobody made. A config set by hand is still
// importable, declared as such by an empty candidates list. Compared as resolved (vec 0 = widest).
void check_best_measured(const TuningRecord& r, const std::string& where) {
  if (r.candidates.empty()) return;
  const TargetLimits limits = import_limits(r.backend);
  const KernelConfig best = resolve_config(r.spec, r.best, limits);
  for (const CandidateResult& c : r.candidates)
    if (c.ok && resolve_config(r.spec, c.config, limits) == best) return;
  bad(where + ".best",
      "not among the record's accepted candidates (a config set by hand goes with an empty "
      "candidates list)");
}

}  // namespace

void validate_import(TuningDocument& doc) {
  std::map<std::string, const rt::DeviceInfo*> devices;
  for (std::size_t i = 0; i < doc.devices.size(); ++i) {
    const auto& [fp, d] = doc.devices[i];
    const std::string where = "devices[" + std::to_string(i) + "]";
    check_fingerprint(fp, where + ".fingerprint");
    check_backend(d.backend, where + ".backend");
    for (const auto& [name, text] : {std::pair<const char*, const std::string&>{"name", d.name},
                                     {"platform", d.platform},
                                     {"arch", d.arch},
                                     {"driver_version", d.driver_version},
                                     {"compiler_version", d.compiler_version},
                                     {"compile_target", d.compile_target}})
      check_text(text, where + "." + name, kMaxImportText);
    check_text(d.note, where + ".note", kMaxImportNote);
    if (device_fingerprint(d) != fp)
      bad(where + ".fingerprint", fp + " does not match the device it describes (" + device_fingerprint(d) + ")");
    devices[fp] = &d;
  }
  if (doc.tunings.size() > kMaxImportTunings)
    bad("tunings", "more than " + std::to_string(kMaxImportTunings) + " records");
  for (std::size_t i = 0; i < doc.tunings.size(); ++i) {
    TuningRecord& r = doc.tunings[i];
    const std::string where = "tunings[" + std::to_string(i) + "]";
    check_fingerprint(r.fingerprint, where + ".fingerprint");
    check_backend(r.backend, where + ".backend");
    check_text(r.device_name, where + ".device_name", kMaxImportText);
    check_name(r.arch, where + ".arch");
    check_name(r.spec.activation, where + ".spec.activation");
    check_text(r.strategy, where + ".strategy", kMaxImportText);
    for (const auto& [name, text] : {std::pair<const char*, const std::string&>{"gpu", r.provenance.gpu},
                                     {"driver", r.provenance.driver},
                                     {"compiler", r.provenance.compiler},
                                     {"kplay", r.provenance.kplay},
                                     {"date", r.provenance.date}})
      check_text(text, where + ".provenance." + name, kMaxImportText);
    check_text(r.provenance.command, where + ".provenance.command", kMaxImportNote);
    if (const auto it = devices.find(r.fingerprint); it != devices.end()) {
      const rt::DeviceInfo& d = *it->second;
      if (d.backend != r.backend || d.name != r.device_name || d.arch != r.arch)
        bad(where, "backend, device_name and arch disagree with the device " + r.fingerprint + " of this document");
    }
    if (r.n == 0) bad(where + ".n", "expected a size > 0");
    r.size_bucket = size_bucket(r.n);  // derived, never taken from the document (as save_tuning does)
    check_time(r.best_ms, where + ".best_ms");
    check_gbps(r.best_gbps, where + ".best_gbps");
    check_gbps(r.copy_gbps, where + ".copy_gbps");
    check_config(r.spec, r.best, r.backend, where + ".best");
    if (r.candidates.size() > kMaxImportCandidates)
      bad(where + ".candidates", "more than " + std::to_string(kMaxImportCandidates) + " candidates");
    for (std::size_t k = 0; k < r.candidates.size(); ++k) {
      const CandidateResult& c = r.candidates[k];
      const std::string cw = where + ".candidates[" + std::to_string(k) + "]";
      check_config(r.spec, c.config, r.backend, cw + ".config");
      check_time(c.median_ms, cw + ".median_ms");
      check_time(c.spread_ms, cw + ".spread_ms");
      check_gbps(c.gbps, cw + ".gbps");
      check_text(c.rejection, cw + ".rejection", kMaxImportNote);
    }
    check_best_measured(r, where);
  }
}

}  // namespace kplay
