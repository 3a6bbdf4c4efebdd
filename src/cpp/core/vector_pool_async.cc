// VectorPool's async mode (batch_size < num_envs; see vector_pool.h for the two rings and who
// owns what): the async threads, the job rings they claim from and the waits; the caller's
// Send and Recv are in vector_pool_send_recv.cc.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "dtype.h"
#include "vector_pool.h"

namespace fastbatch {
namespace {

using std::chrono::microseconds;

// The most queued envs one claim takes: large enough that a claim (one compare-exchange) costs
// little per env, small enough that the caller, helping inside Recv, returns soon and that
// half of a ring is always left for a thread that runs out of its own envs.
constexpr int64_t kMaxClaim = 128;
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

// A shared claim holds about this much stepping (from the measured time per env), so that
// whoever waits for the last claims of a recv does not wait long, whatever the env costs.
constexpr double kClaimSeconds = 10e-6;

// Wrap-aware `a >= b` for 32-bit counters that are never more than 2^31 apart.
bool Reached(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) >= 0; }

}  // namespace

void VectorPool::StartAsync(int threads) {
  const auto n = static_cast<size_t>(num_envs_);
  action_row_bytes_ = spec_->action.is_discrete ? 8 : DTypeSize(spec_->action.dtype);
  for (int32_t d = 0; d < spec_->action.ndim; ++d) action_row_bytes_ *= spec_->action.shape[d];
  auto power_of_2 = [](int64_t at_least) {
    int64_t capacity = 1;
    while (capacity < at_least) capacity *= 2;
    return capacity;
  };
  const int64_t capacity = power_of_2(num_envs_);
  ring_mask_ = capacity - 1;
  // Envs are homed in contiguous blocks, one per thread: ring 0 the caller's (it steps them
  // inside Recv), ring w + 1 async thread w's; so each env's state stays in one core's cache.
  num_async_threads_ = threads - 1;
  num_job_rings_ = threads;
  job_rings_ = std::make_unique<JobRing[]>(static_cast<size_t>(num_job_rings_));
  for (int r = 0; r < num_job_rings_; ++r) {
    const int64_t homed = (num_envs_ + num_job_rings_ - 1) / num_job_rings_ + 1;
    job_rings_[r].mask = power_of_2(homed) - 1;
    const auto capacity = static_cast<size_t>(job_rings_[r].mask + 1);
    job_rings_[r].ids = std::make_unique<std::atomic<int64_t>[]>(capacity);
    job_rings_[r].sends = std::make_unique<std::atomic<uint64_t>[]>(capacity);
  }
  send_counts_.assign(static_cast<size_t>(num_job_rings_), 0);
  done_ids_ = std::make_unique<std::atomic<int64_t>[]>(capacity);
  done_runs_ = std::make_unique<DoneRun[]>(capacity);
  stage_actions_.assign(n * static_cast<size_t>(action_row_bytes_), 0);
  stage_obs_.assign(n * static_cast<size_t>(obs_row_bytes_), 0);
  stage_reward_.assign(n, 0.0f);
  stage_terminated_.assign(n, 0);
  stage_truncated_.assign(n, 0);
  env_errors_.resize(n);
  env_failed_.assign(n, 0);
  const auto b = static_cast<size_t>(batch_size_);
  recv_done_.assign(b, 0);
  recv_return_.assign(b, 0.0);
  recv_length_.assign(b, 0);
  recv_time_.assign(b, 0.0);
  recv_info_.assign(b * static_cast<size_t>(info_row_), 0.0);
  if (mode_ == AutoresetMode::kSameStep) {
    recv_final_obs_.assign(b * static_cast<size_t>(obs_row_bytes_), 0);
    recv_final_info_.assign(b * static_cast<size_t>(info_row_), 0.0);
  }
  help_ids_.resize(static_cast<size_t>(std::max(kMaxClaim, num_envs_)));
  id_marks_.assign(n, 0);
  async_active_.store(static_cast<uint32_t>(num_async_threads_), std::memory_order_relaxed);
  async_threads_.reserve(static_cast<size_t>(num_async_threads_));
  for (int t = 0; t < num_async_threads_; ++t) {
    async_threads_.emplace_back(&VectorPool::AsyncLoop, this, t + 1);
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
    const uint64_t send = ring.sends[head & ring.mask].load(std::memory_order_relaxed);
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

int64_t VectorPool::StepQueued(int ring_index, Share share, std::vector<int64_t>* ids) {
  int64_t take = 0;
  {
    JobRing& ring = job_rings_[ring_index];
    int64_t head = ring.head.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t tail = ring.tail.load(std::memory_order_acquire);
      if (head >= tail) break;
      // The owner takes half (so a thief finds some), a thief a quarter, a lone thread all;
      // shared claims hold about kClaimSeconds of stepping at most.
      const int64_t queued = tail - head;
      const double per_env = std::max(seconds_per_env_.load(std::memory_order_relaxed), 1e-9);
      const auto most = static_cast<int64_t>(
          std::clamp(kClaimSeconds / per_env, 1.0, static_cast<double>(kMaxClaim)));
      take = share == Share::kAll     ? std::min(queued, static_cast<int64_t>(ids->size()))
             : share == Share::kOwner ? std::clamp<int64_t>((queued + 1) / 2, 1, most)
                                      : std::clamp<int64_t>((queued + 3) / 4, 1, most);
      // Read the ids before claiming them: Send reuses a slot only once its position is
      // claimed, so the claim succeeds only if what was read is still this position's id.
      for (int64_t j = 0; j < take; ++j) {
        (*ids)[static_cast<size_t>(j)] =
            ring.ids[(head + j) & ring.mask].load(std::memory_order_relaxed);
      }
      if (ring.head.compare_exchange_weak(head, head + take, std::memory_order_acq_rel,
                                          std::memory_order_relaxed)) {
        break;
      }
      take = 0;
    }
  }
  if (take == 0) return 0;
  const double started = Now();
  BatchOut stage;
  stage.obs = stage_obs_.data();
  stage.reward = stage_reward_.data();
  stage.terminated = stage_terminated_.data();
  stage.truncated = stage_truncated_.data();
  // Step runs of consecutive ids in one call each. After a failure at env f the rest of the run
  // goes on from f + 1; a failed SAME_STEP reset marks the rest of the run failed (envs after
  // it that ended were not reset), each with the error naming the env that failed.
  for (int64_t j = 0; j < take;) {
    const int64_t first = (*ids)[static_cast<size_t>(j)];
    int64_t end = first + 1;
    for (++j; j < take && (*ids)[static_cast<size_t>(j)] == end; ++j) ++end;
    std::memset(env_failed_.data() + first, 0, static_cast<size_t>(end - first));
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
      if (!step_failure) break;
      i = failed + 1;
    }
  }
  // A running estimate of the time per env step, for the size of later claims (relaxed: a
  // hint; results never depend on it).
  const double per_env = (Now() - started) / static_cast<double>(take);
  const double estimate = seconds_per_env_.load(std::memory_order_relaxed);
  seconds_per_env_.store(estimate == 0.0 ? per_env : 0.9 * estimate + 0.1 * per_env,
                         std::memory_order_relaxed);
  // Publish: the ids, then the run's header (seq last, release); then wake a sleeping Recv
  // that now has enough envs published.
  const int64_t position = done_reserved_.fetch_add(take, std::memory_order_relaxed);
  for (int64_t j = 0; j < take; ++j) {
    done_ids_[(position + j) & ring_mask_].store((*ids)[static_cast<size_t>(j)],
                                                 std::memory_order_relaxed);
  }
  DoneRun& run = done_runs_[position & ring_mask_];
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

void VectorPool::AsyncLoop(int home) {  // home: this thread's job ring, its index + 1
  std::vector<int64_t> ids(static_cast<size_t>(kMaxClaim));
  auto queued = [this] { return async_stop_.load(std::memory_order_relaxed) || AnyQueued(); };
  const auto index = static_cast<uint32_t>(home - 1);
  for (;;) {
    // Parked while the tuner leaves this thread out; Recv changes the word only when the count
    // changes, and the caller steps (steals) the envs homed here meanwhile.
    for (uint32_t a; (a = async_active_.load(std::memory_order_acquire)) <= index;) {
      if (async_stop_.load(std::memory_order_acquire)) return;
      async_active_.wait(a, std::memory_order_acquire);
    }
    if (StepQueued(home, Share::kOwner, &ids) > 0) continue;
    const int oldest = OldestRing(home);
    if (oldest >= 0 && StepQueued(oldest, Share::kThief, &ids) > 0) continue;
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
    if (oldest == 0 && StepQueued(0, Share::kOwner, &help_ids_) > 0) continue;
    if (oldest > 0) {
      if (async_active_.load(std::memory_order_relaxed) == 0) {  // no async thread steps
        if (StepQueued(oldest, Share::kAll, &help_ids_) > 0) continue;
      } else {
        // Before stealing an async thread's cheap envs (and their cache lines), give it a
        // moment: it publishes within it, and for envs that cheap, moving their state between
        // cores costs more than the caller's help gains. Costlier envs are stolen at once.
        const bool cheap = seconds_per_env_.load(std::memory_order_relaxed) < kCheapEnvSeconds;
        if (cheap && SpinThenYield(next_run, kRecvSpin, kStealDelay)) continue;
        if (StepQueued(oldest, Share::kThief, &help_ids_) > 0) continue;
      }
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

void VectorPool::StopAsync() {
  if (async_threads_.empty()) return;
  async_stop_.store(true, std::memory_order_seq_cst);
  job_signal_.fetch_add(1, std::memory_order_seq_cst);
  job_signal_.notify_all();
  async_active_.store(static_cast<uint32_t>(num_async_threads_) + 1, std::memory_order_seq_cst);
  async_active_.notify_all();
  for (auto& t : async_threads_) t.join();
  async_threads_.clear();
}

void VectorPool::DrainAsync() {
  WaitForDone(done_head_ + num_in_flight_);
  done_head_ += num_in_flight_;
  std::fill(in_flight_.begin(), in_flight_.end(), 0);
  num_in_flight_ = 0;
  last_recv_ = 0.0;  // the tuner times steady recv cycles, not the drain
}

}  // namespace fastbatch
