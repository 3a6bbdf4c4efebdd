// The "no Python" reference of bench/throughput.py and bench/plugin_overhead.py
// (`_core._native_loop_seconds`): the same env code and pool bookkeeping as `_VectorPool.step`,
// driven by a C++ loop on one thread.
//
// Threading: plain C++ (no Python object), so it is bound to run with the GIL released; the
// table must stay loaded for the call. Ownership: every buffer is its own and freed on return.
#ifndef FASTBATCH_BINDINGS_NATIVE_LOOP_H_
#define FASTBATCH_BINDINGS_NATIVE_LOOP_H_

#include <cstdint>

#include "fastbatch/abi.h"

namespace fastbatch {

// Steps a single-threaded pool of `num_envs` envs (default params, the spec's time limit, NEXT_STEP
// autoreset, env i seeded with seed + i) `steps` times with actions cycling through a pre-drawn
// table, into 64-byte-aligned buffers. Returns the seconds the steps took (reset not counted).
double NativeLoopSeconds(const fb_env_api* api, int64_t num_envs, int64_t steps, uint64_t seed);

}  // namespace fastbatch

#endif  // FASTBATCH_BINDINGS_NATIVE_LOOP_H_
