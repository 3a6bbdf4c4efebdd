/* fastbatch native env ABI, version 7.
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
 * ranges. `get_state`/`set_state` are called by one thread, for an env that is not being reset or
 * stepped. No function may call back into Python, and none may let a C++ exception escape.
 *
 * Ownership: every pointer argument is owned by the caller and valid only for the call. The spec
 * returned by `spec` is owned by the implementation and lives as long as the library is loaded;
 * the spec returned by `block_spec` is owned by the block and lives until `destroy`.
 *
 * Versions. Version 2 only appends to version 1's structs (`fb_spec.param_info`,
 * `fb_batch.truncated`, `fb_env_api.block_spec` and `spec_error`), so a version-1 table is a
 * prefix of a version-2 one. fastbatch still loads plugins built against version 1 and reads none
 * of the appended fields from them: their params are floats without bounds, their spaces do not
 * depend on params, and they never report truncation. A reader checks `abi_version` (and
 * `struct_size`) before touching an appended field.
 *
 * Version 3 appends the info channel: `fb_spec.num_infos/info_names/info_sizes` declare named
 * float64 values an env reports with every reset and step (gymnasium's numeric `info` entries,
 * e.g. MuJoCo's `x_velocity`), and `fb_batch.info` is the [num_envs, info row] array it writes
 * them to. A version-3 table is only ever called by a pool that fills `fb_batch.info` (older
 * pools refuse a table newer than themselves), and a pool reads the info fields of a spec only
 * from a table of version 3 or later.
 *
 * Version 4 changes no layout, only what `fb_rng` holds: numpy's PCG64 state, seeded as numpy's
 * SeedSequence does, so that an env draws gymnasium's random numbers for the same seed (see
 * fastbatch/rng.h). Tables of versions 1 to 3 were built with a header whose Rng runs
 * xoshiro256** over the same 32 bytes; the pool keeps seeding theirs as it did then, so an
 * older plugin keeps its streams bit for bit.
 *
 * Version 5 appends to `fb_rng` PCG64's buffered 32-bit half (`has_uint32`, `uinteger`, as
 * numpy's bit generator keeps them): numpy's bounded integer draws from at most 2^32 values take
 * the low half of a 64-bit output and keep the high half for the next such draw, across any
 * other draws in between. `fb_rng` grows from 32 to 40 bytes, so the pool hands each table a
 * `fb_batch.rngs` array of the layout it was built with: 40-byte states to tables of version 5
 * or later, the 32-byte `{s[4]}` of versions 1 to 4 to older ones (whose headers draw no 32-bit
 * halves); older pools refuse a version-5 table. Version 5 also appends the optional
 * `fb_env_api.set_state`, the inverse of `get_state`; a pool reads it only from a table of version
 * 5 or later whose `struct_size` covers it.
 *
 * Version 6 appends `fb_spec.num_agents`: a multi-agent env (num_agents > 1) holds that many
 * agents, and every per-env array of `fb_batch` but `reset_mask` and `rngs` gets one row per
 * agent: row `env * num_agents + agent` of obs, reward, terminated, truncated and actions is
 * that agent's (the spec's spaces are one agent's). An agent that terminated or truncated is
 * gone until its env resets (the env no longer steps it; the pool zeroes its rows and ignores
 * its actions); the env's episode ends when every agent is gone. Infos stay one row per env.
 * A pool reads `num_agents` only from a table of version 6 or later: older tables hold one
 * agent, so their plugins load unchanged.
 *
 * Version 7 appends rendering: `fb_spec.render_height/render_width/render_fps` declare the RGB
 * frame an env draws (0 x 0: none) and `fb_env_api.render` draws env `index` into it. A table
 * has `render` exactly when its specs declare a frame. A pool reads the frame fields only from
 * specs of a table of version 7 or later, and `render` only from such a table whose
 * `struct_size` covers it: older plugins load unchanged and draw nothing themselves.
 */
