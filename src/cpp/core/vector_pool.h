// VectorPool: N envs of one type stepped as a batch over a WorkerPool, with gymnasium's time
// limit, autoreset modes and episode statistics applied in C++.
//
// Buffers: the caller passes the output arrays of every call (`BatchOut`), so results can land
// in pool-owned slots or straight in the caller's own memory. The pool owns only per-env
// bookkeeping (RNGs, step counters, episode statistics, SAME_STEP final observations) and the
// envs' info rows (ABI version 3), which the caller reads after each call like the statistics.
//
// Threading: all methods are called by one thread at a time (the Python layer guarantees it);
// inside Reset/Step the work is split over the worker threads on disjoint env ranges.
#ifndef FASTBATCH_CORE_VECTOR_POOL_H_
#define FASTBATCH_CORE_VECTOR_POOL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "env_seeds.h"
#include "fastbatch/abi.h"
#include "worker_pool.h"

namespace fastbatch {

enum class AutoresetMode : int { kNextStep = 0, kSameStep = 1, kDisabled = 2 };

// An env failed (C++ exception inside Reset/Step or the constructor). `env_index` is -1 when no
// single env is to blame.
class EnvError : public std::runtime_error {
 public:
  EnvError(int64_t env_index, const std::string& message)
      : std::runtime_error(message), env_index_(env_index) {}
  int64_t env_index() const { return env_index_; }

 private:
  int64_t env_index_;
};

// send()/recv() used out of order (recv without send, an env sent twice, ...).
class AsyncStateError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Output arrays of one call; rows are indexed by env. Owned by the caller.
struct BatchOut {
  void* obs = nullptr;            // [N, *obs_shape]
  float* reward = nullptr;        // [N]
  uint8_t* terminated = nullptr;  // [N]
  uint8_t* truncated = nullptr;   // [N]
};

struct PoolConfig {
  int64_t num_envs = 1;
  int num_threads = 1;
  AutoresetMode autoreset_mode = AutoresetMode::kNextStep;
  int64_t max_episode_steps = 0;  // 0: no time limit; < 0: the env spec's
  int64_t batch_size = 0;         // < num_envs: async mode (Send/Recv); 0 or num_envs: sync
  std::vector<double> params;     // constructor params, in spec order
};

class VectorPool {
 public:
  VectorPool(const fb_env_api* api, const PoolConfig& config);
  ~VectorPool();
  VectorPool(const VectorPool&) = delete;
  VectorPool& operator=(const VectorPool&) = delete;

  int64_t num_envs() const { return num_envs_; }
  int num_threads() const { return static_cast<int>(bounds_.size()) - 1; }
  int64_t obs_row_bytes() const { return obs_row_bytes_; }
  const std::vector<int64_t>& range_bounds() const { return bounds_; }
  const fb_spec& spec() const { return *spec_; }
  AutoresetMode autoreset_mode() const { return mode_; }

  // Seeds env `env`'s RNG (see env_seeds.h) from a seed — gymnasium's vector envs pass seed + i
  // for env i — given as `count` 32-bit words, lowest first, or as one uint64. The next reset of
  // the env starts that stream. Until seeded, an env draws from OS entropy.
  void Seed(int64_t env, const uint32_t* words, size_t count);
  void Seed(int64_t env, uint64_t seed);
  // The words env `env` was last seeded from: its seed, or the entropy it drew.
  const std::vector<uint32_t>& seed_words(int64_t env) const { return seeds_.seed_words(env); }

  // Resets the envs with a nonzero mask entry (all when mask is null) and writes their rows of
  // `obs`. With a mask, rows of envs not reset are copied from `prev_obs` when it is not null.
  void Reset(const uint8_t* mask, void* obs, const void* prev_obs);

  // Steps every env with `actions` ([N] int64 for Discrete, [N, *act_shape] otherwise).
  // Returns how many episodes ended in this step. Throws EnvError.
  int64_t Step(const void* actions, const BatchOut& out);

  // Async mode (batch_size < num_envs). Worker threads step each sent env on its own; the
  // caller thread only sends and receives.
  bool is_async() const { return batch_size_ < num_envs_; }
  int64_t batch_size() const { return batch_size_; }
  int64_t num_in_flight() const { return num_in_flight_; }
  // Queues one step of each env in env_ids[0..count) with its row of `actions`
  // ([count, *act_shape]). Throws AsyncStateError for an env already in flight, and
  // std::invalid_argument for a bad id (nothing is queued then).
  void Send(const int64_t* env_ids, int64_t count, const void* actions);
  // Waits until batch_size sent envs have finished and writes their results, in completion
  // order, to rows [0, batch_size) of `out` and their ids to `env_ids`. Returns how many
  // episodes ended. Throws AsyncStateError when fewer than batch_size envs are in flight.
  int64_t Recv(const BatchOut& out, int64_t* env_ids);

