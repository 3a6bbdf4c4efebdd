// WorkerPool: every chunk runs exactly once per Run whatever the worker and helper counts, Run
// returns only when all are done, helpers == 0 runs the task inline as one call, workers above
// `helpers` stay out, a stalled thread holds up only its own chunk, and idle workers wake for
// the next Run.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "core/worker_pool.h"

namespace fastbatch {
namespace {

struct Counts {
  std::vector<std::atomic<int>> per_chunk;
  explicit Counts(int64_t chunks) : per_chunk(static_cast<size_t>(chunks)) {}
};

void Count(void* context, int64_t begin, int64_t end) {
  auto* counts = static_cast<Counts*>(context);
  for (int64_t c = begin; c < end; ++c) counts->per_chunk[static_cast<size_t>(c)].fetch_add(1);
}

// A second task with its own context: Runs may alternate tasks.
void CountTwice(void* context, int64_t begin, int64_t end) {
  auto* counts = static_cast<Counts*>(context);
  for (int64_t c = begin; c < end; ++c) counts->per_chunk[static_cast<size_t>(c)].fetch_add(2);
}

FB_TEST(EveryChunkRunsExactlyOncePerRun) {
  for (int workers : {0, 1, 2, 3, 7}) {
    WorkerPool pool(workers);
    FB_CHECK_EQ(pool.num_workers(), workers);
    for (int64_t chunks :
         {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{8}, int64_t{29}, int64_t{256}, kMaxChunks}) {
      Counts counts(chunks);
      const int runs = chunks > 1000 ? 20 : 400;
      int wrong_after_run = 0;
      for (int run = 1; run <= runs; ++run) {
        pool.Run(&Count, &counts, chunks, run % (workers + 2));  // helpers 0..workers + 1
        // Run has returned: every chunk has finished this run, none has run twice.
        for (auto& c : counts.per_chunk) wrong_after_run += c.load() != run;
      }
      FB_CHECK_MSG(wrong_after_run == 0,
                   "workers=" + std::to_string(workers) + ", chunks=" + std::to_string(chunks));
    }
  }
}

FB_TEST(RunsMayAlternateTasksContextsAndChunkCounts) {
  WorkerPool pool(3);
  Counts once(16), twice(5);
  for (int run = 0; run < 500; ++run) {
    pool.Run(&Count, &once, 16, 3);
    pool.Run(&CountTwice, &twice, 5, 2);
  }
  for (auto& c : once.per_chunk) FB_CHECK_EQ(c.load(), 500);
  for (auto& c : twice.per_chunk) FB_CHECK_EQ(c.load(), 1000);
}

struct Calls {
  std::mutex mu;
  std::vector<std::thread::id> thread_of_chunk;
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

void Record(void* context, int64_t begin, int64_t end) {
  auto* calls = static_cast<Calls*>(context);
  std::lock_guard<std::mutex> lock(calls->mu);
  calls->ranges.emplace_back(begin, end);
  for (int64_t c = begin; c < end; ++c) {
    calls->thread_of_chunk[static_cast<size_t>(c)] = std::this_thread::get_id();
  }
}

FB_TEST(NoHelpersRunsTheTaskInlineAsOneCall) {
  for (int workers : {0, 3}) {
    WorkerPool pool(workers);
    Calls calls;
    calls.thread_of_chunk.resize(12);
    pool.Run(&Record, &calls, 12, 0);
    FB_CHECK_EQ(calls.ranges.size(), size_t{1});
    FB_CHECK(calls.ranges[0] == std::make_pair(int64_t{0}, int64_t{12}));
    for (const auto& id : calls.thread_of_chunk) FB_CHECK(id == std::this_thread::get_id());
  }
}

// A slow task: each chunk takes a few microseconds, so that workers get to claim some.
void SlowRecord(void* context, int64_t begin, int64_t end) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  while (std::chrono::steady_clock::now() < until) CpuRelax();
  Record(context, begin, end);
}

FB_TEST(WorkersAboveHelpersStayOut) {
  WorkerPool pool(3);
  for (int helpers : {1, 3, 2, 1, 0, 3}) {
    std::set<std::thread::id> threads;
    for (int run = 0; run < 20; ++run) {
      Calls calls;
      calls.thread_of_chunk.resize(32);
      pool.Run(&SlowRecord, &calls, 32, helpers);
      for (const auto& [begin, end] : calls.ranges) FB_CHECK_EQ(end - begin, helpers ? 1 : 32);
      threads.insert(calls.thread_of_chunk.begin(), calls.thread_of_chunk.end());
    }
    FB_CHECK_MSG(
        threads.size() <= static_cast<size_t>(helpers + 1),
        std::to_string(threads.size()) + " threads for helpers=" + std::to_string(helpers));
  }
}

// The first chunk a worker takes stalls for 30 ms (as if its thread lost its core); the other
// chunks must all finish meanwhile, on the caller and the other worker.
struct Stall {
  std::thread::id caller;
  std::atomic<bool> stalled{false};
  std::atomic<int64_t> finished{0};
  int64_t finished_before_stall_ended = -1;
};

void StallOnce(void* context, int64_t begin, int64_t end) {
  auto* s = static_cast<Stall*>(context);
  bool expected = false;
  if (std::this_thread::get_id() != s->caller &&
      s->stalled.compare_exchange_strong(expected, true)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    s->finished_before_stall_ended = s->finished.load();
  } else {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < until) CpuRelax();
  }
  s->finished.fetch_add(end - begin);
}

FB_TEST(AStalledThreadHoldsUpOnlyItsOwnChunk) {
  WorkerPool pool(2);
  for (int attempt = 0; attempt < 5; ++attempt) {
    Stall stall;
    stall.caller = std::this_thread::get_id();
    pool.Run(&StallOnce, &stall, 64, 2);
    FB_CHECK_EQ(stall.finished.load(), 64);
    if (stall.stalled.load()) FB_CHECK_EQ(stall.finished_before_stall_ended, 63);
  }
}

FB_TEST(SleepingWorkersWakeForTheNextRun) {
  WorkerPool pool(2);
  Counts counts(9);
  for (int run = 1; run <= 5; ++run) {
    // Long enough for the workers to stop spinning and yielding and sleep on the futex.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.Run(&Count, &counts, 9, run % 3);
    for (auto& c : counts.per_chunk) FB_CHECK_EQ(c.load(), run);
  }
}

FB_TEST(DestroyingAnIdlePoolJoinsItsWorkers) {
  for (int k = 0; k < 50; ++k) {
    WorkerPool pool(3);
    Counts counts(8);
    if (k % 3 != 0) pool.Run(&Count, &counts, 8, k % 4);
  }  // the destructor must return (ctest's timeout catches a hang)
}

}  // namespace
}  // namespace fastbatch

FB_TEST_MAIN()
