// fastbatch::Rng: the per-env random generator (public, header-only; included by env.h).
//
// numpy's `Generator(PCG64(SeedSequence(seed)))`, the generator gymnasium's
// `utils.seeding.np_random(seed)` builds, over an fb_rng state: for the same seed it draws the
// same numbers in the same order as numpy. NextU64 is PCG64's `random_raw()`; Uniform(low,
// high) is `Generator.uniform(low, high)`; StandardNormal is `Generator.standard_normal()`
// (numpy's ziggurat); Integers(high) and Integers(low, high) are `Generator.integers(high)` and
// `Generator.integers(low, high)` (int64, high excluded; gymnasium's `Discrete.sample()` is
// `start + integers(n)`). `Generator.choice(n)` for an int n (with replacement, no `p`) is
// `integers(0, n)`, draw for draw: write Integers(n). An array draw such as
// `uniform(low, high, size=n)` or `integers(low, high, size=n)` is n scalar draws in order. An
// env that draws what its gymnasium twin draws, in the same order, replays its episodes exactly.
//
// Integers follows numpy's `random_bounded_uint64_fill` (Lemire's method, no masking): a span of
// at most 2^32 values draws 32-bit halves (NextU32, PCG64's `next_uint32`: the low half of a new
// 64-bit output, whose high half waits in the state for the next 32-bit draw), a wider one
// 64-bit outputs; a span of one value draws nothing. The waiting half stays across Uniform,
// StandardNormal and NextU64 draws, which neither use nor clear it, exactly as in numpy.
//
// The pool owns one state per env, seeds it (Seed) and hands `Reset` an Rng over it. An env
// that needs randomness while stepping keeps a copy: copies share the pool's state (the 32-bit
// buffer too), so the stream continues across steps and resets, as a gymnasium env's
// `np_random` does. A default-constructed Rng owns a state of its own (numpy's
// `default_rng(0)`): a placeholder for a member that `Reset` assigns.
//
// State layout in fb_rng (ABI version 5): s = {state low, state high, increment low, increment
// high}, the 128-bit LCG state and increment of numpy's PCG64 (XSL-RR output), then numpy's
// `has_uint32`/`uinteger`. The 128-bit step uses the compiler's unsigned __int128 where it has
// one (GCC, Clang), else 64-bit halves (also when FASTBATCH_RNG_PORTABLE_MATH is defined, as a
// test does): the same bits either way.
//
// Threading: an Rng is used by the thread stepping its env; it is not synchronised.
#ifndef FASTBATCH_RNG_H_
#define FASTBATCH_RNG_H_

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "fastbatch/abi.h"
#include "fastbatch/seed_sequence.h"
#include "fastbatch/ziggurat_tables.h"

namespace fastbatch {

class Rng {
 public:
  Rng() : own_{}, state_(&own_) { Seed(&own_, 0); }
  explicit Rng(fb_rng* state) : own_{}, state_(state) {}
  Rng(const Rng& other) : own_(other.own_), state_(other.Owns() ? &own_ : other.state_) {}
  Rng& operator=(const Rng& other) {
    own_ = other.own_;
    state_ = other.Owns() ? &own_ : other.state_;
    return *this;
  }

  // Seeds `state` as numpy's `PCG64(seq)` does: four uint64 state words give the initial state
  // (words 0, 1: high, low) and the stream (words 2, 3), then PCG's two seeding steps; the
  // 32-bit buffer starts empty.
  static void Seed(fb_rng* state, const SeedSequence& seq) {
    uint64_t words[4];
    seq.GenerateState64(words, 4);
    state->has_uint32 = 0;
    state->uinteger = 0;
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
    uint64_t* s = state_->s;
    Step(s);
    const uint64_t folded = s[1] ^ s[0];
    const unsigned rotation = static_cast<unsigned>(s[1] >> 58);
    return (folded >> rotation) | (folded << ((64u - rotation) & 63u));
  }
  // PCG64's `next_uint32`: the buffered high half of the last output split, if one waits, else
  // the low half of a new output (its high half is buffered).
  uint32_t NextU32() {
    if (state_->has_uint32 != 0) {
      state_->has_uint32 = 0;
      return state_->uinteger;
    }
    const uint64_t next = NextU64();
    state_->has_uint32 = 1;
    state_->uinteger = static_cast<uint32_t>(next >> 32);
    return static_cast<uint32_t>(next);
  }

