// `kplay db`: look after the per-device kernel database: list/show tuning records, export and
// import them as JSON, clear, verify (and fix), prune cached binaries, print where it lives.
// Every subcommand takes --db PATH, which overrides $KPLAY_DB and the default path.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "command.hpp"
#include "config_flags.hpp"
#include "database/import_validation.hpp"
#include "database/kernel_database.hpp"
#include "database/shipped_tunings.hpp"
#include "database/tuning_json.hpp"
#include "db_report.hpp"
#include "kplay/error.hpp"
#include "output_file.hpp"
#include "util/bounded_file.hpp"

namespace kplay::cli {
namespace {

double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// --command goes into every shipped record as its provenance: one line of UTF-8 text within the
// reader's bound, else the loader would refuse the whole file (shipped_tunings.hpp).
void check_ship_command(const std::string& command) {
  if (command.size() > kMaxImportNote)
    throw Error(ErrorCode::invalid_argument,
                "db export --ship: --command is longer than " + std::to_string(kMaxImportNote) + " bytes");
  for (const char ch : command)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      throw Error(ErrorCode::invalid_argument,
                  "db export --ship: --command contains a control character (a newline, a tab, an escape)");
  try {
    (void)nlohmann::json(command).dump();
  } catch (const nlohmann::json::exception&) {
    throw Error(ErrorCode::invalid_argument, "db export --ship: --command is not valid UTF-8");
  }
}
constexpr double kMaxPruneMiB = 1 << 30;

class DbCommand : public Command {
 public:
  explicit DbCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("db", "the per-device kernel database: tuning records and cached binaries");
    app_->require_subcommand(1);
    add_db_flag(app_);
    list_ = sub("list", "tuning records: layer, device, kernel, size, best config, GB/s, % of copy, when");
    add_layer_flag(list_);
    show_ = sub("show", "tuning records with every candidate tried and why rejected ones failed");
    add_layer_flag(show_);
    show_->add_option("index", show_index_, "the record's number in `kplay db list` (default: all)")
        ->check(whole_number());
    show_->add_option("--act", show_act_, "only records of this activation");
    show_->add_option("--dtype", show_dtype_, "only records of this element type");
    export_ = sub("export", "write the tuning records and devices as JSON (no binaries)");
    export_->add_option("file", export_file_, "output file, or - for stdout")->capture_default_str();
    auto* ship = export_->add_option("--ship", ship_dir_,
                                     "write the shipped tunings instead: one file per device class in this folder "
                                     "(made if missing; tunings/ in the source tree), each record with its "
                                     "provenance");
    export_->add_option("--command", ship_command_, "with --ship: the command that measured the records")->needs(ship);
    import_ = sub("import", "read tuning records from a JSON export; each replaces its counterpart");
    import_->add_option("file", import_file_, "a file written by `kplay db export`, or - for stdin")->required();
    clear_ = sub("clear", "remove every tuning record, device and cached binary");
    path_ = sub("path", "print the database path and whether it is persistent");
    verify_ = sub("verify", "check the file's integrity and every binary's checksum (exit 1 on problems)");
    verify_->add_flag("--fix", fix_,
                      "remove the bad entries, or salvage a damaged file record by record into a new one "
                      "(exit 0 when that leaves the database clean)");
    prune_ = sub("prune", "evict least recently used binaries down to a size bound");
    prune_->add_option("--max-mb", max_mb_text_, "bound on cached binaries, MiB (0 .. 2^30)")->capture_default_str();
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    if (show_->parsed()) return show();
    if (export_->parsed()) return export_json();
    if (import_->parsed()) return import_json();
    if (clear_->parsed()) return clear();
    if (path_->parsed()) return path();
    if (verify_->parsed()) return verify();
    if (prune_->parsed()) return prune();
    return list();
  }

