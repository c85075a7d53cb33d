// A row activation's KernelSpec (the softmax family saves its output), for the row tests.
#pragma once
#include "kplay/types.hpp"

namespace kplay::test {

inline KernelSpec row_spec(const char* act, Dtype d, Direction dir) {
  KernelSpec s;
  s.activation = act;
  s.dtype = d;
  s.direction = dir;
  s.saved = Saved::output;
  return s;
}

}  // namespace kplay::test
