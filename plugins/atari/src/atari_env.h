// One Atari 2600 game as a fastbatch native env: gymnasium's `ALE/<Name>-v5`
// (ale_py/env.py's `AtariEnv`, ale-py 0.12.1) over ALE's C++ interface, step for step.
//
// Params (the v5 registration's kwargs and their defaults): `frameskip` (4: each step repeats
// the action that many frames and sums their rewards), `repeat_action_probability` (0.25:
// ALE's sticky actions), `full_action_space` (False: the game's minimal action set; True: all
// 18), `mode` and `difficulty` (-1 for gymnasium's None: the game's default; other values must
// be among the game's modes / difficulties: above the game's largest a ValueError, in a gap
// an EnvError naming them), `obs_type` ("rgb": (210, 160, 3), "grayscale":
// (210, 160), "ram": (128,), all uint8), `max_num_frames_per_episode` (108000; 0 for none: ALE
// truncates the episode after that many frames). Not offered: a stochastic frameskip (a
// (low, high) tuple), `continuous`, `sound_obs`, `render_mode="human"`.
//
// Infos: `lives`, `episode_frame_number`, `frame_number` (gymnasium's step and reset infos;
// float64 here, as every native info).
//
// Seeding, as gymnasium's env (see seed_words.h): a reset the pool seeded (`reset(seed=...)`)
// sets ALE's random seed from the seed and loads the ROM again, then resets the game; a reset
// the pool did not seed (the autoreset after an episode) only resets the game, so ALE's random
// stream goes on. The env tells the two apart by its generator's state: it draws one number
// after using a seed, so the state it left behind differs from any freshly seeded one (the
// same seed again included). One difference from gymnasium: `reset()` with no seed in
// fastbatch seeds every env from fresh entropy, which here reloads the ROM with a random seed
// (gymnasium's env keeps its stream); the episodes are random either way.
#ifndef FASTBATCH_ATARI_ATARI_ENV_H_
#define FASTBATCH_ATARI_ATARI_ENV_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ale/ale_interface.hpp"
#include "fastbatch/env.h"
#include "games.h"
#include "rom_dir.h"
#include "seed_words.h"

namespace fastbatch_atari {

inline constexpr int64_t kScreenHeight = 210;
inline constexpr int64_t kScreenWidth = 160;
inline constexpr int64_t kRamSize = 128;
inline constexpr int64_t kFullActionSpace = 18;

enum class ObsKind { kRgb = 0, kGrayscale = 1, kRam = 2 };

// ALE's settings of a game, found by its ROM's name (no ROM file is read).
inline std::unique_ptr<ale::RomSettings> SettingsOf(const Game& game) {
  std::unique_ptr<ale::RomSettings> settings(
      ale::buildRomRLWrapper(std::string(game.rom) + ".bin", std::string()));
  if (!settings) throw std::invalid_argument(std::string("ALE has no game ") + game.rom);
  return settings;
}

template <typename Values>
int64_t Largest(const Values& values) {
  int64_t largest = 0;
  for (const auto v : values) largest = std::max(largest, static_cast<int64_t>(v));
  return largest;
}

// The params of a game's env: `mode` and `difficulty` range up to the game's largest (a value
// in a gap of a game's modes is refused by the constructor, naming the game's modes).
inline fastbatch::ParamList AtariParams(const Game& game) {
  const auto settings = SettingsOf(game);
  return fastbatch::ParamList()
      .Int("frameskip", 4, 1, 1000)
      .Float("repeat_action_probability", 0.25, 0.0, 1.0)
      .Bool("full_action_space", false)
      .Int("mode", -1, -1, Largest(settings->getAvailableModes()))
      .Int("difficulty", -1, -1, Largest(settings->getAvailableDifficulties()))
      .Choice("obs_type", {"rgb", "grayscale", "ram"}, "rgb")
      .Int("max_num_frames_per_episode", 108000, 0, INT32_MAX);
}

inline ObsKind ObsKindOf(const fastbatch::Params& p) {
  const std::string& name = p.Choice("obs_type");
  return name == "rgb" ? ObsKind::kRgb : name == "grayscale" ? ObsKind::kGrayscale : ObsKind::kRam;
}

// The game's action count: its minimal set or the full 18.
inline int64_t ActionCount(const Game& game, bool full_action_space) {
  if (full_action_space) return kFullActionSpace;
  return static_cast<int64_t>(SettingsOf(game)->getMinimalActionSet().size());
}

inline fastbatch::Spec AtariSpec(const Game& game, const fastbatch::Params& p) {
  std::vector<int64_t> shape;
  switch (ObsKindOf(p)) {
    case ObsKind::kRgb: shape = {kScreenHeight, kScreenWidth, 3}; break;
    case ObsKind::kGrayscale: shape = {kScreenHeight, kScreenWidth}; break;
    case ObsKind::kRam: shape = {kRamSize}; break;
  }
  return fastbatch::Spec(std::string("ALE/") + game.name + "-v5")
      .Observation(fastbatch::Box(shape, 0.0, 255.0))
      .Action(fastbatch::Discrete(ActionCount(game, p.Bool("full_action_space"))))
      .Info("lives")
      .Info("episode_frame_number")
      .Info("frame_number");
}

class AtariEnv {
 public:
  using ObsType = uint8_t;
  using ActionType = int64_t;

