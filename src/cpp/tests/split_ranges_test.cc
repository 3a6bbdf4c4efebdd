// SplitRanges: ranges cover [0, n) in ascending order, inner borders fall on multiples of the
// granule (the largest of 64, 16, 4 that still gives every range work, else 1), and the ranges
// are balanced to within one granule.
#include <cstdint>
#include <string>
#include <vector>

#include "check.h"
#include "core/worker_pool.h"

namespace fastbatch {
namespace {

int64_t ExpectedGranule(int64_t n, int ranges) {
  for (int64_t g : {64, 16, 4}) {
    if (n / g >= ranges) return g;
  }
  return 1;
}

std::string Where(int64_t n, int ranges) {
  return "n=" + std::to_string(n) + ", ranges=" + std::to_string(ranges);
}

std::vector<int64_t> Sizes() {
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 700; ++n) sizes.push_back(n);
  for (int64_t n : {1023, 1024, 1025, 4095, 4096, 4097, 10000, 65539, 1 << 20}) sizes.push_back(n);
  return sizes;
}

FB_TEST(RangesCoverAllEnvsInAscendingOrder) {
  for (int64_t n : Sizes()) {
    for (int ranges = 1; ranges <= 17; ++ranges) {
      const std::vector<int64_t> b = SplitRanges(n, ranges);
      FB_CHECK_MSG(b.size() == static_cast<size_t>(ranges) + 1, Where(n, ranges));
      FB_CHECK_MSG(b.front() == 0 && b.back() == n, Where(n, ranges));
      for (size_t r = 0; r + 1 < b.size(); ++r) {
        // Every range has work when there are enough envs; otherwise some are empty.
        const bool ordered = ranges <= n ? b[r] < b[r + 1] : b[r] <= b[r + 1];
        FB_CHECK_MSG(ordered, Where(n, ranges) + ", range " + std::to_string(r));
      }
    }
  }
}

FB_TEST(InnerBordersFallOnGranuleMultiples) {
  for (int64_t n : Sizes()) {
    for (int ranges = 1; ranges <= 17 && ranges <= n; ++ranges) {
      const std::vector<int64_t> b = SplitRanges(n, ranges);
      const int64_t g = ExpectedGranule(n, ranges);
      for (size_t r = 1; r + 1 < b.size(); ++r) {
        FB_CHECK_MSG(b[r] % g == 0, Where(n, ranges) + ", border " + std::to_string(b[r]));
      }
    }
  }
}

FB_TEST(RangesAreBalancedToWithinOneGranule) {
  for (int64_t n : Sizes()) {
    for (int ranges = 1; ranges <= 17 && ranges <= n; ++ranges) {
      const std::vector<int64_t> b = SplitRanges(n, ranges);
      const int64_t g = ExpectedGranule(n, ranges);
      const int64_t units = (n + g - 1) / g;
      const int64_t low = units / ranges * g, high = (units / ranges + 1) * g;
      for (size_t r = 0; r + 1 < b.size(); ++r) {
        const int64_t size = b[r + 1] - b[r];
        const bool last = r + 2 == b.size();  // the last range may end early, at n
        FB_CHECK_MSG(size <= high && (last || size >= low),
                     Where(n, ranges) + ", range " + std::to_string(r));
      }
    }
  }
}

FB_TEST(ExamplesGiveTheDocumentedBorders) {
  FB_CHECK(SplitRanges(8, 1) == (std::vector<int64_t>{0, 8}));
  FB_CHECK(SplitRanges(8, 2) == (std::vector<int64_t>{0, 4, 8}));
  FB_CHECK(SplitRanges(5, 4) == (std::vector<int64_t>{0, 1, 2, 3, 5}));
  FB_CHECK(SplitRanges(256, 2) == (std::vector<int64_t>{0, 128, 256}));
  FB_CHECK(SplitRanges(100, 3) == (std::vector<int64_t>{0, 32, 64, 100}));
  FB_CHECK(SplitRanges(4096, 3) == (std::vector<int64_t>{0, 1344, 2688, 4096}));
}

}  // namespace
}  // namespace fastbatch

FB_TEST_MAIN()
