// fastbatch 0.1 public headers (ABI version 1), kept verbatim: tests/test_plugin.py builds a
// plugin against them to prove that fastbatch still loads plugins built for version 1.
// fastbatch native env contract (header-only, public).
//
// An env is a small C++ class:
//
//   class MyEnv {
//    public:
//     using ObsType = float;        // element type of the observation (float, double, int32_t,
//                                   // int64_t or uint8_t)
//     using ActionType = int64_t;   // int64_t for Discrete(n); float or double for a Box
//     static fastbatch::Spec MakeSpec();                  // spaces, time limit, params
//     explicit MyEnv(const fastbatch::Params& params);     // constructor keyword arguments
//     void Reset(fastbatch::Rng& rng, ObsType* obs);       // write the first observation
//     fastbatch::StepResult Step(ActionType action, ObsType* obs);        // Discrete
//     fastbatch::StepResult Step(const ActionType* action, ObsType* obs); // Box
//     // Optional, for tests and debugging: the full internal state as doubles.
//     static constexpr int64_t kStateSize = 4;
//     void GetState(double* out) const;
//   };
//
// Rules: `Reset`/`Step` write the observation straight into `obs` (the env's row of the batch
// buffer), never allocate, never touch Python and own no threads. Each env object is used by one
// thread at a time. Time limits (truncation) are applied by the pool from
// `Spec::MaxEpisodeSteps`, as gymnasium's TimeLimit does; an env only reports termination.
// Randomness comes from the `Rng` handed to `Reset`, which the pool seeds from
// (seed, env index); an env that needs randomness while stepping keeps a copy made in `Reset`.
// Exceptions thrown by `Reset`/`Step`/the constructor are caught at the ABI boundary and
// re-raised in Python naming the env index.
//
// `FASTBATCH_EXPORT_ENV(MyEnv)` in one .cc file of a shared library exports the env as a plugin.
#ifndef FASTBATCH_ENV_H_
#define FASTBATCH_ENV_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "fastbatch/abi.h"

namespace fastbatch {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Per-env random generator: xoshiro256** over the pool-owned fb_rng state.
class Rng {
 public:
  explicit Rng(fb_rng* state) : s_(state->s) {}

  // Seeds `state` from (seed, stream) with splitmix64, so nearby seeds give unrelated streams.
  static void Seed(fb_rng* state, uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ull);
    for (uint64_t& word : state->s) word = SplitMix64(&x);
  }

  uint64_t NextU64() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  // Uniform in [low, high), computed as numpy's Generator.uniform does.
  double Uniform(double low, double high) { return low + (high - low) * Uniform(); }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t SplitMix64(uint64_t* x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t* s_;
};

struct StepResult {
  double reward;
  bool terminated;
};

template <typename T>
constexpr fb_dtype DTypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return FB_FLOAT32;
  else if constexpr (std::is_same_v<T, double>)
    return FB_FLOAT64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return FB_INT32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return FB_INT64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return FB_UINT8;
  else
    static_assert(sizeof(T) == 0, "unsupported element type");
}

// A space as the author declares it. Use Box<T>(...) or Discrete(n).
struct Space {
  bool is_discrete = false;
  fb_dtype dtype = FB_FLOAT32;
  std::vector<int64_t> shape;
  int64_t n = 0;
  std::vector<double> low, high;
};

// Box with per-element bounds (row-major, prod(shape) values each).
template <typename T>
Space Box(std::vector<int64_t> shape, std::vector<double> low, std::vector<double> high) {
  Space s;
  s.dtype = DTypeOf<T>();
  s.shape = std::move(shape);
  s.low = std::move(low);
  s.high = std::move(high);
  return s;
}

// Box with the same bounds for every element.
template <typename T>
Space Box(std::vector<int64_t> shape, double low, double high) {
  int64_t size = 1;
  for (int64_t d : shape) size *= d;
  const auto count = static_cast<size_t>(size < 0 ? 0 : size);
  return Box<T>(std::move(shape), std::vector<double>(count, low),
                std::vector<double>(count, high));
}

inline Space Discrete(int64_t n) {
  Space s;
  s.is_discrete = true;
  s.dtype = FB_INT64;
  s.n = n;
  return s;
}

