// fastbatch_gl_shim.so: keeps Mesa's LLVM and TensorFlow's apart (fastbatch/mujoco_render.h).
// fastbatch opens it with RTLD_DEEPBIND before loading EGL. It depends on libEGL_mesa.so.0, so
// Mesa's EGL is loaded with this library first in its lookup scope, and Mesa's `dlopen` calls
// reach the one below, which opens Mesa's driver (and so its libLLVM) with RTLD_DEEPBIND and
// without RTLD_GLOBAL: the driver binds to its own LLVM before any global one (TensorFlow's), and
// adds nothing to the global scope for TensorFlow's library to bind to. Where libEGL_mesa.so.0 is
// missing (a vendor's EGL only) the shim does not load and nothing changes.
#include <dlfcn.h>

extern "C" __attribute__((visibility("default"))) void* dlopen(const char* file, int mode) {
  using Open = void* (*)(const char*, int);
  static Open next = reinterpret_cast<Open>(dlsym(RTLD_NEXT, "dlopen"));
  return next(file, (mode & ~RTLD_GLOBAL) | RTLD_DEEPBIND);
}
