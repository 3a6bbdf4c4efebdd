// fastbatch's dm_control envs, one plugin library on the public env contract (fastbatch/env.h):
// tasks of dm_control's suite in C++ (suite_env.h has the rules every task follows). Built with
// the wheel against the mujoco-core version it pins, as the MuJoCo envs are (CMakeLists.txt);
// loaded and registered by `fastbatch.dm_control.register`, which first hands it the installed
// dm_control's suite directory.
#include <cstring>
#include <string>

#include "ball_in_cup_reacher.h"
#include "cartpole.h"
#include "cheetah.h"
#include "finger.h"
#include "fish.h"
#include "hopper.h"
#include "humanoid.h"
#include "manipulator.h"
#include "pendulum_acrobot.h"
#include "point_mass.h"
#include "quadruped.h"
#include "swimmer.h"
#include "walker.h"

namespace fastbatch::dm_control {

// The observation keys of task `id` (dm_control's order) as "name:size;name:size", or "" for
// an id of no task here.
template <class... Tasks>
std::string KeysOf(const char* id) {
  std::string out;
  auto one = [&](auto* task) {
    using Task = std::remove_pointer_t<decltype(task)>;
    if (!out.empty() || std::strcmp(id, Task::kId) != 0) return;
    for (const ObsKey& key : Task::ObsKeys(LoadModels(Task::kFile).first.get())) {
      out += std::string(key.name) + ":" + std::to_string(key.size) + ";";
    }
  };
  (one(static_cast<Tasks*>(nullptr)), ...);
  return out;
}

}  // namespace fastbatch::dm_control

// Every task, once: the exported envs and the key lookup both come from this list.
#define FASTBATCH_DM_CONTROL_TASKS(X)                                                              \
  X(AcrobotSwingup<false>), X(AcrobotSwingup<true>), X(BallInCupCatch), X(Cartpole<false, false>), \
      X(Cartpole<false, true>), X(Cartpole<true, false>), X(Cartpole<true, true>),                 \
      X(Cartpole<true, false, 2>), X(Cartpole<true, false, 3>), X(CheetahRun), X(Finger<0>),       \
      X(Finger<70>), X(Finger<30>), X(Fish<false>), X(Fish<true>), X(Hopper<false>),               \
      X(Hopper<true>), X(Humanoid<0, false>), X(Humanoid<1, false>), X(Humanoid<10, false>),       \
      X(Humanoid<10, true>), X(Manipulator<false, false>), X(Manipulator<true, false>),            \
      X(Manipulator<false, true>), X(Manipulator<true, true>), X(PendulumSwingup),                 \
      X(PointMass<false>), X(PointMass<true>), X(QuadrupedMove<false>), X(QuadrupedMove<true>),    \
      X(Reacher<false>), X(Reacher<true>), X(Swimmer<6>), X(Swimmer<15>), X(PlanarWalker<0>),      \
      X(PlanarWalker<1>), X(PlanarWalker<8>)

#define FASTBATCH_DM_CONTROL_ENV(...) \
  fastbatch::dm_control::SuiteEnv<fastbatch::dm_control::__VA_ARGS__>
#define FASTBATCH_DM_CONTROL_TASK(...) fastbatch::dm_control::__VA_ARGS__

// Hands over a model dm_control generates (its XML text) under `name`, a task's kFile; called
// by `fastbatch.dm_control.register` before any env exists.
extern "C" FASTBATCH_EXPORT_SYMBOL void fastbatch_dm_control_set_model(const char* name,
                                                                       const char* xml) {
  fastbatch::dm_control::GeneratedModels()[name] = xml;
}

extern "C" FASTBATCH_EXPORT_SYMBOL int fastbatch_dm_control_header_version(void) {
  return mjVERSION_HEADER;
}

// Sets the directory of dm_control's suite XML files; called once, before any env exists.
extern "C" FASTBATCH_EXPORT_SYMBOL void fastbatch_dm_control_set_assets(const char* dir) {
  fastbatch::dm_control::SuiteDir() = dir;
}

// Writes task `id`'s observation keys ("name:size;...", dm_control's order, NUL-terminated) to
// `out`; returns their length, 0 for an unknown id, -1 when `capacity` is too small or the model
// fails to load.
extern "C" FASTBATCH_EXPORT_SYMBOL int fastbatch_dm_control_obs_keys(const char* id, char* out,
                                                                     int capacity) {
  try {
    const std::string keys =
        fastbatch::dm_control::KeysOf<FASTBATCH_DM_CONTROL_TASKS(FASTBATCH_DM_CONTROL_TASK)>(id);
    if (static_cast<int>(keys.size()) >= capacity) return -1;
    std::memcpy(out, keys.c_str(), keys.size() + 1);
    return static_cast<int>(keys.size());
  } catch (...) {
    return -1;
  }
}

FASTBATCH_EXPORT_ENVS(FASTBATCH_DM_CONTROL_TASKS(FASTBATCH_DM_CONTROL_ENV))
