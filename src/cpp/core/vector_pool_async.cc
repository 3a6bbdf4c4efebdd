// VectorPool's async mode: Send/Recv with batch_size < num_envs (see vector_pool.h for the two
// rings and who owns what).
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

void VectorPool::CheckSend(const int64_t* env_ids, int64_t count) {
  // Bit 2 of in_flight_ marks ids seen in this call (to find duplicates): cleared before
  // throwing, overwritten by 1 when queued.
  std::string error;
  bool state_error = false;
  int64_t j = 0;
  for (; j < count && error.empty(); ++j) {
    const int64_t i = env_ids[j];
    if (i < 0 || i >= num_envs_) {
      error = "env id " + std::to_string(i) + " is outside [0, " + std::to_string(num_envs_) + ")";
      break;
    }
    const auto k = static_cast<size_t>(i);
    if (in_flight_[k] & 2) {
      error = "env id " + std::to_string(i) + " appears twice";
    } else if (in_flight_[k]) {
      error =
          "env " + std::to_string(i) + " was already sent and not yet received; recv() it first";
      state_error = true;
    } else if (mode_ == AutoresetMode::kDisabled && needs_reset_[k]) {
      error = "env " + std::to_string(i) +
              " has ended its episode and autoreset is disabled: reset it first with "
              "reset(options={'reset_mask': mask})";
    }
    in_flight_[k] |= 2;
  }
  if (!error.empty()) {
    for (int64_t q = 0; q < j; ++q) in_flight_[static_cast<size_t>(env_ids[q])] &= 1;
    if (state_error) throw AsyncStateError(error);
    throw std::invalid_argument(error);
  }
}

void VectorPool::Send(const int64_t* env_ids, int64_t count, const void* actions) {
  if (!is_async()) throw AsyncStateError("Send/Recv need async mode (batch_size < num_envs)");
  if (broken_) {
    throw std::logic_error(
        "a previous step raised an env error; call reset() before sending again");
  }
  // Validate everything before the first side effect. The usual call (ids in increasing order,
  // as recv returns them, none in flight or waiting for a reset) passes one read-only scan;
  // any other takes the full check, which names the first bad id in order.
  const bool disabled = mode_ == AutoresetMode::kDisabled;
  bool plain = true;
  for (int64_t j = 0, last = -1; j < count && plain; ++j) {
    const int64_t i = env_ids[j];
    plain = i > last && i < num_envs_ && in_flight_[static_cast<size_t>(i)] == 0 &&
            !(disabled && needs_reset_[static_cast<size_t>(i)]);
    last = i;
  }
  if (!plain) CheckSend(env_ids, count);
  const auto* src = static_cast<const uint8_t*>(actions);
  const auto action_row = static_cast<size_t>(action_row_bytes_);
  std::fill(send_counts_.begin(), send_counts_.end(), 0);
  for (int64_t j = 0; j < count;) {  // runs of consecutive ids: one copy of their action rows each
    const int64_t first = env_ids[j];
    int64_t q = j + 1;
    while (q < count && env_ids[q] == first + (q - j)) ++q;
    const int64_t end = first + (q - j);
    std::memset(in_flight_.data() + first, 1, static_cast<size_t>(end - first));
    // The run's envs, ring by ring (Home is a division: once per ring, not per env).
    for (int64_t i = first; i < end;) {
      const int r = Home(i);
      const int64_t ring_end = std::min(end, FirstHomedOn(r + 1, num_job_rings_, num_envs_));
      JobRing& ring = job_rings_[r];
      const int64_t tail = ring.tail.load(std::memory_order_relaxed);  // only Send writes tails
      int64_t at = tail + send_counts_[r];
      for (; i < ring_end; ++i, ++at) {
        ring.ids[at & ring.mask].store(i, std::memory_order_relaxed);
        ring.sends[at & ring.mask].store(send_count_, std::memory_order_relaxed);
      }
      send_counts_[r] = at - tail;
    }
    std::memcpy(stage_actions_.data() + static_cast<size_t>(first) * action_row,
                src + static_cast<size_t>(j) * action_row, static_cast<size_t>(q - j) * action_row);
    j = q;
  }
  num_in_flight_ += count;
  ++send_count_;
  for (int r = 0; r < num_job_rings_; ++r) {
    if (send_counts_[r] == 0) continue;
    JobRing& ring = job_rings_[r];
    ring.tail.store(ring.tail.load(std::memory_order_relaxed) + send_counts_[r],
                    std::memory_order_release);
  }
  job_signal_.fetch_add(1, std::memory_order_seq_cst);
  if (job_sleepers_.load(std::memory_order_seq_cst) != 0) job_signal_.notify_all();
}

