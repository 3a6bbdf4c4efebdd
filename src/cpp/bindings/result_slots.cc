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

ResultSlots::ResultSlots(int64_t rows, const fb_spec& spec, int64_t env_ids)
    : rows_(rows),
      env_ids_(env_ids),
      obs_row_bytes_(DTypeSize(spec.observation.dtype) * SpaceSize(spec.observation)),
      obs_dtype_(NumpyDType(spec.observation.dtype)),
      reward_dtype_(py::dtype::of<float>()),
      flag_dtype_(py::dtype::of<bool>()) {
  obs_shape_.push_back(static_cast<py::ssize_t>(rows));
  for (py::ssize_t d : SpaceShape(spec.observation)) obs_shape_.push_back(d);
}

Slot& ResultSlots::Acquire() {
  for (Slot& s : slots_) {
    if (!s.Free()) continue;
    if (!s.Writeable()) s = Make();  // the old arrays (and memory) go with the old slot
    return s;
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
  const size_t ids_bytes = RoundUp(static_cast<size_t>(env_ids_) * sizeof(int64_t));
  const size_t total = obs_bytes + reward_bytes + 2 * flag_bytes + ids_bytes;
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
  // Pointers kept apart from the arrays: a caller that made an array read-only and dropped it
  // does not stop the slot's reuse (numpy's mutable_data would refuse it).
  slot.out.obs = base;
  slot.out.reward = reinterpret_cast<float*>(base + obs_bytes);
  slot.out.terminated = base + obs_bytes + reward_bytes;
  slot.out.truncated = base + obs_bytes + reward_bytes + flag_bytes;
  if (env_ids_ > 0) {
    slot.env_ids_out = reinterpret_cast<int64_t*>(base + obs_bytes + reward_bytes + 2 * flag_bytes);
    slot.env_ids = py::array(py::dtype::of<int64_t>(),
                             std::vector<py::ssize_t>{static_cast<py::ssize_t>(env_ids_)},
                             slot.env_ids_out, owner);
  }
  return slot;
}

}  // namespace fastbatch
