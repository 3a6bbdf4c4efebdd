// VectorPool: N envs of one type stepped as a batch over a WorkerPool, with gymnasium's time
// limit, autoreset modes and episode statistics applied in C++.
//
// Buffers: the caller passes the output arrays of every call (`BatchOut`), so results can land
// in pool-owned slots or straight in the caller's own memory. The pool owns only per-env
// bookkeeping (RNGs, step counters, episode statistics, SAME_STEP final observations, the frame
// stacks: frame_stack.h) and the envs' info rows (ABI version 3), which the caller reads after
// each call like the statistics.
//
// Threading: all methods are called by one thread at a time (the Python layer guarantees it).
// Inside Reset/Step the envs are split into chunks of `chunk_size()` envs (borders on cache-line
// multiples, worker_pool.h) that the caller and the workers claim one at a time; envs whose step
// costs kFineChunkSeconds or more (Atari, MuJoCo: env work timed in the first kCostSteps sync
// steps) then get one env a chunk, so that threads balance uneven steps (a reset with noops, a long
// physics step) env by env, as a cache line shared at a border costs nothing beside them; a chunk's
// bookkeeping runs on the thread that stepped it. Step times each batch and a ThreadTuner picks
// how many of the `num_threads()` threads take part (`active_threads()`). Results never depend
// on the thread count or on which thread stepped which chunk: an env's step reads only its own
// state, RNG and action row.
//
// Async mode (batch_size < num_envs): each env has a home thread, the caller or one of the
// num_threads() - 1 async threads (contiguous blocks, so an env's state stays in one core's
// cache). Send cuts its ids into pieces (runs of consecutive envs with one home, at most about
// a claim's worth of stepping each) and publishes them on their home thread's lock-free FIFO
// job ring. Each thread claims the front piece of its ring, steps it into staging rows and
// publishes it (first env, count) on a lock-free done ring (the caller inside Recv, while
// results are missing). An async thread takes from another's ring when its own is empty, from
// the ring whose front was sent first; the caller, from that ring whenever its front was sent
// before its own's (so no env waits behind later ones). Threads beyond num_threads (max_async_
// threads, for envs whose steps block) own no ring and only take that way. Recv takes the
// first batch_size envs of the done ring (splitting a piece if it must) and returns them sorted
// by id; so the rings carry one entry per piece, not per env. The ThreadTuner times recv
// cycles and parks async threads when fewer measure faster (the caller then steps everything).
// A waiting thread spins, then yields, then sleeps on a futex word that is signalled only when
// someone sleeps on it.
//
// Frame stacking (PoolConfig.frame_stack = k > 1): a FrameStack, documented in frame_stack.h.
//
// Multi-agent envs (ABI version 6, spec num_agents = A > 1): env i owns rows [i * A, (i + 1) * A)
// of the obs, reward, terminated, truncated and action arrays (its obs row is A observations).
// The pool keeps, per row, whether the agent is still in its env's episode: an agent whose row
// terminates or truncates is gone from the next step on, and its rows then read zeros (obs,
// reward, flags) whatever the env wrote, with agent_active() false. The time limit truncates
// every agent still in. The env's episode ends (statistics, autoreset as for one agent; its
// return sums every agent's rewards) in the step that leaves no agent in. Async mode works on
// whole envs: Send takes A action rows per id, Recv writes A rows per env of the batch (reward
// and flags [batch_size * A]) and agent_active() then has the batch's rows. No frame stacking
// (the constructor refuses it).
#ifndef FASTBATCH_CORE_VECTOR_POOL_H_
#define FASTBATCH_CORE_VECTOR_POOL_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "env_seeds.h"
#include "fastbatch/abi.h"
#include "frame_stack.h"
#include "plugin_loader.h"
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
  int num_threads = 1;  // the most threads that step a batch (clamped to [1, num_envs])
  AutoresetMode autoreset_mode = AutoresetMode::kNextStep;
  int64_t max_episode_steps = 0;  // 0: no time limit; < 0: the env spec's
  int64_t batch_size = 0;         // < num_envs: async mode (Send/Recv); 0 or num_envs: sync
  // Async mode: the most threads (the caller counts) that may step while the envs' steps block
  // (sleep, wait on I/O): the process then uses under 35% of the cores its threads could, and
  // the tuner may try more threads than num_threads. Clamped to [num_threads, num_envs].
  int max_async_threads = 0;
  std::vector<double> params;  // constructor params, in spec order
  // Observations stacked per env (frame_stack.h); 1: none. Must be positive, and above 1 needs a
  // Box observation of fewer than FASTBATCH_MAX_NDIM axes.
  int64_t frame_stack = 1;
};

