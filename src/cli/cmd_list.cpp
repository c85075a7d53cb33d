// `kplay list`: the built-in activations as the registry (src/spec/activations.cpp) has them, one
// line each: name, parameters with their defaults, whether it has a backward, torch.nn's class.
// --names prints the names alone and --texts what `--act all` runs, one per line, for scripts
// (tools/) that need every activation without a list of their own; --formulas adds the texts whose
// parameters select another formula (every kernel body: the counts and the shipped tunings).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "command.hpp"
#include "spec/activation_text.hpp"
#include "spec/activations.hpp"

namespace kplay::cli {
namespace {

// Every combination of the choice parameters' values but the defaults, one text each in the
// parameters' order: gelu's approximate=tanh and accuracy=torch are each a formula, and so is the
// pair (gelu(approximate=tanh, accuracy=torch)).
void print_formulas(const Activation& a) {
  std::vector<const ParamDef*> choice;
  for (const ParamDef& p : a.params)
    if (!p.choices.empty()) choice.push_back(&p);
  std::vector<std::size_t> defaults, at(choice.size(), 0);
  for (const ParamDef* p : choice) defaults.push_back(static_cast<std::size_t>(p->default_value));
  for (;;) {  // an odometer over the choices, from all-first to all-last
    if (at != defaults) {
      std::string args;
      for (std::size_t i = 0; i < choice.size(); ++i)
        if (at[i] != defaults[i])
          args += (args.empty() ? "" : ", ") + std::string(choice[i]->name) + "=" + choice[i]->choices[at[i]];
      std::printf("%s(%s)\n", a.name.c_str(), args.c_str());
    }
    std::size_t k = 0;
    while (k < choice.size() && ++at[k] == choice[k]->choices.size()) at[k++] = 0;
    if (k == choice.size()) return;
  }
}

// "negative_slope=0.01", "approximate=none (none|tanh)", "threshold (required)"; "-" for none.
std::string describe_params(const Activation& a) {
  std::string out;
  for (const ParamDef& p : a.params) {
    out += (out.empty() ? "" : ", ") + std::string(p.name);
    if (std::isnan(p.default_value)) {
      out += " (required)";
    } else if (p.choices.empty()) {
      out += "=" + format_number(p.default_value);
    } else {
      out += "=" + std::string(p.choices.at(static_cast<std::size_t>(p.default_value))) + " (";
      for (std::size_t i = 0; i < p.choices.size(); ++i) out += (i ? "|" : "") + std::string(p.choices[i]);
      out += ")";
    }
  }
  return out.empty() ? "-" : out;
}

class ListCommand : public Command {
 public:
  explicit ListCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("list", "list the built-in activations: parameters, backward, torch.nn class");
    auto* names = app_->add_flag("--names", names_, "print the names alone, one per line");
    auto* texts = app_->add_flag(
        "--texts", texts_,
        "print what --act all runs, one per line: the name, or an example where a parameter is required");
    auto* formulas = app_->add_flag("--formulas", formulas_,
                                    "print --texts and, after them, one text per other combination of parameter "
                                    "values that selects another formula (gelu(approximate=tanh), "
                                    "gelu(approximate=tanh, accuracy=torch)): every kernel body there is");
    names->excludes(texts);
    names->excludes(formulas);
    texts->excludes(formulas);
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    if (names_) {
      for (const auto& a : activations()) std::printf("%s\n", a.name.c_str());
      return kExitOk;
    }
    if (texts_ || formulas_) {
      for (const auto& t : all_activation_texts()) std::printf("%s\n", t.c_str());
      if (formulas_)
        for (const auto& a : activations())
          if (a.example.empty()) print_formulas(a);
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows = {{"NAME", "PARAMETERS", "BACKWARD", "TORCH"}};
    for (const auto& a : activations())
      rows.push_back({a.name, describe_params(a), a.grad_from_input ? "yes" : "no",
                      a.torch_class.empty() ? "-" : "torch.nn." + a.torch_class});
    std::vector<std::size_t> width(rows[0].size(), 0);
    for (const auto& r : rows)
      for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    for (const auto& r : rows) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i)
        line += i + 1 < r.size() ? r[i] + std::string(width[i] - r[i].size() + 2, ' ') : r[i];
      std::printf("%s\n", line.c_str());
    }
    std::printf(
        "\nand the gated form of each, gated(ACT): out = act(a) * b, backward grad_a and grad_b (gated(silu) is "
        "SwiGLU; docs/activations.md)\n");
    std::printf(
        "and two forms with a slope per element: prelu (torch's PReLU, a weight per channel of dim 1 or one in all; "
        "--channels) and training(rrelu) (RReLU in training, slopes drawn from --seed; rrelu is its evaluation)\n");
    std::printf("\nrow activations, a function of each row of the last dimension (--act NAME, not in --act all):\n");
    for (const auto& a : row_activations())
      std::printf("  %s%s  backward from the saved output  torch.nn.%s\n", a.name.c_str(),
                  a.torch_tier_forward > 0 ? "  accuracy=exact (exact|torch: float32 forward)" : "",
                  a.torch_class.c_str());
    return kExitOk;
  }

 private:
  CLI::App* app_;
  bool names_ = false, texts_ = false, formulas_ = false;
};
}  // namespace

std::unique_ptr<Command> make_list_command(CLI::App& parent) { return std::make_unique<ListCommand>(parent); }

}  // namespace kplay::cli
