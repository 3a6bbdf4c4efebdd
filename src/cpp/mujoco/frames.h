// WithFrames<Env>: a MuJoCo v5 env that draws itself, as gymnasium's `MujocoRenderer` draws its
// twin in `rgb_array` mode (gymnasium 1.x `envs/mujoco/mujoco_rendering.py`), and that can
// observe its frames instead of its state (pixels=True).
//
// Params added to the env's: `pixels` (false), `width` and `height` (gymnasium's DEFAULT_SIZE,
// 480), `camera` (gymnasium's camera_id: a fixed camera's id, or -1, the free camera, gymnasium's
// default since 1.4), `camera_name` (a named camera of the model, e.g. "track", which follows the
// body's centre of mass; "" leaves it to `camera`) and `visuals` ("match" or "fast",
// fastbatch/mujoco_render.h).
//
// The free camera (camera -1) is gymnasium's `OffScreenViewer._init_camera` then the env's
// DEFAULT_CAMERA_CONFIG (`Env::kCamera`): set once, when the env first draws, with its lookat
// the per-axis median of every geom's position at that moment (gymnasium creates its viewer at
// the first `render()`); it does not follow the body afterwards. A fixed camera id draws from
// that camera (the "track" cameras follow the centre of mass).
//
// With pixels=True the observation is the frame, uint8 (height, width, 3), drawn by the stepping
// thread after each reset and step, as gymnasium's `AddRenderObservation(render_only=True)` sees
// `render()`; the state observation is still computed (into a scratch row), as are rewards and
// infos. The frame is also the env's Render (render_mode="rgb_array"), at the same size.
#ifndef FASTBATCH_MUJOCO_FRAMES_H_
#define FASTBATCH_MUJOCO_FRAMES_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "fastbatch/mujoco_render.h"
#include "sim.h"

namespace fastbatch::mujoco {

template <class Env>
class WithFrames {
  static_assert(std::is_same_v<typename Env::ObsType, double>, "a v5 env observes float64");

 public:
  using ObsType = void;  // Env's float64 state, or uint8 frames with pixels=True
  using ActionType = typename Env::ActionType;
  static constexpr int64_t kStateSize = Env::kStateSize;
  static constexpr int kDefaultSize = 480;  // gymnasium's DEFAULT_SIZE

  static ParamList DeclareParams() {
    ParamList list = Env::DeclareParams();
    list.Bool("pixels", false)
        .Int("width", kDefaultSize, 1, Spec::kMaxFrameSide)
        .Int("height", kDefaultSize, 1, Spec::kMaxFrameSide)
        .Int("camera", -1, -1)
        .Choice("camera_name", CameraNames(), "")
        .Choice("visuals", {"match", "fast"}, "match");
    return list;
  }

  static Spec MakeSpec(const Params& p) {
    const auto model = LoadModel(Env::kFile);
    if (!p.Choice("camera_name").empty() && p.Int("camera") != -1) {
      throw std::invalid_argument(std::string(Env::kFile) +
                                  ": give camera (camera_id) or camera_name, not both");
    }
    if (p.Int("camera") >= model->ncam) {
      throw std::invalid_argument(std::string(Env::kFile) + ": camera " +
                                  std::to_string(p.Int("camera")) +
                                  " does not exist (the model has " + std::to_string(model->ncam) +
                                  "; -1 is the free camera)");
    }
    Spec spec = Env::MakeSpec(p);
    const int64_t height = p.Int("height"), width = p.Int("width");
    if (p.Bool("pixels")) {
      spec.Observation(Box<uint8_t>({height, width, 3}, 0, 255));
    } else {
      spec.observation().dtype = DTypeOf<double>();  // ObsType is void here: name Env's type
    }
    // gymnasium's render_fps: 1 / dt, rounded.
    const double fps = std::round(1.0 / (model->opt.timestep * p.Int("frame_skip")));
    spec.Render(static_cast<int32_t>(height), static_cast<int32_t>(width), fps);
    return spec;
  }

  explicit WithFrames(const Params& p)
      : env_(p),
        pixels_(p.Bool("pixels")),
        state_(pixels_ ? static_cast<size_t>(StateObsSize(p)) : 0),
        positions_(static_cast<size_t>(env_.sim().m()->ngeom)) {
    frame_.width = static_cast<int>(p.Int("width"));
    frame_.height = static_cast<int>(p.Int("height"));
    frame_.camera = CameraOf(p);
    frame_.visuals = p.Choice("visuals") == "fast" ? mujoco_render::Visuals::kFast
                                                   : mujoco_render::Visuals::kMatch;
  }

