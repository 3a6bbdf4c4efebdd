#include "worker_pool.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace fastbatch {
namespace {

using std::chrono::microseconds;

// Pure spinning lasts only a few microseconds everywhere: when the scheduler puts two of our
// threads on one CPU (the machine is oversubscribed), a spinning thread holds up the very
// thread it waits for, while yielding hands that thread the CPU (and costs about a microsecond
// when nothing else wants it).
// A worker waiting for the next batch spins, then yields its core until kIdleYield has passed
// (a tight stepping loop, or a policy step between batches, comes back within it), then sleeps.
constexpr microseconds kIdleSpin{2};
constexpr microseconds kIdleYield{200};
// The caller waiting for the chunks that workers still hold: spins, then yields (a descheduled
// worker may share the caller's core), then sleeps.
constexpr microseconds kDoneSpin{2};
constexpr microseconds kDoneYield{200};

constexpr uint64_t Pack(uint32_t generation, uint64_t front, uint64_t back) {
  return (static_cast<uint64_t>(generation) << 32) | (front << 16) | back;
}
constexpr uint32_t Generation(uint64_t word) { return static_cast<uint32_t>(word >> 32); }
constexpr int64_t Front(uint64_t word) { return static_cast<int64_t>((word >> 16) & 0xFFFF); }
constexpr int64_t Back(uint64_t word) { return static_cast<int64_t>(word & 0xFFFF); }
constexpr uint64_t kOneFront = uint64_t{1} << 16;

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
  const int64_t chunks_wanted = 8 * static_cast<int64_t>(threads);
  int64_t size = (n + chunks_wanted - 1) / chunks_wanted;
  size = std::max(size, (n + kMaxChunks - 1) / kMaxChunks);
  return (size + granule - 1) / granule * granule;
}

WorkerPool::WorkerPool(int num_workers)
    : segments_(std::make_unique<Segment[]>(static_cast<size_t>(num_workers) + 1)),
      ran_(std::make_unique<Ran[]>(static_cast<size_t>(num_workers) + 1)) {
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
  total_ = static_cast<uint32_t>(num_chunks);
  done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  const auto participants = static_cast<uint64_t>(helpers) + 1;
  const auto chunks = static_cast<uint64_t>(num_chunks);
  // Segments sized by what each thread ran in the last batch of this shape (a thread that
  // starts later, or runs slower, steals less next time: the split settles where no one needs
  // to steal, and envs stay on their thread); equal otherwise.
  const bool same_shape = participants == last_participants_ && chunks == last_chunks_;
  uint64_t front = 0;
  for (uint64_t t = 0; t < participants; ++t) {
    const uint64_t size =
        same_shape ? ran_[t].count : chunks * (t + 1) / participants - chunks * t / participants;
    const uint64_t back = t + 1 == participants ? chunks : std::min(chunks, front + size);
    segments_[t].word.store(Pack(generation, front, back), std::memory_order_release);
    ran_[t].count = 0;
    front = back;
  }
  last_participants_ = participants;
  last_chunks_ = chunks;
  participants_.store(static_cast<uint32_t>(participants), std::memory_order_relaxed);
  generation_.store(generation, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) generation_.notify_all();

  const uint32_t ran = Work(0, static_cast<uint32_t>(participants), generation);
  ran_[0].count = ran;
  if (ran != 0) done_.fetch_add(ran, std::memory_order_acq_rel);
  const uint32_t total = total_;
  auto finished = [this, total] { return done_.load(std::memory_order_acquire) == total; };
  if (SpinThenYield(finished, kDoneSpin, kDoneYield)) return;
  caller_asleep_.store(1, std::memory_order_seq_cst);
  for (uint32_t d; (d = done_.load(std::memory_order_seq_cst)) != total;) {
    done_.wait(d, std::memory_order_acquire);
  }
  caller_asleep_.store(0, std::memory_order_relaxed);
}

