// VectorPool's async mode (batch_size < num_envs; see vector_pool.h for the two rings and who
// owns what): the async threads, the job rings they claim from and the waits; the caller's
// Send and Recv are in vector_pool_send_recv.cc.
#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>
#include <string>
#include <system_error>

#include "dtype.h"
#include "vector_pool.h"

namespace fastbatch {
namespace {

using std::chrono::microseconds;

// An async thread with nothing queued spins, then yields, then sleeps (see worker_pool.cc on
// why the pure spinning is short).
constexpr microseconds kJobSpin{2};
constexpr microseconds kJobYield{200};
// Recv waits this long (yielding after kRecvSpin) for an async thread's results before it
// steals that thread's envs, when a step costs less than kCheapEnvSeconds.
constexpr microseconds kStealDelay{5};
constexpr double kCheapEnvSeconds = 200e-9;
// Recv with nothing left to step waits for the async threads' last envs.
constexpr microseconds kRecvSpin{2};
constexpr microseconds kRecvYield{200};

constexpr int64_t kTimedPieces = 8;  // a power of 2

// CheckBlocking looks at the process's CPU time once a window: below kBlockedBusy (35%) of the
// cores its threads could use, the steps block and the tuner may try more threads than num_threads;
// above kUnblockedBusy (at num_threads or fewer) it may not.
constexpr double kBlockingWindow = 0.05;
constexpr double kBlockedBusy = 0.35;
constexpr double kUnblockedBusy = 0.75;

// Wrap-aware `a >= b` for 32-bit counters that are never more than 2^31 apart.
bool Reached(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) >= 0; }

}  // namespace

void VectorPool::StartAsync(int threads) {
  const auto n = static_cast<size_t>(num_envs_);
  action_row_bytes_ = spec_->action.is_discrete ? 8 : DTypeSize(spec_->action.dtype);
  for (int32_t d = 0; d < spec_->action.ndim; ++d) action_row_bytes_ *= spec_->action.shape[d];
  action_row_bytes_ *= num_agents_;  // an env's rows: one action per agent
  auto power_of_2 = [](int64_t at_least) {
    int64_t capacity = 1;
    while (capacity < at_least) capacity *= 2;
    return capacity;
  };
  // Twice num_envs: see the done ring in vector_pool.h.
  const int64_t capacity = power_of_2(2 * num_envs_);
  ring_mask_ = capacity - 1;
  // Envs are homed in contiguous blocks, one per thread up to num_threads: ring 0 the caller's
  // (it steps them inside Recv), ring w + 1 async thread w's; so each env's state stays in one
  // core's cache. Threads beyond num_threads (there to step while envs block) own no ring; they
  // start only when CheckBlocking first lets the tuner use them.
  num_job_rings_ = max_threads_;
  job_rings_ = std::make_unique<JobRing[]>(static_cast<size_t>(num_job_rings_));
  for (int r = 0; r < num_job_rings_; ++r) {
    const int64_t homed = (num_envs_ + num_job_rings_ - 1) / num_job_rings_ + 1;
    job_rings_[r].mask = power_of_2(homed) - 1;
    const auto capacity = static_cast<size_t>(job_rings_[r].mask + 1);
    job_rings_[r].pieces = std::make_unique<JobPiece[]>(capacity);
  }
  send_counts_.assign(static_cast<size_t>(num_job_rings_), 0);
  done_runs_ = std::make_unique<DoneRun[]>(capacity);
  stage_actions_.assign(n * static_cast<size_t>(action_row_bytes_), 0);
  stage_obs_.assign(n * static_cast<size_t>(obs_row_bytes_), 0);
  const size_t rows = n * static_cast<size_t>(num_agents_);  // reward and flags: one per agent
  stage_reward_.assign(rows, 0.0f);
  stage_terminated_.assign(rows, 0);
  stage_truncated_.assign(rows, 0);
  env_errors_.resize(n);
  env_failed_.assign(n, 0);
  const auto b = static_cast<size_t>(batch_size_);
  recv_done_.assign(b, 0);
  if (num_agents_ > 1) recv_active_.assign(b * static_cast<size_t>(num_agents_), 0);
  recv_return_.assign(b, 0.0);
  recv_length_.assign(b, 0);
  recv_time_.assign(b, 0.0);
  recv_info_.assign(b * static_cast<size_t>(info_row_), 0.0);
  if (mode_ == AutoresetMode::kSameStep) {
    recv_final_obs_.assign(b * static_cast<size_t>(obs_row_bytes_), 0);
    recv_final_info_.assign(b * static_cast<size_t>(info_row_), 0.0);
  }
  send_runs_.reserve(n);
  recv_runs_.reserve(b);
  recv_ended_rows_.reserve(b);
  id_marks_.assign(n, 0);
  async_active_.store(static_cast<uint32_t>(tuner_.chosen() - 1), std::memory_order_relaxed);
  async_threads_.reserve(static_cast<size_t>(threads - 1));
  for (int t = 0; t < max_threads_ - 1; ++t) {
    async_threads_.emplace_back(&VectorPool::AsyncLoop, this, t);
  }
}

