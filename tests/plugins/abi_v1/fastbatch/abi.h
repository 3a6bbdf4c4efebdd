/* fastbatch native env ABI, version 1.
 *
 * The C-level contract between the fastbatch pool and an env implementation. Built-in envs and
 * out-of-tree plugins both reach the pool through one `fb_env_api` table, so a plugin is exactly
 * as fast as a built-in: the pool makes one indirect call per contiguous range of envs, and the
 * per-env work is inlined inside the implementation.
 *
 * Authors do not write this table by hand: `fastbatch/env.h` builds it from a C++ env class.
 *
 * Threading: `create`/`destroy` are called by one thread at a time. `reset`/`step` may be called
 * concurrently from several threads on disjoint ranges of the same block, never on overlapping
 * ranges. No function may call back into Python.
 *
 * Ownership: every pointer argument is owned by the caller and valid only for the call. The spec
 * returned by `spec` is owned by the implementation and lives as long as the library is loaded.
 */
#ifndef FASTBATCH_ABI_H_
#define FASTBATCH_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FASTBATCH_ABI_VERSION 1u
#define FASTBATCH_MAX_NDIM 4
#define FASTBATCH_ERROR_LEN 512

/* Element types of observation and action arrays. */
typedef enum fb_dtype {
  FB_FLOAT32 = 0,
  FB_FLOAT64 = 1,
  FB_INT32 = 2,
  FB_INT64 = 3,
  FB_UINT8 = 4
} fb_dtype;

/* A gymnasium space: Box(low, high, shape, dtype) or Discrete(n) (then dtype is FB_INT64 and the
 * shape is empty). `low`/`high` hold prod(shape) values each, row-major; +-inf for unbounded. */
typedef struct fb_space {
  int32_t is_discrete;
  int32_t dtype;
  int32_t ndim;
  int64_t shape[FASTBATCH_MAX_NDIM];
  int64_t n;
  const double* low;
  const double* high;
} fb_space;

/* A constructor keyword argument with its default; values travel as doubles. */
typedef struct fb_param {
  const char* name;
  double default_value;
} fb_param;

typedef struct fb_spec {
  const char* id;
  fb_space observation;
  fb_space action;
  int64_t max_episode_steps; /* 0: no time limit */
  int32_t has_reward_threshold;
  double reward_threshold;
  int32_t num_params;
  const fb_param* params;
} fb_spec;

/* Per-env random state (xoshiro256**), owned and seeded by the pool from (seed, env index). */
typedef struct fb_rng {
  uint64_t s[4];
} fb_rng;

/* Filled by a failing call: the env index and the original message. */
typedef struct fb_error {
  int64_t env_index;
  char message[FASTBATCH_ERROR_LEN];
} fb_error;

/* Batch arrays of one call. Row i of each array belongs to env i (block-global index). */
typedef struct fb_batch {
  void* obs;                 /* [num_envs, *obs_shape] of the observation dtype */
  float* reward;             /* [num_envs] */
  uint8_t* terminated;       /* [num_envs], 0 or 1 */
  const void* actions;       /* [num_envs, *action_shape]: int64 for Discrete, else action dtype */
  const uint8_t* reset_mask; /* [num_envs] or NULL: in `step`, envs with a nonzero entry are reset
                                instead of stepped (reward 0, terminated 0); in `reset`, only envs
                                with a nonzero entry are reset (NULL: all in the range) */
  fb_rng* rngs;              /* [num_envs] */
} fb_batch;

typedef struct fb_env_api {
  uint32_t abi_version; /* FASTBATCH_ABI_VERSION the table was built with */
  uint32_t struct_size; /* sizeof(fb_env_api) the table was built with */
  const fb_spec* (*spec)(void);
  /* Creates `count` envs; `params` holds spec.num_params values in spec order. NULL on failure. */
  void* (*create)(int64_t count, const double* params, fb_error* error);
  void (*destroy)(void* block);
  /* Reset / step envs [begin, end). Return 0 on success; otherwise nonzero with `error` filled
   * (the envs before the failing one have been processed). */
  int32_t (*reset)(void* block, int64_t begin, int64_t end, const fb_batch* batch, fb_error* error);
  int32_t (*step)(void* block, int64_t begin, int64_t end, const fb_batch* batch, fb_error* error);
  /* Optional (may be NULL): copies env `index`'s full internal state as doubles into `out` (at
   * most `capacity` values) and returns the state's size. For tests and debugging only; must not
   * be called while that env is being stepped. */
  int64_t (*get_state)(void* block, int64_t index, double* out, int64_t capacity);
} fb_env_api;

/* The symbol a plugin library exports: returns its table (never NULL). */
typedef const fb_env_api* (*fb_get_env_api_fn)(void);
#define FASTBATCH_ENTRY_SYMBOL "fastbatch_get_env_api"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FASTBATCH_ABI_H_ */
