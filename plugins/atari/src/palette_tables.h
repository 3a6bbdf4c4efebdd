// A game's palette as byte tables: the screen's colour indices to gray levels and to red, green
// and blue, ALE's `getScreenGrayscale` and `getScreenRGB` byte for byte. ALE's own conversions
// read a 32-bit palette entry a pixel: for gray frames (two a preprocessed step, for the
// max-pool) that was about 9% of a step, for raw RGB frames 8%. Where the CPU has AVX-512 VBMI,
// 64 pixels are looked up at once with byte permutes over a table held in four registers (and
// RGB interleaved by two more permutes a 64-byte vector). Without VBMI (or with avx512vbmi named
// in FASTBATCH_DISABLE_CPU_FEATURES, fastbatch/cpu_features.h), gray levels take AVX2 byte
// shuffles, 32 pixels at once (unless avx2 is named too), and colours a byte a pixel.
#ifndef FASTBATCH_ATARI_PALETTE_TABLES_H_
#define FASTBATCH_ATARI_PALETTE_TABLES_H_

#include <cstddef>
#include <cstdint>

#include "fastbatch/cpu_features.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FASTBATCH_ATARI_X86_SIMD 1
#define FASTBATCH_ATARI_VBMI_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi")))
#define FASTBATCH_ATARI_AVX2_TARGET __attribute__((target("avx2")))
#endif

namespace fastbatch_atari {

enum class PalettePath { kBest = 0, kScalar = 1, kVbmi = 2, kAvx2 = 3 };

class PaletteTables {
 public:
  // `gray_of(indices, out, n)` and `rgb_of(indices, out, n)` convert colour indices as ALE does
  // (ColourPalette::applyPaletteGrayscale, applyPaletteRGB: 3 bytes a pixel), each once.
  // Colours: all 256 indices. Gray: indices 0-254, and 255 takes 254's level: ALE reads an
  // index's gray level from the palette entry after it, which for 255 lies past its 256-entry
  // table (the TIA writes even indices only, so a screen never holds 255).
  template <typename GrayOf, typename RgbOf>
  void Build(GrayOf&& gray_of, RgbOf&& rgb_of) {
    uint8_t indices[256], rgb[3 * 256];
    for (int k = 0; k < 256; ++k) indices[k] = static_cast<uint8_t>(k);
    gray_of(indices, gray_, size_t{255});
    gray_[255] = gray_[254];
    rgb_of(indices, rgb, size_t{256});
    for (int k = 0; k < 256; ++k) {
      for (int c = 0; c < 3; ++c) rgb_[c][k] = rgb[3 * k + c];
    }
  }

  // The gray levels of the `n` colour indices at `src`, into `dst` (n bytes).
  void Gray(const uint8_t* src, uint8_t* dst, size_t n,
            PalettePath path = PalettePath::kBest) const {
    size_t k = UseVbmi(path) ? GrayVbmi(src, dst, n) : UseAvx2(path) ? GrayAvx2(src, dst, n) : 0;
    for (; k < n; ++k) dst[k] = gray_[src[k]];
  }

  // The colours of the `n` colour indices at `src`, into `dst` (3n bytes: r, g, b a pixel). No
  // AVX2 path: interleaving three planes costs AVX2 as much as the byte loop saves.
  void Rgb(const uint8_t* src, uint8_t* dst, size_t n,
           PalettePath path = PalettePath::kBest) const {
    size_t k = UseVbmi(path) ? RgbVbmi(src, dst, n) : 0;
    for (; k < n; ++k) {
      for (int c = 0; c < 3; ++c) dst[3 * k + c] = rgb_[c][src[k]];
    }
  }

  // Whether the default path is the AVX-512 VBMI one on this CPU: it has the features and
  // FASTBATCH_DISABLE_CPU_FEATURES does not switch avx512vbmi off (read once per process).
  static bool HasVbmi() {
#ifdef FASTBATCH_ATARI_X86_SIMD
    static const bool has =
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vbmi") && !fastbatch::CpuFeatureDisabled("avx512vbmi");
    return has;
#else
    return false;
#endif
  }

  // Whether the AVX2 gray path can run here: the CPU has AVX2 and FASTBATCH_DISABLE_CPU_FEATURES
  // leaves it on. The default gray path where there is no VBMI.
  static bool HasAvx2() {
#ifdef FASTBATCH_ATARI_X86_SIMD
    static const bool has =
        __builtin_cpu_supports("avx2") && !fastbatch::CpuFeatureDisabled("avx2");
    return has;
#else
    return false;
#endif
  }

 private:
  static bool UseVbmi(PalettePath path) {
    return path == PalettePath::kVbmi || (path == PalettePath::kBest && HasVbmi());
  }
  static bool UseAvx2(PalettePath path) {
    return path == PalettePath::kAvx2 || (path == PalettePath::kBest && HasAvx2());
  }

#ifdef FASTBATCH_ATARI_X86_SIMD
  // A 256-byte table in four registers; Look(index) is its byte at each of 64 indices.
  struct Vbmi256 {
    __m512i t0, t1, t2, t3;