// Async mode homes the envs in contiguous blocks, one per job ring: env `env` of `num_envs` on
// ring env * rings / num_envs, and ring `ring`'s block starts at the least env homed there.
inline int HomeRing(int64_t env, int rings, int64_t num_envs) {
  return static_cast<int>(env * rings / num_envs);
}
inline int64_t FirstHomedOn(int ring, int rings, int64_t num_envs) {
  return (static_cast<int64_t>(ring) * num_envs + rings - 1) / rings;
}

class VectorPool {
 public:
  VectorPool(const fb_env_api* api, const PoolConfig& config);
  ~VectorPool();
  VectorPool(const VectorPool&) = delete;
  VectorPool& operator=(const VectorPool&) = delete;

  int64_t num_envs() const { return num_envs_; }
  // The configured thread count (the caller counts as one), clamped to [1, num_envs].
  int num_threads() const { return max_threads_; }
  // How many threads the tuner currently has stepping (sync: each batch; async: the caller and
  // the async threads not parked). Async mode may go above num_threads (to max_async_threads)
  // while the envs' steps block.
  int active_threads() const { return tuner_.chosen(); }
  int64_t chunk_size() const { return chunk_size_; }
  // One env's row of the observation arrays (frame_stack() frames of frame_bytes() each).
  int64_t obs_row_bytes() const { return obs_row_bytes_; }
  int64_t frame_stack() const { return frame_stack_ ? frame_stack_->k() : 1; }
  int64_t frame_bytes() const { return frame_bytes_; }  // one observation of the env itself
  // Agents per env (ABI version 6; 1: a single-agent env). See "Multi-agent envs" above.
  int64_t num_agents() const { return num_agents_; }
  // Multi-agent envs: per row, whether the agent took part in the last Step (rows env *
  // num_agents + agent; or is in the episode the last Reset began for its env) or Recv (rows
  // position * num_agents + agent, stats_rows() * num_agents rows).
  const uint8_t* agent_active() const {
    return last_was_recv_ ? recv_active_.data() : agent_active_.data();
  }
  // The envs' spec, its observation stacked when frame_stack() > 1.
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

  // Async mode (batch_size < num_envs): async threads step the sent envs; the caller steps
  // queued envs too while it waits in Recv.
  bool is_async() const { return batch_size_ < num_envs_; }
  int64_t batch_size() const { return batch_size_; }
  int64_t num_in_flight() const { return num_in_flight_; }
  // Queues one step of each env in env_ids[0..count) with its row of `actions`
  // ([count, *act_shape]). Throws AsyncStateError for an env already in flight, and
  // std::invalid_argument for a bad id (nothing is queued then).
  void Send(const int64_t* env_ids, int64_t count, const void* actions);
  // Waits until batch_size sent envs have finished (stepping queued envs itself meanwhile) and
  // writes the results of the first batch_size to finish, in env id order, to rows
  // [0, batch_size) of `out` and their ids to `env_ids`. Returns how many episodes ended. Throws
  // AsyncStateError when fewer than batch_size envs are in flight, and EnvError naming the lowest
  // failed env of the batch.
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

