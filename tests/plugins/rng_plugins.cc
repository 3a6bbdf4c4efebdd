// Envs that show tests/test_seeding.py what a pool's per-env random states hold, one library:
//
// RngDraws-v0 (ABI version 5, the current headers): each reset and each step draws
// integers(7), random() and integers(-3, 2**33), in that order, from the env's Rng (a copy kept
// for stepping) and observes them as float64. integers(7) takes a 32-bit half and leaves the
// other in the state's buffer, which the next reset or step takes: so the buffer must live in
// the pool's state, not in the Rng.
//
// StateWordsV4-v0: a table of ABI version 4 (the current adapter's, its abi_version and
// struct_size cut back) whose reset and step observe the 32 bytes of each env's fb_rng, read in
// version 4's layout, as uint8: the pool must hand it 32-byte states seeded with numpy's PCG64.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fastbatch/env.h"

class RngDraws {
 public:
  using ObsType = double;
  using ActionType = int64_t;
  static fastbatch::Spec MakeSpec() {
    return fastbatch::Spec("RngDraws-v0")
        .Observation(fastbatch::Box({3}, -1e12, 1e12))
        .Action(fastbatch::Discrete(1));
  }
  explicit RngDraws(const fastbatch::Params&) {}
  void Reset(fastbatch::Rng& rng, double* obs) {
    rng_ = rng;
    Draw(obs);
  }
  fastbatch::StepResult Step(int64_t, double* obs) {
    Draw(obs);
    return {0.0, false};
  }

 private:
  void Draw(double* obs) {
    obs[0] = static_cast<double>(rng_.Integers(7));
    obs[1] = rng_.Uniform();
    obs[2] = static_cast<double>(rng_.Integers(-3, int64_t{1} << 33));
  }
  fastbatch::Rng rng_;
};

class StateWords {
 public:
  using ObsType = uint8_t;
  using ActionType = int64_t;
  static fastbatch::Spec MakeSpec() {
    return fastbatch::Spec("StateWordsV4-v0")
        .Observation(fastbatch::Box({32}, 0.0, 255.0))
        .Action(fastbatch::Discrete(1));
  }
  explicit StateWords(const fastbatch::Params&) {}
  void Reset(fastbatch::Rng&, uint8_t*) {}
  fastbatch::StepResult Step(int64_t, uint8_t*) { return {0.0, false}; }
};

namespace {

// Observes envs [begin, end)'s states as version 4 lays them out: 32 bytes each.
void ObserveStates(int64_t begin, int64_t end, const fb_batch* batch) {
  const auto* states = reinterpret_cast<const unsigned char*>(batch->rngs);
  for (int64_t i = begin; i < end; ++i) {
    std::memcpy(static_cast<uint8_t*>(batch->obs) + 32 * i, states + 32 * i, 32);
    if (batch->reward != nullptr) batch->reward[i] = 0.0f;
    if (batch->terminated != nullptr) batch->terminated[i] = 0;
  }
}

const fb_env_api* Version4() {
  static const fb_env_api api = [] {
    fb_env_api table = *fastbatch::EnvApi<StateWords>();
    table.abi_version = 4;
    table.struct_size = offsetof(fb_env_api, set_state);
    table.reset = [](void*, int64_t begin, int64_t end, const fb_batch* batch, fb_error*) {
      ObserveStates(begin, end, batch);
      return int32_t{0};
    };
    table.step = table.reset;
    return table;
  }();
  return &api;
}

}  // namespace

extern "C" FASTBATCH_EXPORT_SYMBOL const fb_env_api* const* fastbatch_get_env_apis(int32_t* count) {
  static const fb_env_api* const apis[] = {fastbatch::EnvApi<RngDraws>(), Version4()};
  *count = 2;
  return apis;
}
