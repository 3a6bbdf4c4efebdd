// fastbatch's MuJoCo envs, one plugin library on the public env contract (fastbatch/env.h):
// gymnasium 1.x's v5 locomotion and control envs in C++. Built with the wheel against the
// mujoco-core version it pins (CMakeLists.txt), or on first use against the installed one when the
// user opts in (`fastbatch.mujoco`); loaded and registered by `fastbatch.mujoco.register`, which
// first hands it gymnasium's asset directory.
#include "ant.h"
#include "classic.h"
#include "frames.h"
#include "humanoid.h"
#include "planar.h"

// Reports the mujoco version these envs were compiled against (mjVERSION_HEADER), so that the
// loader can name both versions when the library and the installed mujoco disagree.
extern "C" FASTBATCH_EXPORT_SYMBOL int fastbatch_mujoco_header_version(void) {
  return mjVERSION_HEADER;
}

// Sets the directory of gymnasium's MuJoCo XML files. `fastbatch.mujoco.register` calls it once,
// under its lock and before any env exists, so no env thread reads it meanwhile.
extern "C" FASTBATCH_EXPORT_SYMBOL void fastbatch_mujoco_set_assets(const char* dir) {
  fastbatch::mujoco::AssetsDir() = dir;
}

// Removes MuJoCo's process-wide profiling clock (mjcb_time, called around every stage of
// mj_step to fill MjData.timer). `fastbatch.mujoco.drop_default_timer` calls this only when the
// clock is the one the mujoco Python package installs on import, never a user's own. Physics
// does not read it; an atomic store, because other threads' mj_step may read it meanwhile.
extern "C" FASTBATCH_EXPORT_SYMBOL void fastbatch_mujoco_clear_timer(void) {
  __atomic_store_n(&mjcb_time, nullptr, __ATOMIC_RELAXED);
}

// Each drawn as gymnasium's renderer draws it, and observable from pixels (frames.h).
namespace fastbatch::mujoco {
using HalfCheetahFrames = WithFrames<HalfCheetah>;
using HopperFrames = WithFrames<Hopper>;
using Walker2dFrames = WithFrames<Walker2d>;
using AntFrames = WithFrames<Ant>;
using HumanoidFrames = WithFrames<Humanoid>;
using HumanoidStandupFrames = WithFrames<HumanoidStandup>;
using SwimmerFrames = WithFrames<Swimmer>;
using ReacherFrames = WithFrames<Reacher>;
using PusherFrames = WithFrames<Pusher>;
using InvertedPendulumFrames = WithFrames<InvertedPendulum>;
using InvertedDoublePendulumFrames = WithFrames<InvertedDoublePendulum>;
}  // namespace fastbatch::mujoco

FASTBATCH_EXPORT_ENVS(fastbatch::mujoco::HalfCheetahFrames, fastbatch::mujoco::HopperFrames,
                      fastbatch::mujoco::Walker2dFrames, fastbatch::mujoco::AntFrames,
                      fastbatch::mujoco::HumanoidFrames, fastbatch::mujoco::HumanoidStandupFrames,
                      fastbatch::mujoco::SwimmerFrames, fastbatch::mujoco::ReacherFrames,
                      fastbatch::mujoco::PusherFrames, fastbatch::mujoco::InvertedPendulumFrames,
                      fastbatch::mujoco::InvertedDoublePendulumFrames)
