// A fixed set of worker threads that, with the calling thread, run one task over the chunks of
// a batch, each chunk exactly once. Each taking part thread owns a contiguous segment of the
// chunks and claims them one at a time from the front; a thread that has run out steals
// unclaimed chunks from the back of the others' segments. Segments are sized by what each
// thread ran in the previous batch, so the split settles where no one steals and each thread
// steps the same envs batch after batch (they stay in its cache). A thread that loses its core
// delays the batch by at most the one chunk it holds, and the caller never waits for a worker
// that has not started: it steals whatever that worker has not claimed.
//
// Waiting: a thread that waits (a worker for the next batch, the caller for the last chunks)
// spins with `pause` for a few microseconds, then yields its core for a while so that a thread
// sharing the core can run (the machine may be oversubscribed), then sleeps on a futex
// (std::atomic::wait). An idle pool uses no CPU.
//
// ThreadTuner picks how many threads a batch uses: it times batches and moves to a count that
// measures faster, probing the neighbours now and then (with one core taken by another process,
// fewer threads are often faster than all of them).
//
// Threading: Run, and every ThreadTuner method, may be called by one thread at a time (the owner
// serialises its calls).
#ifndef FASTBATCH_CORE_WORKER_POOL_H_
#define FASTBATCH_CORE_WORKER_POOL_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace fastbatch {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// The waiting policy of every pool thread: returns true as soon as ready() holds; false once
// `spin` of spinning with `pause` and then `yield - spin` of yielding the core have passed
// without it (the caller then sleeps on a futex).
template <typename Ready>
bool SpinThenYield(Ready ready, std::chrono::microseconds spin, std::chrono::microseconds yield) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (;;) {
    for (int k = 0; k < 32; ++k) {
      if (ready()) return true;
      CpuRelax();
    }
    if (Clock::now() - start >= spin) break;
  }
  for (;;) {
    if (ready()) return true;
    if (Clock::now() - start >= yield) return false;
    std::this_thread::yield();
  }
}

// Envs per chunk for `n` envs stepped by up to `threads` threads: about n / (8 * threads), so a
// thread that is slow or descheduled is covered by the others and a stolen last chunk is short,
// rounded up to a multiple of the largest granule of 64, 16 or 4 envs that still gives every thread
// a chunk (else 1). At 64, chunk borders split every per-env array of 1-byte flags and wider values
// on cache lines. The chunks number at most kMaxChunks. Requires n >= 1 and threads >= 1.
int64_t ChunkSize(int64_t n, int threads);
inline constexpr int64_t kMaxChunks = 0xFFFF;

class WorkerPool {
 public:
  // Runs chunks [begin, end) of the current batch; `context` is the one given to Run.
  using Task = void (*)(void* context, int64_t begin, int64_t end);

  // Starts `num_workers` threads (0 is allowed: Run then calls the task once, inline).
  explicit WorkerPool(int num_workers);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int num_workers() const { return static_cast<int>(threads_.size()); }

  // Runs every chunk of [0, num_chunks) exactly once (1 <= num_chunks <= kMaxChunks) and returns
  // when all have finished. With helpers == 0 (or no workers) the caller runs task(context, 0,
  // num_chunks) itself; otherwise the caller and workers 1..helpers (at most num_workers())
  // claim chunks one at a time, calling task(context, c, c + 1). Workers above `helpers` sleep.
  // The task must not throw.
  void Run(Task task, void* context, int64_t num_chunks, int helpers);

 private:
  // One thread's chunks of the current batch, [front, back): generation (bits 32-63), front
  // (16-31), back (0-15). The owner takes the front, thieves the back, each by compare-exchange
  // on the whole word, so a thread that wakes late can never claim a newer batch's chunk.
  struct alignas(64) Segment {
    std::atomic<uint64_t> word{0};
  };

  void Loop(uint32_t index);
  // Runs chunks of batch `generation` as thread `self` of `participants`: its own segment
  // first, then the others' from the back, until none is left; returns how many it ran. Every
  // chunk it ran belongs to that batch, which cannot end, nor a newer one start, before they
  // are counted in done_. task_, context_ and total_ are read only after a claim succeeded.
  uint32_t Work(uint32_t self, uint32_t participants, uint32_t generation);

