// The adapter from an env class (see env.h) to the C ABI table (abi.h), and the export macros
// (public, header-only; included by env.h).
//
// What it guarantees: no C++ exception crosses the ABI (every entry point catches and reports
// through fb_error or spec_error); the table has get_state only for an env with GetState,
// set_state only for one with SetState (a state of the wrong size is refused), and render only
// for one with Render, whose spec then declares a frame (env_calls.h); the spec's
// element types are the env's C++ types (a Box declared without a type takes them; one declared
// with a type must match, or the spec is refused with a message; adapter_spec.h); Discrete
// actions reach the env as its ActionType whatever integer type that is.
//
// The adapter and its tables have internal linkage on purpose. They live in function-local
// statics, which GCC otherwise emits as process-wide unique symbols (STB_GNU_UNIQUE): two
// plugins that each define an env class of the same name would then share one table, and one
// plugin's calls would run the other's code, whatever RTLD_LOCAL says.
#ifndef FASTBATCH_ADAPTER_H_
#define FASTBATCH_ADAPTER_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "fastbatch/abi.h"
#include "fastbatch/adapter_spec.h"
#include "fastbatch/env_calls.h"
#include "fastbatch/env_traits.h"
#include "fastbatch/rng.h"
#include "fastbatch/spec.h"

namespace fastbatch {

namespace {
namespace detail {

// The info row of env i, or (when the pool asks for none) a scratch row of this thread.
inline double* InfoRow(const fb_batch* batch, int64_t i, int64_t row) {
  if (batch->info != nullptr) return batch->info + i * row;
  thread_local std::vector<double> scratch;
  if (static_cast<int64_t>(scratch.size()) < row) scratch.resize(static_cast<size_t>(row));
  return scratch.data();
}

// Adapts an env class E to the C ABI (its spec: adapter_spec.h). One instance of the static
// state per E.
template <typename E>
struct Adapter : EnvSpecs<E> {
  using Specs = EnvSpecs<E>;
  using Specs::Build;
  using Specs::Declared;
  using Specs::GetSpec;
  using Specs::kDiscrete;
  using Specs::kSpecFromParams;
  using Specs::kStepsAgents;
  using Specs::kWritesInfo;
  using Specs::SpecError;
  using typename Specs::Act;
  using typename Specs::Obs;

  struct Block {
    std::unique_ptr<Spec> spec;  // this block's spec (specs built from params)
    const fb_spec* view = nullptr;
    std::vector<E> envs;
    int64_t obs_size = 1;       // elements of one (agent's) observation
    int64_t obs_row_bytes = 0;  // bytes of one (agent's) observation
    int64_t act_size = 1;
    int64_t info_row = 0;  // doubles of one env's info row (ABI version 3)
    int64_t agents = 1;    // rows of one env in obs, actions, reward and flags (version 6)
  };

  static void* Create(int64_t count, const double* values, fb_error* error) {
    try {
      const ParamList& list = Declared();
      Params params(&list, values);
      auto block = std::make_unique<Block>();
      if constexpr (kSpecFromParams) {
        block->spec = std::make_unique<Spec>(Build(params));
        block->view = block->spec->View();
      } else {
        if (GetSpec() == nullptr) throw std::invalid_argument(SpecError());
        block->view = GetSpec();
      }
      for (int32_t d = 0; d < block->view->observation.ndim; ++d) {
        block->obs_size *= block->view->observation.shape[d];
      }
      block->obs_row_bytes = block->obs_size * DTypeSize(block->view->observation.dtype);
      for (int32_t d = 0; d < block->view->action.ndim; ++d) {
        block->act_size *= block->view->action.shape[d];
      }
      for (int32_t k = 0; k < block->view->num_infos; ++k) {
        block->info_row += block->view->info_sizes[k];
      }
      block->agents = block->view->num_agents > 1 ? block->view->num_agents : 1;
      block->envs.reserve(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) block->envs.emplace_back(params);
      return block.release();
    } catch (const std::invalid_argument& e) {  // the env refused its params: a ValueError
      FillError(error, FB_ERROR_INVALID_ARGUMENT, e.what());
    } catch (const std::exception& e) {
      FillError(error, -1, e.what());
    } catch (...) {
      FillError(error, -1, "unknown C++ exception while creating envs");
    }
    return nullptr;
  }

