// WorkerPool: every range runs exactly once per Run, Run returns only when all are done, range 0
// runs on the calling thread, and 0 workers runs the task inline.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "check.h"
#include "core/worker_pool.h"

namespace fastbatch {
namespace {

struct Counts {
  std::vector<std::atomic<int>> per_range;
  explicit Counts(int ranges) : per_range(static_cast<size_t>(ranges)) {}
};

void Count(void* context, int range) {
  static_cast<Counts*>(context)->per_range[static_cast<size_t>(range)].fetch_add(1);
}

// A second task with its own context: Runs may alternate tasks.
void CountTwice(void* context, int range) {
  static_cast<Counts*>(context)->per_range[static_cast<size_t>(range)].fetch_add(2);
}

FB_TEST(EveryRangeRunsExactlyOncePerRun) {
  for (int workers : {0, 1, 2, 3, 7}) {
    WorkerPool pool(workers);
    FB_CHECK_EQ(pool.num_workers(), workers);
    Counts counts(workers + 1);
    constexpr int kRuns = 2000;
    int wrong_after_run = 0;
    for (int run = 1; run <= kRuns; ++run) {
      pool.Run(&Count, &counts);
      // Run has returned: every range has finished this run, none has run twice.
      for (auto& c : counts.per_range) wrong_after_run += c.load() != run;
    }
    FB_CHECK_EQ(wrong_after_run, 0);
  }
}

FB_TEST(RunsMayAlternateTasksAndContexts) {
  WorkerPool pool(3);
  Counts once(4), twice(4);
  for (int run = 0; run < 500; ++run) {
    pool.Run(&Count, &once);
    pool.Run(&CountTwice, &twice);
  }
  for (int r = 0; r < 4; ++r) {
    FB_CHECK_EQ(once.per_range[static_cast<size_t>(r)].load(), 500);
    FB_CHECK_EQ(twice.per_range[static_cast<size_t>(r)].load(), 1000);
  }
}

struct Threads {
  std::vector<std::thread::id> ids;
  std::atomic<int> calls{0};
};

void RecordThread(void* context, int range) {
  auto* t = static_cast<Threads*>(context);
  t->ids[static_cast<size_t>(range)] = std::this_thread::get_id();
  t->calls.fetch_add(1);
}

FB_TEST(ZeroWorkersRunsTheTaskInlineOnce) {
  WorkerPool pool(0);
  Threads seen;
  seen.ids.resize(1);
  pool.Run(&RecordThread, &seen);
  FB_CHECK_EQ(seen.calls.load(), 1);
  FB_CHECK(seen.ids[0] == std::this_thread::get_id());
}

FB_TEST(RangeZeroRunsOnTheCallerAndTheOthersOnWorkers) {
  WorkerPool pool(3);
  Threads seen;
  seen.ids.resize(4);
  pool.Run(&RecordThread, &seen);
  FB_CHECK_EQ(seen.calls.load(), 4);
  FB_CHECK(seen.ids[0] == std::this_thread::get_id());
  for (size_t r = 1; r < 4; ++r) {
    FB_CHECK(seen.ids[r] != std::this_thread::get_id());
    for (size_t q = 1; q < r; ++q) FB_CHECK(seen.ids[r] != seen.ids[q]);
  }
}

FB_TEST(ParkedWorkersWakeForTheNextRun) {
  WorkerPool pool(2);
  Counts counts(3);
  for (int run = 1; run <= 5; ++run) {
    // Long enough for the workers to stop spinning and sleep on the futex.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.Run(&Count, &counts);
    for (auto& c : counts.per_range) FB_CHECK_EQ(c.load(), run);
  }
}

FB_TEST(DestroyingAnIdlePoolJoinsItsWorkers) {
  for (int k = 0; k < 50; ++k) {
    WorkerPool pool(3);
    Counts counts(4);
    if (k % 2 == 0) pool.Run(&Count, &counts);
  }  // the destructor must return (ctest's timeout catches a hang)
}

}  // namespace
}  // namespace fastbatch

FB_TEST_MAIN()
