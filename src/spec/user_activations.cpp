// User activations; see user_activations.hpp.
#include "user_activations.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>

#include "kplay/error.hpp"
#include "util/bounded_file.hpp"
#include "util/hash.hpp"
#include "util/private_dir.hpp"

namespace kplay {
namespace {
constexpr std::size_t kMaxSnippetBytes = 1 << 20;

struct Registry {
  std::mutex mutex;
  std::deque<std::unique_ptr<Activation>> all;  // never freed: references stay valid
  std::map<std::string, const Activation*> by_name, by_canonical;
  std::map<std::string, std::pair<std::string, const Activation*>> by_file;  // path -> (stamp, entry)
};
Registry& registry() {
  static Registry r;
  return r;
}

bool defines(const std::string& source, const char* function) {
  return std::regex_search(source, std::regex(std::string("\\b") + function + "\\s*\\("));
}

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

bool looks_like_path(const std::string& text) {
  if (text.find('/') != std::string::npos) return true;
  for (const char* ext : {".h", ".cl", ".cuh"}) {
    const std::string e(ext);
    if (text.size() > e.size() && text.compare(text.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

// "dir/my-act.h" -> "my_act"
std::string stem_name(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  base = base.substr(0, base.find('.'));
  for (auto& c : base)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "user_" + base;
  return base;
}

std::string file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_mtime) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_ino);
}

const Activation& load_file(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real)
    throw Error(ErrorCode::invalid_argument, "activation snippet '" + path + "' cannot be opened (no such file)");
  const std::string abs(real);
  std::free(real);
  const std::string stamp = file_stamp(abs);
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.by_file.find(abs);
    if (it != r.by_file.end() && it->second.first == stamp) return *it->second.second;
  }
  const std::string text = read_bounded_file(abs, kMaxSnippetBytes, "activation snippet '" + path + "'");
  const Activation& a = register_user_activation(stem_name(abs), text, abs);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.by_file[abs] = {stamp, &a};
  return a;
}

const Activation* search_path(const std::string& name) {
  const char* env = std::getenv("KPLAY_ACTIVATION_PATH");
  if (!env || !*env || !is_identifier(name)) return nullptr;
  std::stringstream dirs(env);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir;
    candidate.append("/").append(name).append(".h");
    if (file_stamp(candidate).empty()) continue;
    // A snippet is code that runs in this process (on PoCL): found by name, it is taken only from
    // a place no other user could have written, the database folder's rule (private_dir.hpp).
    if (const std::string why = untrusted_path_reason(candidate); !why.empty()) {
      std::string message = "refusing the activation snippet ";
      message += candidate;
      message += " found on KPLAY_ACTIVATION_PATH: ";
      message += why;
      throw Error(ErrorCode::invalid_argument, message);
    }
    return &load_file(candidate);
  }
  return nullptr;
}
}  // namespace

const Activation& register_user_activation(const std::string& name, const std::string& source,
                                           const std::string& origin) {
  const std::string where = origin.empty() ? "activation '" + name + "'" : "activation snippet '" + origin + "'";
  if (!is_identifier(name))
    throw Error(ErrorCode::invalid_argument,
                "activation name '" + name + "' is not an identifier (letters, digits and _, at most 64)");
  for (const auto& b : activations())
    if (b.name == name)
      throw Error(ErrorCode::invalid_argument, "'" + name + "' is a built-in activation; give yours another name");
  if (name == "gated")
    throw Error(ErrorCode::invalid_argument,
                "'gated' names the gated form of an activation (gated(silu)); give yours another name");
  if (source.empty() || source.size() > kMaxSnippetBytes)
    throw Error(ErrorCode::invalid_argument, where + " is empty or larger than 1 MiB");
  if (source.find('\0') != std::string::npos) throw Error(ErrorCode::invalid_argument, where + " contains a NUL byte");
  if (!defines(source, "kp_act_forward"))
    throw Error(ErrorCode::invalid_argument,
                where +
                    " does not define the forward function: KP_FN KP_C kp_act_forward(KP_C x) { ... } "
                    "(see docs/user-activations.md)");
  auto a = std::make_unique<Activation>();
  a->name = name;
  a->snippet = source;
  a->user = true;
  a->origin = origin;
  Hasher h;
  h.add(source);
  a->source_hash = h.hex().substr(0, 8);
  // A user's formula was not designed against a bound: allow a few roundings, more for a derivative,
  // whose terms partly cancel (docs/user-activations.md).
  a->bounds.f32_forward = 4;
  a->bounds.f32_backward = 8;
  a->bounds.f64_forward = a->bounds.f64_backward = 8;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Activation* entry = a.get();
  r.all.push_back(std::move(a));
  r.by_name[name] = entry;
  r.by_canonical[user_canonical_name(*entry)] = entry;
  return *entry;
}

const Activation* find_user_activation(const std::string& text) {
  if (looks_like_path(text)) return &load_file(text);
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.by_canonical.find(text);
    if (it != r.by_canonical.end()) return it->second;
    it = r.by_name.find(text);
    if (it != r.by_name.end()) return it->second;
  }
  return search_path(text);
}

std::string user_canonical_name(const Activation& a) { return a.name + "@" + a.source_hash; }

void describe_user_backward(const Activation& a, ResolvedActivation& r) {
  r.user_backward = defines(a.snippet, "kp_act_backward_from_input");
  r.user_backward_from_output = defines(a.snippet, "kp_act_backward_from_output");
}

}  // namespace kplay
