// ale-py's seeds from the pool's per-env generator state.
//
// gymnasium's Atari env, reset with `seed`, runs `SeedSequence(seed).generate_state(2)` (two
// uint32 words): word 0 seeds its numpy generator, word 1 (as an int32) is ALE's
// "random_seed" (sticky actions), and the ROM is loaded again. fastbatch's pool seeds env i's
// generator as numpy's `PCG64(SeedSequence(seed + i))` and hands the env only that state, so
// this header reads the seed words back out of a freshly seeded state: PCG64's seeding is
// state = (inc + init) * M + inc with init = (words64[0] << 64) | words64[1] (fastbatch/rng.h,
// `Rng::Seed`), and M is odd, hence invertible mod 2^128. words64[0] is uint32 words 0 and 1
// of the same sequence (low, high), as numpy's uint64 view of its uint32 words gives them.
//
// Valid only for a state no draw has advanced since it was seeded; the env draws from its
// generator only to mark a seed as used (see atari_env.h).
#ifndef FASTBATCH_ATARI_SEED_WORDS_H_
#define FASTBATCH_ATARI_SEED_WORDS_H_

#include <cstdint>

#include "fastbatch/abi.h"

namespace fastbatch_atari {

__extension__ typedef unsigned __int128 U128;

struct SeedWords {
  uint32_t numpy_seed;  // SeedSequence(seed).generate_state(2)[0]
  int32_t ale_seed;     // np.int32(SeedSequence(seed).generate_state(2)[1])
};

// PCG64's multiplier and its inverse mod 2^128 (Newton's iteration doubles the correct bits).
inline constexpr U128 kPcgMultiplier =
    (static_cast<U128>(0x2360ED051FC65DA4ull) << 64) | 0x4385DF649FCCF645ull;

constexpr U128 InverseMod2To128(U128 odd) {
  U128 inverse = odd;  // correct to 3 bits for any odd number
  for (int k = 0; k < 7; ++k) inverse *= 2 - odd * inverse;
  return inverse;
}

inline constexpr U128 kPcgMultiplierInverse = InverseMod2To128(kPcgMultiplier);
static_assert(kPcgMultiplier * kPcgMultiplierInverse == 1, "PCG64's multiplier inverts");

inline SeedWords RecoverSeedWords(const fb_rng& seeded) {
  const U128 state = (static_cast<U128>(seeded.s[1]) << 64) | seeded.s[0];
  const U128 increment = (static_cast<U128>(seeded.s[3]) << 64) | seeded.s[2];
  const U128 init = (state - increment) * kPcgMultiplierInverse - increment;
  const auto words64_0 = static_cast<uint64_t>(init >> 64);
  return {static_cast<uint32_t>(words64_0), static_cast<int32_t>(words64_0 >> 32)};
}

}  // namespace fastbatch_atari

#endif  // FASTBATCH_ATARI_SEED_WORDS_H_
