// The MuJoCo side of fastbatch's MuJoCo envs: one shared read-only mjModel per XML file, one
// mjData per env, and the pieces of gymnasium's `MujocoEnv` (gymnasium 1.x
// `envs/mujoco/mujoco_env.py`) that every v5 env uses: reset to (qpos, qvel) then mj_forward,
// and `do_simulation` (ctrl = action, frame_skip x mj_step, then mj_rnePostConstraint).
//
// Reset noise: every env's `Reset` draws what its gymnasium twin's `reset_model` draws, in the
// same order (numpy's `uniform` and `standard_normal` through fastbatch::Rng, an array draw as
// its elements in order), so a seed gives gymnasium's initial states bit for bit.
//
// Ownership: `LoadModel` loads each file once per process and keeps the model for the process
// (the library is never unloaded; a model is a few hundred kB), so every env of every pool
// shares it read-only, as mj_step allows, and MuJoCo's load-time warnings print once. A Sim owns
// its mjData; nothing is allocated after construction.
//
// Threading: LoadModel may be called from any thread (a mutex guards the cache). A Sim is used by
// one thread at a time (the env contract). MuJoCo's own threading stays off: no thread pool is
// ever bound to an mjData.
//
// Versions: the library is compiled against one MuJoCo's headers and must run against the same
// libmujoco; `CheckVersion` refuses anything else with both versions named.
#ifndef FASTBATCH_MUJOCO_SIM_H_
#define FASTBATCH_MUJOCO_SIM_H_

#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "fastbatch/env.h"

namespace fastbatch::mujoco {

// gymnasium's MuJoCo asset directory, set once by `fastbatch.mujoco` through
// fastbatch_mujoco_set_assets (plugin.cc) before any env is made: the library is built once, with
// the wheel, and gymnasium's install location is known only at run time.
inline std::string& AssetsDir() {
  static std::string dir;
  return dir;
}

inline std::string VersionName(int version) {  // 3002007 -> "3.2.7" (mjVERSION_HEADER's format)
  return std::to_string(version / 1000000) + "." + std::to_string(version / 1000 % 1000) + "." +
         std::to_string(version % 1000);
}

// Throws when the libmujoco loaded is not the one these envs were compiled against.
inline void CheckVersion() {
  if (mj_version() != mjVERSION_HEADER) {
    throw std::runtime_error(
        "fastbatch's MuJoCo envs were built against mujoco " + VersionName(mjVERSION_HEADER) +
        " but mujoco " + VersionName(mj_version()) +
        " is loaded; reinstall with pip install 'fastbatch[mujoco]' to rebuild them");
  }
}

// The model of gymnasium's asset `file`, loaded once per process and shared.
inline std::shared_ptr<const mjModel> LoadModel(const std::string& file) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const mjModel>> cache;
  CheckVersion();
  std::lock_guard<std::mutex> lock(mu);
  if (auto model = cache[file]) return model;
  if (AssetsDir().empty()) {
    throw std::runtime_error(
        "fastbatch's MuJoCo envs have no asset directory: load them through "
        "fastbatch.mujoco.register(), which sets gymnasium's");
  }
  const std::string path = AssetsDir() + "/" + file;
  char error[1000] = "";
  mjModel* raw = mj_loadXML(path.c_str(), nullptr, error, sizeof(error));
  if (raw == nullptr) throw std::runtime_error("cannot load MuJoCo model " + path + ": " + error);
  std::shared_ptr<const mjModel> model(
      raw, [](const mjModel* m) { mj_deleteModel(const_cast<mjModel*>(m)); });
  cache[file] = model;
  return model;
}

// `np.sum(np.square(a))` as numpy computes it: squares in T (float32 for a float32 action, as
// gymnasium's control costs see it), summed by numpy's pairwise reduction (8 accumulators within
// blocks of up to 128 elements, blocks halved recursively).
template <typename T>
T SquaredSum(const T* a, int64_t n) {
  if (n < 8) {
    T s = T(0);
    for (int64_t i = 0; i < n; ++i) s += a[i] * a[i];
    return s;
  }
  if (n <= 128) {
    T r[8];
    for (int k = 0; k < 8; ++k) r[k] = a[k] * a[k];
    int64_t i = 8;
    for (; i < n - n % 8; i += 8) {
      for (int k = 0; k < 8; ++k) r[k] += a[i + k] * a[i + k];
    }
    T s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) s += a[i] * a[i];
    return s;
  }
  int64_t half = n / 2;
  half -= half % 8;
  return SquaredSum(a, half) + SquaredSum(a + half, n - half);
}

// The same over values clipped to [low, high] first (Ant's contact forces).
inline double ClippedSquaredSum(const double* a, int64_t n, double low, double high,
                                double* scratch) {
  for (int64_t i = 0; i < n; ++i) scratch[i] = std::min(std::max(a[i], low), high);
  return SquaredSum(scratch, n);
}

// Writes `values` clipped to [low, high] (np.clip) to `out`; returns the end of `out`.
inline double* CopyClipped(const double* values, int64_t n, double low, double high, double* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::min(std::max(values[i], low), high);
  return out + n;
}

