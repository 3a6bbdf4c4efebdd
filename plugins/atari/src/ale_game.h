// One game as ale-py's `AtariEnv` (ale_py/env.py, 0.12.1) runs it over ALE's C++ interface:
// settings, ROM loading with mode and difficulty, seeding, the step (`frameskip` frames of one
// action, rewards summed), observations and infos. atari_env.h makes it a fastbatch env;
// preprocessing.h steps it as gymnasium's AtariPreprocessing does.
#ifndef FASTBATCH_ATARI_ALE_GAME_H_
#define FASTBATCH_ATARI_ALE_GAME_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "ale/ale_interface.hpp"
#include "games.h"
#include "palette_tables.h"
#include "rom_dir.h"
#include "seed_words.h"

namespace fastbatch_atari {

inline constexpr int64_t kScreenHeight = 210;
inline constexpr int64_t kScreenWidth = 160;
inline constexpr int64_t kScreenPixels = kScreenHeight * kScreenWidth;
inline constexpr int64_t kRamSize = 128;
inline constexpr int64_t kFullActionSpace = 18;
inline constexpr double kRenderFps = 30.0;  // ale-py's metadata["render_fps"]

enum class ObsKind { kRgb = 0, kGrayscale = 1, kRam = 2 };

// ALE's settings of a game, found by its ROM's name (no ROM file is read).
inline std::unique_ptr<ale::RomSettings> SettingsOf(const Game& game) {
  std::unique_ptr<ale::RomSettings> settings(
      ale::buildRomRLWrapper(std::string(game.rom) + ".bin", std::string()));
  if (!settings) throw std::invalid_argument(std::string("ALE has no game ") + game.rom);
  return settings;
}

struct GameSettings {
  int frameskip = 4;
  float repeat_action_probability = 0.25f;
  bool full_action_space = false;
  int64_t mode = -1, difficulty = -1;           // -1: the game's default
  int64_t max_num_frames_per_episode = 108000;  // 0: none
};

struct FrameResult {
  double reward;
  bool terminated, truncated;
};

class AleGame {
 public:
  AleGame(const Game& game, const GameSettings& settings)
      : game_(game), settings_(settings), rom_path_(RomPath(game)) {
    ale_->setFloat("repeat_action_probability", settings.repeat_action_probability);
    if (settings.max_num_frames_per_episode > 0) {
      ale_->setInt("max_num_frames_per_episode",
                   static_cast<int>(settings.max_num_frames_per_episode));
    }
    // The ROM loads at the first seed (Seed), which every env's first reset has: a load builds
    // ALE's colour-averaging tables, about 0.1 s of CPU, so loading here too would double the
    // start-up. The checks and the action set read the game's settings instead, as ALE does.
    const auto rom = SettingsOf(game);
    CheckSetting("mode", settings.mode, rom->getAvailableModes());
    CheckSetting("difficulty", settings.difficulty, rom->getAvailableDifficulties());
    action_set_ = settings.full_action_space ? rom->getAllActions() : rom->getMinimalActionSet();
  }

  // ale-py's `seed_game(seed)` + `load_game()` for the seed words of a seed.
  void Seed(const SeedWords& seeds) { Load(seeds.ale_seed); }

  void ResetGame() {
    if (!loaded_) Load(0);  // ale-py's env is seeded with 0 until a reset gives a seed
    ale_->reset_game();
  }

  // ale-py's `step(action)`: `frameskip` frames of the action, rewards summed.
  FrameResult Step(int64_t action) {
    const ale::Action ale_action = action_set_[static_cast<size_t>(action)];
    double reward = 0.0;
    for (int k = 0; k < settings_.frameskip; ++k) reward += ale_->act(ale_action, 1.0f);
    return {reward, ale_->game_over(false), ale_->game_truncated()};
  }

  void WriteObs(ObsKind kind, uint8_t* obs) {
    switch (kind) {
      case ObsKind::kRgb: Rgb(obs); break;
      case ObsKind::kGrayscale: Grayscale(obs); break;
      case ObsKind::kRam: std::memcpy(obs, ale_->getRAM().array(), kRamSize); break;
    }
  }

  // ale-py's step and reset infos: lives, episode_frame_number, frame_number.
  void WriteInfo(double* info) const {
    info[0] = ale_->lives();
    info[1] = ale_->getEpisodeFrameNumber();
    info[2] = ale_->getFrameNumber();
  }

  void Rgb(uint8_t* out) {
    if (!loaded_) Load(0);  // the screen of an env not reset yet (render)
    palette_.Rgb(ale_->environment->getScreen().getArray(), out, kScreenPixels);
  }
  void Grayscale(uint8_t* out) {
    palette_.Gray(ale_->environment->getScreen().getArray(), out, kScreenPixels);
  }

  int lives() const { return ale_->lives(); }
  int64_t num_actions() const { return static_cast<int64_t>(action_set_.size()); }
  ale::Action action(int64_t index) const { return action_set_[static_cast<size_t>(index)]; }
  const Game& game() const { return game_; }
  int frameskip() const { return settings_.frameskip; }

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

  void Load(int32_t seed) {
    ale_->setInt("random_seed", seed);
    ale_->loadROM(rom_path_);
    ale::ColourPalette& colours = ale_->theOSystem->colourPalette();
    palette_.Build([&](uint8_t* indices, uint8_t* gray,
                       size_t n) { colours.applyPaletteGrayscale(gray, indices, n); },
                   [&](uint8_t* indices, uint8_t* rgb, size_t n) {
                     colours.applyPaletteRGB(rgb, indices, n);
                   });
    ApplyModeAndDifficulty();
    loaded_ = true;
  }

  void ApplyModeAndDifficulty() {
    if (settings_.mode >= 0) ale_->setMode(static_cast<ale::game_mode_t>(settings_.mode));
    if (settings_.difficulty >= 0) {
      ale_->setDifficulty(static_cast<ale::difficulty_t>(settings_.difficulty));
    }
  }

  template <typename Values>
  void CheckSetting(const char* name, int64_t value, const Values& available) const {
    if (value < 0) return;
    std::string listed;
    for (const auto v : available) {
      if (static_cast<int64_t>(v) == value) return;
      listed += (listed.empty() ? "" : ", ") + std::to_string(v);
    }
    throw std::invalid_argument(std::string(name) + "=" + std::to_string(value) +
                                " is not one of " + game_.name + "'s: " + listed);
  }

  Game game_;
  GameSettings settings_;
  std::filesystem::path rom_path_;
  std::unique_ptr<ale::ALEInterface> ale_ = std::make_unique<ale::ALEInterface>();
  ale::ActionVect action_set_;
  PaletteTables palette_;  // the loaded ROM's palette as tables
  bool loaded_ = false;    // a ROM is loaded (the first seed loads it)
};

}  // namespace fastbatch_atari

#endif  // FASTBATCH_ATARI_ALE_GAME_H_
