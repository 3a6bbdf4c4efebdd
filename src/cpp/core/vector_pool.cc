#include "vector_pool.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>

#include "dtype.h"
#include "fastbatch/env.h"
#include "plugin_loader.h"

namespace fastbatch {

VectorPool::VectorPool(const fb_env_api* api, const PoolConfig& config)
    : api_(api),
      spec_(api->spec()),
      has_v2_fields_(HasV2Fields(api)),
      num_envs_(config.num_envs),
      mode_(config.autoreset_mode),
      max_threads_(ClampThreads(config)),
      chunk_size_(config.num_envs > 0 ? ChunkSize(config.num_envs, max_threads_) : 1),
      num_chunks_(config.num_envs > 0 ? (config.num_envs + chunk_size_ - 1) / chunk_size_ : 0),
      tuner_(MaxActiveThreads(config), max_threads_),
      seeds_(std::max<int64_t>(config.num_envs, 0), api->abi_version),
      batch_size_(config.batch_size <= 0 ? config.num_envs : config.batch_size) {
  if (num_envs_ <= 0) throw std::invalid_argument("num_envs must be positive");
  if (batch_size_ > num_envs_) throw std::invalid_argument("batch_size must be at most num_envs");
  fb_error error{};
  block_ = api_->create(num_envs_, config.params.data(), &error);
  if (block_ == nullptr) {
    if (error.env_index == FB_ERROR_INVALID_ARGUMENT) throw std::invalid_argument(error.message);
    throw EnvError(-1, std::string("creating envs failed: ") + error.message);
  }
  if (has_v2_fields_ && api_->block_spec != nullptr) {  // spaces that depend on the params
    spec_ = api_->block_spec(block_);
    try {
      ValidateSpec(spec_, api_->abi_version, "the spec for the params given");
      ValidateFrame(api_, spec_, "the spec for the params given");
    } catch (...) {
      api_->destroy(block_);
      throw;
    }
  }
  // A negative limit means the env's own (its spec's, which may depend on the params).
  max_episode_steps_ =
      config.max_episode_steps < 0 ? spec_->max_episode_steps : config.max_episode_steps;
  frame_bytes_ = DTypeSize(spec_->observation.dtype);
  for (int32_t d = 0; d < spec_->observation.ndim; ++d) frame_bytes_ *= spec_->observation.shape[d];
  num_agents_ = NumAgents(spec_, api_->abi_version);
  obs_row_bytes_ = num_agents_ * frame_bytes_;  // an env's rows: one observation per agent
  if (num_agents_ > 1 && config.frame_stack != 1) {
    // The message first: spec_ may belong to the block (block_spec), which destroy frees.
    const std::string message = std::string(spec_->id) + " holds " + std::to_string(num_agents_) +
                                " agents per env: frame_stack is not supported yet for "
                                "multi-agent envs (got frame_stack=" +
                                std::to_string(config.frame_stack) + "; use 1)";
    api_->destroy(block_);
    throw std::invalid_argument(message);
  }
  if (config.frame_stack != 1) {
    try {
      frame_stack_.emplace(*spec_, SpecBytes(has_v2_fields_ ? api_->abi_version : 1),
                           config.frame_stack, num_envs_);
    } catch (...) {
      api_->destroy(block_);
      throw;
    }
    spec_ = &frame_stack_->spec();
    obs_row_bytes_ = frame_stack_->row_bytes();
  }

  const auto n = static_cast<size_t>(num_envs_);
  in_flight_.assign(n, 0);  // stays all zero in sync mode
  needs_reset_.assign(n, 0);
  elapsed_.assign(n, 0);
  ep_return_.assign(n, 0.0);
  ep_start_.assign(n, Now());
  done_.assign(n, 0);
  agent_alive_.assign(n * static_cast<size_t>(num_agents_), 1);
  agent_active_.assign(n * static_cast<size_t>(num_agents_), 1);
  ep_return_out_.assign(n, 0.0);
  ep_length_out_.assign(n, 0);
  ep_time_out_.assign(n, 0.0);
  if (mode_ == AutoresetMode::kSameStep)
    final_obs_.assign(n * static_cast<size_t>(obs_row_bytes_), 0);
  info_row_ = InfoRowSize(spec_, has_v2_fields_ ? api_->abi_version : 1);
  const auto info_row = static_cast<size_t>(info_row_);
  info_.assign(n * info_row, 0.0);
  if (mode_ == AutoresetMode::kSameStep) final_info_.assign(n * info_row, 0.0);
  errors_.resize(static_cast<size_t>(num_chunks_));
  // Chunks are sized by cost only where several threads share them (SizeChunksByCost).
  if (max_threads_ > 1) {
    chunk_seconds_.assign(static_cast<size_t>(num_chunks_), 0.0);
  } else {
    timed_steps_ = kCostSteps;
  }
  failed_.assign(static_cast<size_t>(num_chunks_), 0);
  ended_.assign(static_cast<size_t>(num_chunks_), 0);
  seeds_.SeedFromEntropy(0, num_envs_);

  workers_ = std::make_unique<WorkerPool>(max_threads_ - 1);
  tuner_.set_ceiling(max_threads_);  // async mode raises it while the envs' steps block
  if (is_async()) StartAsync(MaxActiveThreads(config));
}

VectorPool::~VectorPool() {
  StopAsync();
  workers_.reset();  // join threads before the envs go away
  if (block_ != nullptr) api_->destroy(block_);
}

int VectorPool::ClampThreads(const PoolConfig& config) {
  return static_cast<int>(
      std::clamp<int64_t>(config.num_threads, 1, std::max<int64_t>(1, config.num_envs)));
}

int VectorPool::MaxActiveThreads(const PoolConfig& config) {
  const int threads = ClampThreads(config);
  if (config.batch_size <= 0 || config.batch_size >= config.num_envs) return threads;
  return static_cast<int>(std::clamp<int64_t>(config.max_async_threads, threads,
                                              std::max<int64_t>(threads, config.num_envs)));
}

double VectorPool::Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void VectorPool::Seed(int64_t env, const uint32_t* words, size_t count) {
  // An env in flight (async mode) is owned by a worker: reseeding discards every step in
  // flight first, as the reset that follows a seed would.
  if (is_async() && in_flight_[static_cast<size_t>(env)]) DrainAsync();
  seeds_.Seed(env, words, count);
}

void VectorPool::Seed(int64_t env, uint64_t seed) {
  const uint32_t words[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  Seed(env, words, 2);
}

void VectorPool::StartEpisode(int64_t i, double now) {
  const auto k = static_cast<size_t>(i);
  needs_reset_[k] = 0;
  elapsed_[k] = 0;
  ep_return_[k] = 0.0;
  ep_start_[k] = now;
  if (num_agents_ > 1) {  // every agent is back
    std::fill_n(agent_alive_.begin() + i * num_agents_, num_agents_, uint8_t{1});
  }
}

void VectorPool::ThrowFirstError() {
  for (size_t r = 0; r < failed_.size(); ++r) {
    if (failed_[r]) {
      broken_ = true;
      throw EnvError(errors_[r].env_index, errors_[r].message);
    }
  }
}

void VectorPool::Reset(const uint8_t* mask, void* obs, const void* prev_obs) {
  if (is_async()) {
    if (mask != nullptr) {
      for (int64_t i = 0; i < num_envs_; ++i) {
        if (mask[i] && in_flight_[static_cast<size_t>(i)]) {
          throw AsyncStateError("env " + std::to_string(i) +
                                " is in flight; recv() it before resetting it with a mask");
        }
      }
    } else {
      DrainAsync();  // a full reset discards every step still in flight
    }
    // Rows not reset keep each env's latest observation, which lives in the staging rows.
    prev_obs = stage_obs_.data();
  }
  if (broken_ && mask != nullptr) {
    throw std::logic_error(
        "a previous step raised an env error, so envs outside the mask may be out of step with "
        "the observations you hold; call reset() without a mask first");
  }
  call_mask_ = mask;
  call_out_ = BatchOut{};
  call_out_.obs = obs;
  call_prev_obs_ = prev_obs;
  std::fill(failed_.begin(), failed_.end(), 0);
  workers_->Run(&VectorPool::ResetTask, this, num_chunks_,
                std::min(tuner_.chosen(), max_threads_) - 1);
  ThrowFirstError();
  broken_ = false;
  if (is_async()) {  // the staging rows hold every env's latest observation
    for (int64_t i = 0; i < num_envs_; ++i) {
      if (mask == nullptr || mask[i]) {
        std::memcpy(stage_obs_.data() + i * obs_row_bytes_,
                    static_cast<const uint8_t*>(obs) + i * obs_row_bytes_,
                    static_cast<size_t>(obs_row_bytes_));
      }
    }
  }
}

void VectorPool::ResetTask(void* self, int64_t begin, int64_t end) {
  auto* pool = static_cast<VectorPool*>(self);
  const auto c = static_cast<size_t>(begin);
  pool->ResetEnvs(pool->ChunkBegin(begin), pool->ChunkBegin(end), &pool->errors_[c],
                  &pool->failed_[c]);
}

void VectorPool::ResetEnvs(int64_t begin, int64_t end, fb_error* error, uint8_t* failed) {
  if (begin == end) return;
  fb_batch batch{};
  batch.obs = EnvObs(call_out_.obs);
  batch.reset_mask = call_mask_;
  batch.rngs = seeds_.states();
  batch.info = info_row_ > 0 ? info_.data() : nullptr;
  if (api_->reset(block_, begin, end, &batch, error) != 0) {
    *failed = 1;
    return;
  }
  const double now = Now();
  auto* obs = static_cast<uint8_t*>(call_out_.obs);
  const auto* prev = static_cast<const uint8_t*>(call_prev_obs_);
  for (int64_t i = begin; i < end; ++i) {
    if (call_mask_ == nullptr || call_mask_[i] != 0) {
      StartEpisode(i, now);
      if (frame_stack_) frame_stack_->Start(i, obs + i * obs_row_bytes_);
      std::fill_n(agent_active_.begin() + i * num_agents_, num_agents_, uint8_t{1});
    } else if (prev != nullptr && prev != obs &&
               !(is_async() && in_flight_[static_cast<size_t>(i)])) {  // a worker owns that row
      std::memcpy(obs + i * obs_row_bytes_, prev + i * obs_row_bytes_,
                  static_cast<size_t>(obs_row_bytes_));
    }
  }
}

int64_t VectorPool::Step(const void* actions, const BatchOut& out) {
  if (broken_) {
    throw std::logic_error(
        "a previous step raised an env error; call reset() before stepping again");
  }
  if (mode_ == AutoresetMode::kDisabled) {
    const auto it = std::find(needs_reset_.begin(), needs_reset_.end(), 1);
    if (it != needs_reset_.end()) {
      throw std::invalid_argument(
          "env " + std::to_string(it - needs_reset_.begin()) +
          " has ended its episode and autoreset is disabled: reset it first with "
          "reset(options={'reset_mask': mask})");
    }
  }
  if (is_async())
    throw AsyncStateError("this pool is in async mode (batch_size < num_envs): use Send/Recv");
  call_actions_ = actions;
  call_out_ = out;
  last_was_recv_ = false;
  std::fill(failed_.begin(), failed_.end(), 0);
  std::fill(ended_.begin(), ended_.end(), 0);
  const bool timed = timed_steps_ < kCostSteps;  // StepTask times each chunk's env work
  if (timed) std::fill(chunk_seconds_.begin(), chunk_seconds_.end(), 0.0);
  if (max_threads_ == 1) {
    workers_->Run(&VectorPool::StepTask, this, num_chunks_, 0);
  } else {
    const int threads = tuner_.threads();
    const double start = Now();
    workers_->Run(&VectorPool::StepTask, this, num_chunks_, threads - 1);
    tuner_.Record(Now() - start);
  }
  ThrowFirstError();
  int64_t ended = 0;
  for (int64_t e : ended_) ended += e;
  // After the step's books are read: sizing the chunks resizes them.
  if (timed) SizeChunksByCost();
  return ended;
}

void VectorPool::SizeChunksByCost() {
  double seconds = 0.0;  // the env work of the step, summed over the threads that ran it
  for (double s : chunk_seconds_) seconds += s;
  // The first step is left out (cold caches, lazy set-up); the fastest of the others stands
  // for the env, as a step slowed by a thread losing its core says nothing about it.
  if (timed_steps_++ > 0) least_step_seconds_ = std::min(least_step_seconds_, seconds);
  if (timed_steps_ < kCostSteps) return;
  chunk_seconds_ = {};
  const double per_env = least_step_seconds_ / static_cast<double>(num_envs_);
  if (per_env < kFineChunkSeconds || chunk_size_ == 1) return;
  chunk_size_ = (num_envs_ + kMaxChunks - 1) / kMaxChunks;  // 1 up to kMaxChunks envs
  num_chunks_ = (num_envs_ + chunk_size_ - 1) / chunk_size_;
  errors_.resize(static_cast<size_t>(num_chunks_));
  failed_.assign(static_cast<size_t>(num_chunks_), 0);
  ended_.assign(static_cast<size_t>(num_chunks_), 0);
}

void VectorPool::StepTask(void* self, int64_t begin, int64_t end) {
  auto* pool = static_cast<VectorPool*>(self);
  const auto c = static_cast<size_t>(begin);
  const int64_t first = pool->ChunkBegin(begin);
  const int64_t last = pool->ChunkBegin(end);
  const bool timed = pool->timed_steps_ < kCostSteps;  // written by the caller between steps
  const double start = timed ? Now() : 0.0;
  const int64_t ended = first == last ? 0
                                      : pool->StepEnvs(first, last, pool->call_actions_,
                                                       pool->call_out_, &pool->errors_[c]);
  if (timed) pool->chunk_seconds_[c] = Now() - start;
  pool->failed_[c] = ended < 0 ? 1 : 0;
  pool->ended_[c] = ended < 0 ? 0 : ended;
}

int64_t VectorPool::StepEnvs(int64_t begin, int64_t end, const void* actions, const BatchOut& out,
                             fb_error* error, int64_t* stepped_end) {
  fb_batch batch{};
  batch.obs = EnvObs(out.obs);
  batch.reward = out.reward;
  batch.terminated = out.terminated;
  batch.actions = actions;
  batch.reset_mask = mode_ == AutoresetMode::kNextStep ? needs_reset_.data() : nullptr;
  batch.rngs = seeds_.states();
  batch.truncated = out.truncated;  // version-2 envs report their own truncation here
  batch.info = info_row_ > 0 ? info_.data() : nullptr;  // version-3 envs write their infos
  const bool step_failed = api_->step(block_, begin, end, &batch, error) != 0;
  if (step_failed) {
    // The adapter stops at the failing env: the envs before it stepped and keep their books.
    const int64_t failed_env = error->env_index;
    end = failed_env > begin && failed_env < end ? failed_env : begin;
  }
  if (stepped_end != nullptr) *stepped_end = end;
  double now = 0.0;
  const int64_t ended =
      num_agents_ > 1 ? AgentBooks(begin, end, out, &now) : EnvBooks(begin, end, out, &now);
  auto* obs = static_cast<uint8_t*>(out.obs);
  if (mode_ == AutoresetMode::kSameStep && ended > 0) {
    batch.reset_mask = done_.data();
    fb_error reset_error{};
    if (api_->reset(block_, begin, end, &batch, &reset_error) != 0) {
      *error = reset_error;
      return -1;
    }
    for (int64_t i = begin; i < end; ++i) {
      if (!done_[static_cast<size_t>(i)]) continue;
      StartEpisode(i, now);
      if (frame_stack_) frame_stack_->Start(i, obs + i * obs_row_bytes_);
    }
  }
  return step_failed ? -1 : ended;
}

int64_t VectorPool::EnvBooks(int64_t begin, int64_t end, const BatchOut& out, double* now_out) {
  const float* reward = out.reward;
  const uint8_t* terminated = out.terminated;
  uint8_t* truncated = out.truncated;
  auto* obs = static_cast<uint8_t*>(out.obs);
  const bool next_step = mode_ == AutoresetMode::kNextStep;
  int64_t ended = 0;
  double now = *now_out;
  for (int64_t i = begin; i < end; ++i) {
    const auto k = static_cast<size_t>(i);
    if (AutoresetBooks(i, next_step, obs, &now)) {
      truncated[i] = 0;
      continue;
    }
    // Before SAME_STEP keeps the row as the final observation.
    if (frame_stack_) frame_stack_->Push(i, obs + i * obs_row_bytes_);
    ++elapsed_[k];
    ep_return_[k] += static_cast<double>(reward[i]);
    const bool trunc = (has_v2_fields_ && truncated[i] != 0) ||
                       (max_episode_steps_ > 0 && elapsed_[k] >= max_episode_steps_);
    truncated[i] = trunc ? 1 : 0;
    const bool done = terminated[i] != 0 || trunc;
    done_[k] = done ? 1 : 0;
    if (!done) continue;
    ++ended;
    EndEpisode(i, obs, &now);
  }
  *now_out = now;
  return ended;
}

bool VectorPool::AutoresetBooks(int64_t i, bool next_step, uint8_t* obs, double* now) {
  const auto k = static_cast<size_t>(i);
  if (done_[k]) {  // the statistics rows of the episode that ended in the env's last step
    ep_return_out_[k] = 0.0;
    ep_length_out_[k] = 0;
    ep_time_out_[k] = 0.0;
  }
  if (!(next_step && needs_reset_[k])) return false;
  if (*now == 0.0) *now = Now();  // NEXT_STEP autoreset happened
  StartEpisode(i, *now);
  if (frame_stack_) frame_stack_->Start(i, obs + i * obs_row_bytes_);
  done_[k] = 0;
  return true;
}

void VectorPool::EndEpisode(int64_t i, const uint8_t* obs, double* now) {
  const auto k = static_cast<size_t>(i);
  if (*now == 0.0) *now = Now();
  ep_return_out_[k] = ep_return_[k];
  ep_length_out_[k] = elapsed_[k];
  ep_time_out_[k] = *now - ep_start_[k];
  if (mode_ == AutoresetMode::kSameStep) {
    std::memcpy(final_obs_.data() + i * obs_row_bytes_, obs + i * obs_row_bytes_,
                static_cast<size_t>(obs_row_bytes_));
    if (info_row_ > 0) {
      std::memcpy(final_info_.data() + i * info_row_, info_.data() + i * info_row_,
                  static_cast<size_t>(info_row_) * sizeof(double));
    }
  } else {
    needs_reset_[k] = 1;
  }
}

}  // namespace fastbatch
