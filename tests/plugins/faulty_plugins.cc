// Deliberately broken native env plugins for tests/test_plugin.py. Each build picks one defect
// with -DFAULT=<n>; the test checks that fastbatch reports it as a clear Python error.
// 0 no entry symbol, 1 ABI 999, 2 bad dtype, 3 empty shape, 4 step throws on action 1,
// 5 missing step, 6 valid (constructor throws on request), 7 a table too short for get_state,
// 8 render without a frame, 9 a frame without render, 10 a frame of 0 x 5 pixels, 11 a version-6
// table holding render and frame values it cannot have (they must be ignored).
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "fastbatch/env.h"

// A valid env to start from; with FAULT_THROWS it fails on demand.
class Faulty {
 public:
  using ObsType = float;
  using ActionType = int64_t;
  static fastbatch::Spec MakeSpec() {
    return fastbatch::Spec("Faulty-v0")
        .Observation(fastbatch::Box<float>({3}, -1.0, 1.0))
        .Action(fastbatch::Discrete(2))
        .MaxEpisodeSteps(50)
        .Param("fail_in_constructor", 0.0);
  }
  explicit Faulty(const fastbatch::Params& p) {
    if (p.Get("fail_in_constructor") != 0.0) throw std::runtime_error("constructor refused");
  }
  void Reset(fastbatch::Rng&, float* obs) {
    steps_ = 0;
    obs[0] = obs[1] = obs[2] = 0.0f;
  }
  static constexpr int64_t kStateSize = 1;
  void GetState(double* out) const { out[0] = steps_; }

  fastbatch::StepResult Step(int64_t action, float* obs) {
    ++steps_;
    if (FAULT == 4 && action == 1) throw std::runtime_error("step refused action 1");
    obs[0] = static_cast<float>(steps_) / 50.0f;
    obs[1] = obs[2] = 0.0f;
    return {1.0, false};
  }

 private:
  int steps_ = 0;
};

namespace {
int32_t PaintNothing(void*, int64_t, uint8_t*, fb_error*) { return 0; }

const fb_env_api* Broken() {
  static fb_env_api api = *fastbatch::EnvApi<Faulty>();
  static fb_spec spec = *api.spec();
  if (FAULT == 1) api.abi_version = 999;
  if (FAULT == 2) spec.observation.dtype = 99;
  if (FAULT == 3) spec.observation.ndim = 0;
  if (FAULT == 5) api.step = nullptr;
  if (FAULT == 7) api.struct_size = offsetof(fb_env_api, get_state);  // an older, shorter table
  if (FAULT == 8 || FAULT == 11) api.render = &PaintNothing;
  if (FAULT == 9 || FAULT == 11) spec.render_height = spec.render_width = 4;
  if (FAULT == 10) spec.render_width = 5;
  if (FAULT == 11) api.abi_version = 6;
  api.spec = [] { return static_cast<const fb_spec*>(&spec); };
  return &api;
}
}  // namespace

#if FAULT == 0
// No entry symbol at all: exports something else.
extern "C" FASTBATCH_EXPORT_SYMBOL int not_a_fastbatch_plugin(void) { return 0; }
#else
extern "C" FASTBATCH_EXPORT_SYMBOL const fb_env_api* fastbatch_get_env_api(void) {
  return Broken();
}
#endif
