// Reading a seed back out of the pool's per-env generator state, so that a dm_control task's
// RandomState is seeded with the user's seed itself (shimmy's `reset(seed=s)` seeds
// `RandomState(s)`), not with a stream derived from it.
//
// fastbatch's pool seeds env i of `reset(seed=s)` as numpy's `PCG64(SeedSequence(s + i))` and
// hands the env only that state (fastbatch/rng.h). Every step from the seed to that state can be
// undone:
// - PCG64 seeds state = (inc + init) * M + inc, M odd, so init = (state - inc) / M - inc; init
//   holds `generate_state(4, uint64)` words 0 and 1, that is 32-bit output words 0 to 3.
// - Output word k is a hash of pool word k % 4 (xor a known constant, multiply by a known odd
//   constant, xor-shift by 16), each step invertible, so words 0 to 3 give the pool.
// - The pool is the entropy words hashed the same way, then mixed pairwise (each mix invertible
//   given the other word, which is known at that point when the mixes are undone in reverse).
// The recovered pool is checked by generating output words 4 to 7 again and comparing them with
// the state's increment (which keeps all but its lowest and highest bit): a state the env has
// drawn from since it was seeded fails that check (its "init" is not a SeedSequence output), so
// the check also tells a fresh seed from a stream in use. An env marks a seed as used by drawing
// once from the generator.
//
// Seeds of up to four 32-bit words come back exactly (fastbatch seeds with the seed's words, and
// trailing zero words hash as numpy's padding does). An env seeded from entropy has a spawn key
// beyond those words: its "seed" comes back as four unpredictable words, random as it should be.
#ifndef FASTBATCH_DM_CONTROL_SEED_RECOVERY_H_
#define FASTBATCH_DM_CONTROL_SEED_RECOVERY_H_

#include <cstdint>

#include "fastbatch/abi.h"
#include "fastbatch/seed_sequence.h"

namespace fastbatch::dm_control {

__extension__ typedef unsigned __int128 U128;

constexpr uint32_t InverseMod2To32(uint32_t odd) {
  uint32_t inverse = odd;  // correct to 3 bits; Newton's iteration doubles them
  for (int k = 0; k < 5; ++k) inverse *= 2u - odd * inverse;
  return inverse;
}

constexpr U128 InverseMod2To128(U128 odd) {
  U128 inverse = odd;
  for (int k = 0; k < 7; ++k) inverse *= 2 - odd * inverse;
  return inverse;
}

inline constexpr U128 kPcgMultiplier =
    (static_cast<U128>(0x2360ED051FC65DA4ull) << 64) | 0x4385DF649FCCF645ull;
static_assert(kPcgMultiplier * InverseMod2To128(kPcgMultiplier) == 1, "PCG64's multiplier");

// A seed read back: its four 32-bit words, lowest first, and whether the state was freshly
// seeded (otherwise the words mean nothing).
struct RecoveredSeed {
  bool fresh = false;
  uint32_t words[4] = {0, 0, 0, 0};
};

inline uint32_t UnshiftXor(uint32_t v) { return v ^ (v >> SeedSequence::kShift); }

inline RecoveredSeed RecoverSeed(const fb_rng& rng) {
  using S = SeedSequence;
  const U128 state = (static_cast<U128>(rng.s[1]) << 64) | rng.s[0];
  const U128 increment = (static_cast<U128>(rng.s[3]) << 64) | rng.s[2];
  const U128 init = (state - increment) * InverseMod2To128(kPcgMultiplier) - increment;
  const auto high = static_cast<uint64_t>(init >> 64);  // generate_state(4, uint64)[0]
  const auto low = static_cast<uint64_t>(init);         // [1]
  const uint32_t out[4] = {static_cast<uint32_t>(high), static_cast<uint32_t>(high >> 32),
                           static_cast<uint32_t>(low), static_cast<uint32_t>(low >> 32)};
  // Undo generate_state for words 0 to 3: the pool.
  uint32_t pool[4];
  uint32_t hash = S::kInitB;
  for (int k = 0; k < 4; ++k) {
    const uint32_t before = hash;
    hash *= S::kMultB;
    pool[k] = (UnshiftXor(out[k]) * InverseMod2To32(hash)) ^ before;
  }
  // Check: words 4 to 7 from that pool are PCG64's increment (stored as (inc << 1) | 1).
  uint32_t more[4];
  for (int k = 0; k < 4; ++k) {
    uint32_t value = pool[k] ^ hash;
    hash *= S::kMultB;
    value *= hash;
    more[k] = value ^ (value >> S::kShift);
  }
  const U128 inc_words = (static_cast<U128>(more[0]) | static_cast<U128>(more[1]) << 32) << 64 |
                         (static_cast<U128>(more[2]) | static_cast<U128>(more[3]) << 32);
  RecoveredSeed seed;
  seed.fresh = ((inc_words << 1) | 1) == increment;
  // Undo the mixing, last mix first. Hash constants: call n uses kInitA * kMultA^n (xor) and
  // kInitA * kMultA^(n+1) (multiply); calls 0-3 hashed the entropy, 4-15 the mixes.
  uint32_t consts[17];
  consts[0] = S::kInitA;
  for (int n = 1; n < 17; ++n) consts[n] = consts[n - 1] * S::kMultA;
  auto hash_mix = [&](uint32_t value, int n) {
    value ^= consts[n];
    value *= consts[n + 1];
    return value ^ (value >> S::kShift);
  };
  int pairs[12][2];
  int count = 0;
  for (int src = 0; src < 4; ++src) {
    for (int dst = 0; dst < 4; ++dst) {
      if (src != dst) {
        pairs[count][0] = src;
        pairs[count][1] = dst;
        ++count;
      }
    }
  }
  const uint32_t left_inverse = InverseMod2To32(S::kMixMultL);
  for (int n = 11; n >= 0; --n) {
    const int src = pairs[n][0], dst = pairs[n][1];
    const uint32_t y = hash_mix(pool[src], 4 + n);
    const uint32_t mixed = UnshiftXor(pool[dst]);  // L * x - R * y
    pool[dst] = (mixed + S::kMixMultR * y) * left_inverse;
  }
  for (int k = 0; k < 4; ++k) {
    seed.words[k] = (UnshiftXor(pool[k]) * InverseMod2To32(consts[k + 1])) ^ consts[k];
  }
  return seed;
}

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_SEED_RECOVERY_H_
