// A game's grayscale palette as a 256-byte table: the screen's colour indices to gray levels,
// ALE's `getScreenGrayscale` byte for byte. ALE's own conversion reads a 32-bit palette entry a
// pixel; with two frames a step (the max-pool's) it was about 9% of a preprocessed step. Where
// the CPU has AVX-512 VBMI, 64 pixels are looked up at once with two byte permutes over the
// table held in four registers; elsewhere a byte a pixel from the table.
#ifndef FASTBATCH_ATARI_GRAY_TABLE_H_
#define FASTBATCH_ATARI_GRAY_TABLE_H_

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FASTBATCH_ATARI_VBMI 1
#endif

namespace fastbatch_atari {

enum class GrayPath { kBest = 0, kScalar = 1, kVbmi = 2 };

class GrayTable {
 public:
  // `gray_of(indices, out, n)` writes the gray levels of colour indices as ALE does
  // (ColourPalette::applyPaletteGrayscale); it is asked once for all 256 indices.
  template <typename GrayOf>
  void Build(GrayOf&& gray_of) {
    uint8_t indices[256];
    for (int k = 0; k < 256; ++k) indices[k] = static_cast<uint8_t>(k);
    gray_of(indices, table_, size_t{256});
  }

  // `n` gray levels of the colour indices at `src` into `dst`.
  void Apply(const uint8_t* src, uint8_t* dst, size_t n, GrayPath path = GrayPath::kBest) const {
#ifdef FASTBATCH_ATARI_VBMI
    if (path == GrayPath::kVbmi || (path == GrayPath::kBest && HasVbmi())) {
      const size_t done = ApplyVbmi(src, dst, n);
      src += done, dst += done, n -= done;
    }
#endif
    for (size_t k = 0; k < n; ++k) dst[k] = table_[src[k]];
  }

  // Whether Apply's default path is the AVX-512 VBMI one on this CPU.
  static bool HasVbmi() {
#ifdef FASTBATCH_ATARI_VBMI
    static const bool has = __builtin_cpu_supports("avx512vbmi") &&
                            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f");
    return has;
#else
    return false;
#endif
  }

 private:
#ifdef FASTBATCH_ATARI_VBMI
  // The whole 64-pixel groups of `n`; returns how many pixels it wrote.
  __attribute__((target("avx512f,avx512bw,avx512vbmi"))) size_t ApplyVbmi(const uint8_t* src,
                                                                          uint8_t* dst,
                                                                          size_t n) const {
    const __m512i t0 = _mm512_load_si512(table_), t1 = _mm512_load_si512(table_ + 64);
    const __m512i t2 = _mm512_load_si512(table_ + 128), t3 = _mm512_load_si512(table_ + 192);
    size_t k = 0;
    for (; k + 64 <= n; k += 64) {
      const __m512i index = _mm512_loadu_si512(src + k);
      // Bits 0-6 pick one of 128 entries of (t0, t1) and of (t2, t3); bit 7 picks the pair.
      const __m512i low = _mm512_permutex2var_epi8(t0, index, t1);
      const __m512i high = _mm512_permutex2var_epi8(t2, index, t3);
      _mm512_storeu_si512(dst + k, _mm512_mask_blend_epi8(_mm512_movepi8_mask(index), low, high));
    }
    return k;
  }
#endif

  alignas(64) uint8_t table_[256] = {};
};

}  // namespace fastbatch_atari

#endif  // FASTBATCH_ATARI_GRAY_TABLE_H_
