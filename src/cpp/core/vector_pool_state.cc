// The pool's calls on one env's own state (vector_pool.h, "state and rendering"): get_state,
// set_state and render, each for an env that is not in flight.
#include <cstddef>
#include <string>

#include "plugin_loader.h"
#include "vector_pool.h"

namespace fastbatch {

void VectorPool::CheckNotInFlight(int64_t env) const {
  if (is_async() && in_flight_[static_cast<size_t>(env)]) {
    throw AsyncStateError("env " + std::to_string(env) + " is in flight; recv() it first");
  }
}

int64_t VectorPool::GetState(int64_t env, double* out, int64_t capacity) const {
  CheckNotInFlight(env);
  // A table built before get_state existed is shorter: the field is then not there to read.
  if (api_->struct_size < offsetof(fb_env_api, get_state) + sizeof(api_->get_state) ||
      api_->get_state == nullptr) {
    return 0;
  }
  return api_->get_state(block_, env, out, capacity);
}

bool VectorPool::can_set_state() const { return SetStateOf(api_) != nullptr; }

void VectorPool::SetState(int64_t env, const double* in, int64_t size) {
  const SetStateFn set_state = SetStateOf(api_);
  if (set_state == nullptr) throw std::logic_error("this env's state cannot be set");
  CheckNotInFlight(env);
  fb_error error{};
  if (set_state(block_, env, in, size, &error) != 0) {
    throw std::invalid_argument("env " + std::to_string(env) + ": " + error.message);
  }
}

FrameSize VectorPool::frame() const {
  return RenderOf(api_) != nullptr ? FrameOf(spec_, api_->abi_version) : FrameSize{};
}

void VectorPool::Render(int64_t env, uint8_t* rgb) const {
  const RenderFn render = RenderOf(api_);
  if (render == nullptr || frame().height == 0) throw std::logic_error("this env does not render");
  CheckNotInFlight(env);
  fb_error error{};
  if (render(block_, env, rgb, &error) != 0) {
    throw EnvError(env, std::string("render failed: ") + error.message);
  }
}

}  // namespace fastbatch