  std::vector<std::thread> threads_;
  // Chunks each thread ran in the current batch: written by that thread before it counts them
  // in done_, read (and zeroed) by the next Run.
  struct alignas(64) Ran {
    uint64_t count = 0;
  };

  std::unique_ptr<Segment[]> segments_;  // one per thread, the caller's first
  std::unique_ptr<Ran[]> ran_;
  uint64_t last_participants_ = 0, last_chunks_ = 0;  // the last batch's shape (caller only)
  Task task_ = nullptr;
  void* context_ = nullptr;
  uint32_t total_ = 0;                               // chunks of the current batch
  alignas(64) std::atomic<uint32_t> generation_{0};  // futex word: a new batch is published
  std::atomic<uint32_t> participants_{1};            // threads taking part in the batch
  std::atomic<uint32_t> sleepers_{0};                // workers asleep on generation_
  std::atomic<uint32_t> helpers_{0};                 // futex word: workers 1..helpers_ take part
  std::atomic<bool> stop_{false};
  alignas(64) std::atomic<uint32_t> done_{0};  // chunks of the current batch finished
  std::atomic<uint32_t> caller_asleep_{0};     // Run sleeps on done_
};

// Chooses the thread count of each batch step (or async recv cycle) from 1 to `max_threads`. It
// measures the mean step time over blocks of at least 10 ms and 16 steps (time spent inside batch
// steps). After an interval with the current choice (20 ms, doubling up to 1 s while the choice
// holds, and at least 16 blocks' time, so that probing costs a few percent where blocks are long)
// it probes a neighbouring count for one block and moves there when the probe's mean is at
// least 3% below both the last normal block of the current choice and the block of the current
// choice right after the probe (so a burst of load that passes does not move it). Two blocks in a
// row 25% slower than the last normal block (the machine got busy) start a probe of one thread
// fewer at once.
// Means, not medians: a descheduled thread shows up as a rare long step. Results never depend on
// the choice.
// It starts at `start` (default: max_threads) and never probes above its ceiling (default:
// max_threads; see set_ceiling). A probe that costs time outside the batch steps (the process
// backend moves envs between processes to probe: set_probe_cost) is spaced by at least 32 times
// that cost, the slowdown's probe included, so that moves take at most a few percent.
class ThreadTuner {
 public:
  explicit ThreadTuner(int max_threads, int start = 0);

  // The most threads a probe may try, clamped to [1, max_threads]; a choice above a lowered
  // ceiling drops to it at once.
  void set_ceiling(int ceiling);
  int ceiling() const { return ceiling_; }
  int max_threads() const { return max_threads_; }
  // Seconds a probe costs besides its batch steps (switching to the probed count and back);
  // 0 (the default): none.
  void set_probe_cost(double seconds) { probe_cost_ = std::max(0.0, seconds); }

  // The thread count for the next batch step (the probe's while probing).
  int threads() const { return probing_ ? candidate_ : chosen(); }
  // The count currently judged fastest.
  // Atomic so that another thread may read it (a property) while the caller steps.
  int chosen() const { return chosen_.load(std::memory_order_relaxed); }
  // Records the duration of a batch step that ran with threads() threads.
  void Record(double seconds);
  // Ends the current probe unmeasured, as a lost one (its owner judged it could not pay: the
  // process backend with no idle core for a worker); the next probe waits longer, as after a
  // loss. No effect when not probing.
  void SkipProbe();

 private:
  void StartProbe(int direction);

  int max_threads_;
  int ceiling_;
  std::atomic<int> chosen_;
  int candidate_ = 1;
  int direction_ = -1;  // the neighbour to probe next: chosen_ - 1 or chosen_ + 1
  bool probing_ = false;
  bool confirming_ = false;  // the probe won: one more block of chosen_ to beat
  double probe_mean_ = 0.0;  // the winning probe's mean
  double interval_;
  double probe_cost_ = 0.0;   // seconds a probe costs outside the batch steps (set_probe_cost)
  double since_probe_ = 0.0;  // seconds stepped with the current choice since the last probe
  double chosen_mean_ = 0.0;  // mean step time of the current choice's last block; 0: none yet
  int slow_blocks_ = 0;       // blocks in a row 25% slower than chosen_mean_
  double block_seconds_ = 0.0;
  int64_t block_steps_ = 0;
};

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_WORKER_POOL_H_
