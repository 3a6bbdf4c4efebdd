// fastbatch::Rng: the per-env random generator (public, header-only; included by env.h).
//
// xoshiro256** over an fb_rng state. The pool owns one state per env, seeded from
// (seed, env index), and hands `Reset` an Rng over it. An env that needs randomness while
// stepping keeps a copy (copies share the pool's state, so its stream continues across steps and
// resets deterministically). A default-constructed Rng owns a fixed-seed state of its own: a
// placeholder for a member that `Reset` assigns.
//
// Threading: an Rng is used by the thread stepping its env; it is not synchronised.
#ifndef FASTBATCH_RNG_H_
#define FASTBATCH_RNG_H_

#include <cstdint>

#include "fastbatch/abi.h"

namespace fastbatch {

class Rng {
 public:
  Rng()
      : own_{{0x9E3779B97F4A7C15ull, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull, 1}},
        s_(own_.s) {}
  explicit Rng(fb_rng* state) : own_{}, s_(state->s) {}
  Rng(const Rng& other) : own_(other.own_), s_(other.Owns() ? own_.s : other.s_) {}
  Rng& operator=(const Rng& other) {
    own_ = other.own_;
    s_ = other.Owns() ? own_.s : other.s_;
    return *this;
  }

  // Seeds `state` from (seed, stream) with splitmix64, so nearby seeds give unrelated streams.
  static void Seed(fb_rng* state, uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ull);
    for (uint64_t& word : state->s) word = SplitMix64(&x);
  }

  uint64_t NextU64() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  // Uniform in [low, high), computed as numpy's Generator.uniform does.
  double Uniform(double low, double high) { return low + (high - low) * Uniform(); }

 private:
  bool Owns() const { return s_ == own_.s; }
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t SplitMix64(uint64_t* x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  fb_rng own_;  // the state of a default-constructed Rng (unused otherwise)
  uint64_t* s_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_RNG_H_
