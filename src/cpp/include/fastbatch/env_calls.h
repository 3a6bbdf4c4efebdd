// The table's optional calls on one env at a time (public, header-only; included by adapter.h):
// get_state, set_state (ABI version 5) and render (version 7), and the error filler every entry
// point of the adapter shares. Each is called by one thread for an env that is neither reset nor
// stepped (abi.h), so none needs a lock. Internal linkage on purpose, as in adapter.h.
#ifndef FASTBATCH_ENV_CALLS_H_
#define FASTBATCH_ENV_CALLS_H_

#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "fastbatch/abi.h"
#include "fastbatch/env_traits.h"

namespace fastbatch {
namespace {
namespace detail {

inline void FillError(fb_error* error, int64_t index, const char* message) {
  if (error == nullptr) return;
  error->env_index = index;
  std::strncpy(error->message, message, FASTBATCH_ERROR_LEN - 1);
  error->message[FASTBATCH_ERROR_LEN - 1] = '\0';
}

// The calls for env class E, whose adapter keeps its envs in `Block::envs`.
template <typename E, typename Block>
struct EnvCalls {
  static E& Env(void* raw, int64_t index) {
    return static_cast<Block*>(raw)->envs[static_cast<size_t>(index)];
  }

  static int64_t GetState(void* raw, int64_t index, double* out, int64_t capacity) {
    if constexpr (HasState<E>::value) {
      double state[E::kStateSize];
      Env(raw, index).GetState(state);
      for (int64_t k = 0; k < E::kStateSize && k < capacity; ++k) out[k] = state[k];
      return E::kStateSize;
    } else {
      (void)raw, (void)index, (void)out, (void)capacity;
      return 0;
    }
  }

  // Refuses a state of another size than kStateSize; an exception from the env's SetState is
  // reported through `error` like one from Step.
  static int32_t SetState(void* raw, int64_t index, const double* in, int64_t size,
                          fb_error* error) {
    if constexpr (HasSetState<E>::value) {
      try {
        if (size != E::kStateSize) {
          throw std::invalid_argument("the state has " + std::to_string(E::kStateSize) +
                                      " values, got " + std::to_string(size));
        }
        Env(raw, index).SetState(in);
        return 0;
      } catch (const std::exception& e) {
        FillError(error, index, e.what());
      } catch (...) {
        FillError(error, index, "unknown C++ exception in SetState");
      }
    } else {
      (void)raw, (void)in, (void)size;
      FillError(error, index, "this env has no SetState");
    }
    return 1;
  }

  // Draws env `index` into `rgb` (its block spec's render_height * render_width * 3 bytes).
  static int32_t Render(void* raw, int64_t index, uint8_t* rgb, fb_error* error) {
    if constexpr (HasRender<E>::value) {
      try {
        Env(raw, index).Render(rgb);
        return 0;
      } catch (const std::exception& e) {
        FillError(error, index, e.what());
      } catch (...) {
        FillError(error, index, "unknown C++ exception in Render");
      }
    } else {
      (void)raw, (void)rgb;
      FillError(error, index, "this env has no Render");
    }
    return 1;
  }
};

}  // namespace detail
}  // namespace
}  // namespace fastbatch

#endif  // FASTBATCH_ENV_CALLS_H_
