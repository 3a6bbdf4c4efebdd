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
// Layout: each table gets the fb_rng layout it was built with (abi.h, "Versions"): 40-byte
// states (PCG64 and its 32-bit buffer) for version 5 or later, 32-byte `{s[4]}` states for
// versions 1 to 4. `states()` is typed fb_rng* either way; only the table indexes it.
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
  // [num_envs] states in the table's layout (see above), for fb_batch.rngs. Owned here; valid
  // as long as this object.
  fb_rng* states() {
    // A version 1-4 table reads these as its own 32-byte fb_rng: the pointer only travels.
    return buffered_ ? states_.data() : reinterpret_cast<fb_rng*>(legacy_states_.data());
  }

 private:
  // fb_rng as ABI versions 1 to 4 laid it out.
  struct LegacyRng {
    uint64_t s[4];
  };
  static_assert(sizeof(LegacyRng) == 32 && sizeof(fb_rng) == 40, "fb_rng layouts (abi.h)");

  bool numpy_streams_;                    // ABI version 4 or later
  bool buffered_;                         // ABI version 5 or later: fb_rng with its 32-bit buffer
  std::vector<fb_rng> states_;            // [num_envs] when buffered_, else empty
  std::vector<LegacyRng> legacy_states_;  // [num_envs] when not buffered_, else empty
  std::vector<std::vector<uint32_t>> words_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_ENV_SEEDS_H_
