// `_core._VectorPool`: the Python face of one VectorPool (core/vector_pool.h). It checks every
// argument at the boundary (bindings/checks.h), converts with the GIL held, releases the GIL
// only around the pool's own C++ work, and hands results back in reused aligned slots
// (bindings/result_slots.h).
//
// Threading: one thread at a time may call a pool; a call while another thread's call is
// running raises RuntimeError (CallGuard) instead of racing. `close()` may come from any
// thread: it refuses new calls, waits up to 10 s for the running one, then frees the pool.
// Every method called after close raises ClosedError (`_core.ClosedEnvError`); close itself
// may be called again and does nothing.
//
// Fork: a process forked from the one that built the pool inherits its memory but not its
// threads, so destroying the pool there would join threads that do not exist (std::terminate).
// In such a child `_abandon()` (and the destructor, which checks the process id) forgets the
// pool instead: its envs and memory leak in the child and the parent's pool is untouched.
//
// Ownership: the pool owns its envs, its result slots (arrays handed out stay valid after
// close) and the rollout context (rollout_abi.h) with a reference to that context's storage.
#ifndef FASTBATCH_BINDINGS_PY_VECTOR_POOL_H_
#define FASTBATCH_BINDINGS_PY_VECTOR_POOL_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "bindings/checks.h"
#include "bindings/result_slots.h"
#include "bindings/rollout_abi.h"
#include "bindings/spec_dict.h"
#include "core/vector_pool.h"

namespace fastbatch {

namespace py = pybind11;

// A call on a closed pool; `_core.ClosedEnvError` (a RuntimeError) in Python.
class ClosedError : public std::runtime_error {
 public:
  ClosedError() : std::runtime_error("this fastbatch env is closed") {}
};

// Holds `busy` for the duration of a call; throws ClosedError once `closing` is set and
// RuntimeError when another thread's call holds `busy`.
class CallGuard {
 public:
  CallGuard(std::atomic<bool>* busy, const std::atomic<bool>* closing);
  ~CallGuard() { busy_->store(false, std::memory_order_release); }
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;

 private:
  std::atomic<bool>* busy_;
};

class PyVectorPool {
 public:
  // autoreset_mode: 0 next step, 1 same step, 2 disabled. batch_size 0 or num_envs: sync;
  // smaller: async (send/recv). frame_stack > 1: each observation row is the env's last
  // frame_stack observations (core/frame_stack.h), and so are the spec and every array handed
  // out. Raises ValueError for an argument out of range.
  PyVectorPool(const EnvType& type, int64_t num_envs, int num_threads, int autoreset_mode,
               int64_t max_episode_steps, std::vector<double> params, int64_t batch_size,
               int max_async_threads = 0, int64_t frame_stack = 1);
  // In a forked child: abandons the pool (see "Fork" above) rather than joining its threads.
  ~PyVectorPool();
  PyVectorPool(const PyVectorPool&) = delete;
  PyVectorPool& operator=(const PyVectorPool&) = delete;

  // Seeds env i with seeds[i] (a non-negative int of any size) where given; None keeps that
  // env's generator running. Raises ValueError (seeding none) for a negative seed.
  void Seed(const std::vector<std::optional<py::int_>>& seeds);
  // Per env, the seed it was last seeded with, or the 128-bit entropy an env never seeded drew:
  // gymnasium's `np_random_seed` of each env.
  py::list NpRandomSeeds() const;
  // Resets every env (mask None) or those with a True mask entry; returns the observations
  // (rows not reset repeat the last observations handed out).
  py::array Reset(std::optional<py::array> mask);
  // Steps every env: (obs, reward, terminated, truncated, episodes ended).
  py::tuple Step(py::handle actions);
  // Steps every env into caller-owned arrays (C-contiguous, writeable, 64-byte aligned, the
  // exact dtype and shape of Step's results); returns the episodes ended.
  int64_t StepInto(py::handle actions, py::array obs, py::array reward, py::array terminated,
                   py::array truncated);
  // Async mode: queues one step of each env in env_ids with its row of actions.
  void Send(py::handle actions, py::handle env_ids);
  // Async mode: waits for batch_size envs; returns (obs, reward, terminated, truncated,
  // env_ids, episodes ended) of the first batch_size envs to finish, rows in env id order.
  py::tuple Recv();
  // Async mode: Send then Recv in one call (an async step). Raises before sending anything
  // when the envs in flight would be fewer than batch_size, so that after a successful send
  // only an EnvError can be raised.
  py::tuple SendRecv(py::handle actions, py::handle env_ids);
  // (done, return, length, seconds) rows of the last step or recv, as fresh arrays.
  py::tuple EpisodeStats();
  // SAME_STEP only: the final observations of the last step or recv, as a fresh array.
  py::array FinalObs();
  // Multi-agent envs (ABI version 6): per row, whether its agent took part in the last step or
  // is in the episode the last reset began (a fresh [rows] array; all True for one agent).
  py::array_t<bool> AgentActive();
  // Infos (ABI version 3), as fresh [rows, info row] float64 arrays, or None when the env
  // declares none: of the last step or recv ("step"), of the envs the last reset reset, by env
  // ("reset"), or SAME_STEP's final infos of the last step or recv ("final").
  py::object Infos(const std::string& which);
  // The internal float64 state of env `env` (for tests and debugging).
  py::array_t<double> GetState(int64_t env);
  // Replaces env `env`'s internal state with `state` (checks.h, CheckState: float64, the size of
  // GetState's). Raises IndexError for a bad index, NotImplementedError naming the env id when
  // its state cannot be set, TypeError/ValueError for a bad array, AsyncStateError while the env
  // is in flight, and ValueError with the env's message when it refuses the state.
  void SetState(int64_t env, py::handle state);
  // Env `env` drawn by the env itself (ABI version 7): a fresh [height, width, 3] uint8 array.
  // Raises IndexError for a bad index, NotImplementedError naming the env id when it does not
  // draw itself, AsyncStateError while it is in flight, EnvError when its Render fails.
  py::array_t<uint8_t> Render(int64_t env);
  void Close();
  // Closes the pool without destroying it, for a forked child (see "Fork" above): no thread is
  // joined or woken and no env is freed. Any thread may call it; it never waits.
  void Abandon();

