// VectorPool's async mode, the caller's side: Send queues envs on their home job rings, Recv
// waits for a batch of them (stepping queued envs meanwhile: vector_pool_async.cc) and copies
// their rows out in env id order.
#include <algorithm>
#include <cstring>
#include <string>

#include "vector_pool.h"

namespace fastbatch {

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

void VectorPool::SortIds(int64_t* ids, int64_t count) {
  if (count * 16 < num_envs_) {  // few ids among many envs: a comparison sort
    std::sort(ids, ids + count);
    return;
  }
  for (int64_t j = 0; j < count; ++j) id_marks_[static_cast<size_t>(ids[j])] = 1;
  int64_t j = 0;
  for (int64_t i = 0; j < count; ++i) {  // a counting sort: one pass over the env marks
    if (id_marks_[static_cast<size_t>(i)] == 0) continue;
    id_marks_[static_cast<size_t>(i)] = 0;
    ids[j++] = i;
  }
}

}  // namespace fastbatch
