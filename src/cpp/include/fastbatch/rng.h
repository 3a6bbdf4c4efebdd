// fastbatch::Rng: the per-env random generator (public, header-only; included by env.h).
//
// numpy's `Generator(PCG64(SeedSequence(seed)))`, the generator gymnasium's
// `utils.seeding.np_random(seed)` builds, over an fb_rng state: for the same seed it draws the
// same numbers in the same order as numpy. NextU64 is PCG64's `random_raw()`; Uniform(low,
// high) is `Generator.uniform(low, high)`; StandardNormal is `Generator.standard_normal()`
// (numpy's ziggurat). An array draw such as `uniform(low, high, size=n)` is n scalar draws in
// order. An env that draws what its gymnasium twin draws, in the same order, replays its
// episodes exactly.
//
// The pool owns one state per env, seeds it (Seed) and hands `Reset` an Rng over it. An env
// that needs randomness while stepping keeps a copy: copies share the pool's state, so the
// stream continues across steps and resets, as a gymnasium env's `np_random` does. A
// default-constructed Rng owns a state of its own (numpy's `default_rng(0)`): a placeholder for
// a member that `Reset` assigns.
//
// State layout in fb_rng.s: {state low, state high, increment low, increment high}, the 128-bit
// LCG state and increment of numpy's PCG64 (XSL-RR output). The 128-bit step uses the compiler's
// unsigned __int128 where it has one (GCC, Clang), else 64-bit halves (also when
// FASTBATCH_RNG_PORTABLE_MATH is defined, as a test does): the same bits either way.
//
// Threading: an Rng is used by the thread stepping its env; it is not synchronised.
#ifndef FASTBATCH_RNG_H_
#define FASTBATCH_RNG_H_

#include <cmath>
#include <cstdint>

#include "fastbatch/abi.h"
#include "fastbatch/seed_sequence.h"
#include "fastbatch/ziggurat_tables.h"

namespace fastbatch {

class Rng {
 public:
  Rng() : own_{}, s_(own_.s) { Seed(&own_, 0); }
  explicit Rng(fb_rng* state) : own_{}, s_(state->s) {}
  Rng(const Rng& other) : own_(other.own_), s_(other.Owns() ? own_.s : other.s_) {}
  Rng& operator=(const Rng& other) {
    own_ = other.own_;
    s_ = other.Owns() ? own_.s : other.s_;
    return *this;
  }

  // Seeds `state` as numpy's `PCG64(seq)` does: four uint64 state words give the initial state
  // (words 0, 1: high, low) and the stream (words 2, 3), then PCG's two seeding steps.
  static void Seed(fb_rng* state, const SeedSequence& seq) {
    uint64_t words[4];
    seq.GenerateState64(words, 4);
    uint64_t* s = state->s;
    s[0] = s[1] = 0;
    s[2] = (words[3] << 1) | 1u;  // increment = (stream << 1) | 1
    s[3] = (words[2] << 1) | (words[3] >> 63);
    Step(s);
    const uint64_t low = s[0];
    s[0] += words[1];
    s[1] += words[0] + (s[0] < low ? 1u : 0u);
    Step(s);
  }
  // numpy's `default_rng(seed)`, gymnasium's `np_random(seed)`.
  static void Seed(fb_rng* state, uint64_t seed) { Seed(state, SeedSequence(seed)); }
  // numpy's `SeedSequence(seed, spawn_key=(stream,))`: an independent stream per `stream`.
  static void Seed(fb_rng* state, uint64_t seed, uint64_t stream) {
    const uint32_t entropy[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    const uint32_t key[2] = {static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
    Seed(state, SeedSequence(entropy, 2, key, key[1] != 0 ? 2 : 1));
  }

  // PCG64's next output: step the LCG, then XSL-RR of the new state.
  uint64_t NextU64() {
    Step(s_);
    const uint64_t folded = s_[1] ^ s_[0];
    const unsigned rotation = static_cast<unsigned>(s_[1] >> 58);
    return (folded >> rotation) | (folded << ((64u - rotation) & 63u));
  }
  // Uniform in [0, 1) with 53 random bits (numpy's `random()`).
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  // numpy's `uniform(low, high)`: low + (high - low) * random().
  double Uniform(double low, double high) { return low + (high - low) * Uniform(); }

  // numpy's `standard_normal()`: a ziggurat of 256 layers (tables in ziggurat_tables.h). One
  // draw gives the layer (8 bits), the sign (1) and a 52-bit position; most positions lie
  // inside their layer's core and are returned at once. The rest are accepted under the
  // density's curve by one more draw, or, in the bottom layer, come from the tail beyond R
  // (Marsaglia's exponential method, on 1 - U so that log never sees 0).
  double StandardNormal() {
    using ziggurat::kZigguratF;
    for (;;) {
      const uint64_t r = NextU64();
      const int layer = static_cast<int>(r & 0xff);
      const bool negative = ((r >> 8) & 1u) != 0;
      const uint64_t position = (r >> 9) & 0xfffffffffffffull;
      double x = static_cast<double>(position) * ziggurat::kZigguratW[layer];
      if (negative) x = -x;
      if (position < ziggurat::kZigguratK[layer]) return x;
      if (layer == 0) {
        for (;;) {
          const double tail = -ziggurat::kInvR * std::log1p(-Uniform());
          const double height = -std::log1p(-Uniform());
          if (height + height > tail * tail) {
            return ((position >> 8) & 1u) != 0 ? -(ziggurat::kR + tail) : ziggurat::kR + tail;
          }
        }
      }
      const double below = kZigguratF[layer];
      if ((kZigguratF[layer - 1] - below) * Uniform() + below < std::exp(-0.5 * x * x)) return x;
    }
  }

 private:
  bool Owns() const { return s_ == own_.s; }

  static constexpr uint64_t kMulHigh = 0x2360ED051FC65DA4ull;  // PCG's 128-bit multiplier
  static constexpr uint64_t kMulLow = 0x4385DF649FCCF645ull;

#if defined(__SIZEOF_INT128__) && !defined(FASTBATCH_RNG_PORTABLE_MATH)
  // state = state * multiplier + increment (mod 2^128).
  static void Step(uint64_t* s) {
    __extension__ typedef unsigned __int128 U128;
    const U128 state =
        (static_cast<U128>(s[1]) << 64 | s[0]) * (static_cast<U128>(kMulHigh) << 64 | kMulLow) +
        (static_cast<U128>(s[3]) << 64 | s[2]);
    s[0] = static_cast<uint64_t>(state);
    s[1] = static_cast<uint64_t>(state >> 64);
  }
#else
  // state = state * multiplier + increment (mod 2^128), in 64-bit halves.
  static void Step(uint64_t* s) {
    uint64_t high = 0;
    const uint64_t low = MulWide(s[0], kMulLow, &high);
    high += s[1] * kMulLow + s[0] * kMulHigh;
    const uint64_t sum = low + s[2];
    s[1] = high + s[3] + (sum < low ? 1u : 0u);
    s[0] = sum;
  }
  // a * b as 128 bits: returns the low half, writes the high half.
  static uint64_t MulWide(uint64_t a, uint64_t b, uint64_t* high) {
    const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32;
    const uint64_t b0 = b & 0xffffffffu, b1 = b >> 32;
    const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const uint64_t middle = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *high = p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
    return (middle << 32) | (p00 & 0xffffffffu);
  }
#endif

  fb_rng own_;  // the state of a default-constructed Rng (unused otherwise)
  uint64_t* s_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_RNG_H_
