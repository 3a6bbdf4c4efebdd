// fastbatch::SeedSequence: numpy's `numpy.random.SeedSequence` (public, header-only; included
// by rng.h).
//
// Turns a seed of any size into well-mixed state words, exactly as numpy does (Melissa O'Neill's
// seed_seq design, numpy's constants, a pool of four 32-bit words): the same entropy, and spawn
// key, give numpy's `generate_state` words. This is how gymnasium's `np_random(seed)` seeds its
// PCG64, and how the pool seeds every env's Rng.
//
// Entropy is a list of 32-bit words, lowest first, as numpy coerces a Python int: 0 is {0},
// 2**32 + 5 is {5, 1}. Up to four words, trailing zero words make no difference (the pool is
// four words long and padded by hashing zeros), so a uint64 seed may always pass two words.
//
// Threading: a SeedSequence is immutable after construction.
#ifndef FASTBATCH_SEED_SEQUENCE_H_
#define FASTBATCH_SEED_SEQUENCE_H_

#include <cstddef>
#include <cstdint>

namespace fastbatch {

class SeedSequence {
 public:
  static constexpr size_t kPoolSize = 4;

  // numpy's SeedSequence(entropy, spawn_key=spawn_key): `count` entropy words and
  // `spawn_count` spawn-key words (numpy pads the entropy to the pool size with zero words when
  // there is a spawn key).
  SeedSequence(const uint32_t* entropy, size_t count, const uint32_t* spawn_key = nullptr,
               size_t spawn_count = 0) {
    const size_t run = spawn_count > 0 && count < kPoolSize ? kPoolSize : count;
    const size_t total = run + spawn_count;
    auto word = [&](size_t i) -> uint32_t {
      if (i >= run) return spawn_key[i - run];
      return i < count ? entropy[i] : 0u;
    };
    uint32_t hash = kInitA;
    auto hash_mix = [&hash](uint32_t value) {
      value ^= hash;
      hash *= kMultA;
      value *= hash;
      return value ^ (value >> kShift);
    };
    for (size_t i = 0; i < kPoolSize; ++i) pool_[i] = hash_mix(i < total ? word(i) : 0u);
    // Every pool word mixes into every other, so late words affect early ones.
    for (size_t src = 0; src < kPoolSize; ++src) {
      for (size_t dst = 0; dst < kPoolSize; ++dst) {
        if (src != dst) pool_[dst] = Mix(pool_[dst], hash_mix(pool_[src]));
      }
    }
    // Entropy beyond the pool's size mixes into every pool word.
    for (size_t src = kPoolSize; src < total; ++src) {
      for (size_t dst = 0; dst < kPoolSize; ++dst)
        pool_[dst] = Mix(pool_[dst], hash_mix(word(src)));
    }
  }

  // numpy's SeedSequence(seed): the seed's two 32-bit words.
  explicit SeedSequence(uint64_t seed) : SeedSequence(Words(seed).w, 2) {}

  // numpy's generate_state(n, np.uint32).
  void GenerateState(uint32_t* out, size_t n) const {
    uint32_t hash = kInitB;
    for (size_t i = 0; i < n; ++i) out[i] = StateWord(i, &hash);
  }

  // numpy's generate_state(n, np.uint64): 2n 32-bit words, paired low word first.
  void GenerateState64(uint64_t* out, size_t n) const {
    uint32_t hash = kInitB;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t low = StateWord(2 * i, &hash);
      out[i] = low | static_cast<uint64_t>(StateWord(2 * i + 1, &hash)) << 32;
    }
  }

  // The mixed pool (numpy's `SeedSequence.pool`).
  const uint32_t* pool() const { return pool_; }

  // numpy's hashing constants (public for code that inverts the hash, e.g. to read a seed back).
  static constexpr uint32_t kInitA = 0x43b0d7e5u;
  static constexpr uint32_t kMultA = 0x931e8875u;
  static constexpr uint32_t kInitB = 0x8b51f9ddu;
  static constexpr uint32_t kMultB = 0x58f38dedu;
  static constexpr uint32_t kMixMultL = 0xca01f9ddu;
  static constexpr uint32_t kMixMultR = 0x4973f715u;
  static constexpr int kShift = 16;

 private:
  struct Words {
    explicit Words(uint64_t v) : w{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)} {}
    uint32_t w[2];
  };
  // State word i; `hash` carries the multiplier from word to word.
  uint32_t StateWord(size_t i, uint32_t* hash) const {
    uint32_t value = pool_[i % kPoolSize] ^ *hash;
    *hash *= kMultB;
    value *= *hash;
    return value ^ (value >> kShift);
  }
  static uint32_t Mix(uint32_t x, uint32_t y) {
    const uint32_t result = kMixMultL * x - kMixMultR * y;
    return result ^ (result >> kShift);
  }

  uint32_t pool_[kPoolSize];
};

}  // namespace fastbatch

#endif  // FASTBATCH_SEED_SEQUENCE_H_
