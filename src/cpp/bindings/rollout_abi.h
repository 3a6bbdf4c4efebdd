// The rollout path of the TensorFlow op (src/cpp/tf_op/rollout_op.cc): one batch
// step written straight into slot t of preallocated rollout storage, with no Python involved.
// The op calls FastbatchRolloutStep / FastbatchRolloutError through plain function pointers
// (`_core._rollout_step_address`, `_core._rollout_error_address`) with an opaque context
// (`_VectorPool.rollout_context(...)`), so the op library links against neither _core nor Python.
//
// Ownership: the storage arrays are owned by the Python caller, which `_VectorPool` keeps alive
// while the context is in use; the context is owned by its `_VectorPool` and dies when the pool
// closes or makes a new context. Threading: one call at a time per context, from any thread,
// without the GIL (nothing here touches Python); the caller must not call the same
// `_VectorPool` meanwhile (the op runs inside the trainer's own step, never beside it).
#ifndef FASTBATCH_BINDINGS_ROLLOUT_ABI_H_
#define FASTBATCH_BINDINGS_ROLLOUT_ABI_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/vector_pool.h"

#if defined(_WIN32)
#define FASTBATCH_ROLLOUT_EXPORT __declspec(dllexport)
#else
#define FASTBATCH_ROLLOUT_EXPORT __attribute__((visibility("default")))
#endif

namespace fastbatch {

struct RolloutContext {
  VectorPool* pool = nullptr;
  uint8_t* obs = nullptr;               // [T + 1, N, *obs_shape] of the observation dtype
  float* reward = nullptr;              // [T, N]
  uint8_t* terminated = nullptr;        // [T, N]
  uint8_t* truncated = nullptr;         // [T, N]
  uint8_t* final_obs = nullptr;         // [T, N, *obs_shape] (rows written in SAME_STEP mode only)
  int64_t steps = 0;                    // T
  int32_t obs_dtype = 0;                // fb_dtype code
  std::vector<double> episode_returns;  // episodes ended since the last read
  std::vector<int64_t> episode_lengths;
  std::string error;  // the last failure's message
};

}  // namespace fastbatch

extern "C" {

// Steps the pool with `actions` ([N] int64 for Discrete, [N, *act_shape] of the action dtype)
// into slot t of the storage (observations into row t + 1), copies the new observations as they
// are stored (the observation dtype: float32, float64, uint8, int32 or int64; no conversion) to
// `next_obs` ([N, *obs_shape], N * obs_row_bytes bytes; null: no copy) and writes
// `terminated | truncated` of the step to `done` ([N]: the envs whose row t + 1 starts a new
// episode). Returns 0, or -1 with the message in the context's `error` (the env's index first
// when one env failed).
int32_t FastbatchRolloutStep(void* context, int64_t t, const void* actions, void* next_obs,
                             bool* done);

// The message of the context's last failure; valid until its next step.
const char* FastbatchRolloutError(void* context);

// For bench/ppo_collect.py (the env's own stepping that the op's cost is measured against):
// the seconds of `steps` calls of FastbatchRolloutStep(context, k % T, actions, nullptr, done),
// k = 0, 1, ..., in a C++ loop, the same `actions` every step; -1 on failure (the message as
// above). It writes the storage slot after slot and records the episodes that end, as the op
// would, but copies no next_obs. Exported from _core (a ctypes caller finds it by name); the
// threading rules above apply.
FASTBATCH_ROLLOUT_EXPORT double FastbatchRolloutLoopSeconds(void* context, int64_t steps,
                                                            const void* actions);

}  // extern "C"

#endif  // FASTBATCH_BINDINGS_ROLLOUT_ABI_H_