 private:
  CLI::App* sub(const char* name, const char* help) {
    CLI::App* s = app_->add_subcommand(name, help);
    add_db_flag(s);
    return s;
  }
  void add_db_flag(CLI::App* a) {
    a->add_option("--db", db_path_, "database file (default: $KPLAY_DB, else the cache dir)");
  }
  void add_layer_flag(CLI::App* a) {
    a->add_option("--layer", layer_,
                  "user: your database; shipped: the tunings kplay ships, per device class "
                  "($KPLAY_SHIPPED_TUNINGS, else installed with kplay); all: both")
        ->capture_default_str()
        ->check(CLI::IsMember({"user", "shipped", "all"}));
  }

  // The records of the chosen layers, each with its layer's name, and where they come from.
  struct Listed {
    std::vector<TuningRecord> records;
    std::vector<std::string> layers;
    std::string where;
  };
  Listed listed() {
    Listed out;
    if (layer_ != "shipped") {
      auto db = open(true);
      for (auto& r : db->list_tuning()) {
        out.records.push_back(std::move(r));
        out.layers.emplace_back("user");
      }
      out.where = db->path();
    }
    if (layer_ != "user") {
      ShippedTunings& shipped = ShippedTunings::process();
      for (auto& r : shipped.list()) {
        out.records.push_back(std::move(r));
        out.layers.emplace_back("shipped");
      }
      out.where += (out.where.empty() ? "" : " and ") + shipped.status();
    }
    return out;
  }

  // Every subcommand refuses a file that is not a kplay database (exit 2, the file untouched).
  // read_only: path, list, show, export and verify without --fix create, write and move nothing.
  // repair off: a damaged file is left for `verify` to report (and `verify --fix` to salvage).
  std::unique_ptr<KernelDatabase> open(bool read_only, bool repair = true) {
    KernelDatabase::Options o;
    o.path = db_path_;
    o.repair = repair;
    o.read_only = read_only;
    o.strict = true;
    return std::make_unique<KernelDatabase>(o);
  }

  int list() {
    const Listed l = listed();
    if (l.records.empty())
      std::printf("no tuning records in %s\n", l.where.c_str());
    else
      std::printf("%s", list_table(l.records, l.layers).c_str());
    if (layer_ == "user") {
      const std::size_t shipped = ShippedTunings::process().list().size();
      if (shipped) std::printf("(and %zu shipped tuning records below them: kplay db list --layer shipped)\n", shipped);
    }
    return kExitOk;
  }

  int show() {
    Dtype dtype{};
    if (!show_dtype_.empty()) dtype = parse_dtype(show_dtype_);
    const Listed l = listed();
    const auto& records = l.records;
    if (show_index_ > records.size())
      throw Error(ErrorCode::invalid_argument, "no tuning record " + std::to_string(show_index_) + " (" + l.where +
                                                   " holds " + std::to_string(records.size()) + ")");
    std::size_t shown = 0;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const TuningRecord& r = records[i];
      if (show_index_ != 0 && show_index_ != i + 1) continue;
      if (!show_act_.empty() && r.spec.activation != show_act_) continue;
      if (!show_dtype_.empty() && r.spec.dtype != dtype) continue;
      std::printf("%s%s", shown++ ? "\n" : "", record_details(r, i + 1, l.layers[i]).c_str());
    }
    if (shown == 0) std::printf("no matching tuning records in %s\n", l.where.c_str());
    return kExitOk;
  }

  int export_json() {
    if (!ship_dir_.empty()) return export_shipped();
    auto db = open(true);
    const nlohmann::json doc = db->export_json();
    const std::string text = doc.dump(2) + "\n";
    const std::size_t count = doc.at("tunings").size();
    write_output_file(export_file_, text, "db export");
    if (export_file_ == "-") return kExitOk;
    std::printf("exported %zu tuning records to %s\n", count, export_file_.c_str());
    return kExitOk;
  }

