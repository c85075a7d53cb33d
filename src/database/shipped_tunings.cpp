// The shipped tunings layer; see shipped_tunings.hpp.
#include "shipped_tunings.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "database_impl.hpp"
#include "import_validation.hpp"
#include "kplay/error.hpp"
#include "util/bounded_file.hpp"
#include "util/loaded_from.hpp"

namespace kplay {
namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

DeviceClass device_class(const rt::DeviceInfo& d) { return {d.backend, d.name, d.arch}; }
DeviceClass device_class(const TuningRecord& r) { return {r.backend, r.device_name, r.arch}; }

std::string to_string(const DeviceClass& c) { return c.backend + " " + c.name + " " + c.arch; }

std::string shipped_file_name(const DeviceClass& c) {
  std::string out;
  bool dash = false;
  for (const char ch : c.backend + " " + c.name + " " + c.arch) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) || ch == '_') {
      if (dash && !out.empty()) out += '-';
      dash = false;
      out += static_cast<char>(std::tolower(u));
    } else {
      dash = true;
    }
  }
  return (out.empty() ? std::string("unnamed") : out) + ".json";
}

std::vector<TuningRecord> read_shipped_file(const std::string& path) {
  return read_shipped_text(read_bounded_file(path, kMaxShippedFileBytes, "shipped tunings '" + path + "'"), path);
}

std::vector<TuningRecord> read_shipped_text(const std::string& text, const std::string& path) {
  if (text.size() > kMaxShippedFileBytes)
    throw Error(ErrorCode::invalid_argument,
                path + ": larger than " + std::to_string(kMaxShippedFileBytes >> 20) + " MiB");
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) throw Error(ErrorCode::invalid_argument, path + ": not valid JSON");
  TuningDocument parsed;
  try {
    parsed = document_from_json(doc);
    validate_import(parsed);
  } catch (const Error& e) {
    throw Error(ErrorCode::invalid_argument, path + ": " + e.what());
  }
  for (std::size_t i = 0; i < parsed.tunings.size(); ++i) {
    const Provenance& p = parsed.tunings[i].provenance;
    if (p.gpu.empty() || p.command.empty())
      throw Error(ErrorCode::invalid_argument, path + ": tunings[" + std::to_string(i) +
                                                   "].provenance: a shipped record names the GPU and the command "
                                                   "that measured it (kplay db export --ship writes them)");
    parsed.tunings[i].spec = db::canonical(parsed.tunings[i].spec);
  }
  return std::move(parsed.tunings);
}

ShippedTunings::ShippedTunings(Options options) : options_(std::move(options)) {
  if (!options_.warn)
    options_.warn = [](const std::string& m) { std::fprintf(stderr, "kplay: warning: %s\n", m.c_str()); };
}

ShippedTunings& ShippedTunings::process() {
  static ShippedTunings shipped(Options{});
  return shipped;
}

void ShippedTunings::warn(const std::string& key, const std::string& message) {
  if (warned_[key]) return;
  warned_[key] = true;
  try {
    options_.warn(message);
  } catch (...) {  // a warning must never become a failure
  }
}

void ShippedTunings::locate() {
  if (located_) return;
  located_ = true;
  std::string dir = options_.dir;
  std::string from = "the option";
  if (dir.empty()) {
    const char* env = std::getenv("KPLAY_SHIPPED_TUNINGS");
    if (env && *env) {
      dir = env;
      from = "$KPLAY_SHIPPED_TUNINGS";
    }
  }
  if (dir == "off") {
    status_ = "the shipped tunings are off (" + from + ")";
    return;
  }
  if (!dir.empty()) {
    if (is_dir(dir)) {
      dir_ = dir;
      status_ = "shipped tunings in " + dir;
    } else {
      status_ = "the shipped tunings directory " + dir + " (" + from + ") does not exist";
      warn("dir", status_ + "; defaults come from the device model");
    }
    return;
  }
  const std::string here = loaded_from_dir();
  std::vector<std::string> tried;
  if (!here.empty())
    for (const char* rel : {"/../share/kplay/tunings", "/share/kplay/tunings", "/tunings"}) {
      tried.push_back(here + rel);
      if (is_dir(tried.back())) {
        dir_ = tried.back();
        status_ = "shipped tunings in " + dir_;
        return;
      }
    }
  std::string list;
  for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
  status_ = "no shipped tunings found (looked in " +
            (list.empty() ? std::string("nothing: kplay cannot tell where it was loaded from") : list) + ")";
  warn("dir", status_ + "; defaults come from the device model (a broken install?)");
}

