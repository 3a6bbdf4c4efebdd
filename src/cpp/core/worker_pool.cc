#include "worker_pool.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace fastbatch {
namespace {

using std::chrono::microseconds;

// A worker waiting for the next batch spins this long (a tight stepping loop comes back within
// it), then yields its core until kIdleYield has passed (a policy step between batches usually
// ends within it), then sleeps.
constexpr microseconds kIdleSpin{20};
constexpr microseconds kIdleYield{200};
// The caller waiting for the chunks that workers still hold: at most one chunk's time spinning,
// then yielding (a descheduled worker may share the caller's core), then sleeping.
constexpr microseconds kDoneSpin{30};
constexpr microseconds kDoneYield{200};

constexpr uint64_t Pack(uint32_t generation, int64_t count, int64_t next) {
  return (static_cast<uint64_t>(generation) << 32) | (static_cast<uint64_t>(count) << 16) |
         static_cast<uint64_t>(next);
}
constexpr int64_t Count(uint64_t word) { return static_cast<int64_t>((word >> 16) & 0xFFFF); }
constexpr int64_t Next(uint64_t word) { return static_cast<int64_t>(word & 0xFFFF); }

}  // namespace

int64_t ChunkSize(int64_t n, int threads) {
  if (threads <= 1) return n;
  int64_t granule = 1;
  for (int64_t g : {64, 16, 4}) {
    if (n / g >= threads) {
      granule = g;
      break;
    }
  }
  const int64_t chunks_wanted = 4 * static_cast<int64_t>(threads);
  int64_t size = (n + chunks_wanted - 1) / chunks_wanted;
  size = std::max(size, (n + kMaxChunks - 1) / kMaxChunks);
  return (size + granule - 1) / granule * granule;
}

WorkerPool::WorkerPool(int num_workers) {
  threads_.reserve(static_cast<size_t>(num_workers));
  for (int i = 0; i < num_workers; ++i) {
    threads_.emplace_back(&WorkerPool::Loop, this, static_cast<uint32_t>(i + 1));
  }
}

WorkerPool::~WorkerPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  helpers_.store(std::numeric_limits<uint32_t>::max(), std::memory_order_seq_cst);
  helpers_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::Run(Task task, void* context, int64_t num_chunks, int helpers) {
  helpers = std::min(helpers, num_workers());
  if (helpers <= 0 || num_chunks <= 1) {
    task(context, 0, num_chunks);
    return;
  }
  const auto wanted = static_cast<uint32_t>(helpers);
  if (helpers_.load(std::memory_order_relaxed) != wanted) {
    helpers_.store(wanted, std::memory_order_seq_cst);
    helpers_.notify_all();  // a syscall only when the tuner changes the count
  }
  task_ = task;
  context_ = context;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  cursor_.store(Pack(generation, num_chunks, 0), std::memory_order_release);
  generation_.store(generation, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) generation_.notify_all();

  uint32_t claimed_total = 0;
  const uint32_t ran = Claim(&claimed_total);
  const auto total = static_cast<uint32_t>(num_chunks);
  if (ran != 0) done_.fetch_add(ran, std::memory_order_acq_rel);
  auto finished = [this, total] { return done_.load(std::memory_order_acquire) == total; };
  if (SpinThenYield(finished, kDoneSpin, kDoneYield)) return;
  caller_asleep_.store(1, std::memory_order_seq_cst);
  for (uint32_t d; (d = done_.load(std::memory_order_seq_cst)) != total;) {
    done_.wait(d, std::memory_order_acquire);
  }
  caller_asleep_.store(0, std::memory_order_relaxed);
}

uint32_t WorkerPool::Claim(uint32_t* total) {
  uint32_t ran = 0;
  uint64_t word = cursor_.load(std::memory_order_acquire);
  while (Next(word) < Count(word)) {
    if (cursor_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      const int64_t chunk = Next(word);
      *total = static_cast<uint32_t>(Count(word));
      task_(context_, chunk, chunk + 1);
      ++ran;
      word = cursor_.load(std::memory_order_acquire);
    }
  }
  return ran;
}

void WorkerPool::Loop(uint32_t index) {
  uint32_t seen = 0;
  for (;;) {
    // Sleep while the batches leave this worker out; Run changes helpers_ only when the count
    // changes, so a left-out worker costs nothing per batch.
    for (uint32_t h; (h = helpers_.load(std::memory_order_acquire)) < index;) {
      if (stop_.load(std::memory_order_acquire)) return;
      helpers_.wait(h, std::memory_order_acquire);
    }
    auto fresh = [this, &seen] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!SpinThenYield(fresh, kIdleSpin, kIdleYield)) {
      while (!fresh()) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        // Re-check after announcing ourselves, so a Run that missed the announcement is seen.
        if (generation_.load(std::memory_order_seq_cst) == seen) {
          generation_.wait(seen, std::memory_order_acquire);
        }
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    if (helpers_.load(std::memory_order_relaxed) < index) continue;
    uint32_t total = 0;
    const uint32_t ran = Claim(&total);
    if (ran == 0) continue;
    const uint32_t before = done_.fetch_add(ran, std::memory_order_seq_cst);
    if (before + ran == total && caller_asleep_.load(std::memory_order_seq_cst) != 0) {
      done_.notify_one();
    }
  }
}

ThreadTuner::ThreadTuner(int max_threads)
    : max_threads_(std::max(1, max_threads)), chosen_(max_threads_), interval_(0.02) {}

void ThreadTuner::Record(double seconds) {
  constexpr double kFirstInterval = 0.02, kMaxInterval = 1.0, kProbeSeconds = 0.01;
  constexpr int64_t kMinSteps = 16;
  constexpr double kMargin = 0.03;
  if (max_threads_ == 1) return;
  window_seconds_ += seconds;
  ++window_steps_;
  if (window_steps_ < kMinSteps) return;
  if (!probing_) {
    if (window_seconds_ < interval_) return;
    chosen_mean_ = window_seconds_ / static_cast<double>(window_steps_);
    candidate_ = chosen_ + direction_;
    if (candidate_ < 1 || candidate_ > max_threads_) candidate_ = chosen_ - direction_;
    direction_ = -direction_;
    probing_ = true;
  } else {
    if (window_seconds_ < kProbeSeconds) return;
    const double mean = window_seconds_ / static_cast<double>(window_steps_);
    if (mean < chosen_mean_ * (1.0 - kMargin)) {
      chosen_ = candidate_;
      interval_ = kFirstInterval;
    } else {
      interval_ = std::min(2.0 * interval_, kMaxInterval);
    }
    probing_ = false;
  }
  window_seconds_ = 0.0;
  window_steps_ = 0;
}

}  // namespace fastbatch
