// ChunkSize: chunks cover [0, n); their size is a multiple of the granule (the largest of 64, 16,
// 4 that still gives every thread a chunk, else 1); there are about 8 per thread, never fewer
// than the threads when n allows, and never more than kMaxChunks. One thread: one chunk.
#include <cstdint>
#include <string>
#include <vector>

#include "check.h"
#include "core/worker_pool.h"

namespace fastbatch {
namespace {

int64_t ExpectedGranule(int64_t n, int threads) {
  for (int64_t g : {64, 16, 4}) {
    if (n / g >= threads) return g;
  }
  return 1;
}

std::string Where(int64_t n, int threads) {
  return "n=" + std::to_string(n) + ", threads=" + std::to_string(threads);
}

std::vector<int64_t> Sizes() {
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 700; ++n) sizes.push_back(n);
  for (int64_t n : {1023, 1024, 1025, 4095, 4096, 4097, 10000, 65539, 1 << 20, 1 << 26}) {
    sizes.push_back(n);
  }
  return sizes;
}

FB_TEST(OneThreadGetsOneChunk) {
  for (int64_t n : Sizes()) FB_CHECK_MSG(ChunkSize(n, 1) == n, Where(n, 1));
}

FB_TEST(ChunksAreGranuleMultiplesAboutEightPerThread) {
  for (int64_t n : Sizes()) {
    for (int threads = 2; threads <= 17; ++threads) {
      const int64_t size = ChunkSize(n, threads);
      const int64_t chunks = (n + size - 1) / size;
      FB_CHECK_MSG(size >= 1 && size % ExpectedGranule(n, threads) == 0, Where(n, threads));
      FB_CHECK_MSG(chunks <= 8 * threads && chunks <= kMaxChunks, Where(n, threads));
      // Every thread can get a chunk when there are enough envs.
      FB_CHECK_MSG(chunks >= std::min<int64_t>(n, threads), Where(n, threads));
    }
  }
  for (int threads : {1000, 20000, 100000}) {  // the chunk count fits the segment words' 16 bits
    const int64_t n = int64_t{1} << 30;
    FB_CHECK_MSG((n + ChunkSize(n, threads) - 1) / ChunkSize(n, threads) <= kMaxChunks,
                 Where(n, threads));
  }
}

FB_TEST(ExamplesGiveTheDocumentedSizes) {
  FB_CHECK_EQ(ChunkSize(1, 1), 1);
  FB_CHECK_EQ(ChunkSize(256, 2), 64);    // 4 chunks, borders on cache lines of 1-byte flags
  FB_CHECK_EQ(ChunkSize(4096, 2), 256);  // 16 chunks
  FB_CHECK_EQ(ChunkSize(4096, 3), 192);  // 4096 / 24 rounded up to 64
  FB_CHECK_EQ(ChunkSize(16, 2), 4);
  FB_CHECK_EQ(ChunkSize(37, 3), 4);
  FB_CHECK_EQ(ChunkSize(5, 4), 1);
}

}  // namespace
}  // namespace fastbatch

FB_TEST_MAIN()
