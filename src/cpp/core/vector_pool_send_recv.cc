// VectorPool's async mode, the caller's side: Send queues envs on their home job rings, Recv
// waits for a batch of them (stepping queued envs meanwhile: vector_pool_async.cc) and copies
// their rows out in env id order.
#include <algorithm>
#include <cstring>
#include <string>

#include "vector_pool.h"

namespace fastbatch {
namespace {

// Send cuts its runs of envs into pieces, the unit a thread claims: large enough that a claim
// (a compare-exchange, a done header) costs little per env, small enough that whoever waits
// for a recv's last pieces does not wait long (about kPieceSeconds of stepping, by the measured
// time per env) and that each thread's ring holds several pieces of a batch to share.
constexpr int64_t kMaxPiece = 128;
constexpr double kPieceSeconds = 10e-6;
constexpr int64_t kPiecesPerRing = 4;

bool AllZero(const uint8_t* bytes, int64_t count) {
  uint64_t any = 0;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    any |= word;
  }
  for (; i < count; ++i) any |= bytes[i];
  return any == 0;
}

}  // namespace

void VectorPool::CheckSend() {
  // The ids as Send read them, once, into send_runs_ (so what is checked is what is queued,
  // whatever the caller's array holds meanwhile). Bit 2 of in_flight_ marks ids seen in this
  // call (to find duplicates): cleared before throwing, overwritten by 1 when queued.
  auto id_at = [](const EnvRun& run, int64_t k) {  // unsigned: a run far out of range wraps
    return static_cast<int64_t>(static_cast<uint64_t>(run.first) + static_cast<uint64_t>(k));
  };
  std::string error;
  bool state_error = false;
  int64_t marked = 0;
  for (size_t r = 0; r < send_runs_.size() && error.empty(); ++r) {
    for (int64_t k = 0; k < send_runs_[r].count && error.empty(); ++k) {
      const int64_t i = id_at(send_runs_[r], k);
      if (i < 0 || i >= num_envs_) {
        error =
            "env id " + std::to_string(i) + " is outside [0, " + std::to_string(num_envs_) + ")";
        break;
      }
      const auto e = static_cast<size_t>(i);
      if (in_flight_[e] & 2) {
        error = "env id " + std::to_string(i) + " appears twice";
      } else if (in_flight_[e]) {
        error =
            "env " + std::to_string(i) + " was already sent and not yet received; recv() it first";
        state_error = true;
      } else if (mode_ == AutoresetMode::kDisabled && needs_reset_[e]) {
        error = "env " + std::to_string(i) +
                " has ended its episode and autoreset is disabled: reset it first with "
                "reset(options={'reset_mask': mask})";
      }
      in_flight_[e] |= 2;
      ++marked;
    }
  }
  if (error.empty()) return;
  for (size_t r = 0; marked > 0; ++r) {
    for (int64_t k = 0; k < send_runs_[r].count && marked > 0; ++k, --marked) {
      in_flight_[static_cast<size_t>(id_at(send_runs_[r], k))] &= 1;
    }
  }
  if (state_error) throw AsyncStateError(error);
  throw std::invalid_argument(error);
}