ShippedTunings::File& ShippedTunings::load(const std::string& name) {
  File& f = files_[name];
  if (f.loaded) return f;
  f.loaded = true;
  const std::string path = dir_ + "/" + name;
  f.exists = exists(path);
  if (!f.exists) return f;
  try {
    f.records = read_shipped_file(path);
  } catch (const Error& e) {
    f.problem = e.what();
    warn("file:" + name, "shipped tunings not used: " + f.problem + "; defaults come from the device model");
  }
  return f;
}

std::optional<TuningRecord> ShippedTunings::find(const rt::DeviceInfo& device, const KernelSpec& spec, std::uint64_t n,
                                                 std::string* why_not) {
  std::lock_guard<std::mutex> lock(mutex_);
  locate();
  if (dir_.empty()) {
    if (why_not) *why_not = status_;
    return std::nullopt;
  }
  const DeviceClass cls = device_class(device);
  const std::string name = shipped_file_name(cls);
  const File& f = load(name);
  if (!f.exists || !f.problem.empty()) {
    if (why_not)
      *why_not = f.exists ? "shipped tunings not used: " + f.problem
                          : "no shipped tunings for " + to_string(cls) + " in " + dir_;
    return std::nullopt;
  }
  const KernelSpec want = db::canonical(spec);
  const int bucket = size_bucket(n);
  const TuningRecord* best = nullptr;
  auto better = [bucket](const TuningRecord& a, const TuningRecord& b) {  // a nearer than b?
    const int da = std::abs(a.size_bucket - bucket), db = std::abs(b.size_bucket - bucket);
    if (da != db) return da < db;
    if (a.size_bucket != b.size_bucket) return a.size_bucket > b.size_bucket;
    return a.created_unix > b.created_unix;
  };
  for (const TuningRecord& r : f.records)
    if (device_class(r) == cls && r.spec.activation == want.activation && r.spec.direction == want.direction &&
        r.spec.dtype == want.dtype && r.spec.saved == want.saved && (!best || better(r, *best)))
      best = &r;
  if (!best) {
    if (why_not) *why_not = "no shipped tuning of " + to_string(spec) + " for " + to_string(cls) + " in " + dir_;
    return std::nullopt;
  }
  return *best;
}

std::vector<TuningRecord> ShippedTunings::list() {
  std::lock_guard<std::mutex> lock(mutex_);
  locate();
  std::vector<TuningRecord> out;
  if (dir_.empty()) return out;
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0 && name[0] != '.') names.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const File& f = load(name);
    out.insert(out.end(), f.records.begin(), f.records.end());
  }
  return out;
}

std::string ShippedTunings::file_for(const rt::DeviceInfo& device) {
  std::lock_guard<std::mutex> lock(mutex_);
  locate();
  return dir_.empty() ? std::string() : dir_ + "/" + shipped_file_name(device_class(device));
}

std::string ShippedTunings::dir() {
  std::lock_guard<std::mutex> lock(mutex_);
  locate();
  return dir_;
}

std::string ShippedTunings::status() {
  std::lock_guard<std::mutex> lock(mutex_);
  locate();
  return status_;
}

}  // namespace kplay