  static void Destroy(void* block) { delete static_cast<Block*>(block); }

  // Observation row `row` of the batch (env i's first row is i * agents).
  static Obs* ObsRow(const fb_batch* batch, const Block& block, int64_t row) {
    return static_cast<Obs*>(
        static_cast<void*>(static_cast<char*>(batch->obs) + row * block.obs_row_bytes));
  }

  static const fb_spec* BlockSpec(void* block) { return static_cast<Block*>(block)->view; }

  static int32_t Reset(void* raw, int64_t begin, int64_t end, const fb_batch* batch,
                       fb_error* error) {
    auto* block = static_cast<Block*>(raw);
    int64_t i = begin;
    try {
      for (; i < end; ++i) {
        if (batch->reset_mask != nullptr && batch->reset_mask[i] == 0) continue;
        Rng rng(&batch->rngs[i]);
        E& env = block->envs[static_cast<size_t>(i)];
        Obs* row = ObsRow(batch, *block, i * block->agents);
        if constexpr (kWritesInfo) {
          env.Reset(rng, row, InfoRow(batch, i, block->info_row));
        } else {
          env.Reset(rng, row);
        }
      }
      return 0;
    } catch (const std::exception& e) {
      FillError(error, i, e.what());
    } catch (...) {
      FillError(error, i, "unknown C++ exception in Reset");
    }
    return 1;
  }

  static int32_t Step(void* raw, int64_t begin, int64_t end, const fb_batch* batch,
                      fb_error* error) {
    if constexpr (kStepsAgents) {
      return StepAgents(raw, begin, end, batch, error);
    } else {
      return StepOne(raw, begin, end, batch, error);
    }
  }

  static int32_t StepOne(void* raw, int64_t begin, int64_t end, const fb_batch* batch,
                         fb_error* error) {
    auto* block = static_cast<Block*>(raw);
    int64_t i = begin;
    try {
      for (; i < end; ++i) {
        E& env = block->envs[static_cast<size_t>(i)];
        Obs* row = ObsRow(batch, *block, i);
        StepResult r{0.0, false, false};
        if (batch->reset_mask != nullptr && batch->reset_mask[i] != 0) {
          Rng rng(&batch->rngs[i]);
          if constexpr (kWritesInfo) {
            env.Reset(rng, row, InfoRow(batch, i, block->info_row));
          } else {
            env.Reset(rng, row);
          }
        } else if constexpr (kDiscrete) {
          // Discrete actions travel as int64 whatever the env's integer ActionType.
          const auto* actions = static_cast<const int64_t*>(batch->actions);
          if constexpr (kWritesInfo) {
            r = env.Step(static_cast<Act>(actions[i]), row, InfoRow(batch, i, block->info_row));
          } else {
            r = env.Step(static_cast<Act>(actions[i]), row);
          }
        } else {
          const auto* actions = static_cast<const Act*>(batch->actions) + i * block->act_size;
          if constexpr (kWritesInfo) {
            r = env.Step(actions, row, InfoRow(batch, i, block->info_row));
          } else {
            r = env.Step(actions, row);
          }
        }
        batch->reward[i] = static_cast<float>(r.reward);
        batch->terminated[i] = r.terminated ? 1 : 0;
        if (batch->truncated != nullptr) batch->truncated[i] = r.truncated ? 1 : 0;
      }
      return 0;
    } catch (const std::exception& e) {
      FillError(error, i, e.what());
    } catch (...) {
      FillError(error, i, "unknown C++ exception in Step");
    }
    return 1;
  }