#ifndef FASTBATCH_ABI_H_
#define FASTBATCH_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FASTBATCH_ABI_VERSION 7u
#define FASTBATCH_ABI_MIN_VERSION 1u /* the oldest version this fastbatch still loads */
#define FASTBATCH_MAX_NDIM 4
#define FASTBATCH_ERROR_LEN 512
#define FASTBATCH_MAX_AGENTS 65536     /* the most agents one env may hold (version 6) */
#define FASTBATCH_MAX_FRAME_SIDE 16384 /* the longest side of a rendered frame (version 7) */

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

/* A constructor keyword argument with its default. Values of every kind travel as doubles:
 * FLOAT as is, INT as an integral double, BOOL as 0 or 1, CHOICE as the index of the string. */
typedef struct fb_param {
  const char* name;
  double default_value;
} fb_param;

/* The kind of a param (version 2). */
typedef enum fb_param_kind {
  FB_PARAM_FLOAT = 0,
  FB_PARAM_INT = 1,
  FB_PARAM_BOOL = 2,
  FB_PARAM_CHOICE = 3
} fb_param_kind;

/* What a param accepts (version 2), parallel to `fb_spec.params`. fastbatch checks every value
 * against it before any env is created. */
typedef struct fb_param_info {
  int32_t kind;               /* fb_param_kind */
  double low, high;           /* FLOAT/INT: the accepted range, inclusive; +-inf: unbounded */
  int32_t num_choices;        /* CHOICE: the number of accepted strings */
  const char* const* choices; /* CHOICE: `num_choices` strings; the value is an index */
} fb_param_info;

typedef struct fb_spec {
  const char* id;
  fb_space observation;
  fb_space action;
  int64_t max_episode_steps; /* 0: no time limit */
  int32_t has_reward_threshold;
  double reward_threshold;
  int32_t num_params;
  const fb_param* params;
  /* Version 2: `num_params` entries describing each param, or NULL (all FLOAT, unbounded). */
  const fb_param_info* param_info;
  /* Version 3: the info channel. `num_infos` named entries; entry k holds `info_sizes[k]` float64
   * values (1: a scalar, gymnasium's info[name][i]; more: a vector, info[name][i, :]). An env's
   * info row is the entries' values one after another, `sum(info_sizes)` doubles. A value of NaN
   * means "absent" (e.g. an entry that a reset does not report). */
  int32_t num_infos;
  const char* const* info_names;
  const int32_t* info_sizes;
  /* Version 6: agents per env (0 or 1: a single-agent env). The spaces are one agent's; see
   * "Versions" for the rows of a multi-agent env's batch arrays. */
  int32_t num_agents;
  /* Version 7: the frame `render` draws, render_height x render_width x 3 uint8 (RGB, row-major;
   * 0 x 0: the env draws nothing), meant to be shown at render_fps frames a second (0: unknown). */
  int32_t render_height;
  int32_t render_width;
  double render_fps;
} fb_spec;

/* Per-env random state, owned and seeded by the pool (env i of `reset(seed=s)` gets seed s + i).
 * Version 4: numpy's PCG64, s = {state low, state high, increment low, increment high}; versions
 * 1-3: xoshiro256** (see "Versions"). Version 5 appends PCG64's 32-bit buffer: `has_uint32` is 1
 * while `uinteger` holds the unused high half of the last 64-bit output a 32-bit draw split;
 * seeding clears both. Tables of versions 1-4 get states of `s` alone (32 bytes each). */
typedef struct fb_rng {
  uint64_t s[4];
  uint32_t has_uint32; /* version 5 */
  uint32_t uinteger;   /* version 5 */
} fb_rng;

/* Filled by a failing call: the env index and the original message. `create` sets the index to
 * FB_ERROR_INVALID_ARGUMENT when the envs refused their params (the constructor or the spec
 * threw std::invalid_argument: Python raises ValueError), else -1; tables built with headers
 * before that constant always set -1 (Python raises EnvError), so nothing changes for them. */
