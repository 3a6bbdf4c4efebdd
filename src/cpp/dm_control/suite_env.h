// SuiteEnv<Task>: one dm_control suite task as a fastbatch native env (fastbatch/env.h), driven
// as `control.Environment` drives it and seen as shimmy's `DmControlCompatibilityV0` shows it,
// flattened by gymnasium's FlattenObservation.
//
// A task class holds what its dm_control module holds (one header per domain):
//
//   struct Task {
//     static constexpr const char* kId = "dm_control/cheetah-run-v0";  // shimmy's id
//     static constexpr const char* kFile = "cheetah.xml";              // in dm_control/suite
//     static constexpr double kTimeLimit = 10;         // seconds (the suite's default)
//     static constexpr double kControlTimestep = 0;    // seconds; 0: one physics step per action
//     static constexpr bool kPrivateModel = false;     // true: the task edits its model
//     static std::vector<ObsKey> ObsKeys(const mjModel* m);  // get_observation's keys, in order
//     explicit Task(const Physics& physics);            // name lookups, once
//     void Initialize(Physics& physics, RandomState& random);  // initialize_episode
//     void Observe(const Physics& physics, double* obs) const; // get_observation, flattened
//     double Reward(const Physics& physics) const;
//     double Discount(const Physics& physics) const;    // get_termination; NaN for None
//   };
//
// Episode rules (control.Environment): reset runs `reset_context` around Initialize; a step sets
// the controls, steps the physics n_sub_steps times, and computes the reward; the step count
// reaching time_limit / (timestep * n_sub_steps) ends the episode as truncated (discount 1,
// whatever the task says), else a task discount of 0 ends it as terminated and any other
// discount as truncated (shimmy's split). A PhysicsError (a MuJoCo warning raised during a step)
// is an EnvError, as dm_control raises it.
//
// Observation: float64, the keys in gymnasium's Dict order (sorted by name), each flattened, as
// FlattenObservation gives over shimmy's Dict space; with flat_observation=True, dm_control's own
// order (shimmy then has one key, "observations"). With pixels=True, the frame instead: uint8
// (height, width, 3) from `camera`, drawn by the stepping thread (fastbatch/mujoco_render.h) after
// the step, as dm_control's pixels wrapper renders `physics.render(height, width, camera_id)`.
// The same frame is the env's Render (render_mode="rgb_array").
//
// action_repeat=k (DrQ-v2's ActionRepeatWrapper): one step applies the action for k control
// steps, or up to the episode's end, and returns their rewards summed, each times the product of
// the discounts before it; the observation and infos are the last control step's. The time limit
// still counts control steps (1000 control steps are 500 steps at k=2). Action: float64,
// dm_control's action_spec (the control range of limited actuators, +-mjMAXVAL otherwise).
//
// Infos: shimmy's `timestep.discount` (absent at a reset) and `timestep.step_type` (dm_env's
// FIRST 0, MID 1, LAST 2), as float64 numbers.
//
// Seeding (seed_recovery.h): a reset the pool seeded with s seeds the task's RandomState with s
// (`RandomState(s)`, what shimmy's `reset(seed=s)` does; a seed of more words seeds it with
// them, as `RandomState(words)`); an unseeded reset (the autoreset) keeps the stream going, as
// shimmy's `reset()` does.
#ifndef FASTBATCH_DM_CONTROL_SUITE_ENV_H_
#define FASTBATCH_DM_CONTROL_SUITE_ENV_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "fastbatch/env.h"
#include "fastbatch/mujoco_render.h"
#include "physics.h"
#include "random_state.h"
#include "rewards.h"
#include "seed_recovery.h"

