// Text views of tuning records for `kplay db list/show`; see db_report.hpp.
#include "db_report.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace kplay::cli {
namespace {

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

std::string device_text(const TuningRecord& r) {
  std::string out = r.device_name.empty() ? "?" : r.device_name;
  out += " (" + r.backend + (r.arch.empty() ? "" : " " + r.arch) + ")";
  return out;
}

// Rows of cells as aligned columns; the last column is not padded.
std::string columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string size_text(std::uint64_t n, int bucket) {
  std::string out = "2^" + std::to_string(bucket);
  if (bucket >= 64 || n != (1ull << bucket)) out += " (n=" + std::to_string(n) + ")";
  return out;
}

std::string time_text(std::int64_t unix_time) {
  if (unix_time <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

std::string copy_percent(double gbps, double copy_gbps) {
  return copy_gbps > 0 ? format("%.1f %%", 100.0 * gbps / copy_gbps) : "-";
}

std::string list_table(const std::vector<TuningRecord>& records, const std::vector<std::string>& layers) {
  std::vector<std::vector<std::string>> rows = {
      {"#", "LAYER", "DEVICE", "KERNEL", "SIZE", "BEST CONFIG", "GB/S", "OF COPY", "TUNED"}};
  for (std::size_t i = 0; i < records.size(); ++i) {
    const TuningRecord& r = records[i];
    rows.push_back({std::to_string(i + 1), i < layers.size() ? layers[i] : "user", device_text(r), to_string(r.spec),
                    size_text(r.n, r.size_bucket), to_string(r.best), format("%.1f", r.best_gbps),
                    copy_percent(r.best_gbps, r.copy_gbps), time_text(r.created_unix)});
  }
  return columns(rows);
}

std::string record_details(const TuningRecord& r, std::size_t number, const std::string& layer) {
  std::string out = "[" + std::to_string(number) + "] " + to_string(r.spec) + " on " + device_text(r) + "\n";
  out += "    layer: " + layer + "\n";
  out += "    device fingerprint: " + r.fingerprint + "\n";
  const Provenance& p = r.provenance;
  if (!p.empty())
    out += "    provenance: measured on " + p.gpu + " (driver " + p.driver + ", " + p.compiler + ", kplay " + p.kplay +
           ") on " + p.date + " by `" + p.command + "`\n";
  out += "    size: " + size_text(r.n, r.size_bucket) + ", tuned " + time_text(r.created_unix) +
         (r.strategy.empty() ? "" : " by strategy '" + r.strategy + "'") + "\n";
  out += "    best: " + to_string(r.best) + "\n";
  out += "          " + format("%.4f ms, ", r.best_ms) + format("%.1f GB/s", r.best_gbps) +
         (r.copy_gbps > 0 ? " = " + copy_percent(r.best_gbps, r.copy_gbps) + " of copy" +
                                format(" (%.1f GB/s in the same run)", r.copy_gbps)
                          : std::string(" (copy not measured)")) +
         "\n";
  std::size_t rejected = 0;
  for (const auto& c : r.candidates) rejected += c.ok ? 0 : 1;
  out +=
      "    candidates: " + std::to_string(r.candidates.size()) + " tried, " + std::to_string(rejected) + " rejected\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : r.candidates) {
    std::string note = c.config == r.best ? "best" : "";
    if (!c.ok)
      rows.push_back({"      " + to_string(c.config), "rejected: " + (c.rejection.empty() ? "?" : c.rejection)});
    else
      rows.push_back({"      " + to_string(c.config),
                      format("%.4f ms", c.median_ms) + format(" +/- %.4f", c.spread_ms) +
                          format("  %8.1f GB/s", c.gbps) + "  " + copy_percent(c.gbps, r.copy_gbps) +
                          (note.empty() ? "" : "  <- " + note)});
  }
  return out + columns(rows);
}

}  // namespace kplay::cli
