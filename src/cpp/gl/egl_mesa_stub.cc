// An empty library named libEGL_mesa.so.0, linked into fastbatch_gl_shim.so only to give it
// that DT_NEEDED entry (the system's Mesa is found by soname at run time); never installed.
extern "C" void fastbatch_egl_mesa_stub(void) {}
