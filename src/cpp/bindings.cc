// fastbatch._core: the private extension module. The Python package `fastbatch` owns the public
// names and docs; everything here starts with `_` or is re-exported there.
//
// Buffer contract (see docs/architecture.md): arrays returned by `_VectorPool.reset/step` are
// views of 64-byte-aligned pool-owned slots. A slot is written again only when none of its arrays
// is referenced outside the pool (refcount 1), so a returned array never changes behind the
// caller's back, and a steady loop that drops its arrays allocates nothing.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/plugin_loader.h"
#include "core/vector_pool.h"
#include "envs/builtin.h"
#include "fastbatch/env.h"

namespace py = pybind11;

namespace fastbatch {
namespace {

constexpr size_t kAlign = 64;
constexpr const char* kCapsuleName = "fastbatch.env_api";

// The numpy dtype of an fb_dtype code, by its name in core/dtype.h.
py::dtype NumpyDType(int32_t dtype) {
  const char* name = DTypeName(dtype);
  if (name == nullptr)
    throw std::invalid_argument("unsupported dtype code " + std::to_string(dtype));
  return py::dtype(name);
}

std::vector<py::ssize_t> SpaceShape(const fb_space& s) {
  std::vector<py::ssize_t> shape;
  for (int32_t d = 0; d < s.ndim; ++d) shape.push_back(static_cast<py::ssize_t>(s.shape[d]));
  return shape;
}

int64_t SpaceSize(const fb_space& s) {
  int64_t n = 1;
  for (int32_t d = 0; d < s.ndim; ++d) n *= s.shape[d];
  return n;
}

py::dict SpaceDict(const fb_space& s) {
  py::dict d;
  if (s.is_discrete) {
    d["kind"] = "discrete";
    d["n"] = s.n;
    return d;
  }
  d["kind"] = "box";
  d["dtype"] = NumpyDType(s.dtype);
  d["shape"] = py::tuple(py::cast(SpaceShape(s)));
  const int64_t n = SpaceSize(s);
  d["low"] = py::array_t<double>(n, s.low);
  d["high"] = py::array_t<double>(n, s.high);
  return d;
}

// An env type: its ABI table, plus whatever keeps the implementation loaded.
struct EnvType {
  const fb_env_api* api;
  py::object keep_alive;

  py::dict Spec() const {
    const fb_spec* s = api->spec();
    py::dict d;
    d["id"] = s->id;
    d["observation"] = SpaceDict(s->observation);
    d["action"] = SpaceDict(s->action);
    d["max_episode_steps"] = s->max_episode_steps;
    d["reward_threshold"] = s->has_reward_threshold ? py::cast(s->reward_threshold) : py::none();
    py::dict params;
    for (int32_t i = 0; i < s->num_params; ++i)
      params[s->params[i].name] = s->params[i].default_value;
    d["params"] = params;
    return d;
  }
};

// One aligned allocation holding a full set of batch arrays; numpy views keep it alive.
struct Slot {
  py::array obs, reward, terminated, truncated;

  bool Free() const {
    return obs.ref_count() == 1 && reward.ref_count() == 1 && terminated.ref_count() == 1 &&
           truncated.ref_count() == 1;
  }
};

size_t RoundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

Slot MakeSlot(const fb_spec& spec, int64_t num_envs, int64_t obs_row_bytes) {
  const auto n = static_cast<size_t>(num_envs);
  const size_t obs_bytes = RoundUp(n * static_cast<size_t>(obs_row_bytes));
  const size_t reward_bytes = RoundUp(n * sizeof(float));
  const size_t flag_bytes = RoundUp(n);
  const size_t total = obs_bytes + reward_bytes + 2 * flag_bytes;
  void* memory = std::aligned_alloc(kAlign, total == 0 ? kAlign : total);
  if (memory == nullptr) throw std::bad_alloc();
  std::memset(memory, 0, total);
  py::capsule owner(memory, [](void* p) { std::free(p); });
  auto* base = static_cast<uint8_t*>(memory);
  std::vector<py::ssize_t> obs_shape{static_cast<py::ssize_t>(num_envs)};
  for (auto d : SpaceShape(spec.observation)) obs_shape.push_back(d);
  const auto batch = std::vector<py::ssize_t>{static_cast<py::ssize_t>(num_envs)};
  Slot slot;
  slot.obs = py::array(NumpyDType(spec.observation.dtype), obs_shape, base, owner);
  slot.reward = py::array(py::dtype::of<float>(), batch, base + obs_bytes, owner);
  slot.terminated = py::array(py::dtype("bool"), batch, base + obs_bytes + reward_bytes, owner);
  slot.truncated =
      py::array(py::dtype("bool"), batch, base + obs_bytes + reward_bytes + flag_bytes, owner);
  return slot;
}

bool IsAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlign == 0; }

std::string ShapeString(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t d = 0; d < a.ndim(); ++d) {
    s += std::to_string(a.shape(d));
    if (a.ndim() == 1 || d + 1 < a.ndim()) s += ",";
    if (d + 1 < a.ndim()) s += " ";
  }
  return s + ")";
}

