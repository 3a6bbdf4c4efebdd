#include "worker_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace fastbatch {
namespace {

// Roughly tens of microseconds of spinning before a thread parks: long enough to catch the next
// batch step of a tight loop, short enough not to steal a core from the caller's policy.
constexpr int kSpinIterations = 4000;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

std::vector<int64_t> SplitRanges(int64_t n, int ranges) {
  int64_t granule = 1;
  for (int64_t g : {64, 16, 4}) {
    if (n / g >= ranges) {
      granule = g;
      break;
    }
  }
  const int64_t units = (n + granule - 1) / granule;
  std::vector<int64_t> bounds(static_cast<size_t>(ranges) + 1, 0);
  for (int r = 1; r <= ranges; ++r) {
    bounds[static_cast<size_t>(r)] = std::min(n, units * r / ranges * granule);
  }
  bounds.back() = n;
  return bounds;
}

WorkerPool::WorkerPool(int num_workers) {
  threads_.reserve(static_cast<size_t>(num_workers));
  for (int i = 0; i < num_workers; ++i) threads_.emplace_back(&WorkerPool::Loop, this, i + 1);
}

WorkerPool::~WorkerPool() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::Run(Task task, void* context) {
  if (threads_.empty()) {
    task(context, 0);
    return;
  }
  task_ = task;
  context_ = context;
  pending_.store(static_cast<uint32_t>(threads_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) generation_.notify_all();
  task(context, 0);
  for (int k = 0; k < kSpinIterations; ++k) {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    CpuRelax();
  }
  for (uint32_t p; (p = pending_.load(std::memory_order_acquire)) != 0;) {
    pending_.wait(p, std::memory_order_acquire);
  }
}

void WorkerPool::Loop(int range) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    for (int k = 0; k < kSpinIterations && g == seen; ++k) {
      CpuRelax();
      g = generation_.load(std::memory_order_acquire);
    }
    while (g == seen) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      // Re-check after announcing ourselves, so a Run that missed the announcement is seen.
      if (generation_.load(std::memory_order_seq_cst) == seen) {
        generation_.wait(seen, std::memory_order_acquire);
      }
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_relaxed)) return;
    task_(context_, range);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace fastbatch
