// Whole-table tuning over devices; see table_run.hpp.
#include "table_run.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "codegen/row_codegen.hpp"
#include "kplay/error.hpp"

namespace kplay {
namespace {

std::string job_label(const TableJob& j) {
  if (j.rows) return to_string(j.spec) + " " + std::to_string(j.rows) + "x" + std::to_string(j.n / j.rows);
  return to_string(j.spec) + " n=" + std::to_string(j.n);
}

bool same_job(const TuningRecord& r, const std::string& fingerprint, const TableJob& j, const std::string& strategy) {
  // A row job's record is stored by its rows x cols elements, not its shape: one tuned for
  // another shape of as many elements is this job's only where its config holds these rows.
  const std::uint64_t capacity = j.rows ? row_capacity(r.best) : 0;
  if (capacity && capacity < j.n / j.rows) return false;
  // The database stores a forward kernel as saved=input (it saves nothing).
  return r.fingerprint == fingerprint && r.n == j.n && to_string(r.spec) == to_string(j.spec) &&
         (r.spec.saved == j.spec.saved || j.spec.direction == Direction::forward) && r.strategy == strategy;
}

}  // namespace

std::vector<TableJob> table_jobs(const std::vector<KernelSpec>& specs, const std::vector<std::uint64_t>& sizes) {
  std::vector<TableJob> jobs;
  for (const auto& s : specs)
    for (auto n : sizes) jobs.push_back({s, n, 0});
  return jobs;
}

std::vector<TableRow> run_table(const std::vector<TableDevice>& devices, KernelDatabase& db,
                                const std::vector<TableJob>& jobs, const TableOptions& o) {
  if (devices.empty()) throw Error(ErrorCode::no_device, "no device to tune on");
  // One queue per fingerprint; each queue holds every job.
  std::map<std::string, std::size_t> queue_of;
  for (const auto& d : devices) queue_of.emplace(d.fingerprint, queue_of.size());
  struct Queue {
    std::vector<TableJob> pending;
    std::size_t next = 0;
  };
  std::vector<Queue> queues(queue_of.size());
  std::vector<TableRow> rows;
  const std::vector<TuningRecord> stored = o.resume ? db.list_tuning() : std::vector<TuningRecord>{};
  for (const auto& [fp, q] : queue_of) {
    const std::size_t first_device = [&, fp = fp] {
      for (std::size_t i = 0; i < devices.size(); ++i)
        if (devices[i].fingerprint == fp) return i;
      return std::size_t{0};
    }();
    for (const auto& j : jobs) {
      const TuningRecord* done = nullptr;
      for (const auto& r : stored)
        if (same_job(r, fp, j, o.tune.strategy) && r.created_unix >= o.resume_since) done = &r;
      if (done) {
        TableRow row;
        row.device = first_device;
        row.job = j;
        row.resumed = true;
        row.record = *done;
        rows.push_back(row);
      } else {
        queues[q].pending.push_back(j);
      }
    }
  }

  std::mutex mutex;  // guards queues, rows, progress and stopped
  std::exception_ptr stopped;
  TableProgress progress;
  progress.total = jobs.size() * queues.size();
  progress.done = progress.resumed = rows.size();
  progress.current.assign(devices.size(), "");
  double best_ratio = 0;
  for (const auto& r : rows)
    if (r.record.copy_gbps > 0 && r.record.best_gbps / r.record.copy_gbps > best_ratio) {
      best_ratio = r.record.best_gbps / r.record.copy_gbps;
      char text[64];
      std::snprintf(text, sizeof text, "%.1f %% of copy: ", 100.0 * best_ratio);
      progress.best = text + job_label(r.job);
    }
  const auto start = std::chrono::steady_clock::now();
  std::size_t measured = 0;
  auto publish = [&] {  // with mutex held
    if (!o.progress) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::size_t left = progress.total - progress.done;
    // `measured` counts the jobs every device finished, so elapsed / measured is already the time
    // per job of all devices together.
    progress.eta_seconds = measured ? elapsed / static_cast<double>(measured) * static_cast<double>(left) : 0;
    o.progress(progress);
  };
  {
    std::lock_guard<std::mutex> lock(mutex);
    publish();
  }

  // Winners to verify on each device (indices into rows), and jobs being tuned per queue: a device
  // whose queue is empty still waits while an identical one tunes, since that job's winner will
  // come to it for verification.
  std::vector<std::deque<std::size_t>> checks(devices.size());
  std::vector<std::size_t> busy(queues.size(), 0);
  std::condition_variable wake;
  auto stop_all = [&](std::exception_ptr e) {  // with mutex held
    if (!stopped) stopped = std::move(e);
    for (auto& other : queues) other.next = other.pending.size();
    for (auto& c : checks) c.clear();
    wake.notify_all();
  };

  // Runs rows[index]'s winner on device d.
  auto verify_here = [&](std::size_t d, std::size_t index, std::unique_lock<std::mutex>& lock) {
    const TableJob job = rows[index].job;
    const KernelConfig best = rows[index].record.best;
    const std::size_t tuned_on = rows[index].device;
    progress.current[d] = job_label(job) + " verify (tuned on dev" + std::to_string(tuned_on) + ")";
    publish();
    lock.unlock();
    std::string why;
    try {
      why = devices[d].verify(job, best, o.tune);
    } catch (const Error& e) {
      why = e.what();
    } catch (...) {
      lock.lock();
      stop_all(std::current_exception());
      return;
    }
    lock.lock();
    TableRow& row = rows[index];
    if (why.empty()) {
      row.verified_on.push_back(d);
    } else if (row.error.empty()) {
      row.error = "tuned on device " + std::to_string(tuned_on) + ", but its winner " + to_string(best) +
                  " fails on identical device " + std::to_string(d) + ": " + why;
      ++progress.failed;
      try {
        db.remove_tuning(row.record);
      } catch (const Error& e) {  // a full disk or a read-only file: say so, go on
        row.error += "; its record could not be removed from the database: " + std::string(e.what());
      }
    }
  };

  auto worker = [&](std::size_t d) {
    const std::size_t qi = queue_of.at(devices[d].fingerprint);
    Queue& q = queues[qi];
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopped || !checks[d].empty() || q.next < q.pending.size() || busy[qi] == 0; });
      if (stopped) return;
      if (!checks[d].empty()) {
        const std::size_t index = checks[d].front();
        checks[d].pop_front();
        verify_here(d, index, lock);
        continue;
      }
      if (q.next >= q.pending.size()) {
        progress.current[d] = "done";
        publish();
        return;
      }
      const TableJob job = q.pending[q.next++];
      ++busy[qi];
      progress.current[d] = job_label(job);
      publish();
      lock.unlock();

