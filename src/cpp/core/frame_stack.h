// FrameStack: the observations of N envs stacked k deep, gymnasium's FrameStackObservation with
// its default padding "reset". A stacked observation row is the env's last k observations on a
// new first axis, [k, *env_obs_shape], oldest first; spec() is the env's spec saying so (the
// observation's low and high tiled k times).
//
// The envs write their own observations into raw_rows(), one row per env. Right after env i's
// reset or step, the thread that did it calls Start (the observation begins an episode: it
// fills all k frames) or Push (it replaces the oldest frame) for env i, which copies the raw row
// into env i's ring of its last k frames and writes the ring, oldest first, to env i's output
// row: one frame and one stacked row copied per env step. An episode's first observation (a
// reset, NEXT_STEP's autoreset step, SAME_STEP's new episode) is Started. The ring, not the
// output row, is the history, so a caller may pass a different output row at every call.
//
// Ownership: the raw rows and the rings belong to this object; the output rows to the caller.
// The stacked spec points into the env's spec for everything but the observation's bounds, so
// that spec must outlive this object.
// Threading: construction and spec() by one thread; Start and Push for env i by whichever
// thread steps or resets env i at the time, with no lock: envs share nothing here, so different
// envs may be stacked at once.
#ifndef FASTBATCH_CORE_FRAME_STACK_H_
#define FASTBATCH_CORE_FRAME_STACK_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fastbatch/abi.h"

namespace fastbatch {

class FrameStack {
 public:
  // Stacks `k` observations of `num_envs` envs of `spec`, whose first `spec_bytes` bytes its
  // table's ABI version lays out (SpecBytes). Throws std::invalid_argument, naming frame_stack,
  // when k < 1, the observation space is Discrete, or it already has FASTBATCH_MAX_NDIM axes.
  FrameStack(const fb_spec& spec, size_t spec_bytes, int64_t k, int64_t num_envs);
  // Not copied or moved: the stacked spec points into this object.
  FrameStack(const FrameStack&) = delete;
  FrameStack& operator=(const FrameStack&) = delete;

  // The env's spec with the stacked observation space.
  const fb_spec& spec() const { return spec_; }
  int64_t k() const { return k_; }
  int64_t frame_bytes() const { return frame_bytes_; }     // one observation of the env itself
  int64_t row_bytes() const { return k_ * frame_bytes_; }  // one stacked output row
  // Where the envs write: [num_envs, frame_bytes()], row i env i's.
  void* raw_rows() { return raw_.data(); }

  // Env i's raw row begins an episode: its ring and `out_row` (row_bytes()) become k copies.
  void Start(int64_t i, uint8_t* out_row);
  // Env i's raw row replaces the oldest frame of its ring, and the ring, oldest first, is
  // written to `out_row` (row_bytes()).
  void Push(int64_t i, uint8_t* out_row);

 private:
  int64_t k_;
  int64_t frame_bytes_;
  fb_spec spec_{};
  std::vector<double> low_, high_;  // the observation's bounds tiled k times (empty: none)
  std::vector<uint8_t> raw_;        // [num_envs, frame_bytes_]
  std::vector<uint8_t> rings_;      // [num_envs, k, frame_bytes_]
  std::vector<int64_t> oldest_;     // [num_envs]: the ring slot holding the oldest frame
};

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_FRAME_STACK_H_