  // Episode statistics of the last Step (stats_rows() == num_envs, row = env) or Recv
  // (stats_rows() == batch_size, row = position in the batch); zero where no episode ended.
  int64_t stats_rows() const { return last_was_recv_ ? batch_size_ : num_envs_; }
  const uint8_t* done() const { return last_was_recv_ ? recv_done_.data() : done_.data(); }
  const double* episode_return() const {
    return last_was_recv_ ? recv_return_.data() : ep_return_out_.data();
  }
  const int64_t* episode_length() const {
    return last_was_recv_ ? recv_length_.data() : ep_length_out_.data();
  }
  const double* episode_time() const {
    return last_was_recv_ ? recv_time_.data() : ep_time_out_.data();
  }
  // SAME_STEP only: the last observation of each row whose episode ended in the last call.
  const uint8_t* final_obs() const {
    return last_was_recv_ ? recv_final_obs_.data() : final_obs_.data();
  }

  // Infos (ABI version 3; info_row() == 0 when the env declares none). `info()`: the
  // [stats_rows(), info_row()] rows of the last Step or Recv (for an env reset in that call,
  // its reset info); `reset_info()`: [num_envs, info_row()] rows by env, valid after Reset for
  // the envs it reset; `final_info()` (SAME_STEP): the last step's info of each row whose
  // episode ended in the last Step or Recv.
  int64_t info_row() const { return info_row_; }
  const double* info() const { return last_was_recv_ ? recv_info_.data() : info_.data(); }
  const double* reset_info() const { return info_.data(); }
  const double* final_info() const {
    return last_was_recv_ ? recv_final_info_.data() : final_info_.data();
  }

  // The env's internal state (see fb_env_api.get_state); returns its size, 0 if unsupported.
  int64_t GetState(int64_t env, double* out, int64_t capacity) const;

 private:
  static void StepTask(void* self, int range);
  static void ResetTask(void* self, int range);
  void StepRange(int range);
  // Steps envs [begin, end) (actions and outputs at their global rows) with time limits,
  // autoreset and episode statistics. Returns the episodes ended, or -1 with `error` filled.
  int64_t StepEnvs(int64_t begin, int64_t end, const void* actions, const BatchOut& out,
                   fb_error* error);
  void AsyncLoop();
  void DrainAsync();
  void StopAsync();
  void ResetRange(int range);
  void StartEpisode(int64_t i, double now);
  void ThrowFirstError();
  static double Now();

  const fb_env_api* api_;
  const fb_spec* spec_;  // the block's spec (its params' spaces), owned by the table or block
  bool env_truncates_;   // ABI version 2: envs report truncation in fb_batch.truncated
  void* block_ = nullptr;
  int64_t num_envs_;
  AutoresetMode mode_;
  int64_t max_episode_steps_;
  int64_t obs_row_bytes_;
  std::vector<int64_t> bounds_;  // range r covers envs [bounds_[r], bounds_[r + 1])
  std::unique_ptr<WorkerPool> workers_;

  // Per-env bookkeeping.
  EnvSeeds seeds_;
  std::vector<uint8_t> needs_reset_;
  std::vector<int64_t> elapsed_;
  std::vector<double> ep_return_;
  std::vector<double> ep_start_;
  std::vector<uint8_t> done_;
  std::vector<double> ep_return_out_;
  std::vector<int64_t> ep_length_out_;
  std::vector<double> ep_time_out_;
  std::vector<uint8_t> final_obs_;
  int64_t info_row_ = 0;
  std::vector<double> info_;        // [N, info_row_], by env; written by the envs
  std::vector<double> final_info_;  // [N, info_row_], SAME_STEP

  // Per-range results of the current call.
  std::vector<fb_error> errors_;
  std::vector<uint8_t> failed_;
  std::vector<int64_t> ended_;

  // Arguments of the call in flight, read by the tasks.
  const void* call_actions_ = nullptr;
  BatchOut call_out_;
  const uint8_t* call_mask_ = nullptr;
  const void* call_prev_obs_ = nullptr;
  bool broken_ = false;  // a Step or Reset failed; a full Reset() clears it
  bool last_was_recv_ = false;

  // Async mode. Staging rows are indexed by env; the rings hold env ids. `job_*` and `done_*`
  // are guarded by their mutexes; everything else here belongs to the caller thread, except
  // the staging rows of an env in flight, which belong to the worker stepping it.
  int64_t batch_size_;
  int64_t action_row_bytes_ = 0;
  std::vector<std::thread> async_threads_;
  int num_async_threads_ = 1;
  std::mutex job_mu_;
  std::condition_variable job_cv_;
  std::vector<int64_t> job_ring_;
  size_t job_head_ = 0, job_count_ = 0;
  bool async_stop_ = false;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::vector<int64_t> done_ring_;
  size_t done_head_ = 0, done_count_ = 0;
  bool drain_waiting_ = false;  // DrainAsync waits for every env, not batch_size
  std::vector<uint8_t> in_flight_;
  int64_t num_in_flight_ = 0;
  std::vector<uint8_t> stage_actions_, stage_obs_, stage_terminated_, stage_truncated_;
  std::vector<float> stage_reward_;
  std::vector<fb_error> env_errors_;
  std::vector<uint8_t> env_failed_;
  std::vector<uint8_t> recv_done_, recv_final_obs_;
  std::vector<double> recv_info_, recv_final_info_;
  std::vector<double> recv_return_, recv_time_;
  std::vector<int64_t> recv_length_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_VECTOR_POOL_H_
