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
// little per env, small enough that the caller, helping inside Recv, returns soon.
constexpr int64_t kMaxClaim = 256;
// An async thread with nothing queued spins, then yields, then sleeps (see worker_pool.h).
constexpr microseconds kJobSpin{20};
constexpr microseconds kJobYield{200};
// Recv with nothing left to step waits for the async threads' last envs.
constexpr microseconds kRecvSpin{30};
constexpr microseconds kRecvYield{200};

// Wrap-aware `a >= b` for 32-bit counters that are never more than 2^31 apart.
bool Reached(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) >= 0; }

}  // namespace

void VectorPool::StartAsync(int threads) {
  const auto n = static_cast<size_t>(num_envs_);
  action_row_bytes_ = spec_->action.is_discrete ? 8 : DTypeSize(spec_->action.dtype);
  for (int32_t d = 0; d < spec_->action.ndim; ++d) action_row_bytes_ *= spec_->action.shape[d];
  size_t capacity = 1;
  while (capacity < n) capacity *= 2;
  ring_mask_ = static_cast<int64_t>(capacity) - 1;
  job_ids_ = std::make_unique<std::atomic<int64_t>[]>(capacity);
  done_ring_ = std::make_unique<DoneSlot[]>(capacity);
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
  if (mode_ == AutoresetMode::kSameStep)
    recv_final_obs_.assign(b * static_cast<size_t>(obs_row_bytes_), 0);
  help_ids_.resize(static_cast<size_t>(kMaxClaim));
  // The caller steps queued envs while it waits in Recv, so it counts as one of the threads.
  num_async_threads_ = threads - 1;
  async_threads_.reserve(static_cast<size_t>(num_async_threads_));
  for (int t = 0; t < num_async_threads_; ++t) {
    async_threads_.emplace_back(&VectorPool::AsyncLoop, this);
  }
}