inline double* Copy(const double* values, int64_t n, double* out) {
  std::memcpy(out, values, sizeof(double) * static_cast<size_t>(n));
  return out + n;
}

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An env's info row (env.h, "Infos") is declared by one table beside the env's `InfoRow` enum,
// whose constants are the offsets Reset and Step write at: each entry names its offset, its
// gymnasium info key and its size in float64 values. MakeSpec declares the table with
// `DeclareInfos`, and the env static_asserts `IsInfoLayout`, so the enum, the declared row and the
// writes cannot drift apart.
struct InfoEntry {
  int offset;
  const char* name;
  int32_t size = 1;
};

// Whether `entries` lay out a row of `row_size` values one after another, in table order: the
// first at 0, each next one where the one before it ends, the last ending at `row_size`.
template <size_t N>
constexpr bool IsInfoLayout(const InfoEntry (&entries)[N], int row_size) {
  int end = 0;
  for (const InfoEntry& e : entries) {
    if (e.offset != end || e.size < 1) return false;
    end += e.size;
  }
  return end == row_size;
}

// Declares every entry of `entries` on `spec` in table order (Spec::Info); returns `spec`.
template <size_t N>
Spec& DeclareInfos(Spec& spec, const InfoEntry (&entries)[N]) {
  for (const InfoEntry& e : entries) spec.Info(e.name, e.size);
  return spec;
}

// Marks the values [first, end) of an info row absent from this reset or step (NaN: its mask is
// False in Python).
inline void MarkAbsent(double* info, int first, int end) {
  std::fill(info + first, info + end, kNaN);
}

// An env's DEFAULT_CAMERA_CONFIG in gymnasium: what it sets on the free camera after placing it
// (frames.h). NaN keeps the placed value; `lookat` is all three or none. (trackbodyid, also in
// some configs, does nothing to a free camera.)
struct CameraConfig {
  double distance = kNaN;
  double lookat[3] = {kNaN, kNaN, kNaN};
  double elevation = kNaN;
};

// One simulation: an mjData over a shared model.
class Sim {
 public:
  // `state_size`: the env's kStateSize, which must be nq + nv of the model.
  Sim(const std::string& file, int frame_skip, bool post_constraint, int64_t state_size)
      : model_(LoadModel(file)),
        data_(mj_makeData(model_.get()), &mj_deleteData),
        frame_skip_(frame_skip),
        post_constraint_(post_constraint) {
    if (data_ == nullptr) throw std::runtime_error("mj_makeData failed for " + file);
    if (model_->nq + model_->nv != state_size) {
      throw std::runtime_error(file + " has nq + nv = " + std::to_string(model_->nq + model_->nv) +
                               ", not the " + std::to_string(state_size) + " this env expects");
    }
  }

  const mjModel* m() const { return model_.get(); }
  const mjData* d() const { return data_.get(); }
  mjData* mutable_d() { return data_.get(); }  // for drawing (mjv_updateScene writes to it)
  int nq() const { return model_->nq; }
  int nv() const { return model_->nv; }
  int nu() const { return model_->nu; }
  // Seconds per env step: the model's timestep times frame_skip (gymnasium's `dt`).
  double dt() const { return model_->opt.timestep * frame_skip_; }
  const double* init_qpos() const { return model_->qpos0; }  // gymnasium's init_qpos
  const double* qpos() const { return data_->qpos; }
  const double* qvel() const { return data_->qvel; }
  double* mutable_qpos() { return data_->qpos; }
  double* mutable_qvel() { return data_->qvel; }

  // gymnasium's reset: mj_resetData, then set_state(qpos, qvel) with the qpos/qvel already
  // written through mutable_qpos/mutable_qvel by `fill` (which sees the reset data).
  template <typename Fill>
  void Reset(Fill fill) {
    mj_resetData(model_.get(), data_.get());
    fill(data_->qpos, data_->qvel);
    mj_forward(model_.get(), data_.get());
  }

  // gymnasium's do_simulation: ctrl = action (float32 widened; MuJoCo clamps it internally),
  // frame_skip steps, and the post-constraint quantities (cacc, cfrc_int, cfrc_ext) where the
  // env reads them (without it they stay stale; nothing else reads them).
  void Step(const float* action) {
    for (int k = 0; k < model_->nu; ++k) data_->ctrl[k] = static_cast<double>(action[k]);
    for (int s = 0; s < frame_skip_; ++s) mj_step(model_.get(), data_.get());
    if (post_constraint_) mj_rnePostConstraint(model_.get(), data_.get());
  }

  // qpos ++ qvel, for get_env_state.
  void GetState(double* out) const {
    std::memcpy(out, data_->qpos, sizeof(double) * static_cast<size_t>(model_->nq));
    std::memcpy(out + model_->nq, data_->qvel, sizeof(double) * static_cast<size_t>(model_->nv));
  }

  // The ctrl bounds of the action space, as gymnasium's `_set_action_space` reads them.
  static Space ActionSpace(const std::string& file) {
    auto model = LoadModel(file);
    std::vector<double> low, high;
    for (int k = 0; k < model->nu; ++k) {
      low.push_back(static_cast<float>(model->actuator_ctrlrange[2 * k]));
      high.push_back(static_cast<float>(model->actuator_ctrlrange[2 * k + 1]));
    }
    return Box({model->nu}, low, high);
  }

 private:
  std::shared_ptr<const mjModel> model_;
  std::unique_ptr<mjData, void (*)(mjData*)> data_;
  int frame_skip_;
  bool post_constraint_;
};

}  // namespace fastbatch::mujoco

#endif  // FASTBATCH_MUJOCO_SIM_H_
