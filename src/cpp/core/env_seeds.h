// EnvSeeds: the pool's per-env random states (fb_rng, handed to the envs in every fb_batch) and
// the seed each was last seeded from.
//
// A seed is a non-negative integer of any size, passed as 32-bit words, lowest first (numpy's
// coercion of a Python int). Env i of `reset(seed=s)` gets s + i, as gymnasium's vector envs do.
// Envs seeded from entropy get 128 unpredictable bits each, as numpy's `SeedSequence()` draws,
// and keep them as their seed: `seed_words` is then gymnasium's `np_random_seed` (the seed, or
// the entropy of an unseeded env), and seeding with it again replays the stream. One call draws
// 128 bits from the OS and spreads them over its envs through SeedSequence spawn keys (env i:
// `SeedSequence(os_bits, spawn_key=(i,)).generate_state(4)`), so a large pool costs one OS draw.
//
// Tables of ABI version 4 or later draw through numpy's PCG64 (fastbatch/rng.h), seeded by
// numpy's SeedSequence, so seed s gives gymnasium's `np_random(s)` stream. Older tables carry
// the xoshiro256** Rng of their own headers; they are seeded as before version 4 (splitmix64 of
// the seed, whose words beyond 64 bits are folded in), so their streams do not change.
//
// Threading: called by the pool's caller thread, never while the envs are being reset or
// stepped.
#ifndef FASTBATCH_CORE_ENV_SEEDS_H_
#define FASTBATCH_CORE_ENV_SEEDS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fastbatch/abi.h"

namespace fastbatch {

class EnvSeeds {
 public:
  EnvSeeds(int64_t num_envs, uint32_t abi_version);

  // Seeds env `env` from `count` words (at least one).
  void Seed(int64_t env, const uint32_t* words, size_t count);
  void Seed(int64_t env, uint64_t seed);
  // Seeds envs [begin, end) from OS entropy, 128 bits each (see above).
  void SeedFromEntropy(int64_t begin, int64_t end);

  // The words env `env` was last seeded from (no trailing zero words; {0} for seed 0).
  const std::vector<uint32_t>& seed_words(int64_t env) const {
    return words_[static_cast<size_t>(env)];
  }
  // [num_envs] states, for fb_batch.rngs.
  fb_rng* states() { return states_.data(); }

 private:
  bool numpy_streams_;  // ABI version 4 or later
  std::vector<fb_rng> states_;
  std::vector<std::vector<uint32_t>> words_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_ENV_SEEDS_H_