namespace fastbatch::dm_control {

inline constexpr double kNoDiscount = std::numeric_limits<double>::quiet_NaN();

struct ObsKey {
  const char* name;
  int64_t size;
};

// Where each key of `keys` (dm_control's order) goes in gymnasium's sorted order:
// {source offset, size, destination offset} per key.
struct Move {
  int64_t from, size, to;
};
inline std::vector<Move> SortedMoves(const std::vector<ObsKey>& keys) {
  std::vector<int64_t> order(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::string(keys[a].name) < std::string(keys[b].name);
  });
  std::vector<int64_t> from(keys.size());
  int64_t offset = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    from[i] = offset;
    offset += keys[i].size;
  }
  std::vector<Move> moves;
  int64_t to = 0;
  for (int64_t k : order) {
    moves.push_back({from[k], keys[k].size, to});
    to += keys[k].size;
  }
  return moves;
}

inline int64_t ObsSize(const std::vector<ObsKey>& keys) {
  int64_t size = 0;
  for (const ObsKey& k : keys) size += k.size;
  return size;
}

// numpy's reductions over the few values a task reduces, as numpy computes them:
// `np.dot(a, b)` (OpenBLAS's ddot: fused multiply-adds into one sum from 0, in order, for short
// vectors; `v.dot(M)` the same per column), `np.linalg.norm(v)` (sqrt of that dot product) and
// `v.mean()` (numpy's pairwise sum: in order below 8 values, else 8 running sums combined
// pairwise, the remainder added in order; at most 128 values here), divided by n.
inline double Dot(const double* a, const double* b, int n) {
  double s = 0.0;
  for (int k = 0; k < n; ++k) s = std::fma(a[k], b[k], s);
  return s;
}
inline double Norm(const double* v, int n) { return std::sqrt(Dot(v, v, n)); }
inline double Sum(const double* v, int n) {
  if (n < 8) {
    double s = 0.0;
    for (int k = 0; k < n; ++k) s += v[k];
    return s;
  }
  if (n > 128) throw std::logic_error("Sum: numpy's pairwise blocks beyond 128 values");
  double r[8];
  for (int j = 0; j < 8; ++j) r[j] = v[j];
  int k = 8;
  for (; k < n - n % 8; k += 8) {
    for (int j = 0; j < 8; ++j) r[j] += v[k + j];
  }
  double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
  for (; k < n; ++k) s += v[k];
  return s;
}
inline double Mean(const double* v, int n) { return Sum(v, n) / n; }
// `v.dot(M)` for a 3-vector and a row-major 3x3 matrix.
inline void VecMat3(const double* v, const double* m, double* out) {
  for (int j = 0; j < 3; ++j) {
    out[j] = std::fma(v[2], m[6 + j], std::fma(v[1], m[3 + j], std::fma(v[0], m[j], 0.0)));
  }
}

// `randomizers.randomize_limited_and_rotational_joints`: every joint in id order; limited
// hinges and slides uniform in their range, unlimited hinges uniform in [-pi, pi], unlimited
// balls a normalised randn(4), free joints' quaternions a normalised rand(4) (their positions
// stay). Limited ball joints (random_limited_quaternion) are refused: no task here has one.
inline void RandomizeLimitedAndRotationalJoints(Physics& physics, RandomState& random) {
  const mjModel* m = physics.m();
  double* qpos = physics.d()->qpos;
  for (int j = 0; j < m->njnt; ++j) {
    const int type = m->jnt_type[j];
    double* q = qpos + m->jnt_qposadr[j];
    const double low = m->jnt_range[2 * j], high = m->jnt_range[2 * j + 1];
    if (m->jnt_limited[j]) {
      if (type == mjJNT_HINGE || type == mjJNT_SLIDE) {
        q[0] = random.Uniform(low, high);
      } else if (type == mjJNT_BALL) {
        throw std::runtime_error("limited ball joints are not supported");
      }
    } else if (type == mjJNT_HINGE) {
      q[0] = random.Uniform(-kPi, kPi);
    } else if (type == mjJNT_BALL || type == mjJNT_FREE) {
      double quat[4];
      for (double& v : quat)
        v = type == mjJNT_BALL ? random.StandardNormal() : random.RandomSample();
      const double norm = Norm(quat, 4);
      double* out = type == mjJNT_BALL ? q : q + 3;
      for (int k = 0; k < 4; ++k) out[k] = quat[k] / norm;
    }
  }
}