  // A context for FastbatchRolloutStep over the given rollout storage (C-contiguous arrays of
  // shapes [T+1, N, *obs], [T, N] float32, [T, N] bool, [T, N] bool, [T, N, *obs]); returns its
  // address. Replaces the previous context.
  uintptr_t RolloutContextFor(py::array obs, py::array reward, py::array terminated,
                              py::array truncated, py::array final_obs);
  // Episodes ended through the rollout context since the last call: (returns, lengths).
  py::tuple RolloutEpisodes();

  // Agents per env (ABI version 6; 1: a single-agent env), and the rows of every batch array
  // but reset masks and seeds: num_envs * num_agents.
  int64_t num_agents() const { return pool_ ? pool_->num_agents() : 1; }
  int64_t Rows() const { return pool_ ? pool_->num_envs() * pool_->num_agents() : 0; }
  // Threads stepping the batch (the caller counts as one); 0 after close.
  int num_threads() const { return pool_ ? pool_->num_threads() : 0; }
  // How many of them the thread tuner has stepping envs now; 0 after close.
  int active_threads() const { return pool_ ? pool_->active_threads() : 0; }

  // The spec of this pool's envs (spaces for the params they were made with), as SpecDict.
  py::dict Spec() const;

 private:
  void CheckOpen() const {
    if (!pool_) throw ClosedError();
  }
  // Raises IndexError unless 0 <= env < num_envs.
  void CheckEnvIndex(int64_t env) const;
  // Raises NotImplementedError: "<env id> <cannot>: " and why: the table predates ABI version
  // `since` (its version named), else the env class lacks `member` (env.h's contract).
  [[noreturn]] void RaiseMissing(const std::string& cannot, uint32_t since,
                                 const std::string& member) const;
  // Send's arguments, checked: the ids as int64 and the actions as the pool reads them.
  struct CheckedSend {
    Int64Array ids;
    py::array actions;
  };
  CheckedSend CheckSend(py::handle actions, py::handle env_ids);
  // Recv into a free result slot, after Send(*send) when `send` is not null (one GIL release).
  py::tuple RecvInto(const CheckedSend* send);

  EnvType type_;
  pid_t owner_pid_;  // the process whose threads run the pool
  std::unique_ptr<VectorPool> pool_;
  ActionChecker actions_;
  ResultSlots step_slots_;            // num_envs * num_agents rows: reset/step results
  ResultSlots recv_slots_;            // batch_size * num_agents rows: recv results
  py::object last_obs_ = py::none();  // the obs array last handed out (partial resets copy it)
  std::atomic<bool> busy_{false};
  std::atomic<bool> closing_{false};  // set by Close(): every later call is refused
  std::unique_ptr<RolloutContext> rollout_;
  py::object rollout_storage_ = py::none();  // keeps the rollout context's arrays alive
  // The expected dtypes and shapes of step_into's arrays.
  py::dtype obs_dtype_, reward_dtype_, flag_dtype_;
  std::vector<py::ssize_t> obs_shape_, batch_shape_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_BINDINGS_PY_VECTOR_POOL_H_
