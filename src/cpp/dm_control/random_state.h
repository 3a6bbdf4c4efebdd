// numpy's legacy `np.random.RandomState` (MT19937), the generator every dm_control task draws
// its initial states from (`Task.random`): for the same seed it draws the same numbers in the
// same order as numpy. Seed(s) is `RandomState(s)` for s in [0, 2^32) (numpy's `mt19937_seed`);
// SeedByArray(words) is `RandomState(np.array(words, dtype=np.uint32))` (`init_by_array`), what
// a seed of more than one 32-bit word seeds here (numpy itself refuses such an int). RandomSample
// is `random_sample()`/`rand()` (53 bits from two 32-bit draws), Uniform(low, high) is
// `uniform(low, high)` (low + (high - low) * random_sample(), the range computed first as numpy
// does), StandardNormal is `randn()`/`standard_normal()` (the legacy polar method: a pair per
// rejection loop, the second value cached for the next call, the cache cleared by seeding).
// An array draw (`uniform(low, high, n)`, `randn(n)`) is n scalar draws in order.
//
// Threading: used by the thread stepping its env; not synchronised.
#ifndef FASTBATCH_DM_CONTROL_RANDOM_STATE_H_
#define FASTBATCH_DM_CONTROL_RANDOM_STATE_H_

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace fastbatch::dm_control {

class RandomState {
 public:
  RandomState() { Seed(0); }

  void Seed(uint32_t seed) {
    for (int i = 0; i < kN; ++i) {
      key_[i] = seed;
      seed = 1812433253u * (seed ^ (seed >> 30)) + static_cast<uint32_t>(i) + 1u;
    }
    Restart();
  }

  // Knuth's init_by_array over Seed(19650218), as numpy's `mt19937_init_by_array`.
  void SeedByArray(const uint32_t* words, size_t count) {
    Seed(19650218u);
    int i = 1;
    size_t j = 0;
    for (int k = static_cast<int>(count > kN ? count : kN); k > 0; --k) {
      key_[i] = (key_[i] ^ ((key_[i - 1] ^ (key_[i - 1] >> 30)) * 1664525u)) + words[j] +
                static_cast<uint32_t>(j);
      ++i;
      ++j;
      if (i >= kN) {
        key_[0] = key_[kN - 1];
        i = 1;
      }
      if (j >= count) j = 0;
    }
    for (int k = kN - 1; k > 0; --k) {
      key_[i] = (key_[i] ^ ((key_[i - 1] ^ (key_[i - 1] >> 30)) * 1566083941u)) -
                static_cast<uint32_t>(i);
      ++i;
      if (i >= kN) {
        key_[0] = key_[kN - 1];
        i = 1;
      }
    }
    key_[0] = 0x80000000u;
    Restart();
  }

  uint32_t NextU32() {
    if (pos_ == kN) Generate();
    uint32_t y = key_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
  }

  double RandomSample() {
    const int32_t a = static_cast<int32_t>(NextU32() >> 5);
    const int32_t b = static_cast<int32_t>(NextU32() >> 6);
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  double Uniform(double low, double high) {
    const double range = high - low;
    return low + range * RandomSample();
  }

  double StandardNormal() {
    if (has_gauss_) {
      has_gauss_ = false;
      const double cached = gauss_;
      gauss_ = 0.0;
      return cached;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * RandomSample() - 1.0;
      x2 = 2.0 * RandomSample() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    gauss_ = f * x1;
    has_gauss_ = true;
    return f * x2;
  }

 private:
  static constexpr int kN = 624;
  static constexpr int kM = 397;

  void Restart() {
    pos_ = kN;
    has_gauss_ = false;
    gauss_ = 0.0;
  }

  void Generate() {
    auto twist = [](uint32_t upper, uint32_t lower, uint32_t far) {
      const uint32_t y = (upper & 0x80000000u) | (lower & 0x7fffffffu);
      return far ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    };
    int i = 0;
    for (; i < kN - kM; ++i) key_[i] = twist(key_[i], key_[i + 1], key_[i + kM]);
    for (; i < kN - 1; ++i) key_[i] = twist(key_[i], key_[i + 1], key_[i + kM - kN]);
    key_[kN - 1] = twist(key_[kN - 1], key_[0], key_[kM - 1]);
    pos_ = 0;
  }

  uint32_t key_[kN];
  int pos_ = kN;
  bool has_gauss_ = false;
  double gauss_ = 0.0;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_RANDOM_STATE_H_