// The xmat entries dm_control names 'xx', 'xy', ... 'zz'.
enum Axis : int { kXX = 0, kXY, kXZ, kYX, kYY, kYZ, kZX, kZY, kZZ };

template <class Task>
class SuiteEnv {
 public:
  using ObsType = void;  // float64, or uint8 frames with pixels=True
  using ActionType = double;

  static ParamList DeclareParams() {
    return ParamList()
        .Float("time_limit", Task::kTimeLimit, 0.0)
        .Bool("flat_observation", false)
        .Bool("pixels", false)
        .Int("height", 240, 1, Spec::kMaxFrameSide)  // physics.render's defaults
        .Int("width", 320, 1, Spec::kMaxFrameSide)
        .Int("camera", -1, -1)
        .Choice("visuals", {"match", "fast"}, "match")
        .Int("action_repeat", 1, 1, 1000);
  }

  static Spec MakeSpec(const Params& p) {
    const mjModel* m = LoadModels(Task::kFile).first.get();
    std::vector<double> low(m->nu), high(m->nu);
    for (int k = 0; k < m->nu; ++k) {
      const bool limited = m->actuator_ctrllimited[k] != 0;
      low[k] = limited ? m->actuator_ctrlrange[2 * k] : -mjMAXVAL;
      high[k] = limited ? m->actuator_ctrlrange[2 * k + 1] : mjMAXVAL;
    }
    if (p.Int("camera") >= m->ncam) {
      throw std::invalid_argument(
          std::string(Task::kId) + ": camera " + std::to_string(p.Int("camera")) +
          " does not exist (the model has " + std::to_string(m->ncam) + "; -1 is the free camera)");
    }
    const int64_t height = p.Int("height"), width = p.Int("width");
    Spec spec(Task::kId);
    if (p.Bool("pixels")) {
      spec.Observation(Box<uint8_t>({height, width, 3}, 0, 255));
    } else {
      spec.Observation(Box<double>({ObsSize(Task::ObsKeys(m))}, -kInf, kInf));
    }
    spec.Action(Box<double>({m->nu}, low, high))
        .Info("timestep.discount")
        .Info("timestep.step_type")
        .Render(static_cast<int32_t>(height), static_cast<int32_t>(width),
                1.0 / (m->opt.timestep * SubSteps(m->opt.timestep) * p.Int("action_repeat")));
    return spec;
  }

  explicit SuiteEnv(const Params& p)
      : physics_(Task::kFile, Task::kPrivateModel),
        task_(physics_),
        keys_(Task::ObsKeys(physics_.m())),
        moves_(SortedMoves(keys_)),
        scratch_(static_cast<size_t>(ObsSize(keys_))),
        flat_(p.Bool("flat_observation")),
        in_order_(flat_ || std::all_of(moves_.begin(), moves_.end(),
                                       [](const Move& mv) { return mv.from == mv.to; })),
        pixels_(p.Bool("pixels")),
        action_repeat_(static_cast<int>(p.Int("action_repeat"))) {
    frame_.height = static_cast<int>(p.Int("height"));
    frame_.width = static_cast<int>(p.Int("width"));
    frame_.camera = static_cast<int>(p.Int("camera"));
    frame_.visuals = p.Choice("visuals") == "fast" ? mujoco_render::Visuals::kFast
                                                   : mujoco_render::Visuals::kMatch;
    const double timestep = physics_.timestep();
    n_sub_steps_ = SubSteps(timestep);
    const double time_limit = p.Float("time_limit");
    step_limit_ = std::isinf(time_limit) ? kInf : time_limit / (timestep * n_sub_steps_);
  }