int64_t VectorPool::StepQueued(std::vector<int64_t>* ids) {
  int64_t head = job_head_.load(std::memory_order_relaxed);
  int64_t take = 0;
  for (;;) {
    const int64_t tail = job_tail_.load(std::memory_order_acquire);
    if (head >= tail) return 0;
    // A share that leaves the other threads work (all of it when no other thread steps).
    const int64_t share = max_threads_ == 1 ? tail - head : (tail - head) / (2 * max_threads_);
    take = std::clamp<int64_t>(share, 1, kMaxClaim);
    // Read the ids before claiming them: Send reuses a slot only once its position is claimed,
    // so the claim succeeds only if what was read is still this position's id.
    for (int64_t j = 0; j < take; ++j) {
      (*ids)[static_cast<size_t>(j)] =
          job_ids_[(head + j) & ring_mask_].load(std::memory_order_relaxed);
    }
    if (job_head_.compare_exchange_weak(head, head + take, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
      break;
    }
  }
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
    for (int64_t i = first; i < end; ++i) env_failed_[static_cast<size_t>(i)] = 0;
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
  // Publish: each slot's env before its seq (release), then wake a sleeping Recv that now has
  // enough envs published.
  const int64_t position = done_reserved_.fetch_add(take, std::memory_order_relaxed);
  for (int64_t j = 0; j < take; ++j) {
    DoneSlot& slot = done_ring_[(position + j) & ring_mask_];
    slot.env.store((*ids)[static_cast<size_t>(j)], std::memory_order_relaxed);
    slot.seq.store(position + j + 1, std::memory_order_release);
  }
  const uint32_t published =
      done_published_.fetch_add(static_cast<uint32_t>(take), std::memory_order_seq_cst) +
      static_cast<uint32_t>(take);
  if (recv_asleep_.load(std::memory_order_seq_cst) != 0 &&
      Reached(published, recv_wanted_.load(std::memory_order_relaxed))) {
    done_published_.notify_one();
  }
  return take;
}

void VectorPool::AsyncLoop() {
  std::vector<int64_t> ids(static_cast<size_t>(kMaxClaim));
  auto queued = [this] {
    return async_stop_.load(std::memory_order_relaxed) ||
           job_tail_.load(std::memory_order_acquire) > job_head_.load(std::memory_order_relaxed);
  };
  for (;;) {
    if (StepQueued(&ids) > 0) continue;
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
  auto filled = [this](int64_t p) {
    return done_ring_[p & ring_mask_].seq.load(std::memory_order_acquire) == p + 1;
  };
  for (int64_t p = done_head_; p < end;) {
    if (filled(p)) {
      ++p;
      continue;
    }
    if (StepQueued(&help_ids_) > 0) continue;
    // Nothing left to claim: the envs still missing are being stepped by async threads.
    if (SpinThenYield([&] { return filled(p); }, kRecvSpin, kRecvYield)) continue;
    recv_wanted_.store(static_cast<uint32_t>(end), std::memory_order_relaxed);
    recv_asleep_.store(1, std::memory_order_seq_cst);
    const uint32_t published = done_published_.load(std::memory_order_seq_cst);
    if (!filled(p)) done_published_.wait(published, std::memory_order_acquire);
    recv_asleep_.store(0, std::memory_order_relaxed);
  }
}

void VectorPool::StopAsync() {
  if (async_threads_.empty()) return;
  async_stop_.store(true, std::memory_order_seq_cst);
  job_signal_.fetch_add(1, std::memory_order_seq_cst);
  job_signal_.notify_all();
  for (auto& t : async_threads_) t.join();
  async_threads_.clear();
}

void VectorPool::DrainAsync() {
  WaitForDone(done_head_ + num_in_flight_);
  done_head_ += num_in_flight_;
  std::fill(in_flight_.begin(), in_flight_.end(), 0);
  num_in_flight_ = 0;
}

void VectorPool::Send(const int64_t* env_ids, int64_t count, const void* actions) {
  if (!is_async()) throw AsyncStateError("Send/Recv need async mode (batch_size < num_envs)");
  if (broken_) {
    throw std::logic_error(
        "a previous step raised an env error; call reset() before sending again");
  }
  // Validate everything before the first side effect. Bit 2 of in_flight_ marks ids seen in
  // this call (to find duplicates) and is cleared again before returning or throwing.
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
  for (int64_t q = 0; q < j; ++q) in_flight_[static_cast<size_t>(env_ids[q])] &= 1;
  if (!error.empty()) {
    if (state_error) throw AsyncStateError(error);
    throw std::invalid_argument(error);
  }
  const auto* src = static_cast<const uint8_t*>(actions);
  const int64_t tail = job_tail_.load(std::memory_order_relaxed);  // only Send writes it
  const auto action_row = static_cast<size_t>(action_row_bytes_);
  for (j = 0; j < count;) {  // runs of consecutive ids: one copy of their action rows each
    const int64_t first = env_ids[j];
    int64_t q = j;
    for (; q < count && env_ids[q] == first + (q - j); ++q) {
      in_flight_[static_cast<size_t>(env_ids[q])] = 1;
      job_ids_[(tail + q) & ring_mask_].store(env_ids[q], std::memory_order_relaxed);
    }
    std::memcpy(stage_actions_.data() + static_cast<size_t>(first) * action_row,
                src + static_cast<size_t>(j) * action_row, static_cast<size_t>(q - j) * action_row);
    j = q;
  }
  num_in_flight_ += count;
  job_tail_.store(tail + count, std::memory_order_release);
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
    env_ids[j] = done_ring_[(done_head_ + j) & ring_mask_].env.load(std::memory_order_relaxed);
  }
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
    std::memset(in_flight_.data() + k, 0, len);
    for (size_t i = k; i < k + len; ++i) {
      ended += done_[i];
      if (env_failed_[i] && (failed < 0 || static_cast<int64_t>(i) < failed)) {
        failed = static_cast<int64_t>(i);
      }
    }
    j = q;
  }
  num_in_flight_ -= b;
  if (failed >= 0) {
    broken_ = true;
    const fb_error& error = env_errors_[static_cast<size_t>(failed)];
    throw EnvError(error.env_index >= 0 ? error.env_index : failed, error.message);
  }
  return ended;
}

}  // namespace fastbatch
