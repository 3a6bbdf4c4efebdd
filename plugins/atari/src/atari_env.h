// One Atari 2600 game as a fastbatch native env: gymnasium's `ALE/<Name>-v5` (ale-py's
// `AtariEnv`, ale_game.h), or with `atari_preprocessing=True` that env inside gymnasium's
// `AtariPreprocessing` (preprocessing.h), step for step.
//
// Params of the game (the v5 registration's kwargs and defaults): `frameskip` (4),
// `repeat_action_probability` (0.25: ALE's sticky actions), `full_action_space` (False: the
// game's minimal action set), `mode` and `difficulty` (-1 for gymnasium's None: the game's
// default; a value the game lacks is a ValueError naming the game's values), `obs_type` ("rgb":
// (210, 160, 3), "grayscale": (210, 160), "ram": (128,); uint8), `max_num_frames_per_episode`
// (108000; 0 for none: ALE truncates after that many frames), `reward_clip` (False: rewards
// by their sign, as Stable-Baselines3's ClipRewardEnv, the raw reward in info "reward", as
// EnvPool does). Not offered: a stochastic frameskip
// tuple, `continuous`, `sound_obs`, human rendering.
//
// Params of the preprocessing, AtariPreprocessing's kwargs and defaults, taken only with
// `atari_preprocessing=True` (set without it, they are refused): `noop_max` (30), `frame_skip`
// (4; the game's `frameskip` must then be 1, as the wrapper requires), `screen_size` (84: square
// frames; `screen_width` and `screen_height`, 0 for screen_size, make them (height, width):
// fastbatch_atari.native_kwargs turns the wrapper's `screen_size=(width, height)` into those two),
// `terminal_on_life_loss` (False), `grayscale_obs` (True; False needs obs_type "rgb"),
// `grayscale_newaxis` (False), `episodic_life` (False: Stable-Baselines3's EpisodicLifeEnv
// around it, see preprocessing.h) and `fire_reset` (False: fastbatch.atari.FireOnReset around
// both).
// Observations: (s, s) gray, (s, s, 1) with the new axis, or (s, s, 3) RGB, uint8; with
// `scale_obs=True` (default False) float32 in [0, 1], the wrapper's `frame / 255.0` (the class's
// ObsType is void: the spec names the element type). Stack them with `frame_stack=4`.
//
// Infos: `lives`, `episode_frame_number`, `frame_number`, and with reward_clip `reward` (float64,
// as every native info).
//
// Seeding, as ale-py's env (seed_words.h): a reset the pool seeded (`reset(seed=...)`) seeds
// ALE and ale-py's generator from the seed and loads the ROM again; a reset it did not seed
// (the autoreset after an episode) only resets the game, so both random streams go on. The env
// tells the two apart by its generator's state: it draws one number after using a seed, so the
// state it left behind differs from any freshly seeded one (the same seed again included).
// Where fastbatch differs: `reset()` with no seed seeds every env from fresh entropy, which here
// reloads the ROM with a random seed (ale-py's env keeps its streams); random either way.
#ifndef FASTBATCH_ATARI_ATARI_ENV_H_
#define FASTBATCH_ATARI_ATARI_ENV_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ale_game.h"
#include "fastbatch/env.h"
#include "games.h"
#include "preprocessing.h"
#include "seed_words.h"

