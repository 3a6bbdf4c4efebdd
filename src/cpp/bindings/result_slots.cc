#include "bindings/result_slots.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "bindings/spec_dict.h"
#include "core/dtype.h"

namespace fastbatch {
namespace {

size_t RoundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

BatchOut Slot::Out() {
  BatchOut out;
  out.obs = obs.mutable_data();
  out.reward = static_cast<float*>(reward.mutable_data());
  out.terminated = static_cast<uint8_t*>(terminated.mutable_data());
  out.truncated = static_cast<uint8_t*>(truncated.mutable_data());
  return out;
}

ResultSlots::ResultSlots(int64_t rows, const fb_spec& spec)
    : rows_(rows),
      obs_row_bytes_(DTypeSize(spec.observation.dtype) * SpaceSize(spec.observation)),
      obs_dtype_(NumpyDType(spec.observation.dtype)),
      reward_dtype_(py::dtype::of<float>()),
      flag_dtype_(py::dtype::of<bool>()) {
  obs_shape_.push_back(static_cast<py::ssize_t>(rows));
  for (py::ssize_t d : SpaceShape(spec.observation)) obs_shape_.push_back(d);
}

Slot& ResultSlots::Acquire() {
  for (Slot& s : slots_) {
    if (s.Free()) return s;
  }
  if (slots_.size() >= kMaxSlots) slots_.erase(slots_.begin());
  slots_.push_back(Make());
  return slots_.back();
}

Slot ResultSlots::Make() const {
  const auto n = static_cast<size_t>(rows_);
  const size_t obs_bytes = RoundUp(n * static_cast<size_t>(obs_row_bytes_));
  const size_t reward_bytes = RoundUp(n * sizeof(float));
  const size_t flag_bytes = RoundUp(n);
  const size_t total = obs_bytes + reward_bytes + 2 * flag_bytes;
  void* memory = std::aligned_alloc(kAlign, total == 0 ? kAlign : total);
  if (memory == nullptr) throw std::bad_alloc();
  std::memset(memory, 0, total);
  py::capsule owner(memory, [](void* p) { std::free(p); });
  auto* base = static_cast<uint8_t*>(memory);
  const std::vector<py::ssize_t> batch{static_cast<py::ssize_t>(rows_)};
  Slot slot;
  slot.obs = py::array(obs_dtype_, obs_shape_, base, owner);
  slot.reward = py::array(reward_dtype_, batch, base + obs_bytes, owner);
  slot.terminated = py::array(flag_dtype_, batch, base + obs_bytes + reward_bytes, owner);
  slot.truncated =
      py::array(flag_dtype_, batch, base + obs_bytes + reward_bytes + flag_bytes, owner);
  return slot;
}

}  // namespace fastbatch