std::string ShapeString(const std::vector<py::ssize_t>& shape) {
  std::string s = "(";
  for (size_t d = 0; d < shape.size(); ++d) {
    s += std::to_string(shape[d]);
    if (shape.size() == 1 || d + 1 < shape.size()) s += ",";
    if (d + 1 < shape.size()) s += " ";
  }
  return s + ")";
}

// Sets a flag for the duration of a call and refuses re-entry from another thread.
class CallGuard {
 public:
  explicit CallGuard(std::atomic<bool>* busy, const std::atomic<bool>* closing = nullptr)
      : busy_(busy) {
    if (closing != nullptr && closing->load(std::memory_order_acquire)) {
      throw std::runtime_error("this fastbatch env is closed");
    }
    if (busy_->exchange(true, std::memory_order_acquire)) {
      throw std::runtime_error(
          "this fastbatch env is already being used by another thread; an env may be called by "
          "one thread at a time");
    }
  }
  ~CallGuard() { busy_->store(false, std::memory_order_release); }

 private:
  std::atomic<bool>* busy_;
};

// The rollout path of the TensorFlow op (python/fastbatch/ppo/fastbatch_tf_op.cc): one batch
// step written straight into slot t of preallocated rollout storage, with no Python involved.
// The op calls RolloutStep through a plain function pointer, so the op library never links
// against _core or Python. Storage arrays are owned by the Python caller, which keeps them
// alive while the context is in use; the context is owned by its PyVectorPool.
struct RolloutContext {
  VectorPool* pool = nullptr;
  uint8_t* obs = nullptr;         // [T + 1, N, obs] of the observation dtype
  float* reward = nullptr;        // [T, N]
  uint8_t* terminated = nullptr;  // [T, N]
  uint8_t* truncated = nullptr;   // [T, N]
  uint8_t* final_obs = nullptr;   // [T, N, obs]
  int64_t steps = 0;              // T
  int64_t obs_dtype = 0;
  std::vector<double> episode_returns;  // episodes ended since the last read
  std::vector<int64_t> episode_lengths;
  std::string error;
};

// Steps the pool into slot t and writes the new observations as float32 to `next_obs`.
// Returns 0, or -1 with the message in ctx->error. Must not be called concurrently.
extern "C" int32_t FastbatchRolloutStep(void* raw, int64_t t, const void* actions,
                                        float* next_obs) {
  auto* ctx = static_cast<RolloutContext*>(raw);
  try {
    if (t < 0 || t >= ctx->steps) throw std::out_of_range("rollout step index out of range");
    VectorPool& pool = *ctx->pool;
    const int64_t n = pool.num_envs();
    const int64_t row = pool.obs_row_bytes();
    BatchOut out;
    out.obs = ctx->obs + (t + 1) * n * row;
    out.reward = ctx->reward + t * n;
    out.terminated = ctx->terminated + t * n;
    out.truncated = ctx->truncated + t * n;
    const int64_t ended = pool.Step(actions, out);
    if (ended > 0) {
      const uint8_t* done = pool.done();
      for (int64_t i = 0; i < n; ++i) {
        if (!done[i]) continue;
        ctx->episode_returns.push_back(pool.episode_return()[i]);
        ctx->episode_lengths.push_back(pool.episode_length()[i]);
        if (pool.autoreset_mode() == AutoresetMode::kSameStep) {
          std::memcpy(ctx->final_obs + (t * n + i) * row, pool.final_obs() + i * row,
                      static_cast<size_t>(row));
        }
      }
    }
    const auto* obs = static_cast<const uint8_t*>(out.obs);
    const int64_t count = n * row / DTypeSize(static_cast<int32_t>(ctx->obs_dtype));
    if (ctx->obs_dtype == FB_FLOAT32) {
      std::memcpy(next_obs, obs, static_cast<size_t>(count) * sizeof(float));
    } else if (ctx->obs_dtype == FB_FLOAT64) {
      const auto* src = reinterpret_cast<const double*>(obs);
      for (int64_t k = 0; k < count; ++k) next_obs[k] = static_cast<float>(src[k]);
    } else {
      throw std::invalid_argument("the TF rollout op takes float32 or float64 observations");
    }
    return 0;
  } catch (const EnvError& e) {
    ctx->error =
        (e.env_index() >= 0 ? "env " + std::to_string(e.env_index()) + ": " : "") + e.what();
  } catch (const std::exception& e) {
    ctx->error = e.what();
  }
  return -1;
}

extern "C" const char* FastbatchRolloutError(void* raw) {
  return static_cast<RolloutContext*>(raw)->error.c_str();
}

