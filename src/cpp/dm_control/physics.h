// The MuJoCo side of fastbatch's dm_control envs: dm_control's `mujoco.Physics` as the suite's
// `control.Environment` drives it (dm_control 1.0.x `mujoco/engine.py`, `rl/control.py`).
//
// - Models: each suite XML is loaded once per process from the installed dm_control package
//   (`SuiteDir`, set by `fastbatch.dm_control` before any env exists) and shared read-only by
//   every env, with a second copy whose actuation is disabled, for dm_control's `forward()` at
//   reset (`with model.disable('actuation')`). A task that edits its model per episode (reacher
//   moves its target geom) gets a private copy instead (`Physics(file, true)`).
// - Reset (`reset_context`): mj_resetData and forward without actuation; the task then sets the
//   state (stepping if it wants: cheetah settles for 200 steps), and AfterReset runs the
//   actuation-free forward again.
// - Step (`legacy_step=True`): mj_step2 to finish the step whose mj_step1 has run, mj_step for
//   the other n - 1 substeps, then mj_step1, so positions and velocities derived quantities are
//   current when the task reads them (RK4 models: mj_step n times, then mj_step1).
// - Invalid states (`check_invalid_state`): a MuJoCo warning raised during a step or an
//   after_reset forward (bad qacc, too many contacts, ...) throws, as dm_control raises its
//   PhysicsError (fastbatch.EnvError in Python, naming the env); the forward of reset itself is
//   unchecked, as in dm_control.
// - Controls: `set_control` copies the action as given; MuJoCo clamps it to the control range
//   inside the physics (ctrllimited), and rewards that read `data.ctrl` see the raw values.
//
// Threading: the model cache is guarded by a mutex; a Physics is used by one thread at a time.
// MuJoCo's own threading stays off.
#ifndef FASTBATCH_DM_CONTROL_PHYSICS_H_
#define FASTBATCH_DM_CONTROL_PHYSICS_H_

#include <mujoco/mujoco.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace fastbatch::dm_control {

// The directory of dm_control's suite XML files (`dm_control/suite`), set once by
// `fastbatch.dm_control.register` through fastbatch_dm_control_set_assets (plugin.cc).
inline std::string& SuiteDir() {
  static std::string dir;
  return dir;
}

inline std::string VersionName(int version) {  // 3002007 -> "3.2.7"
  return std::to_string(version / 1000000) + "." + std::to_string(version / 1000 % 1000) + "." +
         std::to_string(version % 1000);
}

using ModelPtr = std::shared_ptr<mjModel>;

inline ModelPtr CopyModel(const mjModel* model) {
  mjModel* copy = mj_copyModel(nullptr, model);
  if (copy == nullptr) throw std::runtime_error("mj_copyModel failed");
  return ModelPtr(copy, &mj_deleteModel);
}

// Models dm_control generates in Python (cartpole's poles, swimmer's links): name -> XML text,
// set by `fastbatch.dm_control.register` (fastbatch_dm_control_set_model) before any env exists;
// their includes name the suite's common files by absolute path.
inline std::map<std::string, std::string>& GeneratedModels() {
  static std::map<std::string, std::string> models;
  return models;
}

inline mjModel* LoadXml(const std::string& file, char* error, int error_size) {
  const auto generated = GeneratedModels().find(file);
  if (generated == GeneratedModels().end()) {
    const std::string path = SuiteDir() + "/" + file;
    return mj_loadXML(path.c_str(), nullptr, error, error_size);
  }
  mjVFS vfs;
  mj_defaultVFS(&vfs);
  const std::string& xml = generated->second;
  mjModel* model = nullptr;
  if (mj_addBufferVFS(&vfs, file.c_str(), xml.data(), static_cast<int>(xml.size())) == 0) {
    model = mj_loadXML(file.c_str(), &vfs, error, error_size);
  }
  mj_deleteVFS(&vfs);
  return model;
}

// The suite model `file` and its actuation-disabled twin, loaded once per process.
inline std::pair<ModelPtr, ModelPtr> LoadModels(const std::string& file) {
  static std::mutex mu;
  static std::map<std::string, std::pair<ModelPtr, ModelPtr>> cache;
  if (mj_version() != mjVERSION_HEADER) {
    throw std::runtime_error("fastbatch's dm_control envs were built against mujoco " +
                             VersionName(mjVERSION_HEADER) + " but mujoco " +
                             VersionName(mj_version()) + " is loaded");
  }
  std::lock_guard<std::mutex> lock(mu);
  auto& entry = cache[file];
  if (entry.first) return entry;
  if (SuiteDir().empty()) {
    throw std::runtime_error(
        "fastbatch's dm_control envs have no asset directory: load them through "
        "fastbatch.dm_control.register(), which sets dm_control's");
  }
  char error[1000] = "";
  mjModel* raw = LoadXml(file, error, sizeof(error));
  if (raw == nullptr) throw std::runtime_error("cannot load MuJoCo model " + file + ": " + error);
  ModelPtr model(raw, &mj_deleteModel);
  ModelPtr inert = CopyModel(raw);
  inert->opt.disableflags |= mjDSBL_ACTUATION;
  entry = {model, inert};
  return entry;
}

