// fastbatch_osmesa_proc.so: OSMesa for MuJoCo without Mesa's LLVM in the global scope
// (fastbatch/mujoco_render.h, MUJOCO_GL=osmesa). MuJoCo's GL loader looks its platform's
// `OSMesaGetProcAddress` up in the process's global scope, so fastbatch loads this library
// RTLD_GLOBAL (fastbatch._gl) and libOSMesa itself RTLD_LOCAL | RTLD_DEEPBIND: libOSMesa binds
// to its own libLLVM, and neither becomes global for TensorFlow's library to bind to (or to bind
// to TensorFlow's LLVM). This function forwards to libOSMesa's; it needs no OSMesa at build time.
#include <dlfcn.h>

namespace {

using GetProcAddress = void* (*)(const char*);

GetProcAddress LoadOsmesa() {
  void* osmesa = dlopen("libOSMesa.so.8", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  // AddressSanitizer refuses RTLD_DEEPBIND: a sanitizer build loads it plainly.
  if (osmesa == nullptr) osmesa = dlopen("libOSMesa.so.8", RTLD_NOW | RTLD_LOCAL);
  if (osmesa == nullptr) return nullptr;
  return reinterpret_cast<GetProcAddress>(dlsym(osmesa, "OSMesaGetProcAddress"));
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* OSMesaGetProcAddress(const char* name) {
  static const GetProcAddress forward = LoadOsmesa();
  return forward == nullptr ? nullptr : forward(name);
}