int VectorPool::OldestRing(int prefer) const {
  int oldest = -1;
  uint64_t oldest_send = 0;
  for (int k = 0; k < num_job_rings_; ++k) {
    const int r = (prefer + k) % num_job_rings_;
    const JobRing& ring = job_rings_[r];
    const int64_t head = ring.head.load(std::memory_order_relaxed);
    if (ring.tail.load(std::memory_order_acquire) <= head) continue;
    // A racy read (the slot may be claimed meanwhile): only a hint for which ring to try.
    const uint64_t send = ring.pieces[head & ring.mask].send.load(std::memory_order_relaxed);
    if (oldest < 0 || send < oldest_send) {
      oldest = r;
      oldest_send = send;
    }
  }
  return oldest;
}

bool VectorPool::AnyQueued() const {
  for (int r = 0; r < num_job_rings_; ++r) {
    if (job_rings_[r].tail.load(std::memory_order_acquire) >
        job_rings_[r].head.load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

int VectorPool::Home(int64_t env) const { return HomeRing(env, num_job_rings_, num_envs_); }

int64_t VectorPool::StepQueued(int ring_index) {
  JobRing& ring = job_rings_[ring_index];
  int64_t head = ring.head.load(std::memory_order_relaxed);
  int64_t first = 0;
  int64_t take = 0;
  for (;;) {
    if (head >= ring.tail.load(std::memory_order_acquire)) return 0;
    // Read the piece before claiming it: Send reuses a slot only once its position is claimed,
    // so the claim succeeds only if what was read is still this position's piece.
    const JobPiece& piece = ring.pieces[head & ring.mask];
    first = piece.first.load(std::memory_order_relaxed);
    take = piece.count.load(std::memory_order_relaxed);
    if (ring.head.compare_exchange_weak(head, head + 1, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
      break;
    }
  }
  // Every kTimedPieces-th piece of a ring is timed, for a running estimate of the time per env
  // step that sizes later pieces (a clock read costs as much as stepping a cheap env).
  const bool timed =
      (head & (kTimedPieces - 1)) == 0 || seconds_per_env_.load(std::memory_order_relaxed) == 0.0;
  const double started = timed ? Now() : 0.0;
  BatchOut stage;
  stage.obs = stage_obs_.data();
  stage.reward = stage_reward_.data();
  stage.terminated = stage_terminated_.data();
  stage.truncated = stage_truncated_.data();
  // Step the piece in one call. After a failure at env f it goes on from f + 1; a failed
  // SAME_STEP reset marks the rest of the piece failed (envs after it that ended were not
  // reset), each with the error naming the env that failed.
  const int64_t end = first + take;
  for (int64_t i = first; i < end;) {
    fb_error error{};
    int64_t stepped_end = end;
    if (StepEnvs(i, end, stage_actions_.data(), stage, &error, &stepped_end) >= 0) break;
    const bool step_failure = stepped_end < end && error.env_index == stepped_end;
    const int64_t failed = error.env_index >= i && error.env_index < end ? error.env_index : i;
    for (int64_t k = failed; k < (step_failure ? failed + 1 : end); ++k) {
      env_failed_[static_cast<size_t>(k)] = 1;
      env_errors_[static_cast<size_t>(k)] = error;
    }
    async_failed_.store(true, std::memory_order_relaxed);  // published with the piece
    if (!step_failure) break;
    i = failed + 1;
  }
  if (timed) {  // relaxed: a hint; results never depend on it
    const double per_env = (Now() - started) / static_cast<double>(take);
    const double estimate = seconds_per_env_.load(std::memory_order_relaxed);
    seconds_per_env_.store(estimate == 0.0 ? per_env : 0.7 * estimate + 0.3 * per_env,
                           std::memory_order_relaxed);
  }
  // Publish: the piece's header (seq last, release); then wake a sleeping Recv that now has
  // enough envs published.
  const int64_t position = done_reserved_.fetch_add(take, std::memory_order_relaxed);
  DoneRun& run = done_runs_[position & ring_mask_];
  run.first.store(first, std::memory_order_relaxed);
  run.length.store(take, std::memory_order_relaxed);
  run.seq.store(position + 1, std::memory_order_release);
  const uint32_t published =
      done_published_.fetch_add(static_cast<uint32_t>(take), std::memory_order_seq_cst) +
      static_cast<uint32_t>(take);
  if (recv_asleep_.load(std::memory_order_seq_cst) != 0 &&
      Reached(published, recv_wanted_.load(std::memory_order_relaxed))) {
    done_published_.notify_one();
  }
  return take;
}

void VectorPool::AsyncLoop(int thread) {
  auto queued = [this] { return async_stop_.load(std::memory_order_relaxed) || AnyQueued(); };
  const auto index = static_cast<uint32_t>(thread);
  const int home = thread + 1 < num_job_rings_ ? thread + 1 : -1;  // its job ring, if it owns one
  const int prefer = home >= 0 ? home : thread % num_job_rings_;
  for (;;) {
    // Parked while the tuner leaves this thread out; Recv changes the word only when the count
    // changes, and the caller steps (steals) the envs homed here meanwhile.
    for (uint32_t a; (a = async_active_.load(std::memory_order_acquire)) <= index;) {
      if (async_stop_.load(std::memory_order_acquire)) return;
      async_active_.wait(a, std::memory_order_acquire);
    }
    if (home >= 0 && StepQueued(home) > 0) continue;
    const int oldest = OldestRing(prefer);
    if (oldest >= 0 && StepQueued(oldest) > 0) continue;
    if (!SpinThenYield(queued, kJobSpin, kJobYield)) {
      job_sleepers_.fetch_add(1, std::memory_order_seq_cst);
      // Re-check after announcing ourselves: a Send that missed the announcement bumped the
      // signal first, so either the wait returns at once or the check below sees its envs.
      const uint32_t signal = job_signal_.load(std::memory_order_seq_cst);
      if (!queued()) job_signal_.wait(signal, std::memory_order_acquire);
      job_sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (async_stop_.load(std::memory_order_acquire)) return;
  }
}

void VectorPool::WaitForDone(int64_t end) {
  // The run published at done_checked_, if any: it covers [done_checked_, + length).
  auto next_run = [this] {
    const DoneRun& run = done_runs_[done_checked_ & ring_mask_];
    return run.seq.load(std::memory_order_acquire) == done_checked_ + 1;
  };
  while (done_checked_ < end) {
    if (next_run()) {
      done_checked_ +=
          done_runs_[done_checked_ & ring_mask_].length.load(std::memory_order_relaxed);
      continue;
    }
    // The ring whose front was sent first (its own on a tie): no env waits behind envs sent
    // after it, whichever thread is slow; while all keep up, each steps its own envs.
    const int oldest = OldestRing(0);
    if (oldest == 0 && StepQueued(0) > 0) continue;
    if (oldest > 0) {
      // Before stealing an async thread's cheap envs (and their cache lines), give it a
      // moment: it publishes within it, and for envs that cheap, moving their state between
      // cores costs more than the caller's help gains. Costlier envs, or those of a parked
      // thread, are stolen at once.
      const bool cheap = seconds_per_env_.load(std::memory_order_relaxed) < kCheapEnvSeconds;
      const bool parked =
          async_active_.load(std::memory_order_relaxed) < static_cast<uint32_t>(oldest);
      if (cheap && !parked && SpinThenYield(next_run, kRecvSpin, kStealDelay)) continue;
      if (StepQueued(oldest) > 0) continue;
    }
    if (oldest >= 0) continue;  // lost a race for those envs: look again
    // Nothing left to claim: the envs still missing are being stepped by async threads.
    if (SpinThenYield(next_run, kRecvSpin, kRecvYield)) continue;
    recv_wanted_.store(static_cast<uint32_t>(end), std::memory_order_relaxed);
    recv_asleep_.store(1, std::memory_order_seq_cst);
    const uint32_t published = done_published_.load(std::memory_order_seq_cst);
    if (!next_run()) done_published_.wait(published, std::memory_order_acquire);
    recv_asleep_.store(0, std::memory_order_relaxed);
  }
}

void VectorPool::CheckBlocking(double now) {
  if (tuner_.max_threads() == max_threads_) return;  // no threads beyond num_threads
  if (blocking_wall_ > 0.0 && now - blocking_wall_ < kBlockingWindow) return;
  timespec cpu_time{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_time);
  const double cpu =
      static_cast<double>(cpu_time.tv_sec) + 1e-9 * static_cast<double>(cpu_time.tv_nsec);
  if (blocking_wall_ > 0.0) {
    // The share of the cores the threads could use (at most num_threads of them) that the
    // process used: low when the steps block. The process's other threads count too, which
    // only makes it slower to go beyond num_threads.
    const int cores = std::min(tuner_.chosen(), max_threads_);
    const double busy = (cpu - blocking_cpu_) / ((now - blocking_wall_) * cores);
    if (busy < kBlockedBusy) {
      // The threads beyond num_threads start now, parked until the tuner takes them (as many
      // as the system gives: the tuner's ceiling stops at those).
      const auto wanted = static_cast<size_t>(tuner_.max_threads() - 1);
      try {
        while (async_threads_.size() < wanted) {
          async_threads_.emplace_back(&VectorPool::AsyncLoop, this,
                                      static_cast<int>(async_threads_.size()));
        }
      } catch (const std::system_error&) {
      }
      tuner_.set_ceiling(static_cast<int>(async_threads_.size()) + 1);
    } else if (busy > kUnblockedBusy && tuner_.chosen() <= max_threads_) {
      tuner_.set_ceiling(max_threads_);  // above num_threads the tuner itself comes down first
    }
  }
  blocking_wall_ = now;
  blocking_cpu_ = cpu;
}

void VectorPool::StopAsync() {
  if (async_threads_.empty()) return;
  async_stop_.store(true, std::memory_order_seq_cst);
  job_signal_.fetch_add(1, std::memory_order_seq_cst);
  job_signal_.notify_all();
  async_active_.store(static_cast<uint32_t>(async_threads_.size()) + 1, std::memory_order_seq_cst);
  async_active_.notify_all();
  for (auto& t : async_threads_) t.join();
  async_threads_.clear();
}

void VectorPool::DrainAsync() {
  WaitForDone(done_head_ + num_in_flight_);
  done_head_ += num_in_flight_;
  done_run_ = done_head_;  // every reserved position is published: a run starts here
  // The failures of the discarded steps go with them (nothing is in flight to report them).
  std::fill(env_failed_.begin(), env_failed_.end(), 0);
  async_failed_.store(false, std::memory_order_relaxed);
  blocking_wall_ = 0.0;  // CheckBlocking starts a new window: the caller may have paused
  std::fill(in_flight_.begin(), in_flight_.end(), 0);
  num_in_flight_ = 0;
  last_recv_ = 0.0;  // the tuner times steady recv cycles, not the drain
}

}  // namespace fastbatch