class Physics {
 public:
  // `private_model`: this env gets its own copy of the model, which its task may edit.
  Physics(const std::string& file, bool private_model) {
    auto [shared, inert] = LoadModels(file);
    shared_ = shared;
    if (private_model) {
      model_ = CopyModel(shared.get());
      inert_ = nullptr;  // the private model disables its own actuation for a moment
    } else {
      model_ = shared;
      inert_ = inert;
    }
    data_ = std::unique_ptr<mjData, void (*)(mjData*)>(mj_makeData(model_.get()), &mj_deleteData);
    if (data_ == nullptr) throw std::runtime_error("mj_makeData failed for " + file);
  }

  const mjModel* m() const { return model_.get(); }
  mjModel* mutable_m() { return model_.get(); }  // a private model only (see the constructor)
  // The shared model of the file (m() itself, or the one a private model was copied from).
  const mjModel* shared_m() const { return shared_.get(); }
  mjData* d() { return data_.get(); }
  const mjData* d() const { return data_.get(); }
  double timestep() const { return model_->opt.timestep; }

  // `reset_context` on entry: mj_resetData, then forward without actuation (unchecked).
  void Reset() {
    mj_resetData(model_.get(), data_.get());
    ForwardWithoutActuation();
  }
  // `after_reset` (also what a task calls inside its own initialisation); `checked`: throw on a
  // new MuJoCo warning (false where dm_control catches the PhysicsError itself).
  void AfterReset(bool checked = true) {
    const Warnings before = CountWarnings();
    ForwardWithoutActuation();
    if (checked) CheckWarnings(before);
  }

  void SetControl(const double* action) {
    std::memcpy(data_->ctrl, action, sizeof(double) * static_cast<size_t>(model_->nu));
  }

  // `Physics.step(n)` with legacy_step.
  void Step(int n) {
    const Warnings before = CountWarnings();
    const mjModel* m = model_.get();
    mjData* d = data_.get();
    if (m->opt.integrator != mjINT_RK4) {
      mj_step2(m, d);
      for (int k = 1; k < n; ++k) mj_step(m, d);
    } else {
      for (int k = 0; k < n; ++k) mj_step(m, d);
    }
    mj_step1(m, d);
    CheckWarnings(before);
  }

  // Ids and addresses by name, for the tasks' named reads (`physics.named.data...`).
  int Id(mjtObj type, const char* name) const {
    const int id = mj_name2id(model_.get(), type, name);
    if (id < 0) throw std::runtime_error(std::string("the model has no object named ") + name);
    return id;
  }
  int QposAdr(const char* joint) const { return model_->jnt_qposadr[Id(mjOBJ_JOINT, joint)]; }
  int DofAdr(const char* joint) const { return model_->jnt_dofadr[Id(mjOBJ_JOINT, joint)]; }
  int SensorAdr(const char* sensor) const { return model_->sensor_adr[Id(mjOBJ_SENSOR, sensor)]; }

 private:
  struct Warnings {
    int count[mjNWARNING];
  };
  Warnings CountWarnings() const {
    Warnings w;
    for (int k = 0; k < mjNWARNING; ++k) w.count[k] = data_->warning[k].number;
    return w;
  }
  // dm_control's message: "Physics state is invalid. Warning(s) raised: mjWARN_BADQACC".
  void CheckWarnings(const Warnings& before) const {
    std::string raised;
    for (int k = 0; k < mjNWARNING; ++k) {
      if (data_->warning[k].number > before.count[k]) {
        raised += (raised.empty() ? "" : ", ") + WarningName(k);
      }
    }
    if (!raised.empty()) {
      throw std::runtime_error("Physics state is invalid. Warning(s) raised: " + raised);
    }
  }
  static std::string WarningName(int k) {
    switch (k) {
      case mjWARN_INERTIA: return "mjWARN_INERTIA";
      case mjWARN_CONTACTFULL: return "mjWARN_CONTACTFULL";
      case mjWARN_CNSTRFULL: return "mjWARN_CNSTRFULL";
      case mjWARN_BADQPOS: return "mjWARN_BADQPOS";
      case mjWARN_BADQVEL: return "mjWARN_BADQVEL";
      case mjWARN_BADQACC: return "mjWARN_BADQACC";
      case mjWARN_BADCTRL: return "mjWARN_BADCTRL";
      default: return "MuJoCo warning " + std::to_string(k);
    }
  }

  void ForwardWithoutActuation() {
    if (inert_) {
      mj_forward(inert_.get(), data_.get());
      return;
    }
    const int flags = model_->opt.disableflags;
    model_->opt.disableflags = flags | mjDSBL_ACTUATION;
    mj_forward(model_.get(), data_.get());
    model_->opt.disableflags = flags;
  }

  ModelPtr model_;
  ModelPtr shared_;
  ModelPtr inert_;  // the shared actuation-disabled twin, or null for a private model
  std::unique_ptr<mjData, void (*)(mjData*)> data_{nullptr, &mj_deleteData};
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_PHYSICS_H_
