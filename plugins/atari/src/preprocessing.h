// gymnasium's `AtariPreprocessing` (gymnasium/wrappers/atari_preprocessing.py, gymnasium 1.x)
// over one AleGame, step for step, and optionally fastbatch.atari's `FireOnReset` around it:
//
// - reset: the game's reset (seeded as ale-py's env is, see atari_env.h), then `noops` NOOP
//   steps, `noops` drawn as `np_random.integers(1, noop_max + 1)` from ale-py's env generator
//   (seeded with the seed's word 0, as `seed_game` does; it goes on across unseeded resets); a
//   game that ends during them is reset again (with the same seed when the reset had one);
//   then the lives, and the frame (buffer 0; buffer 1 zeroed).
// - step: up to `frame_skip` game steps of the action, rewards summed, stopping at the end of an
//   episode (or at a lost life, with `terminal_on_life_loss`); the screens of the last two of
//   those steps go to buffers 1 and 0; the observation is buffer 0 max-pooled in place with
//   buffer 1 (when frame_skip > 1) and resized with OpenCV's INTER_AREA (resize_area.h). A step
//   that stops early leaves the buffers as they were, as the wrapper does.
// - `episodic_life` (Stable-Baselines3's `EpisodicLifeEnv`, as in CleanRL's Atari stack;
//   EnvPool's episodic life differs: random noops after a lost life), around the above: a step
//   that loses a life (and leaves some) reports terminated; the reset after it, unless the game
//   itself ended (or the reset has a seed: fastbatch's choice, SB3's wrapper ignores the seed
//   there), is one NOOP step of the above (a real reset if that step ends the episode), so the
//   game goes on with the lives it has left.
// - `fire_reset` (fastbatch.atari.FireOnReset), around both: in games whose action 1 is FIRE
//   (and which have 3 actions or more), after every reset, steps with actions 1 then 2,
//   resetting (unseeded) where one of them ends the episode.
#ifndef FASTBATCH_ATARI_PREPROCESSING_H_
#define FASTBATCH_ATARI_PREPROCESSING_H_

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "ale_game.h"
#include "fastbatch/rng.h"
#include "resize_area.h"
#include "seed_words.h"

namespace fastbatch_atari {

struct PreprocessingSettings {
  int64_t noop_max = 30;
  int frame_skip = 4;
  int64_t screen_width = 84;
  int64_t screen_height = 84;
  bool terminal_on_life_loss = false;
  bool grayscale_obs = true;
  bool episodic_life = false;
  bool fire_reset = false;
  bool scale_obs = false;  // read by AtariEnv, which scales the frames this writes
};

class Preprocessing {
 public:
  Preprocessing(AleGame& game, const PreprocessingSettings& settings)
      : game_(game),
        settings_(settings),
        channels_(settings.grayscale_obs ? 1 : 3),
        resize_(kScreenHeight, kScreenWidth, settings.screen_height, settings.screen_width,
                channels_),
        newest_(static_cast<size_t>(kScreenPixels * channels_)),
        previous_(newest_.size()) {
    if (settings.noop_max > 0 && game.action(0) != ale::PLAYER_A_NOOP) {
      throw std::invalid_argument(
          "noop_max > 0 needs NOOP as action 0 (AtariPreprocessing's rule)");
    }
    if (settings.frame_skip > 1 && game.frameskip() != 1) {
      throw std::invalid_argument(
          "atari_preprocessing skips frames itself: make the env with frameskip=1 (gymnasium's "
          "AtariPreprocessing refuses a base env that skips frames too)");
    }
    fire_ = settings.fire_reset && game.num_actions() >= 3 && game.action(1) == ale::PLAYER_A_FIRE;
  }

  // `seeds`: the reset's seed words, or null for an unseeded reset.
  void Reset(const SeedWords* seeds, uint8_t* obs) {
    ResetLife(seeds, obs);
    if (!fire_) return;
    for (const int64_t action : {int64_t{1}, int64_t{2}}) {
      const FrameResult r = Step(action, obs);
      if (r.terminated || r.truncated) ResetLife(nullptr, obs);
    }
  }