  // The shipped files of every device class in the database (tools/ship_defaults.sh).
  int export_shipped() {
    if (app_->get_subcommand("export")->count("file"))
      throw Error(ErrorCode::invalid_argument,
                  "db export --ship DIR writes one file per device class there; "
                  "give no output file");
    if (ship_command_.empty())
      throw Error(ErrorCode::invalid_argument,
                  "db export --ship: give --command, the command that measured the "
                  "records (their provenance)");
    check_ship_command(ship_command_);
    auto db = open(true);
    const auto files = shipped_documents(document_from_json(db->export_json()), ship_command_, KPLAY_VERSION_TEXT);
    if (files.empty()) throw Error(ErrorCode::invalid_argument, "no tuning records in " + db->path() + " to ship");
    // The folder is made as `mkdir -p` would (tools/ship_defaults.sh's --out, a new tunings/).
    std::error_code made;
    std::filesystem::create_directories(ship_dir_, made);
    if (made)
      throw Error(ErrorCode::io_failed,
                  "db export --ship: cannot make the folder " + ship_dir_ + ": " + made.message());
    for (const auto& [name, text] : files) {
      const std::string path = ship_dir_ + "/" + name;
      write_shipped_file(path, text);
      std::printf("wrote %s: %zu tuning records\n", path.c_str(), nlohmann::json::parse(text).at("tunings").size());
    }
    return kExitOk;
  }