    FASTBATCH_ATARI_VBMI_TARGET explicit Vbmi256(const uint8_t* table)
        : t0(_mm512_load_si512(table)),
          t1(_mm512_load_si512(table + 64)),
          t2(_mm512_load_si512(table + 128)),
          t3(_mm512_load_si512(table + 192)) {}

    // Bits 0-6 pick one of 128 entries of (t0, t1) and of (t2, t3); bit 7 picks the pair.
    FASTBATCH_ATARI_VBMI_TARGET __m512i Look(__m512i index) const {
      return _mm512_mask_blend_epi8(_mm512_movepi8_mask(index),
                                    _mm512_permutex2var_epi8(t0, index, t1),
                                    _mm512_permutex2var_epi8(t2, index, t3));
    }
  };

  // The whole 64-pixel groups of `n`; each returns how many pixels it wrote.
  FASTBATCH_ATARI_VBMI_TARGET size_t GrayVbmi(const uint8_t* src, uint8_t* dst, size_t n) const {
    const Vbmi256 gray(gray_);
    size_t k = 0;
    for (; k + 64 <= n; k += 64) {
      _mm512_storeu_si512(dst + k, gray.Look(_mm512_loadu_si512(src + k)));
    }
    return k;
  }

  // Where byte q of the j-th 64-byte vector of 64 interleaved pixels comes from: channel
  // (64j + q) % 3 of pixel (64j + q) / 3; `red_green` indexes the red plane's 64 bytes then
  // the green plane's, `pixel` the blue plane's, `is_blue` marks the blue bytes.
  struct Interleave {
    alignas(64) uint8_t red_green[3][64];
    alignas(64) uint8_t pixel[3][64];
    uint64_t is_blue[3] = {0, 0, 0};

    Interleave() {
      for (int j = 0; j < 3; ++j) {
        for (int q = 0; q < 64; ++q) {
          const int byte = 64 * j + q, channel = byte % 3;
          pixel[j][q] = static_cast<uint8_t>(byte / 3);
          red_green[j][q] = static_cast<uint8_t>(byte / 3 + (channel == 1 ? 64 : 0));
          if (channel == 2) is_blue[j] |= uint64_t{1} << q;
        }
      }
    }
  };

  // 64 pixels' red, green and blue interleaved into three 64-byte vectors: one permute takes
  // the red and green bytes, a masked second the blue ones.
  FASTBATCH_ATARI_VBMI_TARGET size_t RgbVbmi(const uint8_t* src, uint8_t* dst, size_t n) const {
    static const Interleave interleave;
    const Vbmi256 red(rgb_[0]), green(rgb_[1]), blue(rgb_[2]);
    __m512i pick_red_green[3], pick_pixel[3];
    for (int j = 0; j < 3; ++j) {
      pick_red_green[j] = _mm512_load_si512(interleave.red_green[j]);
      pick_pixel[j] = _mm512_load_si512(interleave.pixel[j]);
    }
    size_t k = 0;
    for (; k + 64 <= n; k += 64) {
      const __m512i index = _mm512_loadu_si512(src + k);
      const __m512i r = red.Look(index), g = green.Look(index), b = blue.Look(index);
      for (int j = 0; j < 3; ++j) {
        const __m512i rg = _mm512_permutex2var_epi8(r, pick_red_green[j], g);
        _mm512_storeu_si512(dst + 3 * k + 64 * j, _mm512_mask_permutexvar_epi8(
                                                      rg, interleave.is_blue[j], pick_pixel[j], b));
      }
    }
    return k;
  }

  // 32 pixels a step: the 256-byte table as 16 rows of 16 bytes, each row looked up by every
  // pixel's low nibble (one byte shuffle) and kept where the pixel's high nibble names the row.
  FASTBATCH_ATARI_AVX2_TARGET size_t GrayAvx2(const uint8_t* src, uint8_t* dst, size_t n) const {
    __m256i rows[16];
    for (int r = 0; r < 16; ++r) {
      rows[r] = _mm256_broadcastsi128_si256(
          _mm_load_si128(reinterpret_cast<const __m128i*>(gray_ + 16 * r)));
    }
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    size_t k = 0;
    for (; k + 32 <= n; k += 32) {
      const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k));
      const __m256i low = _mm256_and_si256(index, nibble);
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(index, 4), nibble);
      __m256i out = _mm256_shuffle_epi8(rows[0], low);
      for (int r = 1; r < 16; ++r) {
        const __m256i here = _mm256_cmpeq_epi8(high, _mm256_set1_epi8(static_cast<char>(r)));
        out = _mm256_blendv_epi8(out, _mm256_shuffle_epi8(rows[r], low), here);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), out);
    }
    return k;
  }
#else
  size_t GrayVbmi(const uint8_t*, uint8_t*, size_t) const { return 0; }  // never called
  size_t GrayAvx2(const uint8_t*, uint8_t*, size_t) const { return 0; }
  size_t RgbVbmi(const uint8_t*, uint8_t*, size_t) const { return 0; }
#endif

  alignas(64) uint8_t gray_[256] = {};
  alignas(64) uint8_t rgb_[3][256] = {};  // red, green and blue planes
};

}  // namespace fastbatch_atari

#endif  // FASTBATCH_ATARI_PALETTE_TABLES_H_
