// JSON forms of the tuning vocabulary: KernelConfig and KernelSpec (as stored in the database's
// config columns), candidates, tuning records, devices, and the export document. Names and
// values are those of kplay/types.hpp's to_string/parse helpers, so a config reads the same in
// JSON as on the command line:
//   {"vec": 4, "block": 256, "per_thread": 1, "fast_math": false, "grid": "grid-stride",
//    "waves": 4, "cache": "default"}
//   {"activation": "selu", "direction": "backward", "dtype": "f16", "saved": "output"}
// The *_from_json functions check every field and throw Error(invalid_argument) naming the
// field's place in the document ("tunings[3].best.block: expected an integer").
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernel_database.hpp"

namespace kplay {

// Export document format; import accepts this version and older. Version 2 adds "provenances", a
// table that shipped records refer to by index (`"provenance": 0`): a shipped file's records share
// a few provenances, which named in each record made a third of the file. A document without the
// table (every `kplay db export`) is written as version 1, which any kplay reads.
constexpr int kTuningFormatVersion = 2;
constexpr int kTuningExportVersion = 1;
constexpr const char* kTuningFormatName = "kplay-tuning";

nlohmann::json config_to_json(const KernelConfig& c);
KernelConfig config_from_json(const nlohmann::json& j, const std::string& where = "config");

nlohmann::json spec_to_json(const KernelSpec& s);
KernelSpec spec_from_json(const nlohmann::json& j, const std::string& where = "spec");

nlohmann::json candidate_to_json(const CandidateResult& c);
CandidateResult candidate_from_json(const nlohmann::json& j, const std::string& where);

// A shipped record's provenance: {"gpu", "driver", "compiler", "kplay", "date", "command"}, all
// strings; a record carries it only when it has one, as that object or (version 2) as an index
// into the document's "provenances".
nlohmann::json provenance_to_json(const Provenance& p);
Provenance provenance_from_json(const nlohmann::json& j, const std::string& where);

nlohmann::json tuning_to_json(const TuningRecord& r);  // without `match`
// `provenances`: the document's table, each entry checked already (nullptr: none).
TuningRecord tuning_from_json(const nlohmann::json& j, const std::string& where,
                              const std::vector<Provenance>* provenances = nullptr);

nlohmann::json device_to_json(const std::string& fingerprint, const rt::DeviceInfo& d);
std::pair<std::string, rt::DeviceInfo> device_from_json(const nlohmann::json& j, const std::string& where);

// Configs as stored in a text column: compact JSON with sorted keys, so equal configs are equal
// text (the progress table relies on it).
std::string config_text(const KernelConfig& c);
KernelConfig config_from_text(const std::string& text);  // throws Error(invalid_argument)

// The whole export document, and its parsed contents.
struct TuningDocument {
  std::vector<std::pair<std::string, rt::DeviceInfo>> devices;
  std::vector<TuningRecord> tunings;
};
nlohmann::json document_to_json(const TuningDocument& doc);
TuningDocument document_from_json(const nlohmann::json& j);

}  // namespace kplay