  // State and rendering (vector_pool_state.cc), for one env that is not in flight.
  // The env's internal state (see fb_env_api.get_state); returns its size, 0 if unsupported.
  // Throws AsyncStateError while the env is in flight.
  int64_t GetState(int64_t env, double* out, int64_t capacity) const;
  // Whether SetState can work: the table has set_state (ABI version 5, an env with SetState).
  bool can_set_state() const;
  // Replaces the env's internal state with `size` doubles laid out as GetState writes them
  // (fb_env_api.set_state). Only the env's own state changes: the pool's books of its episode
  // (steps, return, a pending autoreset) stay, and no observation is rewritten, so the next
  // step starts from `in`. Throws std::logic_error when !can_set_state(), AsyncStateError while
  // the env is in flight, and std::invalid_argument with the env's message when it refuses the
  // state.
  void SetState(int64_t env, const double* in, int64_t size);
  // The frame Render draws (ABI version 7; {0, 0, 0}: the env does not render).
  FrameSize frame() const;
  // Draws env `env` into `rgb` (frame().bytes() bytes, RGB). Throws std::logic_error when the env
  // does not render, AsyncStateError while it is in flight, EnvError when its Render fails.
  void Render(int64_t env, uint8_t* rgb) const;

 private:
  void CheckNotInFlight(int64_t env) const;  // throws AsyncStateError
  // Sync steps timed before the chunks are sized by cost, and the per-env step cost (seconds of
  // env work, waits left out) from which chunks hold one env each.
  static constexpr int64_t kCostSteps = 8;
  static constexpr double kFineChunkSeconds = 2e-6;
  // Reads the last step's chunk times; after kCostSteps steps, one env a chunk if the fastest
  // step but the first cost at least kFineChunkSeconds per env.
  void SizeChunksByCost();
  static void StepTask(void* self, int64_t begin, int64_t end);
  static void ResetTask(void* self, int64_t begin, int64_t end);
  int64_t ChunkBegin(int64_t chunk) const { return std::min(chunk * chunk_size_, num_envs_); }
  // Steps envs [begin, end) (actions and outputs at their global rows) with time limits,
  // autoreset and episode statistics. Returns the episodes ended, or -1 with `error` filled.
  // When the env step fails at env f, envs [begin, f) still get their bookkeeping and
  // `stepped_end` (if not null) is set to f; otherwise to `end`.
  int64_t StepEnvs(int64_t begin, int64_t end, const void* actions, const BatchOut& out,
                   fb_error* error, int64_t* stepped_end = nullptr);
  void ResetEnvs(int64_t begin, int64_t end, fb_error* error, uint8_t* failed);
  void StartEpisode(int64_t i, double now);
  // The bookkeeping after the envs stepped: for single-agent envs (EnvBooks) and multi-agent ones
  // (AgentBooks, vector_pool_agents.cc). Both return the episodes ended; `now` is the clock
  // read once for the call (0 until needed).
  int64_t EnvBooks(int64_t begin, int64_t end, const BatchOut& out, double* now);
  int64_t AgentBooks(int64_t begin, int64_t end, const BatchOut& out, double* now);
  // Clears env i's statistics rows of its last step's ended episode, and when NEXT_STEP's
  // autoreset just reset it starts its episode and returns true.
  bool AutoresetBooks(int64_t i, bool next_step, uint8_t* obs, double* now);
  // Env i's episode ended in this step: its statistics, SAME_STEP's final rows, or a pending
  // reset.
  void EndEpisode(int64_t i, const uint8_t* obs, double* now);
  // Where the envs write their observations for output `obs`: the raw rows when stacking.
  void* EnvObs(void* obs) { return frame_stack_ ? frame_stack_->raw_rows() : obs; }
  void ThrowFirstError();
  static int ClampThreads(const PoolConfig& config);
  static int MaxActiveThreads(const PoolConfig& config);
  static double Now();