namespace fastbatch_atari {

template <typename Values>
int64_t Largest(const Values& values) {
  int64_t largest = 0;
  for (const auto v : values) largest = std::max(largest, static_cast<int64_t>(v));
  return largest;
}

// The preprocessing params and their defaults (refused unless atari_preprocessing is on).
inline fastbatch::ParamList& AddPreprocessingParams(fastbatch::ParamList& params) {
  return params.Bool("atari_preprocessing", false)
      .Int("noop_max", 30, 0, 100000)
      .Int("frame_skip", 4, 1, 1000)
      .Int("screen_size", 84, 1, kScreenWidth)
      .Int("screen_width", 0, 0, kScreenWidth)    // 0: screen_size
      .Int("screen_height", 0, 0, kScreenHeight)  // 0: screen_size
      .Bool("terminal_on_life_loss", false)
      .Bool("grayscale_obs", true)
      .Bool("grayscale_newaxis", false)
      .Bool("episodic_life", false)
      .Bool("fire_reset", false)
      .Bool("scale_obs", false);
}

// A game's params: `mode` and `difficulty` range up to the game's largest.
inline fastbatch::ParamList AtariParams(const Game& game) {
  const auto settings = SettingsOf(game);
  fastbatch::ParamList params;
  params.Int("frameskip", 4, 1, 1000)
      .Float("repeat_action_probability", 0.25, 0.0, 1.0)
      .Bool("full_action_space", false)
      .Int("mode", -1, -1, Largest(settings->getAvailableModes()))
      .Int("difficulty", -1, -1, Largest(settings->getAvailableDifficulties()))
      .Choice("obs_type", {"rgb", "grayscale", "ram"}, "rgb")
      .Int("max_num_frames_per_episode", 108000, 0, INT32_MAX)
      .Bool("reward_clip", false);
  return AddPreprocessingParams(params);
}

inline ObsKind ObsKindOf(const fastbatch::Params& p) {
  const std::string& name = p.Choice("obs_type");
  return name == "rgb" ? ObsKind::kRgb : name == "grayscale" ? ObsKind::kGrayscale : ObsKind::kRam;
}

// The preprocessing params, checked; null settings when atari_preprocessing is off.
inline std::unique_ptr<PreprocessingSettings> PreprocessingOf(const fastbatch::Params& p) {
  if (!p.Bool("atari_preprocessing")) {
    fastbatch::ParamList defaults;
    AddPreprocessingParams(defaults);
    for (const fastbatch::ParamDecl& decl : defaults.decls()) {
      if (p.Get(decl.name) != decl.default_value) {
        throw std::invalid_argument(decl.name + " applies with atari_preprocessing=True");
      }
    }
    return nullptr;
  }
  if (ObsKindOf(p) == ObsKind::kRam) {
    throw std::invalid_argument("atari_preprocessing reads the screen: obs_type='ram' is refused");
  }
  if (!p.Bool("grayscale_obs") && ObsKindOf(p) != ObsKind::kRgb) {
    throw std::invalid_argument("grayscale_obs=False needs obs_type='rgb'");
  }
  auto settings = std::make_unique<PreprocessingSettings>();
  settings->noop_max = p.Int("noop_max");
  settings->frame_skip = static_cast<int>(p.Int("frame_skip"));
  const int64_t side = p.Int("screen_size");
  settings->screen_width = p.Int("screen_width") > 0 ? p.Int("screen_width") : side;
  settings->screen_height = p.Int("screen_height") > 0 ? p.Int("screen_height") : side;
  settings->terminal_on_life_loss = p.Bool("terminal_on_life_loss");
  settings->episodic_life = p.Bool("episodic_life");
  if (settings->episodic_life && settings->terminal_on_life_loss) {
    throw std::invalid_argument(
        "episodic_life and terminal_on_life_loss both end episodes at a lost life: pick one "
        "(episodic_life goes on with the lives left, terminal_on_life_loss resets the game)");
  }
  settings->grayscale_obs = p.Bool("grayscale_obs");
  settings->fire_reset = p.Bool("fire_reset");
  settings->scale_obs = p.Bool("scale_obs");
  return settings;
}

// The frame's shape for params `p` and their preprocessing settings `pre` (null: none).
inline std::vector<int64_t> ObservationShape(const fastbatch::Params& p,
                                             const PreprocessingSettings* pre) {
  if (pre != nullptr) {
    const int64_t h = pre->screen_height, w = pre->screen_width;
    if (!pre->grayscale_obs) return {h, w, 3};
    return p.Bool("grayscale_newaxis") ? std::vector<int64_t>{h, w, 1} : std::vector<int64_t>{h, w};
  }
  switch (ObsKindOf(p)) {
    case ObsKind::kRgb: return {kScreenHeight, kScreenWidth, 3};
    case ObsKind::kGrayscale: return {kScreenHeight, kScreenWidth};
    case ObsKind::kRam: return {kRamSize};
  }
  return {};
}

inline fastbatch::Spec AtariSpec(const Game& game, const fastbatch::Params& p) {
  const int64_t actions =
      p.Bool("full_action_space")
          ? kFullActionSpace
          : static_cast<int64_t>(SettingsOf(game)->getMinimalActionSet().size());
  const auto pre = PreprocessingOf(p);
  const std::vector<int64_t> shape = ObservationShape(p, pre.get());
  auto spec = fastbatch::Spec(std::string("ALE/") + game.name + "-v5")
                  .Observation(pre && pre->scale_obs ? fastbatch::Box<float>(shape, 0.0, 1.0)
                                                     : fastbatch::Box<uint8_t>(shape, 0.0, 255.0))
                  .Action(fastbatch::Discrete(actions))
                  .Info("lives")
                  .Info("episode_frame_number")
                  .Info("frame_number")
                  .Render(kScreenHeight, kScreenWidth, kRenderFps);  // ale-py's rgb_array
  // The reward before clipping:
  if (p.Bool("reward_clip")) spec.Info("reward");
  return spec;
}

inline GameSettings GameSettingsOf(const fastbatch::Params& p) {
  GameSettings s;
  s.frameskip = static_cast<int>(p.Int("frameskip"));
  s.repeat_action_probability = static_cast<float>(p.Float("repeat_action_probability"));
  s.full_action_space = p.Bool("full_action_space");
  s.mode = p.Int("mode");
  s.difficulty = p.Int("difficulty");
  s.max_num_frames_per_episode = p.Int("max_num_frames_per_episode");
  return s;
}

class AtariEnv {
 public:
  using ObsType = void;  // uint8_t frames, or float with scale_obs: the spec says which
  using ActionType = int64_t;