namespace kplay {

std::map<std::string, std::string> shipped_documents(const TuningDocument& doc, const std::string& command,
                                                     const std::string& kplay_version) {
  std::map<std::string, const rt::DeviceInfo*> devices;
  for (const auto& [fp, d] : doc.devices) devices[fp] = &d;
  std::map<std::string, std::vector<TuningRecord>> by_file;
  std::map<std::string, std::map<std::string, const rt::DeviceInfo*>> file_devices;
  for (TuningRecord r : doc.tunings) {
    const auto dev = devices.find(r.fingerprint);
    if (dev == devices.end())
      throw Error(ErrorCode::invalid_argument, "the tuning of " + to_string(r.spec) + " on " + r.device_name +
                                                   " has no device record (fingerprint " + r.fingerprint + ")");
    char date[16] = "";
    const std::time_t t = static_cast<std::time_t>(r.created_unix);
    std::tm tm{};
    if (r.created_unix > 0 && gmtime_r(&t, &tm)) std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
    r.provenance = {r.device_name, dev->second->driver_version, dev->second->compiler_version, kplay_version, date,
                    command};
    std::vector<CandidateResult> best;
    for (const auto& c : r.candidates)
      if (c.ok && c.config == r.best) {
        best.push_back(c);
        break;
      }
    r.candidates = best;
    const std::string file = shipped_file_name(device_class(r));
    file_devices[file][r.fingerprint] = dev->second;
    by_file[file].push_back(std::move(r));
  }
  std::map<std::string, std::string> out;
  for (auto& [file, records] : by_file) {
    std::sort(records.begin(), records.end(), [](const TuningRecord& a, const TuningRecord& b) {
      const std::string ka = to_string(a.spec) + " " + to_string(a.spec.saved);
      const std::string kb = to_string(b.spec) + " " + to_string(b.spec.saved);
      return ka != kb ? ka < kb : a.size_bucket != b.size_bucket ? a.size_bucket < b.size_bucket : a.n < b.n;
    });
    // The records' provenances once each, by date (then text), and each record its entry's index: a
    // file's records share a few, and a new run's come last, so the older records' lines stay.
    std::vector<std::pair<std::string, std::string>> table;  // date, text
    for (const auto& r : records) table.emplace_back(r.provenance.date, provenance_to_json(r.provenance).dump());
    std::sort(table.begin(), table.end());
    table.erase(std::unique(table.begin(), table.end()), table.end());
    std::vector<std::string> entries, lines;
    for (const auto& e : table) entries.push_back(e.second);
    for (const auto& r : records) {
      nlohmann::json j = tuning_to_json(r);
      const std::pair<std::string, std::string> e{r.provenance.date, provenance_to_json(r.provenance).dump()};
      j["provenance"] = std::lower_bound(table.begin(), table.end(), e) - table.begin();
      lines.push_back(j.dump());
    }
    auto list = [](const std::vector<std::string>& items) {
      std::string out;
      for (std::size_t i = 0; i < items.size(); ++i) out += items[i] + (i + 1 < items.size() ? ",\n" : "\n");
      return out;
    };
    std::vector<std::string> devices_of_file;
    for (const auto& [fp, d] : file_devices[file]) devices_of_file.push_back(device_to_json(fp, *d).dump());
    std::string text = "{\n\"format\": \"" + std::string(kTuningFormatName) +
                       "\",\n\"version\": " + std::to_string(kTuningFormatVersion) + ",\n\"devices\": [\n" +
                       list(devices_of_file) + "],\n\"provenances\": [\n" + list(entries) + "],\n\"tunings\": [\n" +
                       list(lines) + "]\n}\n";
    out[file] = std::move(text);
  }
  return out;
}

void write_shipped_file(const std::string& path, const std::string& text) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(ErrorCode::invalid_argument, path + " is " +
                                                 (S_ISLNK(st.st_mode)    ? "a symbolic link"
                                                  : S_ISDIR(st.st_mode)  ? "a directory"
                                                  : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                                                                         : "not a regular file") +
                                                 "; refusing to replace it with a shipped tunings file");
  read_shipped_text(text, path);  // what the loader would refuse is never written
  // A new file beside the old one, renamed over it once complete: a failed write (a full disk)
  // leaves the old file as it was, never a part of the new one.
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string temp = (slash == std::string::npos ? std::string() : dir) + ".kplay-ship-XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) throw Error(ErrorCode::io_failed, "cannot write " + path + ": " + std::strerror(errno));
  std::string why;
  for (std::size_t done = 0; why.empty() && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) why = std::strerror(n < 0 ? errno : ENOSPC);
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (why.empty() && ::fchmod(fd, 0666 & ~mask) != 0) why = std::strerror(errno);  // as a new file would be
  if (why.empty() && ::fsync(fd) != 0) why = std::strerror(errno);
  if (::close(fd) != 0 && why.empty()) why = std::strerror(errno);
  if (why.empty() && ::rename(temp.c_str(), path.c_str()) != 0) why = std::strerror(errno);
  if (!why.empty()) {
    ::unlink(temp.c_str());
    throw Error(ErrorCode::io_failed, "cannot write " + path + " (" + why + "); the file there is left as it was");
  }
}

}  // namespace kplay
