#include "frame_stack.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "dtype.h"

namespace fastbatch {

FrameStack::FrameStack(const fb_spec& spec, size_t spec_bytes, int64_t k, int64_t num_envs)
    : k_(k) {
  const fb_space& obs = spec.observation;
  const std::string id = spec.id;
  if (k < 1) {
    throw std::invalid_argument("frame_stack must be a positive integer, got " + std::to_string(k));
  }
  if (obs.is_discrete) {
    throw std::invalid_argument(id + ": frame_stack needs a Box observation space, not Discrete");
  }
  if (obs.ndim >= FASTBATCH_MAX_NDIM) {
    throw std::invalid_argument(id + ": frame_stack adds a first axis to its observations of " +
                                std::to_string(obs.ndim) + " axes, and observations have at most " +
                                std::to_string(FASTBATCH_MAX_NDIM));
  }
  int64_t size = 1;  // elements of one observation
  for (int32_t d = 0; d < obs.ndim; ++d) size *= obs.shape[d];
  frame_bytes_ = size * DTypeSize(obs.dtype);
  // The fields the table's version has (an older table's spec is a shorter struct).
  std::memcpy(&spec_, &spec, spec_bytes);
  fb_space& stacked = spec_.observation;
  stacked.ndim = obs.ndim + 1;
  stacked.shape[0] = k;
  for (int32_t d = 0; d < obs.ndim; ++d) stacked.shape[d + 1] = obs.shape[d];
  auto tile = [&](const double* bounds, std::vector<double>* out) -> const double* {
    if (bounds == nullptr) return nullptr;
    for (int64_t s = 0; s < k; ++s) out->insert(out->end(), bounds, bounds + size);
    return out->data();
  };
  stacked.low = tile(obs.low, &low_);
  stacked.high = tile(obs.high, &high_);
  const auto n = static_cast<size_t>(num_envs);
  raw_.assign(n * static_cast<size_t>(frame_bytes_), 0);
  rings_.assign(n * static_cast<size_t>(row_bytes()), 0);
  oldest_.assign(n, 0);
}

void FrameStack::Start(int64_t i, uint8_t* out_row) {
  const auto frame = static_cast<size_t>(frame_bytes_);
  const auto row_bytes = static_cast<size_t>(this->row_bytes());
  const auto env = static_cast<size_t>(i);
  const uint8_t* raw = raw_.data() + env * frame;
  for (size_t at = 0; at < row_bytes; at += frame) std::memcpy(out_row + at, raw, frame);
  std::memcpy(rings_.data() + env * row_bytes, out_row, row_bytes);
  oldest_[env] = 0;
}

void FrameStack::Push(int64_t i, uint8_t* out_row) {
  const auto frame = static_cast<size_t>(frame_bytes_);
  const auto row_bytes = static_cast<size_t>(this->row_bytes());
  const auto env = static_cast<size_t>(i);
  uint8_t* ring = rings_.data() + env * row_bytes;
  auto oldest = static_cast<size_t>(oldest_[env]);
  std::memcpy(ring + oldest * frame, raw_.data() + env * frame, frame);  // the newest now
  oldest = oldest + 1 == static_cast<size_t>(k_) ? 0 : oldest + 1;
  oldest_[env] = static_cast<int64_t>(oldest);
  const size_t older = row_bytes - oldest * frame;  // ring slots [oldest, k), then [0, oldest)
  std::memcpy(out_row, ring + oldest * frame, older);
  std::memcpy(out_row + older, ring, oldest * frame);
}

}  // namespace fastbatch
