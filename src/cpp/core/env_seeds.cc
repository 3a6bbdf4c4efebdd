#include "env_seeds.h"

#include <cstring>
#include <random>
#include <stdexcept>

#include "fastbatch/rng.h"

namespace fastbatch {
namespace {

uint64_t SplitMix64(uint64_t* x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The xoshiro256** seeding of ABI versions 1-3 (their headers' Rng::Seed(state, seed, 0)).
void SeedXoshiro(uint64_t* s, const std::vector<uint32_t>& words) {
  uint64_t x = 0;
  for (size_t k = 0; k < words.size(); ++k) x ^= static_cast<uint64_t>(words[k]) << (32 * (k % 2));
  for (int k = 0; k < 4; ++k) s[k] = SplitMix64(&x);
}

}  // namespace

EnvSeeds::EnvSeeds(int64_t num_envs, uint32_t abi_version)
    : numpy_streams_(abi_version >= 4),
      buffered_(abi_version >= 5),
      states_(buffered_ ? static_cast<size_t>(num_envs) : 0),
      legacy_states_(buffered_ ? 0 : static_cast<size_t>(num_envs)),
      words_(static_cast<size_t>(num_envs)) {}

void EnvSeeds::Seed(int64_t env, const uint32_t* words, size_t count) {
  if (count == 0) throw std::invalid_argument("a seed has at least one word");
  while (count > 1 && words[count - 1] == 0) --count;
  std::vector<uint32_t>& kept = words_[static_cast<size_t>(env)];
  kept.assign(words, words + count);
  fb_rng state{};
  if (numpy_streams_) {
    Rng::Seed(&state, SeedSequence(kept.data(), kept.size()));
  } else {
    SeedXoshiro(state.s, kept);
  }
  if (buffered_) {
    states_[static_cast<size_t>(env)] = state;
  } else {
    std::memcpy(legacy_states_[static_cast<size_t>(env)].s, state.s, sizeof(state.s));
  }
}

void EnvSeeds::Seed(int64_t env, uint64_t seed) {
  const uint32_t words[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  Seed(env, words, 2);
}

void EnvSeeds::SeedFromEntropy(int64_t begin, int64_t end) {
  static thread_local std::random_device device;
  uint32_t os_bits[4];
  for (uint32_t& word : os_bits) word = static_cast<uint32_t>(device());
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t key[2] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32)};
    uint32_t words[4];
    SeedSequence(os_bits, 4, key, key[1] != 0 ? 2 : 1).GenerateState(words, 4);
    Seed(i, words, 4);
  }
}

}  // namespace fastbatch