class PyVectorPool {
 public:
  PyVectorPool(const EnvType& type, int64_t num_envs, int num_threads, int autoreset_mode,
               int64_t max_episode_steps, std::vector<double> params, int64_t batch_size)
      : type_(type) {
    if (num_envs <= 0) {
      throw py::value_error("num_envs must be a positive integer, got " + std::to_string(num_envs));
    }
    if (num_threads <= 0) {
      throw py::value_error("num_threads must be a positive integer, got " +
                            std::to_string(num_threads));
    }
    if (autoreset_mode < 0 || autoreset_mode > 2) {
      throw py::value_error("autoreset_mode must be 0 (next step), 1 (same step) or 2 (disabled)");
    }
    const fb_spec* spec = type.api->spec();
    if (static_cast<int32_t>(params.size()) != spec->num_params) {
      throw py::value_error("expected " + std::to_string(spec->num_params) + " env params, got " +
                            std::to_string(params.size()));
    }
    PoolConfig config;
    config.num_envs = num_envs;
    config.num_threads = num_threads;
    config.autoreset_mode = static_cast<AutoresetMode>(autoreset_mode);
    config.max_episode_steps = max_episode_steps;
    config.params = std::move(params);
    if (batch_size < 0 || batch_size > num_envs) {
      throw py::value_error("batch_size must be between 1 and num_envs=" +
                            std::to_string(num_envs) + ", got " + std::to_string(batch_size));
    }
    config.batch_size = batch_size;
    pool_ = std::make_unique<VectorPool>(type.api, config);
    obs_dtype_ = NumpyDType(spec->observation.dtype);
    batch_shape_ = {static_cast<py::ssize_t>(num_envs)};
    obs_shape_ = batch_shape_;
    for (auto d : SpaceShape(spec->observation)) obs_shape_.push_back(d);
    const fb_space& act = spec->action;
    discrete_ = act.is_discrete != 0;
    action_n_ = act.n;
    for (auto d : SpaceShape(act)) action_row_shape_.push_back(d);
    if (!discrete_) {
      action_dtype_ = NumpyDType(act.dtype);
      const int64_t size = SpaceSize(act);
      action_low_.assign(act.low, act.low + size);
      action_high_.assign(act.high, act.high + size);
    }
  }

  void Seed(const std::vector<std::optional<uint64_t>>& seeds) {
    CallGuard guard(&busy_, &closing_);
    Check();
    if (static_cast<int64_t>(seeds.size()) != pool_->num_envs()) {
      throw py::value_error("expected " + std::to_string(pool_->num_envs()) + " seeds, got " +
                            std::to_string(seeds.size()));
    }
    for (size_t i = 0; i < seeds.size(); ++i) {
      if (seeds[i].has_value()) pool_->Seed(static_cast<int64_t>(i), *seeds[i]);
    }
  }

  py::array Reset(std::optional<py::array> mask) {
    CallGuard guard(&busy_, &closing_);
    Check();
    const uint8_t* mask_ptr = nullptr;
    py::array_t<bool> mask_array;
    if (mask.has_value()) {
      if (mask->dtype().kind() != 'b') {
        throw py::type_error("reset_mask must be a numpy array of dtype bool, got dtype " +
                             py::str(mask->dtype()).cast<std::string>());
      }
      if (mask->ndim() != 1 || mask->shape(0) != pool_->num_envs()) {
        throw py::value_error("reset_mask must have shape (" + std::to_string(pool_->num_envs()) +
                              ",), got " + ShapeString(*mask));
      }
      mask_array = py::array_t<bool, py::array::c_style | py::array::forcecast>::ensure(*mask);
      mask_ptr = reinterpret_cast<const uint8_t*>(mask_array.data());
    }
    Slot& slot = AcquireSlot(pool_->num_envs());
    const void* prev =
        last_obs_.is_none() ? nullptr : py::reinterpret_borrow<py::array>(last_obs_).data();
    void* obs = slot.obs.mutable_data();
    {
      py::gil_scoped_release release;
      pool_->Reset(mask_ptr, obs, prev);
    }
    last_obs_ = slot.obs;
    return slot.obs;
  }

  py::tuple Step(const py::handle& actions_in) {
    CallGuard guard(&busy_, &closing_);
    Check();
    py::array actions = ValidateActions(actions_in, pool_->num_envs());
    Slot& slot = AcquireSlot(pool_->num_envs());
    BatchOut out;
    out.obs = slot.obs.mutable_data();
    out.reward = static_cast<float*>(slot.reward.mutable_data());
    out.terminated = static_cast<uint8_t*>(slot.terminated.mutable_data());
    out.truncated = static_cast<uint8_t*>(slot.truncated.mutable_data());
    const void* act = actions.data();
    int64_t ended;
    {
      py::gil_scoped_release release;
      ended = pool_->Step(act, out);
    }
    last_obs_ = slot.obs;
    return py::make_tuple(slot.obs, slot.reward, slot.terminated, slot.truncated, ended);
  }

  // Steps into caller-owned arrays (e.g. slot t of a rollout); returns the number of episodes
  // that ended. Each array must be C-contiguous, writeable, 64-byte aligned, of the exact dtype
  // and shape of the pool's own buffers.
  int64_t StepInto(const py::handle& actions_in, py::array obs, py::array reward,
                   py::array terminated, py::array truncated) {
    CallGuard guard(&busy_, &closing_);
    Check();
    py::array actions = ValidateActions(actions_in, pool_->num_envs());
    CheckOut("obs", obs, obs_dtype_, obs_shape_);
    CheckOut("reward", reward, float_dtype_, batch_shape_);
    CheckOut("terminated", terminated, bool_dtype_, batch_shape_);
    CheckOut("truncated", truncated, bool_dtype_, batch_shape_);
    BatchOut out;
    out.obs = obs.mutable_data();
    out.reward = static_cast<float*>(reward.mutable_data());
    out.terminated = static_cast<uint8_t*>(terminated.mutable_data());
    out.truncated = static_cast<uint8_t*>(truncated.mutable_data());
    const void* act = actions.data();
    int64_t ended;
    {
      py::gil_scoped_release release;
      ended = pool_->Step(act, out);
    }
    last_obs_ = obs;
    return ended;
  }

