// Frames of MuJoCo envs drawn in the pool's threads (public, header-only; needs mujoco.h): one
// EGL context and MuJoCo render context per (thread, model, visuals), MuJoCo's own renderer
// (mjv_updateScene, mjr_render, mjr_readPixels) into a row-major RGB buffer, top row first.
//
// TensorFlow in the same process: its wheels load TensorFlow's library RTLD_GLOBAL, with its
// LLVM, which Mesa's llvmpipe driver would bind to (and crash). `fastbatch.mujoco.isolate_gl`
// (Python, called when a MuJoCo env family is first used) loads Mesa so that it cannot; see
// src/cpp/gl/gl_shim.cc. This header only loads EGL.
//
// Backend: EGL (MUJOCO_GL unset or "egl"): a device display (eglQueryDevicesEXT, the first that
// initialises), else Mesa's surfaceless platform, else the default display; no window system
// is needed. OSMesa with MUJOCO_GL=osmesa (`fastbatch._gl` sets it where EGL is missing and
// OSMesa is not). Any other MUJOCO_GL is refused with a message. The client API (OpenGL) is
// bound per thread, as EGL keeps it, and contexts are made under one mutex (mjr_makeContext loads
// GL function pointers into MuJoCo's globals).
#ifndef FASTBATCH_MUJOCO_RENDER_H_
#define FASTBATCH_MUJOCO_RENDER_H_

#include <dlfcn.h>
#include <mujoco/mujoco.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace fastbatch::mujoco_render {

// EGL's ABI, declared here so that building needs no EGL headers (EGL is loaded at run time).
using EGLDisplay = void*;
using EGLConfig = void*;
using EGLContext = void*;
using EGLDeviceEXT = void*;
using EGLint = int32_t;
using EGLBoolean = unsigned;
inline constexpr EGLint kEglNone = 0x3038;
inline constexpr unsigned kEglOpenGlApi = 0x30A2;
inline constexpr EGLint kEglPlatformDevice = 0x313F;
inline constexpr EGLint kEglPlatformSurfaceless = 0x31DD;

// How frames are drawn: `kMatch` as dm_control's `physics.render` and gymnasium's renderer draw
// them (the model's visual settings: shadows, reflections, skybox, multisampling); `kFast`
// without shadows, reflections, skybox and multisampling.
enum class Visuals { kMatch, kFast };

// The GL platform frames are drawn with (MUJOCO_GL): EGL ("egl" or unset) or OSMesa ("osmesa").
enum class Backend { kEgl, kOsmesa };

struct Api {
  Backend backend = Backend::kEgl;
  // EGL
  void* (*GetProcAddress)(const char*);
  EGLDisplay (*GetDisplay)(void*);
  EGLBoolean (*Initialize)(EGLDisplay, EGLint*, EGLint*);
  EGLBoolean (*ChooseConfig)(EGLDisplay, const EGLint*, EGLConfig*, EGLint, EGLint*);
  EGLBoolean (*BindAPI)(unsigned);
  EGLContext (*CreateContext)(EGLDisplay, EGLConfig, EGLContext, const EGLint*);
  EGLBoolean (*MakeCurrent)(EGLDisplay, void*, void*, EGLContext);
  EGLBoolean (*DestroyContext)(EGLDisplay, EGLContext);
  EGLint (*GetError)();
  EGLDisplay display = nullptr;
  EGLConfig config = nullptr;
  // OSMesa
  void* (*OsmesaCreateContextExt)(unsigned format, int depth, int stencil, int accum, void* share);
  unsigned char (*OsmesaMakeCurrent)(void* context, void* buffer, unsigned type, int width,
                                     int height);
  void (*OsmesaDestroyContext)(void* context);
  std::string description;  // e.g. "EGL (device 0)", "OSMesa"
};

