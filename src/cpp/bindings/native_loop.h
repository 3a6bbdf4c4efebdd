// The "no Python" reference of bench/throughput.py and bench/plugin_overhead.py
// (`_core._native_loop_seconds`): the same env code and pool bookkeeping as `_VectorPool.step`,
// driven by a C++ loop on one thread.
//
// Threading: plain C++ (no Python object), so it is bound to run with the GIL released; the
// table must stay loaded for the call. Ownership: every buffer is its own and freed on return.
#ifndef FASTBATCH_BINDINGS_NATIVE_LOOP_H_
#define FASTBATCH_BINDINGS_NATIVE_LOOP_H_

#include <cstdint>
#include <vector>

#include "fastbatch/abi.h"

namespace fastbatch {

// Steps a pool of `num_envs` envs on `num_threads` threads (the env's time limit for its params,
// NEXT_STEP autoreset, env i seeded with seed + i) `steps` times with actions cycling through a
// pre-drawn table, into 64-byte-aligned buffers. Returns the seconds the steps took (reset not
// counted). `box_actions` (Box actions only; may be empty): the table to cycle, float32
// [tables, num_envs, *action_shape], instead of one drawn here. `batch_size` below num_envs:
// async mode, each of the `steps` a Recv of batch_size envs and a Send of them back. `params`:
// the env's param values in spec order, checked by the caller (empty: the defaults);
// `frame_stack`: observations the pool stacks per env (1: none).
double NativeLoopSeconds(const fb_env_api* api, int64_t num_envs, int64_t steps, uint64_t seed,
                         int num_threads = 1, const std::vector<float>& box_actions = {},
                         int64_t batch_size = 0, const std::vector<double>& params = {},
                         int64_t frame_stack = 1);

}  // namespace fastbatch

#endif  // FASTBATCH_BINDINGS_NATIVE_LOOP_H_