  // A step of the whole stack (the wrapper's, then episodic_life's).
  FrameResult Step(int64_t action, uint8_t* obs) {
    FrameResult r = StepFrames(action, obs);
    if (!settings_.episodic_life) return r;
    real_done_ = r.terminated || r.truncated;
    const int lives = game_.lives();
    if (lives > 0 && lives < episode_lives_) r.terminated = true;
    episode_lives_ = lives;
    return r;
  }

  // Bytes of the frame Reset and Step write.
  size_t FrameSize() const {
    return static_cast<size_t>(settings_.screen_height * settings_.screen_width * channels_);
  }

 private:
  // episodic_life's reset: a NOOP step after a lost life, else the wrapper's reset.
  void ResetLife(const SeedWords* seeds, uint8_t* obs) {
    if (!settings_.episodic_life || real_done_ || seeds != nullptr) {
      ResetOnce(seeds, obs);
    } else {
      const FrameResult r = StepFrames(0, obs);
      if (r.terminated || r.truncated) ResetOnce(nullptr, obs);
    }
    episode_lives_ = game_.lives();  // real_done_ stays as the last step left it, as in SB3
  }

  // A step of AtariPreprocessing.
  FrameResult StepFrames(int64_t action, uint8_t* obs) {
    FrameResult total{0.0, false, false};
    for (int t = 0; t < settings_.frame_skip; ++t) {
      const FrameResult r = game_.Step(action);
      total.reward += r.reward;
      total.terminated = r.terminated;
      total.truncated = r.truncated;
      if (settings_.terminal_on_life_loss) {
        const int lives = game_.lives();
        total.terminated = total.terminated || lives < lives_;
        lives_ = lives;
      }
      if (total.terminated || total.truncated) break;
      if (t == settings_.frame_skip - 2) {
        Capture(previous_.data());
      } else if (t == settings_.frame_skip - 1) {
        Capture(newest_.data());
      }
    }
    Observe(obs);
    return total;
  }

  void ResetOnce(const SeedWords* seeds, uint8_t* obs) {
    Reseed(seeds);
    game_.ResetGame();
    const int64_t noops =
        settings_.noop_max > 0 ? noop_rng_.Integers(1, settings_.noop_max + 1) : 0;
    for (int64_t k = 0; k < noops; ++k) {
      const FrameResult r = game_.Step(0);
      if (r.terminated || r.truncated) {
        Reseed(seeds);
        game_.ResetGame();
      }
    }
    lives_ = game_.lives();
    Capture(newest_.data());
    std::fill(previous_.begin(), previous_.end(), uint8_t{0});
    Observe(obs);
  }

  void Reseed(const SeedWords* seeds) {
    if (seeds == nullptr) return;
    game_.Seed(*seeds);
    fastbatch::Rng::Seed(&noop_state_, seeds->numpy_seed);
  }

  void Capture(uint8_t* buffer) {
    if (settings_.grayscale_obs) {
      game_.Grayscale(buffer);
    } else {
      game_.Rgb(buffer);
    }
  }

  void Observe(uint8_t* obs) {
    if (settings_.frame_skip > 1) {
      uint8_t* __restrict newest = newest_.data();
      const uint8_t* __restrict previous = previous_.data();
      const size_t size = newest_.size();
      for (size_t k = 0; k < size; ++k) newest[k] = std::max(newest[k], previous[k]);
    }
    resize_(newest_.data(), obs);
  }

  AleGame& game_;
  PreprocessingSettings settings_;
  int64_t channels_;
  AreaResize resize_;
  std::vector<uint8_t> newest_, previous_;  // the wrapper's obs_buffer[0] and [1]
  fb_rng noop_state_{};                     // ale-py's env generator (its np_random)
  fastbatch::Rng noop_rng_{&noop_state_};
  int lives_ = 0;
  bool fire_ = false;
  bool real_done_ = true;  // episodic_life: the last step ended the game itself
  int episode_lives_ = 0;  // episodic_life: the lives after the last step or reset
};

}  // namespace fastbatch_atari

#endif  // FASTBATCH_ATARI_PREPROCESSING_H_