  AtariEnv(const Game& game, const fastbatch::Params& p)
      : obs_kind_(ObsKindOf(p)),
        reward_clip_(p.Bool("reward_clip")),
        game_(std::make_unique<AleGame>(game, GameSettingsOf(p))) {
    if (const auto settings = PreprocessingOf(p)) {
      preprocessing_ = std::make_unique<Preprocessing>(*game_, *settings);
      if (settings->scale_obs) unscaled_.resize(preprocessing_->FrameSize());
    }
  }

  void Reset(fastbatch::Rng& rng, void* out, double* info) {
    uint8_t* obs = Frame(out);
    SeedWords seeds{};
    const bool seeded = !seen_ || std::memcmp(&rng.State(), &left_, sizeof(fb_rng)) != 0;
    if (seeded) {
      seeds = RecoverSeedWords(rng.State());
      rng.NextU64();  // marks the seed as used (see the header comment)
      left_ = rng.State();
      seen_ = true;
    }
    if (preprocessing_) {
      preprocessing_->Reset(seeded ? &seeds : nullptr, obs);
    } else {
      if (seeded) game_->Seed(seeds);
      game_->ResetGame();
      game_->WriteObs(obs_kind_, obs);
    }
    Scale(out);
    game_->WriteInfo(info);
    if (reward_clip_) info[kRawRewardInfo] = 0.0;
  }

  // The screen as it is now, in colour (ale-py's `render()` in rgb_array mode: the last frame
  // emulated, whatever the observation type and preprocessing).
  void Render(uint8_t* rgb) const { game_->Rgb(rgb); }

  fastbatch::StepResult Step(int64_t action, void* out, double* info) {
    uint8_t* obs = Frame(out);
    FrameResult r;
    if (preprocessing_) {
      r = preprocessing_->Step(action, obs);
    } else {
      r = game_->Step(action);
      game_->WriteObs(obs_kind_, obs);
    }
    Scale(out);
    game_->WriteInfo(info);
    if (!reward_clip_) return {r.reward, r.terminated, r.truncated};
    info[kRawRewardInfo] = r.reward;  // EnvPool's convention: the raw reward in the infos
    const double sign = r.reward > 0.0 ? 1.0 : r.reward < 0.0 ? -1.0 : 0.0;
    return {sign, r.terminated, r.truncated};
  }

 private:
  static constexpr int kRawRewardInfo = 3;  // after lives, episode_frame_number, frame_number

  // Where the uint8 frame goes: the observation row itself, or with scale_obs the frame Scale
  // turns into the row's floats.
  uint8_t* Frame(void* out) {
    return unscaled_.empty() ? static_cast<uint8_t*>(out) : unscaled_.data();
  }

  // With scale_obs: the frame into `out` as AtariPreprocessing's float32 `frame / 255.0`.
  void Scale(void* out) const {
    auto* scaled = static_cast<float*>(out);
    for (size_t k = 0; k < unscaled_.size(); ++k) {
      scaled[k] = static_cast<float>(unscaled_[k]) / 255.0f;
    }
  }

  ObsKind obs_kind_;
  bool reward_clip_;                              // rewards by their sign (SB3's ClipRewardEnv)
  std::unique_ptr<AleGame> game_;                 // on the heap: the env moves, the game does not
  std::unique_ptr<Preprocessing> preprocessing_;  // null without atari_preprocessing
  std::vector<uint8_t> unscaled_;                 // the frame; empty without scale_obs
  fb_rng left_{};                                 // the generator's state after the last seed
  bool seen_ = false;                             // a reset has seeded the game
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
