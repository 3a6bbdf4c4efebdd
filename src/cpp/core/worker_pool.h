// A fixed set of worker threads that run one task over `num_workers() + 1` ranges per call.
// The calling thread runs range 0 itself. Workers spin briefly after each task and then park on
// an atomic wait (a futex on Linux), so an idle pool uses no CPU.
//
// Threading: `Run` may be called by one thread at a time (the owner serialises calls).
#ifndef FASTBATCH_CORE_WORKER_POOL_H_
#define FASTBATCH_CORE_WORKER_POOL_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace fastbatch {

// Splits envs [0, n) into `ranges` contiguous ranges for the workers: bounds[r] to bounds[r + 1]
// is range r, bounds[0] == 0, bounds[ranges] == n, ascending. Inner borders fall on multiples
// of the largest granule (64, 16, 4 or 1 envs) that still gives every range work, so that
// threads write disjoint cache lines of the flag and reward arrays whenever the batch is large
// enough. Requires n >= 1 and ranges >= 1 (ranges > n gives some empty ranges).
std::vector<int64_t> SplitRanges(int64_t n, int ranges);

class WorkerPool {
 public:
  using Task = void (*)(void* context, int range);

  // Starts `num_workers` threads (0 is allowed: Run then calls the task once, inline).
  explicit WorkerPool(int num_workers);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int num_workers() const { return static_cast<int>(threads_.size()); }

  // Runs task(context, r) for every r in [0, num_workers() + 1) and returns when all are done.
  // The task must not throw.
  void Run(Task task, void* context);

 private:
  void Loop(int range);

  std::vector<std::thread> threads_;
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<uint32_t> pending_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<bool> stop_{false};
  Task task_ = nullptr;
  void* context_ = nullptr;
};

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_WORKER_POOL_H_