  // Async mode (vector_pool_async.cc).
  void StartAsync(int threads);
  void AsyncLoop(int thread);
  // Raises the tuner's ceiling above num_threads while the envs' steps block (see PoolConfig).
  void CheckBlocking(double now);
  // Claims the front piece of job ring `ring`, steps it and publishes it as done; returns how
  // many envs it stepped (0: none queued there).
  int64_t StepQueued(int ring);
  bool AnyQueued() const;
  // The ring (trying `prefer` first) whose front slot was queued by the earliest Send; -1: none.
  int OldestRing(int prefer) const;
  int Home(int64_t env) const;  // the job ring env is queued on
  // Send's full check of its ids, as read into send_runs_ (range, duplicates, in flight,
  // waiting for a reset): throws for the first bad one in order, leaving no mark.
  void CheckSend();
  // Waits (stepping queued envs meanwhile) until done positions [done_head_, end) are filled.
  void WaitForDone(int64_t end);
  // A run of consecutive env ids.
  struct EnvRun {
    int64_t first;
    int64_t count;
  };
  // Cuts envs [first, end) into pieces and queues them on their home rings (see Send).
  void QueueRun(int64_t first, int64_t end, int64_t piece);
  // Sorts recv_runs_ by first env and merges adjacent runs (see Recv).
  void SortRecvRuns();
  void DrainAsync();
  void StopAsync();

  const fb_env_api* api_;
  // The envs' spec: the block's (its params' spaces), owned by the table or block, or its
  // stacked copy owned by frame_stack_.
  const fb_spec* spec_;
  // The table has the fields ABI version 2 appended (HasV2Fields): block_spec, envs reporting
  // truncation in fb_batch.truncated, and specs laid out as its version says; without them it
  // is read as a version-1 table.
  bool has_v2_fields_;
  void* block_ = nullptr;
  int64_t num_envs_;
  AutoresetMode mode_;
  int64_t max_episode_steps_;
  int64_t obs_row_bytes_;
  int64_t frame_bytes_;  // the env's own observation row
  int max_threads_;
  int64_t chunk_size_;  // chunk c covers envs [c * chunk_size_, min((c + 1) * chunk_size_, N))
  int64_t num_chunks_;
  int64_t timed_steps_ = 0;  // sync steps timed for SizeChunksByCost (kCostSteps: done)
  double least_step_seconds_ = std::numeric_limits<double>::infinity();
  std::vector<double> chunk_seconds_;  // each chunk's env work in the last timed step
  std::unique_ptr<WorkerPool> workers_;
  ThreadTuner tuner_;

  // Per-env bookkeeping.
  EnvSeeds seeds_;
  std::vector<uint8_t> needs_reset_;
  std::vector<int64_t> elapsed_;
  std::vector<double> ep_return_;
  std::vector<double> ep_start_;
  std::vector<uint8_t> done_;
  int64_t num_agents_ = 1;
  std::vector<uint8_t> agent_alive_;   // [N * A]: the agent is still in its env's episode
  std::vector<uint8_t> agent_active_;  // [N * A]: the agent took part in the last call
  std::vector<double> ep_return_out_;
  std::vector<int64_t> ep_length_out_;
  std::vector<double> ep_time_out_;
  std::vector<uint8_t> final_obs_;
  // Frame stacking (k > 1; empty when k = 1: the envs write the output rows themselves). Its
  // stacked spec points into the table's or block's spec; env i's rows belong to the thread
  // stepping or resetting env i.
  std::optional<FrameStack> frame_stack_;
  int64_t info_row_ = 0;
  std::vector<double> info_;        // [N, info_row_], by env; written by the envs
  std::vector<double> final_info_;  // [N, info_row_], SAME_STEP

  // Per-chunk results of the current call (a run of chunks stepped in one go reports at its
  // first chunk's index). The adapter stops a range at its first failing env, so the lowest
  // failed chunk names the lowest failing env of the batch, whatever the chunking.
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