void VectorPool::Send(const int64_t* env_ids, int64_t count, const void* actions) {
  if (!is_async()) throw AsyncStateError("Send/Recv need async mode (batch_size < num_envs)");
  if (broken_) {
    throw std::logic_error(
        "a previous step raised an env error; call reset() before sending again");
  }
  // Validate everything before the first side effect. The usual call (ids in increasing order,
  // as recv returns them, none in flight or waiting for a reset) passes a scan of its runs of
  // consecutive ids; any other takes the full check, which names the first bad id in order.
  const bool disabled = mode_ == AutoresetMode::kDisabled;
  bool plain = true;
  send_runs_.clear();
  for (int64_t j = 0, next = 0; j < count;) {
    const int64_t first = env_ids[j];
    int64_t q = j + 1;  // unsigned: an id far out of range must not overflow
    while (q < count && static_cast<uint64_t>(env_ids[q]) ==
                            static_cast<uint64_t>(first) + static_cast<uint64_t>(q - j)) {
      ++q;
    }
    const int64_t length = q - j;
    plain = plain && first >= next && first <= num_envs_ - length &&
            AllZero(in_flight_.data() + first, length) &&
            !(disabled && !AllZero(needs_reset_.data() + first, length));
    if (plain) next = first + length;
    send_runs_.push_back({first, length});
    j = q;
  }
  if (!plain) CheckSend();  // throws, or the ids are valid (in any order)
  const auto* src = static_cast<const uint8_t*>(actions);
  const auto action_row = static_cast<size_t>(action_row_bytes_);
  const double per_env = std::max(seconds_per_env_.load(std::memory_order_relaxed), 1e-9);
  const int64_t piece =
      std::clamp<int64_t>(std::min(static_cast<int64_t>(kPieceSeconds / per_env),
                                   batch_size_ / (kPiecesPerRing * num_job_rings_)),
                          1, kMaxPiece);
  std::fill(send_counts_.begin(), send_counts_.end(), 0);
  int64_t row = 0;
  for (const EnvRun& run : send_runs_) {  // one copy of a run's action rows
    std::memset(in_flight_.data() + run.first, 1, static_cast<size_t>(run.count));
    QueueRun(run.first, run.first + run.count, piece);
    std::memcpy(stage_actions_.data() + static_cast<size_t>(run.first) * action_row,
                src + static_cast<size_t>(row) * action_row,
                static_cast<size_t>(run.count) * action_row);
    row += run.count;
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

void VectorPool::QueueRun(int64_t first, int64_t end, int64_t piece) {
  // Ring by ring (Home is a division: once per ring, not per env), in pieces that end on
  // multiples of `piece`, so that the same envs make up a piece from one batch to the next.
  for (int64_t i = first; i < end;) {
    const int r = Home(i);
    const int64_t ring_end = std::min(end, FirstHomedOn(r + 1, num_job_rings_, num_envs_));
    JobRing& ring = job_rings_[r];
    const int64_t tail = ring.tail.load(std::memory_order_relaxed);  // only Send writes tails
    int64_t at = tail + send_counts_[static_cast<size_t>(r)];
    for (; i < ring_end; ++at) {
      const int64_t piece_end = std::min(ring_end, (i / piece + 1) * piece);
      JobPiece& slot = ring.pieces[at & ring.mask];
      slot.first.store(i, std::memory_order_relaxed);
      slot.count.store(piece_end - i, std::memory_order_relaxed);
      slot.send.store(send_count_, std::memory_order_relaxed);
      i = piece_end;
    }
    send_counts_[static_cast<size_t>(r)] = at - tail;
  }
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
  // The first b envs published: whole pieces and, where b ends inside one, its first part (the
  // rest is taken by the next Recv).
  recv_runs_.clear();
  for (int64_t taken = 0; taken < b;) {
    const DoneRun& run = done_runs_[done_run_ & ring_mask_];
    const int64_t length = run.length.load(std::memory_order_relaxed);
    const int64_t offset = done_head_ + taken - done_run_;
    const int64_t take = std::min(length - offset, b - taken);
    recv_runs_.push_back({run.first.load(std::memory_order_relaxed) + offset, take});
    taken += take;
    if (offset + take == length) done_run_ += length;
  }
  // In id order, not completion order: the caller sends the ids back in the order given, and
  // completion order would cut the runs shorter every cycle, until every piece is one env.
  SortRecvRuns();
  done_head_ += b;
  last_was_recv_ = true;
  auto* obs = static_cast<uint8_t*>(out.obs);
  const auto obs_row = static_cast<size_t>(obs_row_bytes_);
  const auto agents = static_cast<size_t>(num_agents_);
  int64_t ended = 0;
  int64_t failed = -1;
  // One memcpy per array for each run. The episode statistics are zero but in the rows of
  // episodes that ended (few): only the last Recv's such rows are cleared, and only this one's
  // are copied.
  for (const int64_t ended_row : recv_ended_rows_) {
    const auto r = static_cast<size_t>(ended_row);
    recv_return_[r] = 0.0;
    recv_length_[r] = 0;
    recv_time_[r] = 0.0;
  }
  recv_ended_rows_.clear();
  const bool failures = async_failed_.load(std::memory_order_relaxed);
  int64_t j = 0;
  for (const EnvRun& env_run : recv_runs_) {
    const int64_t first = env_run.first;
    for (int64_t i = 0; i < env_run.count; ++i) env_ids[j + i] = first + i;
    const auto k = static_cast<size_t>(first), at = static_cast<size_t>(j);
    const auto len = static_cast<size_t>(env_run.count);
    std::memcpy(obs + at * obs_row, stage_obs_.data() + k * obs_row, len * obs_row);
    // Rewards and flags: one row per agent, env k's at [k * agents, (k + 1) * agents).
    const size_t row_k = k * agents, row_at = at * agents, rows = len * agents;
    std::memcpy(out.reward + row_at, stage_reward_.data() + row_k, rows * sizeof(float));
    std::memcpy(out.terminated + row_at, stage_terminated_.data() + row_k, rows);
    std::memcpy(out.truncated + row_at, stage_truncated_.data() + row_k, rows);
    if (agents > 1) std::memcpy(recv_active_.data() + row_at, agent_active_.data() + row_k, rows);
    std::memcpy(recv_done_.data() + at, done_.data() + k, len);
    for (const void* hit = std::memchr(done_.data() + k, 1, len); hit != nullptr;) {
      const auto i = static_cast<size_t>(static_cast<const uint8_t*>(hit) - done_.data());
      const size_t row = at + (i - k);
      recv_return_[row] = ep_return_out_[i];
      recv_length_[row] = ep_length_out_[i];
      recv_time_[row] = ep_time_out_[i];
      recv_ended_rows_.push_back(static_cast<int64_t>(row));
      ++ended;
      hit = i + 1 < k + len ? std::memchr(done_.data() + i + 1, 1, k + len - i - 1) : nullptr;
    }
    if (!recv_final_obs_.empty()) {
      std::memcpy(recv_final_obs_.data() + at * obs_row, final_obs_.data() + k * obs_row,
                  len * obs_row);
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
    const void* hit = failures ? std::memchr(env_failed_.data() + k, 1, len) : nullptr;
    if (hit != nullptr) {
      const int64_t i = static_cast<const uint8_t*>(hit) - env_failed_.data();
      if (failed < 0 || i < failed) failed = i;
    }
    j += env_run.count;
  }
  num_in_flight_ -= b;
  // The tuner times whole recv cycles (the caller's own work between them included: the async
  // threads step meanwhile) and sets the async threads taking part in the next one.
  const double now = Now();
  if (last_recv_ > 0.0) tuner_.Record(now - last_recv_);
  last_recv_ = now;
  CheckBlocking(now);
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

void VectorPool::SortRecvRuns() {
  std::vector<EnvRun>& runs = recv_runs_;
  if (runs.size() < 2) return;
  if (static_cast<int64_t>(runs.size()) * 16 < num_envs_) {  // few runs: a comparison sort
    std::sort(runs.begin(), runs.end(),
              [](const EnvRun& a, const EnvRun& b) { return a.first < b.first; });
    size_t kept = 0;  // merge runs that continue each other
    for (size_t r = 1; r < runs.size(); ++r) {
      if (runs[kept].first + runs[kept].count == runs[r].first) {
        runs[kept].count += runs[r].count;
      } else {
        runs[++kept] = runs[r];
      }
    }
    runs.resize(kept + 1);
    return;
  }
  // Many short runs: mark their envs, then read the runs off the marks in one pass.
  int64_t lo = num_envs_, hi = 0;
  for (const EnvRun& run : runs) {
    std::memset(id_marks_.data() + run.first, 1, static_cast<size_t>(run.count));
    lo = std::min(lo, run.first);
    hi = std::max(hi, run.first + run.count);
  }
  runs.clear();
  for (int64_t i = lo; i < hi;) {
    if (id_marks_[static_cast<size_t>(i)] == 0) {
      ++i;
      continue;
    }
    const int64_t first = i;
    while (i < hi && id_marks_[static_cast<size_t>(i)] != 0)
      id_marks_[static_cast<size_t>(i++)] = 0;
    runs.push_back({first, i - first});
  }
}

}  // namespace fastbatch
