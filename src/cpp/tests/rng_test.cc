// fastbatch::Rng against values numpy 2 gives (tests/test_seeding.py compares far more draws
// through Python). Built twice: with the compiler's 128-bit integers and, as rng_portable_test,
// with FASTBATCH_RNG_PORTABLE_MATH (64-bit halves), so both arithmetic paths are checked.
#include <cstdint>
#include <stdexcept>

#include "check.h"
#include "fastbatch/rng.h"

using fastbatch::Rng;

namespace {

// numpy: np.random.PCG64(seed).random_raw(3), for seeds of one, two and four 32-bit words.
FB_TEST(RawDrawsAreNumpysPcg64) {
  struct Case {
    uint32_t words[4];
    size_t count;
    uint64_t raw[3];
  };
  const Case cases[] = {
      {{0, 0, 0, 0}, 1, {0xa30febcfd9c2825full, 0x4510bdf882d9d721ull, 0x0a7d3da94ecde8b8ull}},
      {{0xffffffffu, 0xffffffffu, 0, 0},
       2,
       {0xae163a7a8c47568full, 0xd86659f5f3382359ull, 0x01e52b195bc2d24aull}},
      {{7, 0, 0, 16}, 4, {0x10b902ba6d296da0ull, 0x1a9647f0c65342fbull, 0x03a844b6f3fe6e87ull}},
  };
  for (const Case& c : cases) {
    fb_rng state;
    Rng::Seed(&state, fastbatch::SeedSequence(c.words, c.count));
    Rng rng(&state);
    for (uint64_t expected : c.raw) FB_CHECK_EQ(rng.NextU64(), expected);
  }
}

// numpy: np.random.default_rng(0).uniform(-1, 2, 2) and .standard_normal(3).
FB_TEST(DistributionsAreNumpys) {
  fb_rng state;
  Rng::Seed(&state, 0);
  Rng rng(&state);
  FB_CHECK_EQ(rng.Uniform(-1.0, 2.0), 0x1.d25f86df1a8f0p-1);
  FB_CHECK_EQ(rng.Uniform(-1.0, 2.0), -0x1.866e30b3bb948p-3);
  Rng::Seed(&state, 0);
  FB_CHECK_EQ(rng.StandardNormal(), 0x1.017ed89db8441p-3);
  FB_CHECK_EQ(rng.StandardNormal(), -0x1.0e8cfe9bd45ccp-3);
  FB_CHECK_EQ(rng.StandardNormal(), 0x1.47e57a468b06dp-1);
}

// Copies share the pool's state; a default-constructed Rng is numpy's default_rng(0).
FB_TEST(CopiesShareTheStateAndDefaultIsSeedZero) {
  fb_rng state;
  Rng::Seed(&state, 0);
  Rng pool_view(&state);
  Rng copy = pool_view;
  FB_CHECK_EQ(copy.NextU64(), 0xa30febcfd9c2825full);
  FB_CHECK_EQ(pool_view.NextU64(), 0x4510bdf882d9d721ull);
  Rng placeholder;
  Rng placeholder_copy = placeholder;
  FB_CHECK_EQ(placeholder.NextU64(), 0xa30febcfd9c2825full);
  FB_CHECK_EQ(placeholder_copy.NextU64(), 0xa30febcfd9c2825full);  // owns a copy of the state
}

// numpy: default_rng(0).integers(7) three times (32-bit halves: the low, then the buffered
// high half of one output, then a new output), and integers(low, high) of wide spans.
FB_TEST(IntegersAreNumpys) {
  fb_rng state;
  Rng::Seed(&state, 0);
  Rng rng(&state);
  FB_CHECK_EQ(rng.Integers(7), 5);
  FB_CHECK_EQ(rng.Integers(7), 4);
  FB_CHECK_EQ(rng.Integers(7), 3);
  Rng::Seed(&state, 0);
  FB_CHECK_EQ(rng.Integers(-(int64_t{1} << 62), (int64_t{1} << 62) + 1), -2123342786782762096);
  FB_CHECK_EQ(rng.Integers((int64_t{1} << 31) + 1), 87989972);
  FB_CHECK_EQ(rng.Integers(INT64_MIN, INT64_MAX), -8918490974116450276);
}

// numpy: default_rng(0): integers(7), random(), integers(7), standard_normal(),
// integers(-5, 2**40), integers(2**32), integers(3). The buffered half outlives the 64-bit draws
// between.
FB_TEST(TheBufferedHalfOutlivesOtherDraws) {
  fb_rng state;
  Rng::Seed(&state, 0);
  Rng rng(&state);
  FB_CHECK_EQ(rng.Integers(7), 5);
  FB_CHECK_EQ(rng.Uniform(), 0x1.1442f7e20b674p-2);
  FB_CHECK_EQ(rng.Integers(7), 4);
  FB_CHECK_EQ(rng.StandardNormal(), 0x1.47e57a468b06dp-1);
  FB_CHECK_EQ(rng.Integers(-5, int64_t{1} << 40), 18172327438);
  FB_CHECK_EQ(rng.Integers(int64_t{1} << 32), 752767291);
  FB_CHECK_EQ(rng.Integers(3), 2);
}

// A span of one value draws nothing; copies share the buffer; seeding empties it; an empty
// range is refused.
FB_TEST(IntegersEdgesCopiesSeedingAndErrors) {
  fb_rng state;
  Rng::Seed(&state, 0);
  Rng rng(&state);
  FB_CHECK_EQ(rng.Integers(-3, -2), -3);
  FB_CHECK_EQ(rng.Integers(1), 0);
  FB_CHECK_EQ(rng.NextU64(), 0xa30febcfd9c2825full);
  Rng::Seed(&state, 0);
  FB_CHECK_EQ(rng.Integers(7), 5);
  FB_CHECK_EQ(state.has_uint32, 1u);
  Rng copy = rng;
  FB_CHECK_EQ(copy.Integers(7), 4);
  FB_CHECK_EQ(state.has_uint32, 0u);
  FB_CHECK_EQ(rng.Integers(7), 3);
  Rng::Seed(&state, 0);
  FB_CHECK_EQ(state.has_uint32, 0u);
  FB_CHECK_EQ(state.uinteger, 0u);
  FB_CHECK_THROWS(rng.Integers(0), std::invalid_argument);
  FB_CHECK_THROWS(rng.Integers(5, 5), std::invalid_argument);
  FB_CHECK_THROWS(rng.Integers(5, -5), std::invalid_argument);
}

}  // namespace

FB_TEST_MAIN()