  // Async mode. Staging rows are indexed by env. Positions on the rings count up forever (slot =
  // position & mask, capacity a power of 2). Job ring: positions count pieces; it has one
  // producer (Send) and at most its homed envs in flight, so it never overflows; a consumer
  // reads the front piece, then claims it by compare-exchange on head, so the producer reuses
  // a slot only after its piece was read. Done ring: positions count envs; the thread that
  // stepped a piece reserves positions [p, p + count) with fetch_add and writes the piece's
  // header at slot p: its first env and length, then seq = p + 1 (release). Recv, the only
  // consumer, walks the headers in position order; its capacity (twice num_envs) keeps the
  // header of a piece Recv has taken only part of until Recv takes the rest. Everything else
  // here belongs to the caller thread, except the per-env rows of an env in flight, which
  // belong to whoever claimed it until it is published as done.
  struct JobPiece {
    std::atomic<int64_t> first{0};
    std::atomic<int64_t> count{0};
    std::atomic<uint64_t> send{0};  // the Send call that queued it
  };
  struct JobRing {
    std::unique_ptr<JobPiece[]> pieces;
    int64_t mask = 0;
    alignas(64) std::atomic<int64_t> head{0};
    alignas(64) std::atomic<int64_t> tail{0};
  };
  struct DoneRun {
    std::atomic<int64_t> seq{0};
    std::atomic<int64_t> first{0};
    std::atomic<int64_t> length{0};
  };
  int64_t batch_size_;
  int64_t action_row_bytes_ = 0;
  // Async thread w owns job ring w + 1 while w + 1 < num_job_rings_; the rest (beyond
  // num_threads, for envs whose steps block; started by CheckBlocking) own none and take the
  // oldest pieces.
  std::vector<std::thread> async_threads_;
  double blocking_wall_ = 0.0;  // CheckBlocking's last look: wall and process CPU seconds
  double blocking_cpu_ = 0.0;
  int64_t ring_mask_ = 0;                 // the done ring's
  std::unique_ptr<JobRing[]> job_rings_;  // the caller's, then one per async thread w + 1
  int num_job_rings_ = 0;
  std::vector<int64_t> send_counts_;  // per job ring: pieces queued by the Send in progress
  uint64_t send_count_ = 0;           // Send calls so far (caller only)
  std::unique_ptr<DoneRun[]> done_runs_;
  alignas(64) std::atomic<uint32_t> job_signal_{0};  // futex word: bumped by Send and StopAsync
  std::atomic<uint32_t> job_sleepers_{0};            // async threads asleep on job_signal_
  std::atomic<bool> async_stop_{false};
  std::atomic<double> seconds_per_env_{0.0};  // running estimate of one env step, sizes claims
  std::atomic<uint32_t> async_active_{0};     // futex word: async threads 0..n-1 take jobs
  double last_recv_ = 0.0;                    // when the last Recv returned; 0: none since reset
  alignas(64) std::atomic<int64_t> done_reserved_{0};
  std::atomic<uint32_t> done_published_{0};  // futex word: envs published as done (mod 2^32)
  alignas(64) std::atomic<uint32_t> recv_asleep_{0};
  std::atomic<uint32_t> recv_wanted_{0};  // done_published_ value Recv sleeps for
  int64_t done_head_ = 0;                 // the next done position Recv reads (caller only)
  int64_t done_checked_ = 0;              // positions below it are known published (caller only)
  int64_t done_run_ = 0;  // where the done run holding done_head_ starts (caller only)
  std::vector<uint8_t> in_flight_;
  int64_t num_in_flight_ = 0;
  std::vector<EnvRun> send_runs_;  // a Send's runs of consecutive ids, in the order given
  std::vector<EnvRun> recv_runs_;  // the runs a Recv returns
  std::vector<uint8_t> id_marks_;  // SortRecvRuns' scratch: one byte per env, zero between calls
  std::vector<uint8_t> stage_actions_, stage_obs_, stage_terminated_, stage_truncated_;
  std::vector<float> stage_reward_;
  std::vector<fb_error> env_errors_;
  std::vector<uint8_t> env_failed_;        // set when an env's step failed; cleared by a full Reset
  std::atomic<bool> async_failed_{false};  // some env_failed_ entry is set
  std::vector<int64_t> recv_ended_rows_;   // the rows of the last Recv with episode statistics
  std::vector<uint8_t> recv_done_, recv_final_obs_;
  std::vector<uint8_t> recv_active_;  // [batch_size * A]: agent_active_ of the Recv's envs
  std::vector<double> recv_info_, recv_final_info_;
  std::vector<double> recv_return_, recv_time_;
  std::vector<int64_t> recv_length_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_VECTOR_POOL_H_