      TableRow row;
      row.device = d;
      row.job = job;
      TuneOptions t = o.tune;
      t.n = job.n;
      t.rows = job.rows;
      t.progress = [&, d, label = job_label(job)](const TuneProgress& p) {
        std::lock_guard<std::mutex> guard(mutex);
        progress.current[d] = label + " " + p.phase + " " + std::to_string(p.done) + "/" + std::to_string(p.total);
        publish();
      };
      const auto t0 = std::chrono::steady_clock::now();
      try {
        row.record = devices[d].tune(job, t, row.times);
      } catch (const Error& e) {
        row.error = e.what();
      } catch (...) {  // not a failed job but a failed run (out of memory, interrupt): stop all
        lock.lock();
        --busy[qi];
        stop_all(std::current_exception());
        return;
      }
      row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      lock.lock();
      --busy[qi];
      ++progress.done;
      ++measured;
      if (!row.error.empty()) ++progress.failed;
      if (row.error.empty() && row.record.copy_gbps > 0) {
        const double ratio = row.record.best_gbps / row.record.copy_gbps;
        if (ratio > best_ratio) {
          best_ratio = ratio;
          char text[64];
          std::snprintf(text, sizeof text, "%.1f %% of copy: ", 100.0 * ratio);
          progress.best = text + job_label(job);
        }
      }
      rows.push_back(row);
      if (row.error.empty())
        for (std::size_t e = 0; e < devices.size(); ++e)
          if (e != d && devices[e].fingerprint == devices[d].fingerprint && devices[e].verify)
            checks[e].push_back(rows.size() - 1);
      publish();
      wake.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < devices.size(); ++d) threads.emplace_back(worker, d);
  for (auto& t : threads) t.join();
  if (stopped) std::rethrow_exception(stopped);
  // Job order, then device.
  std::vector<TableRow> ordered;
  for (const auto& j : jobs)
    for (const auto& r : rows)
      if (r.job.n == j.n && r.job.rows == j.rows && to_string(r.job.spec) == to_string(j.spec) &&
          r.job.spec.saved == j.spec.saved)
        ordered.push_back(r);
  return ordered;
}

}  // namespace kplay
