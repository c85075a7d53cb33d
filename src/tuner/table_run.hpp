// Whole tuning tables in one run: every (spec, size) job on every chosen device, devices in
// parallel (one thread each). Devices with the same fingerprint (identical GPUs, driver and
// compiler) share one queue, since their results are stored under that one fingerprint, and each
// job's winner is then verified on the others of that group; devices that differ each run the
// whole table. Jobs already tuned in the database (same fingerprint, spec, n and strategy) are
// skipped, so a killed run resumes where it stopped.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "database/kernel_database.hpp"
#include "tuner.hpp"

namespace kplay {

struct TableJob {
  KernelSpec spec;
  std::uint64_t n = 0;
  std::uint64_t rows = 0;  // a row activation's rows (n / rows elements each; 0: one row)
};

struct TableDevice {
  std::string fingerprint;  // Engine::fingerprint()
  std::string label;        // "cuda [0] " and the device name
  // Tunes one job and stores it (kplay::tune in the CLI; tests inject their own).
  std::function<TuningRecord(const TableJob&, const TuneOptions&, TuneTimes&)> tune;
  // Runs a winner tuned on an identical device here and checks it: "" or why it is wrong
  // (kplay::verify_config in the CLI). Unset: this device verifies nothing for the others.
  std::function<std::string(const TableJob&, const KernelConfig&, const TuneOptions&)> verify;
};

struct TableRow {
  std::size_t device = 0;  // index into the devices given
  TableJob job;
  bool resumed = false;  // tuned by an earlier run: not measured again
  TuningRecord record;   // the stored record (resumed ones included)
  TuneTimes times;
  double seconds = 0;
  std::vector<std::size_t> verified_on;  // identical devices that also ran and checked the winner
  std::string error;                     // the job failed (others go on), or its winner did on a twin
};

struct TableProgress {
  std::size_t done = 0, total = 0, resumed = 0, failed = 0;
  double eta_seconds = 0;
  std::vector<std::string> current;  // per device: what it is doing now
  std::string best;                  // best ratio to copy so far, and where
};

struct TableOptions {
  TuneOptions tune;  // n and progress are set per job
  bool resume = true;
  // Only records created at or after this Unix time count as done: a run started again after a
  // timeout (kplay autotune) resumes what it did itself, not what older runs left.
  std::int64_t resume_since = 0;
  std::function<void(const TableProgress&)> progress;  // called from the device threads, serialized
};

// The jobs of every activation x direction x dtype x size, in that order.
std::vector<TableJob> table_jobs(const std::vector<KernelSpec>& specs, const std::vector<std::uint64_t>& sizes);

// Runs the table; rows in job order per device. A job that fails with kplay::Error gets a row
// saying why and the others go on; so does a winner that fails on an identical device, and its
// record is removed from the database (the fingerprint must not serve it). Any other exception
// stops every device and is rethrown (what finished is in the database, so the next run resumes).
std::vector<TableRow> run_table(const std::vector<TableDevice>& devices, KernelDatabase& db,
                                const std::vector<TableJob>& jobs, const TableOptions& options);

}  // namespace kplay