// An env's static description. Built once per env type; `View()` points into this object.
class Spec {
 public:
  explicit Spec(std::string id) : id_(std::move(id)) {}
  Spec& Observation(Space s) {
    observation_ = std::move(s);
    return *this;
  }
  Spec& Action(Space s) {
    action_ = std::move(s);
    return *this;
  }
  Spec& MaxEpisodeSteps(int64_t steps) {
    max_episode_steps_ = steps;
    return *this;
  }
  Spec& RewardThreshold(double threshold) {
    has_reward_threshold_ = true;
    reward_threshold_ = threshold;
    return *this;
  }
  // Declares a constructor keyword argument `name` with its default value.
  Spec& Param(std::string name, double default_value) {
    param_names_.push_back(std::move(name));
    param_defaults_.push_back(default_value);
    return *this;
  }

  const std::vector<std::string>& param_names() const { return param_names_; }

  // The C view; valid while this Spec lives and is not modified.
  const fb_spec* View() {
    params_.clear();
    for (size_t i = 0; i < param_names_.size(); ++i) {
      params_.push_back(fb_param{param_names_[i].c_str(), param_defaults_[i]});
    }
    view_.id = id_.c_str();
    view_.observation = SpaceView(observation_);
    view_.action = SpaceView(action_);
    view_.max_episode_steps = max_episode_steps_;
    view_.has_reward_threshold = has_reward_threshold_ ? 1 : 0;
    view_.reward_threshold = reward_threshold_;
    view_.num_params = static_cast<int32_t>(params_.size());
    view_.params = params_.data();
    return &view_;
  }

 private:
  static fb_space SpaceView(const Space& s) {
    fb_space v{};
    v.is_discrete = s.is_discrete ? 1 : 0;
    v.dtype = s.dtype;
    // An over-long shape is reported by the loader as ndim > FASTBATCH_MAX_NDIM.
    v.ndim = static_cast<int32_t>(s.shape.size());
    for (size_t i = 0; i < s.shape.size() && i < FASTBATCH_MAX_NDIM; ++i) v.shape[i] = s.shape[i];
    v.n = s.n;
    v.low = s.low.data();
    v.high = s.high.data();
    return v;
  }

  std::string id_;
  Space observation_, action_;
  int64_t max_episode_steps_ = 0;
  bool has_reward_threshold_ = false;
  double reward_threshold_ = 0.0;
  std::vector<std::string> param_names_;
  std::vector<double> param_defaults_;
  std::vector<fb_param> params_;
  fb_spec view_{};
};

// Constructor keyword arguments, resolved against the spec's declared params.
class Params {
 public:
  Params(const std::vector<std::string>* names, const double* values)
      : names_(names), values_(values) {}
  double Get(const char* name) const {
    for (size_t i = 0; i < names_->size(); ++i) {
      if ((*names_)[i] == name) return values_[i];
    }
    throw std::invalid_argument(std::string("env reads undeclared param '") + name + "'");
  }

 private:
  const std::vector<std::string>* names_;
  const double* values_;
};

// The adapter and its tables have internal linkage on purpose. They live in function-local
// statics, which GCC otherwise emits as process-wide unique symbols (STB_GNU_UNIQUE): two
// plugins that each define an env class of the same name would then share one table, and one
// plugin's calls would run the other's code, whatever RTLD_LOCAL says.
namespace {
namespace detail {

inline void FillError(fb_error* error, int64_t index, const char* message) {
  if (error == nullptr) return;
  error->env_index = index;
  std::strncpy(error->message, message, FASTBATCH_ERROR_LEN - 1);
  error->message[FASTBATCH_ERROR_LEN - 1] = '\0';
}

inline int64_t ElementCount(const Space& s) {
  int64_t size = 1;
  for (int64_t d : s.shape) size *= d;
  return size;
}

// Adapts an env class E to the C ABI. One instance of the static state per E.
template <typename E>
struct Adapter {
  using Obs = typename E::ObsType;
  using Act = typename E::ActionType;
  static constexpr bool kDiscrete = std::is_integral_v<Act>;

  static Spec& SpecObject() {
    static Spec spec = E::MakeSpec();
    return spec;
  }
  static const fb_spec* GetSpec() {
    static const fb_spec* view = SpecObject().View();
    return view;
  }

  struct Block {
    std::vector<E> envs;
    int64_t obs_size;
    int64_t act_size;
  };

