// Envs for tests/native/test_render.py: envs that draw themselves (ABI version 7, `Render`), and
// mistakes picked with -DMISTAKE=<n>: 1 a Render without a frame in the spec, 2 a frame in the
// spec without a Render, 3 a frame of 0 x 5 pixels.
#include <cstdint>
#include <stdexcept>

#include "fastbatch/env.h"

// Painter-v0: a counter drawn as a height x width frame (params; 4 x 6 by default) whose pixel
// (r, c) is (count + r, count + c, env seed draw) as bytes. Action 1 adds one to the count;
// action 2 makes the next Render throw. The observation is the count.
class Painter {
 public:
  using ObsType = float;
  using ActionType = int64_t;

  static fastbatch::ParamList DeclareParams() {
    return fastbatch::ParamList().Int("height", 4, 0, 64).Int("width", 6, 1, 64);
  }
  static fastbatch::Spec MakeSpec(const fastbatch::Params& p) {
    auto spec = fastbatch::Spec("Painter-v0")
                    .Observation(fastbatch::Box({1}, 0.0, 1e9))
                    .Action(fastbatch::Discrete(3));
#if MISTAKE == 3
    spec.Render(0, 5, 10.0);
#elif MISTAKE != 1
    spec.Render(static_cast<int32_t>(p.Int("height")), static_cast<int32_t>(p.Int("width")), 12.5);
#endif
    return spec;
  }
  explicit Painter(const fastbatch::Params& p) : height_(p.Int("height")), width_(p.Int("width")) {}
  void Reset(fastbatch::Rng& rng, float* obs) {
    count_ = 0;
    fail_ = false;
    mark_ = static_cast<uint8_t>(rng.Integers(256));
    obs[0] = 0.0f;
  }
  fastbatch::StepResult Step(int64_t action, float* obs) {
    if (action == 1) ++count_;
    fail_ = action == 2;
    obs[0] = static_cast<float>(count_);
    return {0.0, false};
  }
#if MISTAKE != 2
  void Render(uint8_t* rgb) const {
    if (fail_) throw std::runtime_error("the painter was asked to fail");
    for (int64_t r = 0; r < height_; ++r) {
      for (int64_t c = 0; c < width_; ++c) {
        uint8_t* px = rgb + (r * width_ + c) * 3;
        px[0] = static_cast<uint8_t>(count_ + r);
        px[1] = static_cast<uint8_t>(count_ + c);
        px[2] = mark_;
      }
    }
  }
#endif

 private:
  int64_t height_, width_;
  int64_t count_ = 0;
  bool fail_ = false;
  uint8_t mark_ = 0;
};

FASTBATCH_EXPORT_ENVS(Painter)