int64_t VectorPool::Recv(const BatchOut& out, int64_t* env_ids) {
  if (!is_async()) throw AsyncStateError("Send/Recv need async mode (batch_size < num_envs)");
  if (num_in_flight_ == 0) throw AsyncStateError("recv() without a pending send()");
  if (num_in_flight_ < batch_size_) {
    throw AsyncStateError("only " + std::to_string(num_in_flight_) +
                          " envs are in flight but recv() returns batch_size=" +
                          std::to_string(batch_size_) + "; send() more envs first");
  }
  const int64_t b = batch_size_;
  WaitForDone(done_head_ + b);
  for (int64_t j = 0; j < b; ++j) {
    env_ids[j] = done_ids_[(done_head_ + j) & ring_mask_].load(std::memory_order_relaxed);
  }
  // In id order, not completion order: the caller sends the ids back in the order given, and
  // completion order scrambles them within a few hundred cycles, until every run below and
  // every claim of the next step is one env long.
  SortIds(env_ids, b);
  done_head_ += b;
  last_was_recv_ = true;
  auto* obs = static_cast<uint8_t*>(out.obs);
  const auto row = static_cast<size_t>(obs_row_bytes_);
  int64_t ended = 0;
  int64_t failed = -1;
  // Copy runs of consecutive env ids (the usual case: envs are queued, claimed and published
  // in runs) with one memcpy per array.
  for (int64_t j = 0; j < b;) {
    const int64_t first = env_ids[j];
    int64_t q = j + 1;
    while (q < b && env_ids[q] == first + (q - j)) ++q;
    const auto k = static_cast<size_t>(first), at = static_cast<size_t>(j);
    const auto len = static_cast<size_t>(q - j);
    std::memcpy(obs + at * row, stage_obs_.data() + k * row, len * row);
    std::memcpy(out.reward + at, stage_reward_.data() + k, len * sizeof(float));
    std::memcpy(out.terminated + at, stage_terminated_.data() + k, len);
    std::memcpy(out.truncated + at, stage_truncated_.data() + k, len);
    std::memcpy(recv_done_.data() + at, done_.data() + k, len);
    std::memcpy(recv_return_.data() + at, ep_return_out_.data() + k, len * sizeof(double));
    std::memcpy(recv_length_.data() + at, ep_length_out_.data() + k, len * sizeof(int64_t));
    std::memcpy(recv_time_.data() + at, ep_time_out_.data() + k, len * sizeof(double));
    if (!recv_final_obs_.empty()) {
      std::memcpy(recv_final_obs_.data() + at * row, final_obs_.data() + k * row, len * row);
    }
    if (info_row_ > 0) {
      const auto info = static_cast<size_t>(info_row_);
      std::memcpy(recv_info_.data() + at * info, info_.data() + k * info,
                  len * info * sizeof(double));
      if (!recv_final_info_.empty()) {
        std::memcpy(recv_final_info_.data() + at * info, final_info_.data() + k * info,
                    len * info * sizeof(double));
      }
    }
    std::memset(in_flight_.data() + k, 0, len);
    for (size_t i = k; i < k + len; ++i) ended += done_[i];
    const void* hit = std::memchr(env_failed_.data() + k, 1, len);
    if (hit != nullptr) {
      const int64_t i = static_cast<const uint8_t*>(hit) - env_failed_.data();
      if (failed < 0 || i < failed) failed = i;
    }
    j = q;
  }
  num_in_flight_ -= b;
  // The tuner times whole recv cycles (the caller's own work between them included: the async
  // threads step meanwhile) and sets the async threads taking part in the next one.
  const double now = Now();
  if (last_recv_ > 0.0) tuner_.Record(now - last_recv_);
  last_recv_ = now;
  const auto active = static_cast<uint32_t>(tuner_.threads() - 1);
  if (async_active_.load(std::memory_order_relaxed) != active) {
    async_active_.store(active, std::memory_order_seq_cst);
    async_active_.notify_all();
  }
  if (failed >= 0) {
    broken_ = true;
    const fb_error& error = env_errors_[static_cast<size_t>(failed)];
    throw EnvError(error.env_index >= 0 ? error.env_index : failed, error.message);
  }
  return ended;
}

}  // namespace fastbatch
