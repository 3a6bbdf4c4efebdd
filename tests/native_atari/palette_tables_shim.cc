// tests/native_atari/test_palette_tables.py's view of plugins/atari/src/palette_tables.h:
// tables built from given gray levels and colours, applied along a chosen path.
#include "palette_tables.h"

using fastbatch_atari::PalettePath;
using fastbatch_atari::PaletteTables;

namespace {

// `gray`: 256 levels (the table asks for 255 of them); `rgb`: 256 colours, 3 bytes each.
PaletteTables Tables(const uint8_t* gray, const uint8_t* rgb) {
  PaletteTables tables;
  tables.Build(
      [gray](const uint8_t* indices, uint8_t* out, size_t n) {
        for (size_t k = 0; k < n; ++k) out[k] = gray[indices[k]];
      },
      [rgb](const uint8_t* indices, uint8_t* out, size_t n) {
        for (size_t k = 0; k < 3 * n; ++k) out[k] = rgb[3 * indices[k / 3] + k % 3];
      });
  return tables;
}

}  // namespace

extern "C" int palette_has_vbmi() { return PaletteTables::HasVbmi() ? 1 : 0; }
extern "C" int palette_has_avx2() { return PaletteTables::HasAvx2() ? 1 : 0; }

// `channels` 1: gray levels into dst (n bytes); 3: colours (3n bytes).
extern "C" void palette_apply(const uint8_t* gray, const uint8_t* rgb, const uint8_t* src,
                              uint8_t* dst, size_t n, int channels, int path) {
  const PaletteTables tables = Tables(gray, rgb);
  if (channels == 1) {
    tables.Gray(src, dst, n, static_cast<PalettePath>(path));
  } else {
    tables.Rgb(src, dst, n, static_cast<PalettePath>(path));
  }
}
