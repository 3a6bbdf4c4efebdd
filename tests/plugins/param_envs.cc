// Envs for tests/test_registration.py: a plugin author's env whose spaces and time limit depend
// on its params (as the README's GridChase-v0 does), and registration mistakes picked with
// -DMISTAKE=<n>: 1 two envs with one id, 2 a param default outside its range, 3 a choice
// default that is not one of its choices.
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "fastbatch/env.h"

// Grid-v0: a uint8 (3, size, size) image; an episode lasts 4 * size * size steps at most.
// size 13 makes MakeSpec throw, size 11 the constructor.
class Grid {
 public:
  using ObsType = uint8_t;
  using ActionType = int64_t;

  static fastbatch::ParamList DeclareParams() {
#if MISTAKE == 2
    return fastbatch::ParamList().Int("size", 40, 2, 16);
#elif MISTAKE == 3
    return fastbatch::ParamList().Int("size", 8, 2, 16).Choice("look", {"rgb", "gray"}, "blue");
#else
    return fastbatch::ParamList().Int("size", 8, 2, 16);
#endif
  }
  static fastbatch::Spec MakeSpec(const fastbatch::Params& p) {
    const int64_t n = p.Int("size");
    if (n == 13) throw std::invalid_argument("size 13 is not a grid this env draws");
    return fastbatch::Spec("Grid-v0")
        .Observation(fastbatch::Box({3, n, n}, 0.0, 255.0))
        .Action(fastbatch::Discrete(4))
        .MaxEpisodeSteps(4 * n * n);
  }
  explicit Grid(const fastbatch::Params& p) : n_(p.Int("size")) {
    if (n_ == 11) throw std::runtime_error("size 11 cannot be built");
  }
  void Reset(fastbatch::Rng&, uint8_t* obs) { std::fill(obs, obs + 3 * n_ * n_, uint8_t{0}); }
  fastbatch::StepResult Step(int64_t action, uint8_t* obs) {
    obs[0] = static_cast<uint8_t>(action);
    return {1.0, false};
  }

 private:
  int64_t n_;
};

#if MISTAKE == 1
// A second env that says it is Grid-v0 too.
class AlsoGrid : public Grid {
 public:
  using Grid::Grid;
};
FASTBATCH_EXPORT_ENVS(Grid, AlsoGrid)
#else
FASTBATCH_EXPORT_ENVS(Grid)
#endif