  int import_json() {
    // Exports are kilobytes: anything over the limit, and anything but a regular file or stdin
    // (a device such as /dev/zero, a FIFO), is refused before it is read.
    constexpr std::uint64_t kMaxImportBytes = 64u << 20;
    const std::string text =
        import_file_ == "-" ? read_bounded_stream(STDIN_FILENO, kMaxImportBytes, "the import on standard input")
                            : read_bounded_file(import_file_, kMaxImportBytes, "import file '" + import_file_ + "'");
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorCode::invalid_argument, import_file_ + ": not valid JSON: " + e.what());
    }
    auto db = open(false);
    if (!db->writable()) throw Error(ErrorCode::io_failed, "not importing into " + db->path() + ": " + db->problem());
    std::size_t n = 0;
    try {
      n = db->import_json(doc);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::invalid_argument) throw;
      throw Error(ErrorCode::invalid_argument, import_file_ + ": " + e.what());
    }
    std::printf("imported %zu tuning records from %s into %s\n", n, import_file_.c_str(), db->path().c_str());
    const std::size_t in_file = doc.at("tunings").size();
    if (in_file != n)
      std::printf(
          "(the file holds %zu: records for the same device, kernel and size bucket replace each other, the "
          "last one kept)\n",
          in_file);
    return kExitOk;
  }

  int clear() {
    auto db = open(false);
    if (!db->writable())  // a fallback in memory or a read-only file: clearing would be a lie
      throw Error(ErrorCode::io_failed, "not clearing " + db->path() + ": " + db->problem());
    const auto before = db->stats();
    db->clear();
    std::printf("cleared %s: removed %llu tuning records, %llu devices and %llu binaries (%.1f MiB)\n",
                db->path().c_str(), static_cast<unsigned long long>(before.tunings),
                static_cast<unsigned long long>(before.devices), static_cast<unsigned long long>(before.binaries),
                mib(before.binary_bytes));
    return kExitOk;
  }

  int path() {
    auto db = open(true);
    const char* env = std::getenv("KPLAY_DB");
    const char* source = !db_path_.empty() ? "--db" : env && *env ? "$KPLAY_DB" : "default";
    std::printf("%s\n", db->path().c_str());
    std::printf("from: %s\n", source);
    const std::string problem = db->problem();
    if (db->persistent()) {
      const auto s = db->stats();
      std::printf("persistent: %s (%llu tuning records, %llu binaries, %.1f MiB)\n",
                  problem.empty() ? "yes" : "read-only", static_cast<unsigned long long>(s.tunings),
                  static_cast<unsigned long long>(s.binaries), mib(s.binary_bytes));
      if (!problem.empty()) std::printf("read-only: %s\n", problem.c_str());
    } else {
      std::printf("persistent: no (%s)\n", problem.empty() ? "running in memory: nothing is kept" : problem.c_str());
    }
    return kExitOk;
  }

  int verify() {
    auto db = open(!fix_, false);
    const auto r = db->verify(fix_);
    const auto count = [](std::uint64_t n) { return static_cast<unsigned long long>(n); };
    if (!r.checked) {
      std::printf("%s: cannot be used; nothing was checked\n", db->path().c_str());
      for (const auto& p : r.problems) std::printf("  problem: %s\n", p.c_str());
      return kExitFailed;
    }
    if (r.integrity_ok)
      std::printf("%s: checked %llu binaries and %llu tuning records; integrity ok\n", db->path().c_str(),
                  count(r.binaries), count(r.tunings));
    else
      std::printf(
          "%s: integrity FAILED (the file is damaged; %llu binaries and %llu tuning records could be read "
          "through SQLite)\n",
          db->path().c_str(), count(r.binaries), count(r.tunings));
    for (const auto& p : r.problems) std::printf("  problem: %s\n", p.c_str());
    if (r.unhashed > 0)
      std::printf("  note: %llu binaries have no content hash (stored by an older kplay): they are never loaded%s\n",
                  count(r.unhashed), fix_ ? "" : "; --fix removes them");
    if (!r.salvage.empty()) std::printf("salvaged into a new file: %s\n", r.salvage.c_str());
    const bool problems = !r.integrity_ok || r.bad > 0 || !r.problems.empty();
    if (!problems && !(fix_ && r.unhashed > 0)) return kExitOk;
    if (!fix_) {
      std::printf("%zu problems; `kplay db verify --fix` %s\n", r.problems.size(),
                  r.integrity_ok ? "removes the bad entries"
                                 : "salvages what can be read, record by record, into a new file and keeps this one");
      return kExitFailed;
    }
    const auto after = db->verify(false);
    const bool clean = after.checked && after.integrity_ok && after.bad == 0 && after.problems.empty();
    if (r.salvage.empty())
      std::printf("fixed: removed %llu bad entries and %llu binaries without a content hash; the database is %s\n",
                  count(r.bad), count(r.unhashed),
                  clean ? "clean now" : "still damaged (`kplay db clear` starts over)");
    else
      std::printf("the new database is %s; what could not be read is not in it (the damaged file is kept)\n",
                  clean ? "clean" : "still damaged (`kplay db clear` starts over)");
    return clean ? kExitOk : kExitFailed;
  }

  int prune() {
    // A decimal number as written (strtod alone would take hex, leading spaces, nan and inf), then
    // the bound, which keeps MiB * 2^20 well inside 64 bits (1e300 once overflowed the conversion
    // to bytes and pruned everything).
    static const std::regex decimal(R"(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)");
    const double max_mb = std::regex_match(max_mb_text_, decimal) ? std::strtod(max_mb_text_.c_str(), nullptr) : -1;
    if (!(max_mb >= 0 && max_mb <= kMaxPruneMiB))
      throw Error(ErrorCode::invalid_argument,
                  "--max-mb " + max_mb_text_ + ": expected MiB from 0 to 2^30 (1 PiB), in decimal digits");
    auto db = open(false);
    const std::uint64_t removed = db->prune(static_cast<std::uint64_t>(max_mb * (1 << 20)));
    const auto s = db->stats();
    std::printf("removed %llu binaries; %llu remain (%.1f MiB) in %s\n", static_cast<unsigned long long>(removed),
                static_cast<unsigned long long>(s.binaries), mib(s.binary_bytes), db->path().c_str());
    return kExitOk;
  }

  CLI::App *app_, *list_, *show_, *export_, *import_, *clear_, *path_, *verify_, *prune_;
  std::string db_path_;
  std::size_t show_index_ = 0;
  std::string show_act_, show_dtype_;
  std::string export_file_ = "-";
  std::string ship_dir_, ship_command_, layer_ = "user";
  std::string import_file_;
  bool fix_ = false;
  std::string max_mb_text_ = "256";
};

}  // namespace

std::unique_ptr<Command> make_db_command(CLI::App& parent) { return std::make_unique<DbCommand>(parent); }

}  // namespace kplay::cli