namespace detail {

template <typename F>
void Bind(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  if (out == nullptr)
    throw std::runtime_error(std::string("rendering: no ") + name + " in the GL stack");
}

inline EGLDisplay OpenDisplay(Api& api, std::string& kind) {
  using QueryDevices = EGLBoolean (*)(EGLint, EGLDeviceEXT*, EGLint*);
  using PlatformDisplay = EGLDisplay (*)(unsigned, void*, const EGLint*);
  auto query = reinterpret_cast<QueryDevices>(api.GetProcAddress("eglQueryDevicesEXT"));
  auto platform = reinterpret_cast<PlatformDisplay>(api.GetProcAddress("eglGetPlatformDisplayEXT"));
  EGLint major = 0, minor = 0;
  if (query != nullptr && platform != nullptr) {
    EGLDeviceEXT devices[16];
    EGLint count = 0;
    if (query(16, devices, &count) && count > 0) {
      for (EGLint i = 0; i < count; ++i) {
        EGLDisplay display = platform(kEglPlatformDevice, devices[i], nullptr);
        if (display != nullptr && api.Initialize(display, &major, &minor)) {
          kind = "device " + std::to_string(i);
          return display;
        }
      }
    }
  }
  if (platform != nullptr) {
    EGLDisplay display = platform(kEglPlatformSurfaceless, nullptr, nullptr);
    if (display != nullptr && api.Initialize(display, &major, &minor)) {
      kind = "surfaceless";
      return display;
    }
  }
  EGLDisplay display = api.GetDisplay(nullptr);
  if (display != nullptr && api.Initialize(display, &major, &minor)) {
    kind = "default display";
    return display;
  }
  throw std::runtime_error(
      "rendering: EGL found no display to render with (no GPU driver and no Mesa?); install "
      "Mesa's EGL (Debian/Ubuntu: apt install libegl1 libegl-mesa0) or a GPU driver");
}

// OSMesa (MUJOCO_GL=osmesa): libOSMesa loaded apart (RTLD_LOCAL | RTLD_DEEPBIND, so that its
// LLVM stays out of the global scope, as Mesa's EGL driver does through src/cpp/gl/gl_shim.cc);
// MuJoCo's GL loader finds `OSMesaGetProcAddress` in the global scope, where
// `fastbatch.mujoco.isolate_gl` puts fastbatch_osmesa_proc.so, which forwards to it.
inline Api LoadOsmesa() {
  Api api{};
  api.backend = Backend::kOsmesa;
  void* osmesa = dlopen("libOSMesa.so.8", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (osmesa == nullptr) osmesa = dlopen("libOSMesa.so.8", RTLD_NOW | RTLD_LOCAL);  // ASan
  if (osmesa == nullptr) {
    throw std::runtime_error(
        std::string("rendering: MUJOCO_GL=osmesa, but libOSMesa.so.8 does not load (") + dlerror() +
        "); install it (Debian/Ubuntu: apt install libosmesa6) or use EGL");
  }
  Bind(osmesa, "OSMesaCreateContextExt", api.OsmesaCreateContextExt);
  Bind(osmesa, "OSMesaMakeCurrent", api.OsmesaMakeCurrent);
  Bind(osmesa, "OSMesaDestroyContext", api.OsmesaDestroyContext);
  if (dlsym(RTLD_DEFAULT, "OSMesaGetProcAddress") == nullptr) {
    throw std::runtime_error(
        "rendering: MUJOCO_GL=osmesa, but MuJoCo cannot find OSMesaGetProcAddress: load "
        "fastbatch's envs through fastbatch (fastbatch.mujoco.isolate_gl loads "
        "fastbatch_osmesa_proc.so, which provides it)");
  }
  api.description = "OSMesa";
  return api;
}

inline Api Load() {
  const char* gl = std::getenv("MUJOCO_GL");
  const std::string backend = gl == nullptr ? "" : gl;
  if (backend == "osmesa") return LoadOsmesa();
  if (!backend.empty() && backend != "egl") {
    throw std::runtime_error(
        "rendering: fastbatch draws MuJoCo frames with EGL or OSMesa, but MUJOCO_GL=" + backend +
        " asks for another backend (GLFW needs a window and is not supported here); unset "
        "MUJOCO_GL or set MUJOCO_GL=egl (or osmesa)");
  }
  Api api{};
  void* egl = dlopen("libEGL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (egl == nullptr) {
    throw std::runtime_error(
        std::string("rendering: cannot load libEGL.so.1 (") + dlerror() +
        "); install EGL (Debian/Ubuntu: apt install libegl1 libegl-mesa0, or a GPU driver), or "
        "OSMesa (apt install libosmesa6) with MUJOCO_GL=osmesa");
  }
  Bind(egl, "eglGetProcAddress", api.GetProcAddress);
  Bind(egl, "eglGetDisplay", api.GetDisplay);
  Bind(egl, "eglInitialize", api.Initialize);
  Bind(egl, "eglChooseConfig", api.ChooseConfig);
  Bind(egl, "eglBindAPI", api.BindAPI);
  Bind(egl, "eglCreateContext", api.CreateContext);
  Bind(egl, "eglMakeCurrent", api.MakeCurrent);
  Bind(egl, "eglDestroyContext", api.DestroyContext);
  Bind(egl, "eglGetError", api.GetError);
  std::string kind;
  api.display = OpenDisplay(api, kind);
  const EGLint attributes[] = {0x3024,  8,      0x3023, 8, 0x3022, 8, 0x3021, 8,  // RGBA 8
                               0x3025,  24,     0x3026, 8,                        // depth, stencil
                               0x3033,  0x0001,                                   // pbuffer
                               0x3040,  0x0008,                                   // OpenGL
                               kEglNone};
  EGLint count = 0;
  if (!api.ChooseConfig(api.display, attributes, &api.config, 1, &count) || count < 1) {
    throw std::runtime_error("rendering: EGL has no RGBA8 config with depth and stencil");
  }
  if (!api.BindAPI(kEglOpenGlApi)) throw std::runtime_error("rendering: EGL cannot bind OpenGL");
  api.description = "EGL (" + kind + ")";
  return api;
}

}  // namespace detail

// The GL stack, loaded on first use (by any thread); throws std::runtime_error with what is
// missing, every time, when it cannot load.
inline const Api& Gl() {
  static std::mutex mu;
  static std::unique_ptr<Api> api;
  static std::string failure;
  std::lock_guard<std::mutex> lock(mu);
  if (api == nullptr && failure.empty()) {
    try {
      api = std::make_unique<Api>(detail::Load());
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (api == nullptr) throw std::runtime_error(failure);
  return *api;
}

// This thread's MuJoCo render contexts, one per model (keyed by the model whose meshes and
// textures it holds) and visuals, each in an EGL context of its own, as gymnasium's and
// dm_control's renderers keep one GL context per renderer: MuJoCo's renderer leaves GL state
// behind (lights) that changes the next model's frames when two share a GL context. Freed when
// the thread exits.
class ThreadGl {
 public:
  struct ModelGl {
    void* gl = nullptr;            // the EGL or OSMesa context
    std::vector<uint8_t> surface;  // OSMesa's colour buffer (frames go to MuJoCo's own FBO)
    mjvScene scene;
    mjrContext context;
    int width, height;
  };

  static ThreadGl& Current() {
    thread_local ThreadGl gl;
    return gl;
  }

  // The render context of `model` for frames up to width x height in `visuals`, made once, and
  // its EGL context made current.
  ModelGl& For(const mjModel* model, int width, int height, Visuals visuals) {
    auto& slot = models_[{model, visuals == Visuals::kFast}];
    if (slot != nullptr && slot->width >= width && slot->height >= height) {
      MakeCurrent(*slot);
      return *slot;
    }
    if (slot != nullptr) Free(*slot);
    slot = std::make_unique<ModelGl>();
    slot->gl = CreateContext();
    slot->surface.resize(4 * kSurfaceSide * kSurfaceSide);
    MakeCurrent(*slot);
    // The offscreen buffer's size and samples come from the model's visual settings: a shallow
    // copy carries larger ones where the frame needs them, and none for kFast.
    mjModel sized = *model;
    sized.vis.global.offwidth = std::max(model->vis.global.offwidth, width);
    sized.vis.global.offheight = std::max(model->vis.global.offheight, height);
    if (visuals == Visuals::kFast) sized.vis.quality.offsamples = 0;
    slot->width = sized.vis.global.offwidth;
    slot->height = sized.vis.global.offheight;
    std::lock_guard<std::mutex> lock(MakeMutex());  // mjr_makeContext loads GL into globals
    mjv_defaultScene(&slot->scene);
    mjv_makeScene(model, &slot->scene, kMaxGeom);
    mjr_defaultContext(&slot->context);
    mjr_makeContext(&sized, &slot->context, mjFONTSCALE_150);
    return *slot;
  }

  ~ThreadGl() {
    for (auto& entry : models_) Free(*entry.second);
  }

 private:
  static constexpr int kMaxGeom = 10000;
  static constexpr int kSurfaceSide = 16;  // OSMesa's own colour buffer, unused by the frames

  static std::string Hex(EGLint value) {
    char text[16];
    std::snprintf(text, sizeof(text), "%x", static_cast<unsigned>(value));
    return text;
  }

  static std::mutex& MakeMutex() {
    static std::mutex mu;
    return mu;
  }

  static void* CreateContext() {
    const Api& api = Gl();
    std::lock_guard<std::mutex> lock(MakeMutex());  // rare, and Mesa's set-up is not reentrant
    if (api.backend == Backend::kOsmesa) {
      // RGBA (GL_RGBA), 24 depth bits, 8 stencil bits, no accumulation buffer.
      void* context = api.OsmesaCreateContextExt(0x1908, 24, 8, 0, nullptr);
      if (context == nullptr) throw std::runtime_error("rendering: OSMesaCreateContextExt failed");
      return context;
    }
    // The client API is per thread in EGL (OpenGL ES unless bound).
    if (!api.BindAPI(kEglOpenGlApi)) throw std::runtime_error("rendering: EGL cannot bind OpenGL");
    EGLContext context = api.CreateContext(api.display, api.config, nullptr, nullptr);
    if (context == nullptr) {
      throw std::runtime_error("rendering: eglCreateContext failed (EGL error 0x" +
                               Hex(api.GetError()) + ")");
    }
    return context;
  }

  // Makes `gl`'s context current on this thread; false where the platform refuses. OSMesa draws
  // into a small colour buffer of its own: MuJoCo renders offscreen into its framebuffer object
  // and reads the frame from there.
  static bool Bind(ModelGl& gl) noexcept {
    const Api& api = Gl();
    if (api.backend == Backend::kOsmesa) {
      return api.OsmesaMakeCurrent(gl.gl, gl.surface.data(), 0x1401 /* GL_UNSIGNED_BYTE */,
                                   kSurfaceSide, kSurfaceSide);
    }
    return api.MakeCurrent(api.display, nullptr, nullptr, gl.gl);
  }

  // Every draw: another renderer on this thread (gymnasium's, dm_control's) may have made its
  // own context current meanwhile.
  static void MakeCurrent(ModelGl& gl) {
    if (Bind(gl)) return;
    const Api& api = Gl();
    if (api.backend == Backend::kOsmesa)
      throw std::runtime_error("rendering: OSMesaMakeCurrent failed");
    throw std::runtime_error("rendering: eglMakeCurrent failed (EGL error 0x" +
                             Hex(api.GetError()) + ")");
  }

  // Never throws (it runs in a thread's exit, and at process exit, where EGL may already have
  // let its display go): what cannot be made current is left to the driver's own clean-up.
  static void Free(ModelGl& gl) noexcept {
    const Api& api = Gl();
    if (Bind(gl)) {
      std::lock_guard<std::mutex> lock(MakeMutex());
      mjr_freeContext(&gl.context);
      mjv_freeScene(&gl.scene);
    }
    if (api.backend == Backend::kOsmesa) {
      api.OsmesaMakeCurrent(nullptr, nullptr, 0x1401, 0, 0);
      api.OsmesaDestroyContext(gl.gl);
    } else {
      api.MakeCurrent(api.display, nullptr, nullptr, nullptr);
      api.DestroyContext(api.display, gl.gl);
    }
  }

  std::map<std::pair<const mjModel*, bool>, std::unique_ptr<ModelGl>> models_;
};

inline std::vector<uint8_t>& SwapRow() {
  thread_local std::vector<uint8_t> row;
  return row;
}

// A camera and frame size for one env: `camera` -1 is MuJoCo's free camera as
// mjv_defaultFreeCamera places it (dm_control's default), else the model's fixed camera of that
// id.
struct FrameSpec {
  int width = 84;
  int height = 84;
  int camera = 0;
  Visuals visuals = Visuals::kFast;
};

// Draws `data` of `model` from `camera` into `rgb` (height * width * 3 bytes, top row first);
// `frame.camera` is not read. `shared` is the model whose meshes and textures the render context
// holds (the same model, or the one a private copy was made from). The calling thread's EGL
// context stays current afterwards.
inline void Draw(const mjModel* model, const mjModel* shared, mjData* data, const FrameSpec& frame,
                 const mjvCamera& camera, uint8_t* rgb) {
  ThreadGl::ModelGl& gl = ThreadGl::Current().For(shared, frame.width, frame.height, frame.visuals);
  mjvOption option;
  mjvPerturb perturb;
  mjv_defaultOption(&option);
  mjv_defaultPerturb(&perturb);
  mjvCamera view = camera;  // mjv_updateScene may move a tracking camera
  mjv_updateScene(model, data, &option, &perturb, &view, mjCAT_ALL, &gl.scene);
  if (frame.visuals == Visuals::kFast) {
    gl.scene.flags[mjRND_SHADOW] = 0;
    gl.scene.flags[mjRND_REFLECTION] = 0;
    gl.scene.flags[mjRND_SKYBOX] = 0;
  }
  const mjrRect rect{0, 0, frame.width, frame.height};
  mjr_setBuffer(mjFB_OFFSCREEN, &gl.context);
  mjr_render(rect, &gl.scene, &gl.context);
  mjr_readPixels(rgb, nullptr, rect, &gl.context);
  // OpenGL's rows start at the bottom.
  const size_t row = static_cast<size_t>(frame.width) * 3;
  std::vector<uint8_t>& swap = SwapRow();
  swap.resize(row);
  for (int top = 0, bottom = frame.height - 1; top < bottom; ++top, --bottom) {
    std::memcpy(swap.data(), rgb + top * row, row);
    std::memcpy(rgb + top * row, rgb + bottom * row, row);
    std::memcpy(rgb + bottom * row, swap.data(), row);
  }
}

// The same from `frame.camera`: -1 is MuJoCo's free camera as mjv_defaultFreeCamera places it
// (dm_control's), else the model's fixed camera of that id (refused when there is none).
inline void Draw(const mjModel* model, const mjModel* shared, mjData* data, const FrameSpec& frame,
                 uint8_t* rgb) {
  if (frame.camera >= model->ncam) {
    throw std::invalid_argument("camera " + std::to_string(frame.camera) +
                                " does not exist: the model has " + std::to_string(model->ncam) +
                                " cameras (-1 is the free camera)");
  }
  mjvCamera camera;
  mjv_defaultCamera(&camera);
  if (frame.camera < 0) {
    camera.type = mjCAMERA_FREE;
    mjv_defaultFreeCamera(model, &camera);
  } else {
    camera.type = mjCAMERA_FIXED;
    camera.fixedcamid = frame.camera;
  }
  Draw(model, shared, data, frame, camera, rgb);
}

}  // namespace fastbatch::mujoco_render

#endif  // FASTBATCH_MUJOCO_RENDER_H_
