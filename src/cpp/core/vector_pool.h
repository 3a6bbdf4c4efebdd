// VectorPool: N envs of one type stepped as a batch over a WorkerPool, with gymnasium's time
// limit, autoreset modes and episode statistics applied in C++.
//
// Buffers: the caller passes the output arrays of every call (`BatchOut`), so results can land
// in pool-owned slots or straight in the caller's own memory. The pool owns only per-env
// bookkeeping (RNGs, step counters, episode statistics, SAME_STEP final observations).
//
// Threading: all methods are called by one thread at a time (the Python layer guarantees it);
// inside Reset/Step the work is split over the worker threads on disjoint env ranges.
#ifndef FASTBATCH_CORE_VECTOR_POOL_H_
#define FASTBATCH_CORE_VECTOR_POOL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

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
  int64_t max_episode_steps = 0;  // 0: no time limit
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

  // Seeds env i's RNG from (seed, i) — gymnasium's convention passes seed + i here.
  void Seed(int64_t env, uint64_t seed);
  // Seeds env i's RNG from the OS entropy source.
  void SeedRandom(int64_t env);

  // Resets the envs with a nonzero mask entry (all when mask is null) and writes their rows of
  // `obs`. With a mask, rows of envs not reset are copied from `prev_obs` when it is not null.
  void Reset(const uint8_t* mask, void* obs, const void* prev_obs);

  // Steps every env with `actions` ([N] int64 for Discrete, [N, *act_shape] otherwise).
  // Returns how many episodes ended in this step. Throws EnvError.
  int64_t Step(const void* actions, const BatchOut& out);

  // Episode statistics of the last Step, per env; zero where no episode ended.
  const uint8_t* done() const { return done_.data(); }
  const double* episode_return() const { return ep_return_out_.data(); }
  const int64_t* episode_length() const { return ep_length_out_.data(); }
  const double* episode_time() const { return ep_time_out_.data(); }
  // SAME_STEP only: the last observation of each env whose episode ended in the last Step.
  const uint8_t* final_obs() const { return final_obs_.data(); }

  // The env's internal state (see fb_env_api.get_state); returns its size, 0 if unsupported.
  int64_t GetState(int64_t env, double* out, int64_t capacity) const;

 private:
  static void StepTask(void* self, int range);
  static void ResetTask(void* self, int range);
  void StepRange(int range);
  void ResetRange(int range);
  void StartEpisode(int64_t i, double now);
  void ThrowFirstError();
  static double Now();

  const fb_env_api* api_;
  const fb_spec* spec_;
  void* block_ = nullptr;
  int64_t num_envs_;
  AutoresetMode mode_;
  int64_t max_episode_steps_;
  int64_t obs_row_bytes_;
  std::vector<int64_t> bounds_;  // range r covers envs [bounds_[r], bounds_[r + 1])
  std::unique_ptr<WorkerPool> workers_;

  // Per-env bookkeeping.
  std::vector<fb_rng> rngs_;
  std::vector<uint8_t> needs_reset_;
  std::vector<int64_t> elapsed_;
  std::vector<double> ep_return_;
  std::vector<double> ep_start_;
  std::vector<uint8_t> done_;
  std::vector<double> ep_return_out_;
  std::vector<int64_t> ep_length_out_;
  std::vector<double> ep_time_out_;
  std::vector<uint8_t> final_obs_;

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
};

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_VECTOR_POOL_H_