  // Async mode: queues one step of each env in env_ids with its row of actions.
  void Send(const py::handle& actions_in, const py::handle& env_ids_in) {
    CallGuard guard(&busy_, &closing_);
    Check();
    py::array ids_any = py::array::ensure(env_ids_in);
    if (!ids_any || (ids_any.dtype().kind() != 'i' && ids_any.dtype().kind() != 'u') ||
        ids_any.ndim() != 1) {
      PyErr_Clear();
      throw py::type_error("env_ids must be a 1-D array of integers");
    }
    auto ids = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(ids_any);
    py::array actions = ValidateActions(actions_in, ids.shape(0));
    const int64_t* id_ptr = ids.data();
    const void* act = actions.data();
    const int64_t count = ids.shape(0);
    py::gil_scoped_release release;
    pool_->Send(id_ptr, count, act);
  }

  // Async mode: waits for batch_size envs; returns (obs, reward, terminated, truncated,
  // env_ids, episodes ended), each with batch_size rows in completion order.
  py::tuple Recv() {
    CallGuard guard(&busy_, &closing_);
    Check();
    const int64_t b = pool_->batch_size();
    Slot& slot = AcquireSlot(b);
    py::array_t<int64_t> ids(b);
    BatchOut out;
    out.obs = slot.obs.mutable_data();
    out.reward = static_cast<float*>(slot.reward.mutable_data());
    out.terminated = static_cast<uint8_t*>(slot.terminated.mutable_data());
    out.truncated = static_cast<uint8_t*>(slot.truncated.mutable_data());
    int64_t* id_ptr = ids.mutable_data();
    int64_t ended;
    {
      py::gil_scoped_release release;
      ended = pool_->Recv(out, id_ptr);
    }
    return py::make_tuple(slot.obs, slot.reward, slot.terminated, slot.truncated, ids, ended);
  }

  // (done mask, return, length, time) of the last step, as fresh arrays.
  py::tuple EpisodeStats() {
    Check();
    const auto n = static_cast<py::ssize_t>(pool_->stats_rows());
    py::array_t<bool> done(n);
    std::memcpy(done.mutable_data(), pool_->done(), static_cast<size_t>(n));
    return py::make_tuple(done, py::array_t<double>(n, pool_->episode_return()),
                          py::array_t<int64_t>(n, pool_->episode_length()),
                          py::array_t<double>(n, pool_->episode_time()));
  }