  // numpy's `integers(high)`: an int64 in [0, high). Throws std::invalid_argument when
  // high <= 0, as numpy raises ValueError.
  int64_t Integers(int64_t high) {
    if (high <= 0) throw std::invalid_argument("Rng::Integers: high <= 0 (an empty range)");
    return Integers(0, high);
  }
  // numpy's `integers(low, high)`: an int64 in [low, high). Throws std::invalid_argument when
  // low >= high.
  int64_t Integers(int64_t low, int64_t high) {
    if (low >= high) throw std::invalid_argument("Rng::Integers: low >= high (an empty range)");
    // numpy's rng (the largest offset, high - 1 - low) and off (low), in uint64 arithmetic.
    const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) - 1u;
    return static_cast<int64_t>(static_cast<uint64_t>(low) + Bounded(span));
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

  // The state this Rng draws from (read-only): e.g. for an env that must see whether the pool
  // seeded it again since the env last looked (an unseeded reset leaves it as the env left it).
  const fb_rng& State() const { return *state_; }

 private:
  bool Owns() const { return state_ == &own_; }

  // numpy's `random_bounded_uint64_fill` for one value in [0, span], span < 2^64 - 1 (the
  // widest span Integers asks for is 2^64 - 2).
  uint64_t Bounded(uint64_t span) {
    if (span == 0) return 0;  // no draw
    if (span == 0xffffffffu) return NextU32();
    if (span < 0xffffffffu) return BoundedU32(static_cast<uint32_t>(span));
    return BoundedU64(span);
  }
  // numpy's `buffered_bounded_lemire_uint32`: Lemire's multiply-and-reject on 32-bit draws,
  // span < 2^32 - 1.
  uint32_t BoundedU32(uint32_t span) {
    const uint32_t excluded = span + 1u;
    uint64_t m = static_cast<uint64_t>(NextU32()) * excluded;
    uint32_t leftover = static_cast<uint32_t>(m);
    if (leftover < excluded) {
      const uint32_t threshold = (UINT32_MAX - span) % excluded;
      while (leftover < threshold) {
        m = static_cast<uint64_t>(NextU32()) * excluded;
        leftover = static_cast<uint32_t>(m);
      }
    }
    return static_cast<uint32_t>(m >> 32);
  }
  // numpy's `bounded_lemire_uint64`: the same on 64-bit draws, span < 2^64 - 1.
  uint64_t BoundedU64(uint64_t span) {
    const uint64_t excluded = span + 1u;
    uint64_t high = 0;
    uint64_t leftover = MulWide(NextU64(), excluded, &high);
    if (leftover < excluded) {
      const uint64_t threshold = (UINT64_MAX - span) % excluded;
      while (leftover < threshold) leftover = MulWide(NextU64(), excluded, &high);
    }
    return high;
  }

  static constexpr uint64_t kMulHigh = 0x2360ED051FC65DA4ull;  // PCG's 128-bit multiplier
  static constexpr uint64_t kMulLow = 0x4385DF649FCCF645ull;

#if defined(__SIZEOF_INT128__) && !defined(FASTBATCH_RNG_PORTABLE_MATH)
  __extension__ typedef unsigned __int128 U128;
  // state = state * multiplier + increment (mod 2^128).
  static void Step(uint64_t* s) {
    const U128 state =
        (static_cast<U128>(s[1]) << 64 | s[0]) * (static_cast<U128>(kMulHigh) << 64 | kMulLow) +
        (static_cast<U128>(s[3]) << 64 | s[2]);
    s[0] = static_cast<uint64_t>(state);
    s[1] = static_cast<uint64_t>(state >> 64);
  }
  // a * b as 128 bits: returns the low half, writes the high half.
  static uint64_t MulWide(uint64_t a, uint64_t b, uint64_t* high) {
    const U128 product = static_cast<U128>(a) * b;
    *high = static_cast<uint64_t>(product >> 64);
    return static_cast<uint64_t>(product);
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
  fb_rng* state_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_RNG_H_
