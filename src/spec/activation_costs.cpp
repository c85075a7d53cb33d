// The counted arithmetic of the built-ins; see activation_costs.hpp.
#include "activation_costs.hpp"

#include <algorithm>
#include <string>

namespace kplay {
namespace {

struct Row {
  const char* text;   // the activation as `kplay list --texts` prints it, or with its parameters
  double cost[5][2];  // f32 double path, f32 float-float path, f16, bf16, f64; {forward, backward}
};

const Row kRows[] = {
#include "activation_costs.inc"
};

int column(Dtype dtype, bool fp64_math) {
  switch (dtype) {
    case Dtype::f32: return fp64_math ? 0 : 1;
    case Dtype::f16: return 2;
    case Dtype::bf16: return 3;
    default: return 4;
  }
}

const Row* row_of(const std::string& text) {
  for (const Row& r : kRows)
    if (text == r.text) return &r;
  return nullptr;
}

}  // namespace

std::optional<double> counted_cost(const ResolvedActivation& act, Dtype dtype, Direction direction, bool fp64_math) {
  if (act.act->user) return std::nullopt;
  // Parameters that only change a constant keep the count of the default ones; a parameter that
  // selects another formula (gelu's approximate) has its own row, under its canonical text.
  const Row* r = row_of(act.canonical);
  if (!r) r = row_of(act.act->example.empty() ? act.act->name : act.act->example);
  if (!r && act.canonical != act.act->name) r = row_of(act.act->name);
  const double c = r ? r->cost[column(dtype, fp64_math)][direction == Direction::backward] : -1;
  if (c < 0) return std::nullopt;
  return c;
}

double dearest_counted_cost(Dtype dtype, Direction direction, bool fp64_math) {
  double most = 0;
  for (const Row& r : kRows) most = std::max(most, r.cost[column(dtype, fp64_math)][direction == Direction::backward]);
  return most;
}

}  // namespace kplay