  // SAME_STEP: final observations of the last step, as a fresh [N, *obs_shape] array.
  py::array FinalObs() {
    Check();
    const fb_spec& spec = pool_->spec();
    if (pool_->autoreset_mode() != AutoresetMode::kSameStep) {
      throw py::value_error("final observations are kept only in SAME_STEP autoreset mode");
    }
    std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(pool_->stats_rows())};
    for (auto d : SpaceShape(spec.observation)) shape.push_back(d);
    py::array out(NumpyDType(spec.observation.dtype), shape);
    std::memcpy(out.mutable_data(), pool_->final_obs(),
                static_cast<size_t>(pool_->stats_rows() * pool_->obs_row_bytes()));
    return out;
  }

  py::array_t<double> GetState(int64_t env) {
    CallGuard guard(&busy_, &closing_);
    Check();
    if (env < 0 || env >= pool_->num_envs()) throw py::index_error("env index out of range");
    double buffer[256];
    const int64_t n = pool_->GetState(env, buffer, 256);
    if (n == 0) throw py::value_error("this env type does not expose its state");
    return py::array_t<double>(std::min<int64_t>(n, 256), buffer);
  }

  // Closes the pool. A call running in another thread is finished first (new calls are refused
  // from now on); after 10 s of waiting for it, close raises instead.
  void Close() {
    closing_.store(true, std::memory_order_release);
    bool acquired = false;
    {
      py::gil_scoped_release release;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!(acquired = !busy_.exchange(true, std::memory_order_acquire)) &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    if (!acquired) {
      closing_.store(false, std::memory_order_release);
      throw std::runtime_error("close() gave up after 10 s waiting for a call in another thread");
    }
    struct Release {
      std::atomic<bool>* busy;
      ~Release() { busy->store(false, std::memory_order_release); }
    } release_busy{&busy_};
    slots_.clear();
    batch_slots_.clear();
    rollout_.reset();
    rollout_storage_ = py::none();
    last_obs_ = py::none();
    pool_.reset();
  }

  // A context for FastbatchRolloutStep over the given rollout storage (C-contiguous arrays of
  // shapes [T+1, N, *obs], [T, N] float32, [T, N] bool, [T, N] bool, [T, N, *obs]); its address.
  uintptr_t RolloutContextFor(py::array obs, py::array reward, py::array terminated,
                              py::array truncated, py::array final_obs) {
    Check();
    const int64_t n = pool_->num_envs();
    const int64_t t = reward.ndim() == 2 ? reward.shape(0) : -1;
    auto check = [&](const py::array& a, const char* name, py::ssize_t rows, int64_t row_bytes) {
      if (!(a.flags() & py::array::c_style) || !a.writeable() || a.ndim() < 2 ||
          a.shape(0) != rows || a.shape(1) != n || a.nbytes() != rows * n * row_bytes) {
        throw py::value_error(std::string("rollout storage '") + name +
                              "' has the wrong shape or layout");
      }
    };
    if (t <= 0) throw py::value_error("reward storage must have shape (T, num_envs)");
    check(obs, "obs", t + 1, pool_->obs_row_bytes());
    check(reward, "reward", t, 4);
    check(terminated, "terminated", t, 1);
    check(truncated, "truncated", t, 1);
    check(final_obs, "final_obs", t, pool_->obs_row_bytes());
    rollout_ = std::make_unique<RolloutContext>();
    rollout_->pool = pool_.get();
    rollout_->obs = static_cast<uint8_t*>(obs.mutable_data());
    rollout_->reward = static_cast<float*>(reward.mutable_data());
    rollout_->terminated = static_cast<uint8_t*>(terminated.mutable_data());
    rollout_->truncated = static_cast<uint8_t*>(truncated.mutable_data());
    rollout_->final_obs = static_cast<uint8_t*>(final_obs.mutable_data());
    rollout_->steps = t;
    rollout_->obs_dtype = pool_->spec().observation.dtype;
    rollout_storage_ = py::make_tuple(obs, reward, terminated, truncated, final_obs);  // keep alive
    return reinterpret_cast<uintptr_t>(rollout_.get());
  }

  // Episodes ended through the rollout context since the last call: (returns, lengths).
  py::tuple RolloutEpisodes() {
    if (!rollout_) return py::make_tuple(py::array_t<double>(0), py::array_t<int64_t>(0));
    py::array_t<double> r(static_cast<py::ssize_t>(rollout_->episode_returns.size()),
                          rollout_->episode_returns.data());
    py::array_t<int64_t> l(static_cast<py::ssize_t>(rollout_->episode_lengths.size()),
                           rollout_->episode_lengths.data());
    rollout_->episode_returns.clear();
    rollout_->episode_lengths.clear();
    return py::make_tuple(r, l);
  }

  bool closed() const { return pool_ == nullptr; }
  int64_t num_in_flight() const { return pool_ ? pool_->num_in_flight() : 0; }
  int num_threads() const { return pool_ ? pool_->num_threads() : 0; }
  std::vector<int64_t> range_bounds() const {
    return pool_ ? pool_->range_bounds() : std::vector<int64_t>{};
  }

 private:
  void Check() const {
    if (!pool_) throw std::runtime_error("this fastbatch env is closed");
  }

  // A free slot of `rows` rows (num_envs for step/reset, batch_size for recv).
  Slot& AcquireSlot(int64_t rows) {
    std::vector<Slot>& slots = rows == pool_->num_envs() ? slots_ : batch_slots_;
    for (auto& s : slots) {
      if (s.Free()) return s;
    }
    // Every slot is still referenced by the caller. Keep a few for reuse; slots dropped from
    // the list stay alive for as long as the caller holds their arrays.
    constexpr size_t kMaxSlots = 4;
    if (slots.size() >= kMaxSlots) slots.erase(slots.begin());
    slots.push_back(MakeSlot(pool_->spec(), rows, pool_->obs_row_bytes()));
    return slots.back();
  }

  static void CheckOut(const char* name, const py::array& a, const py::dtype& dtype,
                       const std::vector<py::ssize_t>& shape) {
    if (!a.dtype().is(dtype) && !a.dtype().equal(dtype)) {  // is(): the common, cheap case
      throw py::type_error(std::string(name) + " must have dtype " +
                           py::str(dtype).cast<std::string>() + ", got " +
                           py::str(a.dtype()).cast<std::string>());
    }
    bool same = a.ndim() == static_cast<py::ssize_t>(shape.size());
    for (size_t d = 0; same && d < shape.size(); ++d)
      same = a.shape(static_cast<py::ssize_t>(d)) == shape[d];
    if (!same) {
      throw py::value_error(std::string(name) + " must have shape " + ShapeString(shape) +
                            ", got " + ShapeString(a));
    }
    if (!(a.flags() & py::array::c_style) || !a.writeable()) {
      throw py::value_error(std::string(name) + " must be a writeable C-contiguous array");
    }
    if (!IsAligned(a.data())) {
      throw py::value_error(
          std::string(name) +
          " must be 64-byte aligned (use fastbatch.aligned_empty to allocate it)");
    }
  }

  // Checks actions for `rows` envs (dtype, shape, range, NaN) and returns them as a
  // C-contiguous array of the action dtype (int64 for Discrete).
  py::array ValidateActions(const py::handle& in, int64_t rows) {
    std::vector<py::ssize_t> expected{static_cast<py::ssize_t>(rows)};
    expected.insert(expected.end(), action_row_shape_.begin(), action_row_shape_.end());
    py::array a = py::isinstance<py::array>(in) ? py::reinterpret_borrow<py::array>(in)
                                                : py::array::ensure(in);
    if (!a) {
      PyErr_Clear();
      throw py::type_error("actions must be a numpy array (or convertible to one)");
    }
    const char kind = a.dtype().kind();
    bool same = a.ndim() == static_cast<py::ssize_t>(expected.size());
    for (size_t d = 0; same && d < expected.size(); ++d) {
      same = a.shape(static_cast<py::ssize_t>(d)) == expected[d];
    }
    if (discrete_) {
      if (kind != 'i' && kind != 'u') {
        throw py::type_error("actions for a Discrete(" + std::to_string(action_n_) +
                             ") space must be integers, got dtype " +
                             py::str(a.dtype()).cast<std::string>());
      }
      if (!same) {
        throw py::value_error("actions must have shape " + ShapeString(expected) + ", got " +
                              ShapeString(a));
      }
      auto ints = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
      const int64_t* p = ints.data();
      for (py::ssize_t i = 0; i < ints.size(); ++i) {
        if (p[i] < 0 || p[i] >= action_n_) {
          throw py::value_error("action " + std::to_string(p[i]) + " for env " + std::to_string(i) +
                                " is outside Discrete(" + std::to_string(action_n_) + ")");
        }
      }
      return ints;
    }
    if (kind != 'f' && kind != 'i' && kind != 'u') {
      throw py::type_error("actions for a Box space must be real numbers, got dtype " +
                           py::str(a.dtype()).cast<std::string>());
    }
    if (!same) {
      throw py::value_error("actions must have shape " + ShapeString(expected) + ", got " +
                            ShapeString(a));
    }
    py::array converted = a;
    if (!a.dtype().equal(action_dtype_) || !(a.flags() & py::array::c_style)) {
      converted = py::reinterpret_steal<py::array>(PyArray_FromAny_(a, action_dtype_));
    }
    CheckFinite(converted);
    return converted;
  }

  static PyObject* PyArray_FromAny_(const py::array& a, const py::dtype& dtype) {
    auto& api = py::detail::npy_api::get();
    PyObject* out = api.PyArray_FromAny_(
        a.ptr(), dtype.inc_ref().ptr(), 0, 0,
        py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_FORCECAST_,
        nullptr);
    if (out == nullptr) throw py::error_already_set();
    return out;
  }

  static void CheckFinite(const py::array& a) {
    const auto n = a.size();
    const py::ssize_t row = n / std::max<py::ssize_t>(a.shape(0), 1);
    auto check = [&](auto* p) {
      for (py::ssize_t i = 0; i < n; ++i) {
        if (std::isnan(p[i])) {
          throw py::value_error("action for env " +
                                std::to_string(i / std::max<py::ssize_t>(row, 1)) +
                                " is NaN; continuous actions must be numbers (values outside the "
                                "bounds are clipped as in gymnasium, NaN is refused)");
        }
      }
    };
    if (a.dtype().equal(py::dtype::of<float>()))
      check(static_cast<const float*>(a.data()));
    else if (a.dtype().equal(py::dtype::of<double>()))
      check(static_cast<const double*>(a.data()));
  }

  EnvType type_;
  std::unique_ptr<VectorPool> pool_;
  std::vector<Slot> slots_;           // num_envs rows: step/reset results
  std::vector<Slot> batch_slots_;     // batch_size rows: recv results
  py::object last_obs_ = py::none();  // the obs array last handed out (partial resets copy it)
  std::atomic<bool> busy_{false};
  std::atomic<bool> closing_{false};  // set by Close(): every later call is refused
  std::unique_ptr<RolloutContext> rollout_;
  py::object rollout_storage_ = py::none();
  bool discrete_ = false;
  int64_t action_n_ = 0;
  std::vector<py::ssize_t> action_row_shape_;
  py::dtype action_dtype_ = py::dtype::of<float>();
  // Cached for the per-step checks of step_into.
  py::dtype obs_dtype_ = py::dtype::of<float>();
  py::dtype float_dtype_ = py::dtype::of<float>();
  py::dtype bool_dtype_ = py::dtype("bool");
  std::vector<py::ssize_t> obs_shape_, batch_shape_;
  std::vector<double> action_low_, action_high_;
};