  void Reset(Rng& rng, void* obs, double* info) {
    env_.Reset(rng, pixels_ ? state_.data() : static_cast<double*>(obs), info);
    if (pixels_) Render(static_cast<uint8_t*>(obs));
  }

  StepResult Step(const ActionType* action, void* obs, double* info) {
    const StepResult result =
        env_.Step(action, pixels_ ? state_.data() : static_cast<double*>(obs), info);
    if (pixels_) Render(static_cast<uint8_t*>(obs));
    return result;
  }

  void GetState(double* out) const { env_.GetState(out); }

  // The frame the observation holds with pixels=True (render_mode="rgb_array").
  void Render(uint8_t* rgb) {
    Sim& sim = env_.sim();
    if (frame_.camera >= 0) {
      mujoco_render::Draw(sim.m(), sim.m(), sim.mutable_d(), frame_, rgb);
      return;
    }
    if (!placed_) PlaceFreeCamera();
    mujoco_render::Draw(sim.m(), sim.m(), sim.mutable_d(), frame_, free_camera_, rgb);
  }

 private:
  // "" (no name: `camera` decides) and the names of the model's named cameras.
  static std::vector<std::string> CameraNames() {
    const auto model = LoadModel(Env::kFile);
    std::vector<std::string> names{""};
    for (int k = 0; k < model->ncam; ++k) {
      const char* name = mj_id2name(model.get(), mjOBJ_CAMERA, k);
      if (name != nullptr && *name != '\0') names.emplace_back(name);
    }
    return names;
  }

  static int CameraOf(const Params& p) {
    const std::string& name = p.Choice("camera_name");
    if (name.empty()) return static_cast<int>(p.Int("camera"));
    return mj_name2id(LoadModel(Env::kFile).get(), mjOBJ_CAMERA, name.c_str());
  }

  static int64_t StateObsSize(const Params& p) {
    Spec spec = Env::MakeSpec(p);
    const Space& space = spec.observation();
    int64_t size = 1;
    for (int64_t side : space.shape) size *= side;
    return size;
  }

  // `OffScreenViewer._init_camera` (free, lookat the median geom position per axis, distance
  // the model's extent), then the env's DEFAULT_CAMERA_CONFIG.
  void PlaceFreeCamera() {
    const mjModel* m = env_.sim().m();
    const mjData* d = env_.sim().d();
    mjv_defaultCamera(&free_camera_);
    free_camera_.type = mjCAMERA_FREE;
    free_camera_.fixedcamid = -1;
    for (int axis = 0; axis < 3; ++axis) {
      for (int g = 0; g < m->ngeom; ++g) positions_[g] = d->geom_xpos[3 * g + axis];
      free_camera_.lookat[axis] = Median(positions_);
    }
    free_camera_.distance = m->stat.extent;
    const CameraConfig& config = Env::kCamera;
    if (!std::isnan(config.distance)) free_camera_.distance = config.distance;
    if (!std::isnan(config.elevation)) free_camera_.elevation = config.elevation;
    if (!std::isnan(config.lookat[0])) {
      for (int axis = 0; axis < 3; ++axis) free_camera_.lookat[axis] = config.lookat[axis];
    }
    placed_ = true;
  }

  // np.median: the middle value, or the mean of the two middle values ((a + b) / 2).
  static double Median(std::vector<double>& values) {
    const size_t n = values.size(), mid = n / 2;
    std::nth_element(values.begin(), values.begin() + mid, values.end());
    const double upper = values[mid];
    if (n % 2 == 1) return upper;
    const double lower = *std::max_element(values.begin(), values.begin() + mid);
    return (lower + upper) / 2.0;
  }

  Env env_;
  bool pixels_;
  std::vector<double> state_;      // the state observation, with pixels=True
  std::vector<double> positions_;  // one axis of every geom's position (the free camera's lookat)
  mujoco_render::FrameSpec frame_;
  mjvCamera free_camera_{};
  bool placed_ = false;
};

}  // namespace fastbatch::mujoco

#endif  // FASTBATCH_MUJOCO_FRAMES_H_
