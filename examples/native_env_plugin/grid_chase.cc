// GridChase-v0: an agent chases a target on a size x size grid, seen as an image.
//
// Observation (uint8, 3 x size x size, channels first): channel 0 the agent, 1 the target,
// 2 the walls (the border, when `walls` is on), 255 where present and 0 elsewhere.
// Action: Discrete(5): stay, up, down, left, right. Moving into a wall or off the grid stays.
// Reward: 1 on reaching the target (the episode terminates); with `reward="shaped"` also minus
// 0.01 per step. The time limit, 4 * size steps, depends on the `size` param, like the spaces.
// Rendering (`render_mode="rgb_array"`): the grid drawn 16 pixels a cell, the agent blue, the
// target red, walls gray, on white.
#include <cstdint>
#include <cstring>
#include <string>

#include "fastbatch/env.h"

class GridChase {
 public:
  using ObsType = uint8_t;
  using ActionType = int64_t;

  // Params come first: the spaces and the time limit depend on them.
  static fastbatch::ParamList DeclareParams() {
    return fastbatch::ParamList()
        .Int("size", 8, 3, 64)
        .Bool("walls", false)
        .Choice("reward", {"sparse", "shaped"}, "sparse");
  }

  static fastbatch::Spec MakeSpec(const fastbatch::Params& p) {
    const int64_t size = p.Int("size");
    return fastbatch::Spec("GridChase-v0")
        .Observation(fastbatch::Box({3, size, size}, 0.0, 255.0))  // uint8: from ObsType
        .Action(fastbatch::Discrete(5))
        .MaxEpisodeSteps(4 * size)
        .Render(static_cast<int32_t>(size * kCell), static_cast<int32_t>(size * kCell), 8.0);
  }

  static constexpr int64_t kCell = 16;  // pixels a side of one cell in the rendered frame

  explicit GridChase(const fastbatch::Params& p)
      : size_(p.Int("size")),
        walls_(p.Bool("walls")),
        step_cost_(p.Choice("reward") == "shaped" ? 0.01 : 0.0) {}

  void Reset(fastbatch::Rng& rng, uint8_t* obs) {
    const int64_t lo = walls_ ? 1 : 0;
    const int64_t cells = size_ - 2 * lo;
    do {
      ax_ = lo + static_cast<int64_t>(rng.NextU64() % static_cast<uint64_t>(cells));
      ay_ = lo + static_cast<int64_t>(rng.NextU64() % static_cast<uint64_t>(cells));
      tx_ = lo + static_cast<int64_t>(rng.NextU64() % static_cast<uint64_t>(cells));
      ty_ = lo + static_cast<int64_t>(rng.NextU64() % static_cast<uint64_t>(cells));
    } while (ax_ == tx_ && ay_ == ty_);
    Draw(obs);
  }

  fastbatch::StepResult Step(int64_t action, uint8_t* obs) {
    static constexpr int64_t kDx[] = {0, 0, 0, -1, 1};
    static constexpr int64_t kDy[] = {0, -1, 1, 0, 0};
    const int64_t x = ax_ + kDx[action], y = ay_ + kDy[action];
    if (Free(x, y)) ax_ = x, ay_ = y;
    Draw(obs);
    const bool reached = ax_ == tx_ && ay_ == ty_;
    return {(reached ? 1.0 : 0.0) - step_cost_, reached};
  }

  // The frame Spec::Render declares: size * kCell pixels a side, RGB.
  void Render(uint8_t* rgb) const {
    const int64_t side = size_ * kCell;
    for (int64_t py = 0; py < side; ++py) {
      for (int64_t px = 0; px < side; ++px) {
        const int64_t x = px / kCell, y = py / kCell;
        uint8_t color[3] = {255, 255, 255};
        if (x == ax_ && y == ay_) {
          color[0] = 40, color[1] = 90, color[2] = 220;
        } else if (x == tx_ && y == ty_) {
          color[0] = 220, color[1] = 50, color[2] = 40;
        } else if (!Free(x, y)) {
          color[0] = color[1] = color[2] = 128;
        }
        std::memcpy(rgb + (py * side + px) * 3, color, 3);
      }
    }
  }

 private:
  bool Free(int64_t x, int64_t y) const {
    const int64_t lo = walls_ ? 1 : 0;
    return x >= lo && y >= lo && x < size_ - lo && y < size_ - lo;
  }

  void Draw(uint8_t* obs) const {
    const int64_t plane = size_ * size_;
    std::memset(obs, 0, static_cast<size_t>(3 * plane));
    obs[ay_ * size_ + ax_] = 255;
    obs[plane + ty_ * size_ + tx_] = 255;
    if (!walls_) return;
    for (int64_t k = 0; k < size_; ++k) {
      obs[2 * plane + k] = obs[2 * plane + (size_ - 1) * size_ + k] = 255;
      obs[2 * plane + k * size_] = obs[2 * plane + k * size_ + size_ - 1] = 255;
    }
  }

  int64_t size_;
  bool walls_;
  double step_cost_;
  int64_t ax_ = 0, ay_ = 0, tx_ = 0, ty_ = 0;
};

FASTBATCH_EXPORT_ENV(GridChase)
