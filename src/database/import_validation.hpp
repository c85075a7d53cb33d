// What `kplay db import` checks beyond the document's shape (tuning_json.hpp), so that a crafted
// or damaged document can neither crash kplay nor steer it: every device's fingerprint must be
// the hash of its own fields; a tuning's fingerprint must look like one and agree with the device
// the document lists for it; names are bounded, printable and never path-like; size buckets are
// recomputed from the sizes; timings and bandwidths are finite and physically possible; every
// config passes the same checks as the command line (resolve_config), so a tuning can only ever
// select a config `kplay run` would accept; and a record's best must be one of its accepted
// candidates, unless the candidates list is empty (a config set by hand). Binaries are not part
// of the format: kplay compiles (or finds by key) its own.
#pragma once
#include "tuning_json.hpp"

namespace kplay {

// Throws Error(invalid_argument) naming the field ("tunings[2].best.block: ..."). Replaces each
// size bucket by size_bucket(n); configs are kept as written once they pass.
void validate_import(TuningDocument& doc);

// Limits of one document, beyond which it is refused rather than read.
constexpr std::size_t kMaxImportTunings = 100000;
constexpr std::size_t kMaxImportCandidates = 10000;  // per tuning
constexpr std::size_t kMaxImportText = 256;          // names, versions, strategy
constexpr std::size_t kMaxImportNote = 4096;         // notes and rejection messages
constexpr double kMaxImportGbps = 1e6;               // bandwidths, GB/s: 200x the fastest memory
constexpr double kMaxImportMs = 3.6e6;               // kernel times, ms: an hour

}  // namespace kplay