// The "no Python" reference for bench/throughput.py: `steps` batch steps of a single-threaded
// VectorPool driven by a C++ loop (same env code, same bookkeeping, no Python per step).
// Actions cycle through a pre-drawn table. Returns the elapsed seconds.
double NativeLoopSeconds(const EnvType& type, int64_t num_envs, int64_t steps, uint64_t seed) {
  const fb_spec* spec = type.api->spec();
  PoolConfig config;
  config.num_envs = num_envs;
  config.num_threads = 1;
  config.max_episode_steps = spec->max_episode_steps;
  for (int32_t i = 0; i < spec->num_params; ++i)
    config.params.push_back(spec->params[i].default_value);
  VectorPool pool(type.api, config);
  for (int64_t i = 0; i < num_envs; ++i) pool.Seed(i, seed + static_cast<uint64_t>(i));
  const int64_t act_size = spec->action.is_discrete ? 1 : SpaceSize(spec->action);
  constexpr int64_t kTables = 64;
  std::vector<int64_t> discrete(static_cast<size_t>(kTables * num_envs * act_size));
  std::vector<float> box(discrete.size());
  fb_rng state;
  Rng::Seed(&state, seed, 1);
  Rng rng(&state);
  for (size_t k = 0; k < discrete.size(); ++k) {
    const size_t e = k % static_cast<size_t>(act_size);
    discrete[k] = spec->action.is_discrete
                      ? static_cast<int64_t>(rng.NextU64() % static_cast<uint64_t>(spec->action.n))
                      : 0;
    box[k] = spec->action.is_discrete
                 ? 0.0f
                 : static_cast<float>(rng.Uniform(spec->action.low[e], spec->action.high[e]));
  }
  Slot slot = MakeSlot(*spec, num_envs, pool.obs_row_bytes());
  BatchOut out;
  out.obs = slot.obs.mutable_data();
  out.reward = static_cast<float*>(slot.reward.mutable_data());
  out.terminated = static_cast<uint8_t*>(slot.terminated.mutable_data());
  out.truncated = static_cast<uint8_t*>(slot.truncated.mutable_data());
  py::gil_scoped_release release;
  pool.Reset(nullptr, out.obs, nullptr);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t t = 0; t < steps; ++t) {
    const size_t offset = static_cast<size_t>((t % kTables) * num_envs * act_size);
    const void* actions = spec->action.is_discrete
                              ? static_cast<const void*>(discrete.data() + offset)
                              : static_cast<const void*>(box.data() + offset);
    pool.Step(actions, out);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- Cross-process signalling for the process backend (python/fastbatch/_process_worker.py).
// A "word" is a 4-byte-aligned uint32 in shared memory, addressed by its integer address, and
// the uint32 right after it counts the processes asleep on it, so that a store wakes (a
// syscall) only when someone sleeps. The caller guarantees the mapping outlives the call.
// Futexes are process-shared (no FUTEX_PRIVATE_FLAG).

std::atomic_ref<uint32_t> Word(uintptr_t address) {
  if (address == 0 || address % alignof(uint32_t) != 0) {
    throw py::value_error("shared word address must be non-null and 4-byte aligned");
  }
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(address));
}

