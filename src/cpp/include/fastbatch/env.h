// fastbatch native env contract, version 7 (header-only, public).
//
// An env is a small C++ class:
//
//   class MyEnv {
//    public:
//     using ObsType = float;      // observation element: float, double, int32_t, int64_t, uint8_t
//     using ActionType = int64_t; // any integer type for Discrete(n); float or double for a Box
//     static fastbatch::Spec MakeSpec();                // spaces, time limit, params
//     explicit MyEnv(const fastbatch::Params& params);  // constructor keyword arguments
//     void Reset(fastbatch::Rng& rng, ObsType* obs);     // write the first observation
//     fastbatch::StepResult Step(ActionType action, ObsType* obs);         // Discrete
//     fastbatch::StepResult Step(const ActionType* action, ObsType* obs);  // Box
//     // Optional, for tests and debugging: the full internal state as doubles,
//     static constexpr int64_t kStateSize = 4;
//     void GetState(double* out) const;
//     // and (version 5, optional, with the two above) setting it: reads kStateSize doubles
//     // laid out as GetState writes them. It may throw to refuse a state.
//     void SetState(const double* state);
//   };
//
// Spaces whose shape, bounds or time limit depend on params: declare the params on their own and
// take them in MakeSpec:
//
//     static fastbatch::ParamList DeclareParams() {
//       return fastbatch::ParamList().Int("size", 8, 2, 64).Choice("mode", {"easy", "hard"},
//       "easy");
//     }
//     static fastbatch::Spec MakeSpec(const fastbatch::Params& p);  // e.g. Box({3, p.Int("size"),
//     ...})
//
// Element types come from ObsType/ActionType: declare a Box as `Box(shape, low, high)` and it
// takes them (the version-1 spelling `Box<T>(...)` is checked against them). An env whose
// observation type depends on its params (uint8 frames, or float ones scaled to [0, 1]) declares
// `using ObsType = void;`, names the type in MakeSpec(params) with `Box<T>(...)` (a Box without
// one is refused), and writes that type through the `void* obs` of Reset and Step. Params are typed
// (`FloatParam`, `IntParam`, `BoolParam`, `ChoiceParam`, or version 1's `Param` for an unbounded
// float) with accepted ranges that fastbatch checks before any env is created; an env reads them
// with `Params::Float/Int/Bool/Choice` (or `Get`, any kind, as a double).
//
// Rules: `Reset`/`Step` write the observation straight into `obs` (the env's row of the batch
// buffer), never allocate, never touch Python and own no threads. Each env object is used by one
// thread at a time. `StepResult{reward, terminated, truncated}`: `truncated` (optional, default
// false) ends an episode by the env's own limit; the pool applies `Spec::MaxEpisodeSteps` on top,
// as gymnasium's TimeLimit does. Randomness comes from the `Rng` handed to `Reset`: numpy's
// generator (version 4; bounded integers as numpy draws them since version 5; see rng.h), which
// the pool seeds as gymnasium seeds its envs (seed + env index), so an env drawing what its
// gymnasium twin draws, in the same order, replays its seeded episodes. An env that needs
// randomness while stepping keeps a copy (a default-constructed Rng member is a placeholder until
// then). Exceptions thrown by `MakeSpec`/`Reset`/`Step`/the constructor are caught at the ABI
// boundary and re-raised in Python (naming the env index where there is one): as ValueError when
// the constructor or a params-dependent MakeSpec throws std::invalid_argument (the params are
// refused), as fastbatch.EnvError otherwise. GetState and SetState
// are called by one thread while the env is neither reset nor stepped; SetState replaces the env's
// physics only (the pool keeps counting the episode's steps and return as before).
//
// Infos (version 3): numeric per-step values that reach Python as gymnasium's vector infos
// (`info[name]`, an [N] or [N, size] float64 array, with its `_name` mask), without a Python
// object per env. Declare them in the spec, `.Info("x_velocity").Info("tendon_length", 2)`, and
// take the env's info row (the entries' values one after another) in Reset and Step:
//
//     void Reset(fastbatch::Rng& rng, ObsType* obs, double* info);
//     fastbatch::StepResult Step(const ActionType* action, ObsType* obs, double* info);
//
// Every Reset and Step writes the whole row; NaN marks an entry as absent (gymnasium's reset info
// usually has fewer keys than its step info): its mask is False and its value 0 in Python.
//
// Multi-agent envs (version 6): an env holding several agents with one pair of spaces (each
// agent's) declares their count in the spec, `.Agents(n)` (fixed, or from a param), and steps all
// of them in one call:
//
//     void Reset(fastbatch::Rng& rng, ObsType* obs);  // obs: n rows, agent 0's first
//     void Step(const ActionType* actions, ObsType* obs, const fastbatch::AgentResults& out);
//
// `actions[k]` is agent k's action (Discrete) or its row (a Box: act_size values from
// `actions + k * act_size`); `out.reward[k]`, `out.terminated[k]`, `out.truncated[k]` are its
// results, zero on entry. An agent that terminated or truncated has left until the env resets:
// the env no longer moves it, and the pool zeroes its rows and ignores its actions; the episode
// ends when every agent has left, and the pool's time limit truncates all still in. Python sees
// a batch of (env, agent) rows, env-major: `fastbatch.make_agents(id, num_envs)`. Multi-agent envs
// declare no infos (refused at compile time) and take no frame stacking (the pool refuses it).
//
// Rendering (version 7): an env that can draw itself declares its frame in the spec,
// `.Render(height, width, fps)` (an RGB image, fixed or from params), and writes it on demand:
//
//     void Render(uint8_t* rgb) const;  // height * width * 3 bytes, row-major RGB
//
// `fastbatch.make(id, n, render_mode="rgb_array")` then gives `render()` (one frame per env) and
// `fastbatch eval --video` records it. Render is called by one thread while the env is neither
// reset nor stepped, never in the hot path; declaring one without the other is refused.
//
// Exporting from a plugin shared library (in one .cc file): `FASTBATCH_EXPORT_ENV(MyEnv)`, or
// `FASTBATCH_EXPORT_ENVS(MyEnv, OtherEnv, ...)` for several envs in one library. Results are
// bit-exact across compilers only without floating-point contraction: `fastbatch_add_env` (the
// CMake package) compiles with -ffp-contract=off.
#ifndef FASTBATCH_ENV_H_
#define FASTBATCH_ENV_H_

#include "fastbatch/abi.h"
#include "fastbatch/adapter.h"
#include "fastbatch/rng.h"
#include "fastbatch/spec.h"

#endif  // FASTBATCH_ENV_H_
