// VectorPool's async mode: Send/Recv with batch_size < num_envs (see vector_pool.h).
#include <algorithm>
#include <cstring>
#include <string>

#include "vector_pool.h"

namespace fastbatch {

void VectorPool::AsyncLoop() {
  const auto n = static_cast<size_t>(num_envs_);
  const auto threads = static_cast<size_t>(num_async_threads_);
  std::vector<int64_t> chunk;
  chunk.reserve(n);
  for (;;) {
    chunk.clear();
    {
      std::unique_lock<std::mutex> lock(job_mu_);
      job_cv_.wait(lock, [this] { return async_stop_ || job_count_ > 0; });
      if (async_stop_) return;
      // Take a fair share of the queue at once, so a lock is paid per chunk, not per env.
      const size_t take = std::max<size_t>(1, job_count_ / threads);
      for (size_t q = 0; q < take; ++q) {
        chunk.push_back(job_ring_[job_head_]);
        job_head_ = (job_head_ + 1) % n;
      }
      job_count_ -= take;
    }
    BatchOut out;
    out.obs = stage_obs_.data();
    out.reward = stage_reward_.data();
    out.terminated = stage_terminated_.data();
    out.truncated = stage_truncated_.data();
    for (const int64_t i : chunk) {
      const auto k = static_cast<size_t>(i);
      env_failed_[k] = StepEnvs(i, i + 1, stage_actions_.data(), out, &env_errors_[k]) < 0 ? 1 : 0;
      bool wake;
      {
        std::lock_guard<std::mutex> lock(done_mu_);
        done_ring_[(done_head_ + done_count_) % n] = i;
        ++done_count_;
        wake = done_count_ >= static_cast<size_t>(batch_size_) || drain_waiting_;
      }
      if (wake) done_cv_.notify_one();
    }
  }
}

void VectorPool::StopAsync() {
  if (async_threads_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(job_mu_);
    async_stop_ = true;
  }
  job_cv_.notify_all();
  for (auto& t : async_threads_) t.join();
  async_threads_.clear();
}

void VectorPool::DrainAsync() {
  {
    std::unique_lock<std::mutex> lock(done_mu_);
    drain_waiting_ = true;
    done_cv_.wait(lock, [this] { return static_cast<int64_t>(done_count_) == num_in_flight_; });
    drain_waiting_ = false;
    done_head_ = 0;
    done_count_ = 0;
  }
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
  for (j = 0; j < count; ++j) {
    const auto k = static_cast<size_t>(env_ids[j]);
    in_flight_[k] = 1;
    std::memcpy(stage_actions_.data() + k * static_cast<size_t>(action_row_bytes_),
                src + j * action_row_bytes_, static_cast<size_t>(action_row_bytes_));
  }
  num_in_flight_ += count;
  {
    std::lock_guard<std::mutex> lock(job_mu_);
    const auto n = static_cast<size_t>(num_envs_);
    for (j = 0; j < count; ++j) {
      job_ring_[(job_head_ + job_count_) % n] = env_ids[j];
      ++job_count_;
    }
  }
  job_cv_.notify_all();
}

int64_t VectorPool::Recv(const BatchOut& out, int64_t* env_ids) {
  if (!is_async()) throw AsyncStateError("Send/Recv need async mode (batch_size < num_envs)");
  if (num_in_flight_ == 0) throw AsyncStateError("recv() without a pending send()");
  if (num_in_flight_ < batch_size_) {
    throw AsyncStateError("only " + std::to_string(num_in_flight_) +
                          " envs are in flight but recv() returns batch_size=" +
                          std::to_string(batch_size_) + "; send() more envs first");
  }
  const auto n = static_cast<size_t>(num_envs_);
  const auto b = static_cast<size_t>(batch_size_);
  {
    std::unique_lock<std::mutex> lock(done_mu_);
    done_cv_.wait(lock, [this, b] { return done_count_ >= b; });
    for (size_t j = 0; j < b; ++j) env_ids[j] = done_ring_[(done_head_ + j) % n];
    done_head_ = (done_head_ + b) % n;
    done_count_ -= b;
  }
  last_was_recv_ = true;
  auto* obs = static_cast<uint8_t*>(out.obs);
  const auto row = static_cast<size_t>(obs_row_bytes_);
  int64_t ended = 0;
  int64_t failed = -1;
  for (size_t j = 0; j < b; ++j) {
    const auto k = static_cast<size_t>(env_ids[j]);
    std::memcpy(obs + j * row, stage_obs_.data() + k * row, row);
    out.reward[j] = stage_reward_[k];
    out.terminated[j] = stage_terminated_[k];
    out.truncated[j] = stage_truncated_[k];
    recv_done_[j] = done_[k];
    recv_return_[j] = ep_return_out_[k];
    recv_length_[j] = ep_length_out_[k];
    recv_time_[j] = ep_time_out_[k];
    if (!recv_final_obs_.empty())
      std::memcpy(recv_final_obs_.data() + j * row, final_obs_.data() + k * row, row);
    if (info_row_ > 0) {
      const auto info = static_cast<size_t>(info_row_);
      std::memcpy(recv_info_.data() + j * info, info_.data() + k * info, info * sizeof(double));
      if (!recv_final_info_.empty()) {
        std::memcpy(recv_final_info_.data() + j * info, final_info_.data() + k * info,
                    info * sizeof(double));
      }
    }
    ended += done_[k];
    in_flight_[k] = 0;
    if (env_failed_[k] && failed < 0) failed = static_cast<int64_t>(k);
  }
  num_in_flight_ -= batch_size_;
  if (failed >= 0) {
    broken_ = true;
    throw EnvError(failed, env_errors_[static_cast<size_t>(failed)].message);
  }
  return ended;
}

}  // namespace fastbatch