  static void* Create(int64_t count, const double* params, fb_error* error) {
    try {
      Spec& spec = SpecObject();
      GetSpec();
      Params p(&spec.param_names(), params);
      auto* block = new Block{{}, 1, 1};
      try {
        block->envs.reserve(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) block->envs.emplace_back(p);
      } catch (...) {
        delete block;
        throw;
      }
      const fb_spec* view = GetSpec();
      for (int32_t d = 0; d < view->observation.ndim; ++d)
        block->obs_size *= view->observation.shape[d];
      for (int32_t d = 0; d < view->action.ndim; ++d) block->act_size *= view->action.shape[d];
      return block;
    } catch (const std::exception& e) {
      FillError(error, -1, e.what());
    } catch (...) {
      FillError(error, -1, "unknown C++ exception while creating envs");
    }
    return nullptr;
  }

  static void Destroy(void* block) { delete static_cast<Block*>(block); }

  static int32_t Reset(void* raw, int64_t begin, int64_t end, const fb_batch* batch,
                       fb_error* error) {
    auto* block = static_cast<Block*>(raw);
    auto* obs = static_cast<Obs*>(batch->obs);
    int64_t i = begin;
    try {
      for (; i < end; ++i) {
        if (batch->reset_mask != nullptr && batch->reset_mask[i] == 0) continue;
        Rng rng(&batch->rngs[i]);
        block->envs[static_cast<size_t>(i)].Reset(rng, obs + i * block->obs_size);
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
    auto* block = static_cast<Block*>(raw);
    auto* obs = static_cast<Obs*>(batch->obs);
    const auto* actions = static_cast<const Act*>(batch->actions);
    int64_t i = begin;
    try {
      for (; i < end; ++i) {
        E& env = block->envs[static_cast<size_t>(i)];
        Obs* row = obs + i * block->obs_size;
        if (batch->reset_mask != nullptr && batch->reset_mask[i] != 0) {
          Rng rng(&batch->rngs[i]);
          env.Reset(rng, row);
          batch->reward[i] = 0.0f;
          batch->terminated[i] = 0;
          continue;
        }
        StepResult r;
        if constexpr (kDiscrete) {
          r = env.Step(actions[i], row);
        } else {
          r = env.Step(actions + i * block->act_size, row);
        }
        batch->reward[i] = static_cast<float>(r.reward);
        batch->terminated[i] = r.terminated ? 1 : 0;
      }
      return 0;
    } catch (const std::exception& e) {
      FillError(error, i, e.what());
    } catch (...) {
      FillError(error, i, "unknown C++ exception in Step");
    }
    return 1;
  }

  template <typename T, typename = void>
  struct HasState : std::false_type {};
  template <typename T>
  struct HasState<T, std::void_t<decltype(T::kStateSize)>> : std::true_type {};

  static int64_t GetState(void* raw, int64_t index, double* out, int64_t capacity) {
    if constexpr (HasState<E>::value) {
      const auto& env = static_cast<Block*>(raw)->envs[static_cast<size_t>(index)];
      double state[E::kStateSize];
      env.GetState(state);
      for (int64_t k = 0; k < E::kStateSize && k < capacity; ++k) out[k] = state[k];
      return E::kStateSize;
    } else {
      return 0;
    }
  }

  static const fb_env_api* Api() {
    static const fb_env_api api = {FASTBATCH_ABI_VERSION,
                                   sizeof(fb_env_api),
                                   &GetSpec,
                                   &Create,
                                   &Destroy,
                                   &Reset,
                                   &Step,
                                   HasState<E>::value ? &GetState : nullptr};
    return &api;
  }
};

}  // namespace detail

// The ABI table for env class E (used for built-ins and by FASTBATCH_EXPORT_ENV).
template <typename E>
const fb_env_api* EnvApi() {
  return detail::Adapter<E>::Api();
}

}  // namespace
}  // namespace fastbatch

#if defined(_WIN32)
#define FASTBATCH_EXPORT_SYMBOL __declspec(dllexport)
#else
#define FASTBATCH_EXPORT_SYMBOL __attribute__((visibility("default")))
#endif

// Exports env class `EnvClass` from a plugin shared library under FASTBATCH_ENTRY_SYMBOL.
#define FASTBATCH_EXPORT_ENV(EnvClass)                                               \
  extern "C" FASTBATCH_EXPORT_SYMBOL const fb_env_api* fastbatch_get_env_api(void) { \
    return ::fastbatch::EnvApi<EnvClass>();                                          \
  }

#endif  // FASTBATCH_ENV_H_