#define FB_ERROR_INVALID_ARGUMENT (-2)
typedef struct fb_error {
  int64_t env_index;
  char message[FASTBATCH_ERROR_LEN];
} fb_error;

/* Batch arrays of one call. Row i of each array belongs to env i (block-global index); for a
 * multi-agent env (version 6), rows env * num_agents + k of obs, reward, terminated, truncated
 * and actions belong to its agent k, and reset_mask, rngs and info stay one row per env. In
 * `step`, the env writes obs, reward, terminated and (version 2) truncated of every env of the
 * range, stepped or reset. */
typedef struct fb_batch {
  void* obs;                 /* [num_envs, *obs_shape] of the observation dtype */
  float* reward;             /* [num_envs] */
  uint8_t* terminated;       /* [num_envs], 0 or 1 */
  const void* actions;       /* [num_envs, *action_shape]: int64 for Discrete, else action dtype */
  const uint8_t* reset_mask; /* [num_envs] or NULL: in `step`, envs with a nonzero entry are reset
                                instead of stepped (reward 0, terminated 0); in `reset`, only envs
                                with a nonzero entry are reset (NULL: all in the range) */
  fb_rng* rngs;              /* [num_envs], in the layout of the table's version (see fb_rng) */
  uint8_t* truncated;        /* [num_envs], 0 or 1 (version 2): the env ended its episode itself
                                without terminating; the pool adds its own time limit */
  double* info;              /* [num_envs, info row] (version 3; NULL when the spec declares no
                                infos): `reset` and `step` write the row of every env they reset
                                or step (see fb_spec.num_infos) */
} fb_batch;

typedef struct fb_env_api {
  uint32_t abi_version; /* FASTBATCH_ABI_VERSION the table was built with */
  uint32_t struct_size; /* sizeof(fb_env_api) the table was built with */
  /* The spec for the default params, or NULL when it could not be built (see spec_error). */
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
  /* Version 2, optional (NULL: the spec does not depend on params): the spec for the params
   * `block` was created with (spaces, time limit); the same id and params as `spec()`. */
  const fb_spec* (*block_spec)(void* block);
  /* Version 2, optional: when `spec()` returned NULL, why (the message of the exception that
   * building the spec raised). */
  const char* (*spec_error)(void);
  /* Version 5, optional (NULL: the env's state cannot be set): replaces env `index`'s full
   * internal state with the `size` doubles at `in`, laid out as `get_state` writes them. Returns
   * 0 on success; otherwise nonzero with `error` filled (e.g. `size` is not the state's size).
   * For tests and debugging only; must not be called while that env is being stepped. */
  int32_t (*set_state)(void* block, int64_t index, const double* in, int64_t size, fb_error* error);
  /* Version 7, optional (NULL: the env draws nothing; then no spec declares a frame): draws env
   * `index` as it is now into `rgb`, the `render_height * render_width * 3` bytes its block's spec
   * declares. Returns 0 on success; otherwise nonzero with `error` filled. Called by one thread,
   * for an env that is not being reset or stepped. */
  int32_t (*render)(void* block, int64_t index, uint8_t* rgb, fb_error* error);
} fb_env_api;

/* The symbols a plugin library exports. `fastbatch_get_env_apis` (version 2) returns the tables
 * of every env in the library and sets their count; `fastbatch_get_env_api` returns one table
 * (the only symbol of version-1 libraries). Neither returns NULL. */
typedef const fb_env_api* (*fb_get_env_api_fn)(void);
typedef const fb_env_api* const* (*fb_get_env_apis_fn)(int32_t* count);
#define FASTBATCH_ENTRY_SYMBOL "fastbatch_get_env_api"
#define FASTBATCH_ENTRIES_SYMBOL "fastbatch_get_env_apis"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FASTBATCH_ABI_H_ */