void WakeSleepers(uintptr_t address) {
  std::atomic_ref<uint32_t> sleepers(*reinterpret_cast<uint32_t*>(address + 4));
  if (sleepers.load(std::memory_order_seq_cst) != 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(address), FUTEX_WAKE, INT32_MAX, nullptr,
            nullptr, 0);
  }
}

// Waits until the word differs from `old`: spins for `spin_us` microseconds (yielding the core
// between checks when `yield` is set, for when processes outnumber cores), then sleeps on the
// futex. Returns the new value, or `old` when `timeout_s` passed first (the caller then checks
// on its peers).
uint32_t WaitWord(uintptr_t address, uint32_t old, double timeout_s, double spin_us, bool yield) {
  auto word = Word(address);
  std::atomic_ref<uint32_t> sleepers(*reinterpret_cast<uint32_t*>(address + 4));
  py::gil_scoped_release release;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto spin_until = start + std::chrono::duration<double, std::micro>(spin_us);
  for (int k = 0;; ++k) {
    const uint32_t v = word.load(std::memory_order_acquire);
    if (v != old) return v;
    if (yield) {
      if (Clock::now() >= spin_until) break;
      sched_yield();
      continue;
    }
    if ((k & 63) == 63 && Clock::now() >= spin_until) break;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  const auto deadline = start + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return word.load(std::memory_order_acquire);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    // Re-check after announcing ourselves: a store that missed the announcement is seen here.
    if (word.load(std::memory_order_seq_cst) == old) {
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(address), FUTEX_WAIT, old, &ts, nullptr, 0);
    }
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
    const uint32_t v = word.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

void StoreWord(uintptr_t address, uint32_t value) {
  Word(address).store(value, std::memory_order_seq_cst);
  WakeSleepers(address);
}

uint32_t AddWord(uintptr_t address, uint32_t delta) {
  const uint32_t v = Word(address).fetch_add(delta, std::memory_order_seq_cst) + delta;
  WakeSleepers(address);
  return v;
}

}  // namespace
}  // namespace fastbatch