  // Step of a multi-agent env: env i's rows are [i * agents, (i + 1) * agents) of obs, actions,
  // reward and flags. A reset env's rows get reward 0 and no flags.
  static int32_t StepAgents(void* raw, int64_t begin, int64_t end, const fb_batch* batch,
                            fb_error* error) {
    auto* block = static_cast<Block*>(raw);
    const int64_t agents = block->agents;
    const auto count = static_cast<size_t>(agents);
    thread_local std::vector<uint8_t> scratch_truncated;
    thread_local std::vector<Act> discrete_actions;
    int64_t i = begin;
    try {
      for (; i < end; ++i) {
        E& env = block->envs[static_cast<size_t>(i)];
        const int64_t first = i * agents;
        Obs* row = ObsRow(batch, *block, first);
        uint8_t* truncated = batch->truncated;
        if (truncated == nullptr) {  // a pool of ABI version 1 reads no truncation
          scratch_truncated.resize(count);
          truncated = scratch_truncated.data() - first;
        }
        const AgentResults out{batch->reward + first, batch->terminated + first, truncated + first};
        std::fill(out.reward, out.reward + count, 0.0f);
        std::memset(out.terminated, 0, count);
        std::memset(out.truncated, 0, count);
        if (batch->reset_mask != nullptr && batch->reset_mask[i] != 0) {
          Rng rng(&batch->rngs[i]);
          env.Reset(rng, row);
        } else if constexpr (kDiscrete) {
          // Discrete actions travel as int64 whatever the env's integer ActionType.
          const auto* actions = static_cast<const int64_t*>(batch->actions) + first;
          if constexpr (std::is_same_v<Act, int64_t>) {
            env.Step(actions, row, out);
          } else {
            discrete_actions.resize(count);
            for (size_t k = 0; k < count; ++k) discrete_actions[k] = static_cast<Act>(actions[k]);
            env.Step(discrete_actions.data(), row, out);
          }
        } else {
          const auto* actions = static_cast<const Act*>(batch->actions) + first * block->act_size;
          env.Step(actions, row, out);
        }
      }
      return 0;
    } catch (const std::exception& e) {
      FillError(error, i, e.what());
    } catch (...) {
      FillError(error, i, "unknown C++ exception in Step");
    }
    return 1;
  }

  static const fb_env_api* Api() {
    using Calls = EnvCalls<E, Block>;
    static const fb_env_api api = {FASTBATCH_ABI_VERSION,
                                   sizeof(fb_env_api),
                                   &GetSpec,
                                   &Create,
                                   &Destroy,
                                   &Reset,
                                   &Step,
                                   HasState<E>::value ? &Calls::GetState : nullptr,
                                   kSpecFromParams ? &BlockSpec : nullptr,
                                   &SpecError,
                                   HasSetState<E>::value ? &Calls::SetState : nullptr,
                                   HasRender<E>::value ? &Calls::Render : nullptr};
    return &api;
  }
};

}  // namespace detail

// The ABI table for env class E (used for built-ins and by the export macros).
template <typename E>
const fb_env_api* EnvApi() {
  return detail::Adapter<E>::Api();
}

// The tables of several env classes, for FASTBATCH_EXPORT_ENVS.
template <typename... E>
const fb_env_api* const* EnvApis(int32_t* count) {
  static const fb_env_api* const apis[] = {EnvApi<E>()...};
  *count = static_cast<int32_t>(sizeof...(E));
  return apis;
}

}  // namespace
}  // namespace fastbatch

#if defined(_WIN32)
#define FASTBATCH_EXPORT_SYMBOL __declspec(dllexport)
#else
#define FASTBATCH_EXPORT_SYMBOL __attribute__((visibility("default")))
#endif

// Exports the env classes of a plugin library (in one .cc file): register_native_env registers
// every one of them, or the one it names. The first is also the library's single-env entry.
#define FASTBATCH_EXPORT_ENVS(...)                                                    \
  extern "C" FASTBATCH_EXPORT_SYMBOL const fb_env_api* const* fastbatch_get_env_apis( \
      int32_t* count) {                                                               \
    return ::fastbatch::EnvApis<__VA_ARGS__>(count);                                  \
  }                                                                                   \
  extern "C" FASTBATCH_EXPORT_SYMBOL const fb_env_api* fastbatch_get_env_api(void) {  \
    int32_t count = 0;                                                                \
    return ::fastbatch::EnvApis<__VA_ARGS__>(&count)[0];                              \
  }

// Exports one env class (version 1's macro; the same as FASTBATCH_EXPORT_ENVS(EnvClass)).
#define FASTBATCH_EXPORT_ENV(EnvClass) FASTBATCH_EXPORT_ENVS(EnvClass)

#endif  // FASTBATCH_ADAPTER_H_