  AtariEnv(const Game& game, const fastbatch::Params& p)
      : rom_path_(RomPath(game)),
        frameskip_(static_cast<int>(p.Int("frameskip"))),
        mode_(p.Int("mode")),
        difficulty_(p.Int("difficulty")),
        obs_kind_(ObsKindOf(p)) {
    ale_->setFloat("repeat_action_probability",
                   static_cast<float>(p.Float("repeat_action_probability")));
    const int64_t max_frames = p.Int("max_num_frames_per_episode");
    if (max_frames > 0) ale_->setInt("max_num_frames_per_episode", static_cast<int>(max_frames));
    ale_->setInt("random_seed", 0);  // replaced by the first reset's seed
    LoadGame(game);
    action_set_ =
        p.Bool("full_action_space") ? ale_->getLegalActionSet() : ale_->getMinimalActionSet();
  }

  void Reset(fastbatch::Rng& rng, uint8_t* obs, double* info) {
    if (!seen_ || std::memcmp(&rng.State(), &left_, sizeof(fb_rng)) != 0) {
      const SeedWords seeds = RecoverSeedWords(rng.State());
      ale_->setInt("random_seed", seeds.ale_seed);
      LoadRom();
      rng.NextU64();  // marks the seed as used (see the header comment)
      left_ = rng.State();
      seen_ = true;
    }
    ale_->reset_game();
    Observe(obs, info);
  }

  fastbatch::StepResult Step(int64_t action, uint8_t* obs, double* info) {
    const ale::Action ale_action = action_set_[static_cast<size_t>(action)];
    double reward = 0.0;
    for (int k = 0; k < frameskip_; ++k) reward += ale_->act(ale_action, 1.0f);
    const bool terminated = ale_->game_over(false);
    const bool truncated = ale_->game_truncated();
    Observe(obs, info);
    return {reward, terminated, truncated};
  }

 private:
  static std::filesystem::path RomPath(const Game& game) {
    const std::string dir = RomDir();
    if (dir.empty()) {
      throw std::runtime_error(
          "no ROM directory: import fastbatch_atari and call fastbatch_atari.register() (it "
          "finds the ROMs of the installed ale-py)");
    }
    std::filesystem::path path = std::filesystem::path(dir) / (std::string(game.rom) + ".bin");
    if (!std::filesystem::is_regular_file(path)) {
      throw std::runtime_error("no ROM for " + std::string(game.rom) + ": " + path.string() +
                               " is missing (the ROMs come with ale-py: pip install ale-py)");
    }
    return path;
  }

  // The constructor's load also checks mode and difficulty against the game's.
  void LoadGame(const Game& game) {
    LoadRomOnly();
    CheckSetting("mode", mode_, ale_->getAvailableModes(), game);
    CheckSetting("difficulty", difficulty_, ale_->getAvailableDifficulties(), game);
    ApplySettings();
  }

  // ale_py's `load_game`: the ROM, then the mode and difficulty that were asked for.
  void LoadRom() {
    LoadRomOnly();
    ApplySettings();
  }

  void LoadRomOnly() { ale_->loadROM(rom_path_); }

  void ApplySettings() {
    if (mode_ >= 0) ale_->setMode(static_cast<ale::game_mode_t>(mode_));
    if (difficulty_ >= 0) ale_->setDifficulty(static_cast<ale::difficulty_t>(difficulty_));
  }

  template <typename Values>
  static void CheckSetting(const char* name, int64_t value, const Values& available,
                           const Game& game) {
    if (value < 0) return;
    std::string listed;
    for (const auto v : available) {
      if (static_cast<int64_t>(v) == value) return;
      listed += (listed.empty() ? "" : ", ") + std::to_string(v);
    }
    throw std::invalid_argument(std::string(name) + "=" + std::to_string(value) +
                                " is not one of " + game.name + "'s: " + listed);
  }

  void Observe(uint8_t* obs, double* info) {
    const ale::ALEScreen& screen = ale_->environment->getScreen();
    auto& palette = ale_->theOSystem->colourPalette();
    const size_t pixels = static_cast<size_t>(kScreenHeight * kScreenWidth);
    switch (obs_kind_) {
      case ObsKind::kRgb: palette.applyPaletteRGB(obs, screen.getArray(), pixels); break;
      case ObsKind::kGrayscale:
        palette.applyPaletteGrayscale(obs, screen.getArray(), pixels);
        break;
      case ObsKind::kRam: std::memcpy(obs, ale_->getRAM().array(), kRamSize); break;
    }
    info[0] = ale_->lives();
    info[1] = ale_->getEpisodeFrameNumber();
    info[2] = ale_->getFrameNumber();
  }

  std::unique_ptr<ale::ALEInterface> ale_ = std::make_unique<ale::ALEInterface>();  // not movable
  std::filesystem::path rom_path_;
  int frameskip_;
  int64_t mode_, difficulty_;
  ObsKind obs_kind_;
  ale::ActionVect action_set_;
  fb_rng left_{};      // the generator's state after the last seeded reset
  bool seen_ = false;  // a reset has seeded ALE
};

// Game G of kGames as its own env class: one table per id.
template <size_t G>
class AtariGame : public AtariEnv {
 public:
  static_assert(G < kNumGames, "a game of kGames");
  static fastbatch::ParamList DeclareParams() { return AtariParams(kGames[G]); }
  static fastbatch::Spec MakeSpec(const fastbatch::Params& p) { return AtariSpec(kGames[G], p); }
  explicit AtariGame(const fastbatch::Params& p) : AtariEnv(kGames[G], p) {}
};

}  // namespace fastbatch_atari

#endif  // FASTBATCH_ATARI_ATARI_ENV_H_