uint32_t WorkerPool::Work(uint32_t self, uint32_t participants, uint32_t generation) {
  uint32_t ran = 0;
  // Own segment, from the front.
  if (self < participants) {
    std::atomic<uint64_t>& own = segments_[self].word;
    uint64_t word = own.load(std::memory_order_acquire);
    while (Generation(word) == generation && Front(word) < Back(word)) {
      if (own.compare_exchange_weak(word, word + kOneFront, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
        task_(context_, Front(word), Front(word) + 1);
        ++ran;
        word = own.load(std::memory_order_acquire);
      }
    }
  }
  // The others' segments, from the back, starting with the next thread's.
  for (uint32_t k = 1; k < participants; ++k) {
    std::atomic<uint64_t>& other = segments_[(self + k) % participants].word;
    uint64_t word = other.load(std::memory_order_acquire);
    while (Generation(word) == generation && Front(word) < Back(word)) {
      if (other.compare_exchange_weak(word, word - 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        task_(context_, Back(word) - 1, Back(word));
        ++ran;
        word = other.load(std::memory_order_acquire);
      }
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
    const uint32_t ran = Work(index, participants_.load(std::memory_order_relaxed), seen);
    if (ran == 0) continue;
    const uint32_t total = total_;  // this batch's: it cannot end before `ran` is counted
    ran_[index].count = ran;        // read by the next Run, after done_ says this batch ended
    const uint32_t before = done_.fetch_add(ran, std::memory_order_seq_cst);
    if (before + ran == total && caller_asleep_.load(std::memory_order_seq_cst) != 0) {
      done_.notify_one();
    }
  }
}

namespace {
constexpr double kFirstInterval = 0.02, kMaxInterval = 1.0, kBlockSeconds = 0.01;
constexpr int64_t kBlockSteps = 16;
constexpr double kMargin = 0.03, kSlowdown = 1.25, kProbeSpacing = 16.0, kProbeCostSpacing = 32.0;
}  // namespace

ThreadTuner::ThreadTuner(int max_threads, int start)
    : max_threads_(std::max(1, max_threads)),
      ceiling_(max_threads_),
      chosen_(start > 0 ? std::min(start, max_threads_) : max_threads_),
      interval_(kFirstInterval) {}

void ThreadTuner::set_ceiling(int ceiling) {
  ceiling_ = std::clamp(ceiling, 1, max_threads_);
  const bool above = chosen_ > ceiling_;
  if (!above && !((probing_ || confirming_) && candidate_ > ceiling_)) return;
  if (above) {
    chosen_ = ceiling_;
    chosen_mean_ = 0.0;
    slow_blocks_ = 0;
  }
  probing_ = false;  // a probe in flight, or its confirmation, ends
  confirming_ = false;
  block_seconds_ = 0.0;  // and the block being measured starts again
  block_steps_ = 0;
}

void ThreadTuner::StartProbe(int direction) {
  candidate_ = chosen_ + direction;
  if (candidate_ < 1 || candidate_ > ceiling_) candidate_ = chosen_ - direction;
  if (candidate_ < 1 || candidate_ > ceiling_) return;  // one thread allowed: nothing to probe
  direction_ = -direction;                              // the other neighbour next time
  probing_ = true;
}

void ThreadTuner::SkipProbe() {
  if (!probing_) return;
  probing_ = false;
  since_probe_ = 0.0;
  block_seconds_ = 0.0;  // the steps so far ran in the chosen count's layout: not a probe's
  block_steps_ = 0;
  interval_ = std::min(2.0 * interval_, kMaxInterval);
}

void ThreadTuner::Record(double seconds) {
  if (ceiling_ == 1 && chosen_ == 1) return;
  block_seconds_ += seconds;
  ++block_steps_;
  if (block_steps_ < kBlockSteps || block_seconds_ < kBlockSeconds) return;
  const double mean = block_seconds_ / static_cast<double>(block_steps_);
  // A probe lasts a block and may step it slower: spaced by kProbeSpacing blocks at least, so
  // probes cost a few percent also where a block is long (heavy envs: 16 steps of 15 ms).
  // A probe's own cost (set_probe_cost) is paid back by 32 times its length of stepping.
  const double cost_spacing = kProbeCostSpacing * probe_cost_;
  const double spacing = std::max(kProbeSpacing * block_seconds_, cost_spacing);
  since_probe_ += block_seconds_;
  block_seconds_ = 0.0;
  block_steps_ = 0;
  if (probing_) {
    probing_ = false;
    since_probe_ = 0.0;
    if (mean < chosen_mean_ * (1.0 - kMargin)) {
      // Faster than the block before it, which may have been slowed by a burst of load that
      // is over now: confirm against a fresh block of the current choice first.
      confirming_ = true;
      probe_mean_ = mean;
    } else {
      interval_ = std::min(2.0 * interval_, kMaxInterval);
    }
    return;
  }
  if (confirming_) {
    confirming_ = false;
    since_probe_ = 0.0;
    if (probe_mean_ < mean * (1.0 - kMargin)) {
      direction_ = candidate_ > chosen_ ? 1 : -1;  // keep climbing the way that paid
      chosen_ = candidate_;
      chosen_mean_ = 0.0;
      slow_blocks_ = 0;
      interval_ = kFirstInterval;
    } else {
      chosen_mean_ = mean;
      slow_blocks_ = 0;
      interval_ = std::min(2.0 * interval_, kMaxInterval);
    }
    return;
  }
  // Two blocks in a row 25% slower than the reference (one can be noise): the machine got busy.
  const bool slow = chosen_mean_ > 0.0 && mean > kSlowdown * chosen_mean_;
  slow_blocks_ = slow ? slow_blocks_ + 1 : 0;
  if (!slow) chosen_mean_ = mean;
  if (slow_blocks_ >= 2 && chosen_ > 1 && since_probe_ >= cost_spacing) {
    chosen_mean_ = mean;
    slow_blocks_ = 0;
    interval_ = kFirstInterval;
    StartProbe(-1);
  } else if (since_probe_ >= std::max(interval_, spacing) && !slow) {
    StartProbe(direction_);
  }
}

}  // namespace fastbatch
