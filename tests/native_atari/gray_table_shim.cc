// tests/native_atari/test_gray_table.py's view of plugins/atari/src/gray_table.h: a table built
// from given gray levels, applied along a chosen path.
#include <cstring>

#include "gray_table.h"

using fastbatch_atari::GrayPath;
using fastbatch_atari::GrayTable;

extern "C" int gray_has_vbmi() { return GrayTable::HasVbmi() ? 1 : 0; }

extern "C" void gray_apply(const uint8_t* levels, const uint8_t* src, uint8_t* dst, size_t n,
                           int path) {
  GrayTable table;
  table.Build([levels](const uint8_t* indices, uint8_t* gray, size_t count) {
    for (size_t k = 0; k < count; ++k) gray[k] = levels[indices[k]];
  });
  table.Apply(src, dst, n, static_cast<GrayPath>(path));
}