  // shimmy's info keys, as numbers: dm_env's step type (0 FIRST, 1 MID, 2 LAST) and the
  // discount (absent at a reset, where dm_env's is None).
  enum InfoRow : int { kDiscount, kStepType, kInfoRowSize };

  void Reset(Rng& rng, void* obs, double* info) {
    const RecoveredSeed seed = RecoverSeed(rng.State());
    if (seed.fresh) {
      size_t count = 4;
      while (count > 1 && seed.words[count - 1] == 0) --count;
      if (count == 1) {
        random_.Seed(seed.words[0]);
      } else {
        random_.SeedByArray(seed.words, count);
      }
      rng.NextU64();  // marks the seed as used: the next unseeded reset goes on with the stream
    }
    physics_.Reset();
    task_.Initialize(physics_, random_);
    physics_.AfterReset();
    steps_ = 0;
    WriteObs(obs);
    info[kDiscount] = kNoDiscount;
    info[kStepType] = 0;
  }

  StepResult Step(const double* action, void* obs, double* info) {
    StepResult result = StepOnce(action, info);
    if (action_repeat_ > 1) {  // DrQ-v2's ActionRepeatWrapper: discounted sum, up to the end
      double reward = result.reward, discount = info[kDiscount];
      for (int k = 1; k < action_repeat_ && !result.terminated && !result.truncated; ++k) {
        result = StepOnce(action, info);
        reward += result.reward * discount;
        discount *= info[kDiscount];
      }
      result.reward = reward;
    }
    WriteObs(obs);
    return result;
  }

  // The frame the observation holds with pixels=True (render_mode="rgb_array").
  void Render(uint8_t* rgb) {
    mujoco_render::Draw(physics_.m(), physics_.shared_m(), physics_.d(), frame_, rgb);
  }

 private:
  // One control step (n_sub_steps physics steps) and its reward, discount and end.
  StepResult StepOnce(const double* action, double* info) {
    physics_.SetControl(action);
    physics_.Step(n_sub_steps_);
    const double reward = task_.Reward(physics_);
    ++steps_;
    info[kStepType] = 2;  // LAST, unless it goes on below
    if (static_cast<double>(steps_) >= step_limit_) {
      info[kDiscount] = 1.0;
      return {reward, false, true};
    }
    const double discount = task_.Discount(physics_);
    if (std::isnan(discount)) {
      info[kDiscount] = 1.0;
      info[kStepType] = 1;
      return {reward, false, false};
    }
    info[kDiscount] = discount;
    return {reward, discount == 0.0, discount != 0.0};
  }

  // n_sub_steps: the control timestep over the physics timestep, rounded (1 without one).
  static int SubSteps(double timestep) {
    if (Task::kControlTimestep <= 0) return 1;
    return static_cast<int>(std::lround(Task::kControlTimestep / timestep));
  }

  void WriteObs(void* obs) {
    if (pixels_) {
      Render(static_cast<uint8_t*>(obs));
    } else {
      WriteState(static_cast<double*>(obs));
    }
  }

  // Straight into the row when the keys' order is already dm_control's (flat_observation, or
  // keys already sorted, as for most tasks); else through the scratch row, key by key.
  void WriteState(double* obs) {
    if (in_order_) {
      task_.Observe(physics_, obs);
      return;
    }
    task_.Observe(physics_, scratch_.data());
    for (const Move& mv : moves_) {
      std::memcpy(obs + mv.to, scratch_.data() + mv.from, sizeof(double) * mv.size);
    }
  }

  Physics physics_;
  Task task_;
  std::vector<ObsKey> keys_;
  std::vector<Move> moves_;
  std::vector<double> scratch_;
  bool flat_;
  bool in_order_;
  bool pixels_;
  int action_repeat_;
  mujoco_render::FrameSpec frame_;
  RandomState random_;
  int n_sub_steps_ = 1;
  double step_limit_ = kInf;
  int64_t steps_ = 0;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_SUITE_ENV_H_