PYBIND11_MODULE(_core, m) {
  using namespace fastbatch;
  m.doc() = "fastbatch private extension: the C++ engine. Use the `fastbatch` package instead.";
  m.attr("ABI_VERSION") = FASTBATCH_ABI_VERSION;

  static py::exception<EnvError> env_error(m, "EnvError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const EnvError& e) {
      const std::string where =
          e.env_index() >= 0 ? "env " + std::to_string(e.env_index()) + ": " : "";
      py::object type = py::reinterpret_borrow<py::object>(env_error);
      py::object instance = type(py::str(where + e.what()));
      instance.attr("env_index") = e.env_index() >= 0 ? py::cast(e.env_index()) : py::none();
      PyErr_SetObject(env_error.ptr(), instance.ptr());
    }
  });

  py::register_exception<AsyncStateError>(m, "AsyncStateError", PyExc_RuntimeError);

  py::class_<EnvType>(m, "_EnvType")
      .def_property_readonly("spec", &EnvType::Spec)
      .def_property_readonly("id", [](const EnvType& t) { return std::string(t.api->spec()->id); })
      .def_property_readonly("has_state",
                             [](const EnvType& t) { return t.api->get_state != nullptr; });

  py::register_exception<PluginError>(m, "PluginError", PyExc_ValueError);

  m.def("_builtin_env_types", []() {
    py::dict out;
    for (const fb_env_api* api : envs::BuiltinEnvs()) {
      ValidateApi(api, std::string("built-in env ") + api->spec()->id);
      out[py::str(api->spec()->id)] = EnvType{api, py::none()};
    }
    return out;
  });
  m.def(
      "_load_plugin",
      [](const std::string& path, const std::string& symbol) {
        return EnvType{LoadPluginLibrary(path, symbol), py::none()};
      },
      py::arg("path"), py::arg("symbol") = FASTBATCH_ENTRY_SYMBOL,
      "Opens a plugin library (kept loaded for the process lifetime) and checks its table.");
  m.def(
      "_env_type_from_capsule",
      [](const py::capsule& capsule) {
        if (capsule.name() == nullptr || std::string(capsule.name()) != kCapsuleName) {
          throw PluginError(std::string("expected a capsule named '") + kCapsuleName + "', got '" +
                            (capsule.name() ? capsule.name() : "") + "'");
        }
        const auto* api = capsule.get_pointer<const fb_env_api>();
        ValidateApi(api, "capsule");
        return EnvType{api, capsule};
      },
      py::arg("capsule"),
      "An env type from a capsule named 'fastbatch.env_api' holding a `const fb_env_api*`; "
      "the capsule's owner must keep the table alive.");
  m.attr("CAPSULE_NAME") = kCapsuleName;

  m.def("_wait_word", &WaitWord, py::arg("address"), py::arg("old"), py::arg("timeout_s"),
        py::arg("spin_us") = 0.0, py::arg("yield_") = false,
        "Waits for a shared uint32 to change (spin, then futex).");
  m.def("_store_word", &StoreWord, py::arg("address"), py::arg("value"),
        "Stores a shared uint32 and wakes its sleepers, if any.");
  m.def("_add_word", &AddWord, py::arg("address"), py::arg("delta") = 1,
        "Adds to a shared uint32, wakes its sleepers, returns the new value.");
  m.def(
      "_load_word", [](uintptr_t address) { return Word(address).load(std::memory_order_acquire); },
      py::arg("address"));

  m.attr("_rollout_step_address") = reinterpret_cast<uintptr_t>(&FastbatchRolloutStep);
  m.attr("_rollout_error_address") = reinterpret_cast<uintptr_t>(&FastbatchRolloutError);

  m.def("_native_loop_seconds", &NativeLoopSeconds, py::arg("env_type"), py::arg("num_envs"),
        py::arg("steps"), py::arg("seed") = 0);

  py::class_<PyVectorPool>(m, "_VectorPool")
      .def(py::init<const EnvType&, int64_t, int, int, int64_t, std::vector<double>, int64_t>(),
           py::arg("env_type"), py::arg("num_envs"), py::arg("num_threads"),
           py::arg("autoreset_mode"), py::arg("max_episode_steps"), py::arg("params"),
           py::arg("batch_size") = 0)
      .def("send", &PyVectorPool::Send, py::arg("actions"), py::arg("env_ids"))
      .def("recv", &PyVectorPool::Recv)
      .def("seed", &PyVectorPool::Seed, py::arg("seeds"))
      .def("reset", &PyVectorPool::Reset, py::arg("mask") = py::none())
      .def("step", &PyVectorPool::Step, py::arg("actions"))
      .def("step_into", &PyVectorPool::StepInto, py::arg("actions"), py::arg("obs"),
           py::arg("reward"), py::arg("terminated"), py::arg("truncated"))
      .def("episode_stats", &PyVectorPool::EpisodeStats)
      .def("final_obs", &PyVectorPool::FinalObs)
      .def("get_state", &PyVectorPool::GetState, py::arg("env"))
      .def("rollout_context", &PyVectorPool::RolloutContextFor, py::arg("obs"), py::arg("reward"),
           py::arg("terminated"), py::arg("truncated"), py::arg("final_obs"))
      .def("rollout_episodes", &PyVectorPool::RolloutEpisodes)
      .def("close", &PyVectorPool::Close)
      .def_property_readonly("closed", &PyVectorPool::closed)
      .def_property_readonly("num_threads", &PyVectorPool::num_threads)
      .def_property_readonly("num_in_flight",
                             [](const PyVectorPool& p) { return p.num_in_flight(); })
      .def_property_readonly("range_bounds", &PyVectorPool::range_bounds);
}
