// How `kplay db list` and `kplay db show` print tuning records: a table with one line per record,
// and a detailed view with every candidate the tuner tried and why each rejected one failed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "database/kernel_database.hpp"

namespace kplay::cli {

// "2^20" or "2^20 (n=1048581)" when n is not exactly the bucket's power of two.
std::string size_text(std::uint64_t n, int bucket);
// Local time "2024-05-01 12:00", or "-" for 0.
std::string time_text(std::int64_t unix_time);
// "95.2 %" of copy bandwidth, or "-" when the copy was not measured.
std::string copy_percent(double gbps, double copy_gbps);

// One line per record, numbered from 1 in the order given (the numbers `show` takes), with the
// layer each came from ("user", "shipped"; layers[i] for records[i]).
std::string list_table(const std::vector<TuningRecord>& records, const std::vector<std::string>& layers);
// The detailed view of one record; `number` as in list_table. A shipped record shows its provenance.
std::string record_details(const TuningRecord& record, std::size_t number, const std::string& layer = "user");

}  // namespace kplay::cli
