#include "bindings/py_vector_pool.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "bindings/seeds.h"
#include "core/plugin_loader.h"

namespace fastbatch {

CallGuard::CallGuard(std::atomic<bool>* busy, const std::atomic<bool>* closing) : busy_(busy) {
  if (closing->load(std::memory_order_acquire)) throw ClosedError();
  if (busy_->exchange(true, std::memory_order_acquire)) {
    throw std::runtime_error(
        "this fastbatch env is already being used by another thread; an env may be called by "
        "one thread at a time");
  }
}

namespace {

// The pool, after the checks of the arguments that reach C++ unchecked by Python.
std::unique_ptr<VectorPool> MakePool(const EnvType& type, int64_t num_envs, int num_threads,
                                     int autoreset_mode, int64_t max_episode_steps,
                                     std::vector<double> params, int64_t batch_size,
                                     int max_async_threads, int64_t frame_stack) {
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
  if (batch_size < 0 || batch_size > num_envs) {
    throw py::value_error("batch_size must be between 1 and num_envs=" + std::to_string(num_envs) +
                          ", got " + std::to_string(batch_size));
  }
  if (frame_stack <= 0) {
    throw py::value_error("frame_stack must be a positive integer, got " +
                          std::to_string(frame_stack));
  }
  PoolConfig config;
  config.num_envs = num_envs;
  config.num_threads = num_threads;
  config.autoreset_mode = static_cast<AutoresetMode>(autoreset_mode);
  config.max_episode_steps = max_episode_steps;
  config.params = std::move(params);
  config.batch_size = batch_size;
  config.max_async_threads = max_async_threads;
  config.frame_stack = frame_stack;
  return std::make_unique<VectorPool>(type.api, config);
}

}  // namespace

// The spaces come from the pool's spec: the block's, which may depend on the params.
PyVectorPool::PyVectorPool(const EnvType& type, int64_t num_envs, int num_threads,
                           int autoreset_mode, int64_t max_episode_steps,
                           std::vector<double> params, int64_t batch_size, int max_async_threads,
                           int64_t frame_stack)
    : type_(type),
      owner_pid_(getpid()),
      pool_(MakePool(type, num_envs, num_threads, autoreset_mode, max_episode_steps,
                     std::move(params), batch_size, max_async_threads, frame_stack)),
      actions_(ActionChecker::ForSpace(pool_->spec().action)),
      step_slots_(num_envs * pool_->num_agents(), pool_->spec()),
      recv_slots_((batch_size > 0 ? batch_size : num_envs) * pool_->num_agents(), pool_->spec(),
                  batch_size > 0 ? batch_size : num_envs),
      obs_dtype_(NumpyDType(pool_->spec().observation.dtype)),
      reward_dtype_(py::dtype::of<float>()),
      flag_dtype_(py::dtype::of<bool>()) {
  batch_shape_ = {static_cast<py::ssize_t>(num_envs * pool_->num_agents())};
  obs_shape_ = batch_shape_;
  for (py::ssize_t d : SpaceShape(pool_->spec().observation)) obs_shape_.push_back(d);
}

py::dict PyVectorPool::Spec() const {
  CheckOpen();
  return SpecDict(pool_->spec(), HasV2Fields(type_.api) ? type_.api->abi_version : 1);
}

PyVectorPool::~PyVectorPool() {
  if (!pool_) return;
  if (getpid() != owner_pid_) {
    Abandon();
    return;
  }
  // Collected without close(): as in Close, the steps in flight finish without the GIL (an env
  // may call into Python on the pool's threads). Not while the interpreter is finalizing, when
  // releasing the GIL is not safe; a pool thread that calls into Python then is ended (or
  // hangs) mid-step, which is why native envs still open at exit are closed by an atexit hook
  // before finalization (native.py).
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  if (PyGILState_Check() && !finalizing) {
    py::gil_scoped_release release;
    pool_.reset();
  }
}

void PyVectorPool::Seed(const std::vector<std::optional<py::int_>>& seeds) {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  if (static_cast<int64_t>(seeds.size()) != pool_->num_envs()) {
    throw py::value_error("expected " + std::to_string(pool_->num_envs()) + " seeds, got " +
                          std::to_string(seeds.size()));
  }
  // Every seed is converted before any env is seeded, so a bad one seeds none.
  std::vector<uint32_t> words;
  std::vector<size_t> ends(seeds.size(), 0);
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i].has_value()) AppendSeedWords(*seeds[i], &words);
    ends[i] = words.size();
  }
  for (size_t i = 0, begin = 0; i < seeds.size(); begin = ends[i++]) {
    if (ends[i] > begin)
      pool_->Seed(static_cast<int64_t>(i), words.data() + begin, ends[i] - begin);
  }
}

py::list PyVectorPool::NpRandomSeeds() const {
  CheckOpen();
  py::list out;
  for (int64_t i = 0; i < pool_->num_envs(); ++i) out.append(SeedInt(pool_->seed_words(i)));
  return out;
}

py::array PyVectorPool::Reset(std::optional<py::array> mask) {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  std::optional<BoolArray> mask_array;
  const uint8_t* mask_ptr = nullptr;
  if (mask.has_value()) {
    mask_array = CheckResetMask(*mask, pool_->num_envs());
    mask_ptr = reinterpret_cast<const uint8_t*>(mask_array->data());
  }
  Slot& slot = step_slots_.Acquire();
  const void* prev =
      last_obs_.is_none() ? nullptr : py::reinterpret_borrow<py::array>(last_obs_).data();
  void* obs = slot.Out().obs;
  {
    py::gil_scoped_release release;
    pool_->Reset(mask_ptr, obs, prev);
  }
  last_obs_ = slot.obs;
  return slot.obs;
}

py::tuple PyVectorPool::Step(py::handle actions_in) {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  const py::array actions = actions_.Check(actions_in, Rows());
  Slot& slot = step_slots_.Acquire();
  const BatchOut out = slot.Out();
  const void* act = actions.data();
  int64_t ended;
  {
    py::gil_scoped_release release;
    ended = pool_->Step(act, out);
  }
  last_obs_ = slot.obs;
  return py::make_tuple(slot.obs, slot.reward, slot.terminated, slot.truncated, ended);
}

int64_t PyVectorPool::StepInto(py::handle actions_in, py::array obs, py::array reward,
                               py::array terminated, py::array truncated) {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  const py::array actions = actions_.Check(actions_in, Rows());
  CheckOutArray("obs", obs, obs_dtype_, obs_shape_);
  CheckOutArray("reward", reward, reward_dtype_, batch_shape_);
  CheckOutArray("terminated", terminated, flag_dtype_, batch_shape_);
  CheckOutArray("truncated", truncated, flag_dtype_, batch_shape_);
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

PyVectorPool::CheckedSend PyVectorPool::CheckSend(py::handle actions_in, py::handle env_ids_in) {
  CheckedSend send{CheckEnvIds(env_ids_in), py::array()};
  const int64_t agents = pool_->num_agents();  // an env's action rows; messages name rows then
  send.actions = actions_.Check(actions_in, send.ids.shape(0) * agents,
                                agents == 1 ? send.ids.data() : nullptr);
  return send;
}

void PyVectorPool::Send(py::handle actions_in, py::handle env_ids_in) {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  const CheckedSend send = CheckSend(actions_in, env_ids_in);
  const int64_t* id_ptr = send.ids.data();
  const void* act = send.actions.data();
  py::gil_scoped_release release;
  pool_->Send(id_ptr, send.ids.shape(0), act);
}

py::tuple PyVectorPool::Recv() {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  return RecvInto(nullptr);
}

py::tuple PyVectorPool::SendRecv(py::handle actions_in, py::handle env_ids_in) {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  const CheckedSend send = CheckSend(actions_in, env_ids_in);
  const int64_t count = send.ids.shape(0);
  // Refused before anything is queued, so that after a successful send only an env's error
  // can stop the recv (the caller then knows the envs were sent).
  if (pool_->is_async() && pool_->num_in_flight() + count < pool_->batch_size()) {
    throw AsyncStateError("only " + std::to_string(pool_->num_in_flight() + count) +
                          " envs would be in flight but recv() returns batch_size=" +
                          std::to_string(pool_->batch_size()) + "; send() more envs first");
  }
  return RecvInto(&send);
}

py::tuple PyVectorPool::RecvInto(const CheckedSend* send) {
  Slot& slot = recv_slots_.Acquire();
  const BatchOut out = slot.Out();
  int64_t* id_ptr = slot.env_ids_out;
  const int64_t* send_ids = send != nullptr ? send->ids.data() : nullptr;
  const int64_t send_count = send != nullptr ? send->ids.shape(0) : 0;
  const void* send_actions = send != nullptr ? send->actions.data() : nullptr;
  int64_t ended;
  {
    py::gil_scoped_release release;
    if (send != nullptr) pool_->Send(send_ids, send_count, send_actions);
    ended = pool_->Recv(out, id_ptr);
  }
  return py::make_tuple(slot.obs, slot.reward, slot.terminated, slot.truncated, slot.env_ids,
                        ended);
}

py::tuple PyVectorPool::EpisodeStats() {
  CheckOpen();
  const auto n = static_cast<py::ssize_t>(pool_->stats_rows());
  py::array_t<bool> done(n);
  std::memcpy(done.mutable_data(), pool_->done(), static_cast<size_t>(n));
  return py::make_tuple(done, py::array_t<double>(n, pool_->episode_return()),
                        py::array_t<int64_t>(n, pool_->episode_length()),
                        py::array_t<double>(n, pool_->episode_time()));
}

py::array PyVectorPool::FinalObs() {
  CheckOpen();
  if (pool_->autoreset_mode() != AutoresetMode::kSameStep) {
    throw py::value_error("final observations are kept only in SAME_STEP autoreset mode");
  }
  std::vector<py::ssize_t> shape = obs_shape_;
  shape[0] = static_cast<py::ssize_t>(pool_->stats_rows() * pool_->num_agents());
  py::array out(obs_dtype_, shape);
  std::memcpy(out.mutable_data(), pool_->final_obs(),
              static_cast<size_t>(pool_->stats_rows() * pool_->obs_row_bytes()));
  return out;
}

py::array_t<bool> PyVectorPool::AgentActive() {
  CheckOpen();
  const int64_t rows = pool_->stats_rows() * pool_->num_agents();  // the last Step's or Recv's
  py::array_t<bool> out(static_cast<py::ssize_t>(rows));
  std::memcpy(out.mutable_data(), pool_->agent_active(), static_cast<size_t>(rows));
  return out;
}

py::object PyVectorPool::Infos(const std::string& which) {
  CheckOpen();
  const int64_t row = pool_->info_row();
  if (row == 0) return py::none();
  const double* src = nullptr;
  int64_t rows = pool_->stats_rows();
  if (which == "step") {
    src = pool_->info();
  } else if (which == "reset") {
    src = pool_->reset_info();
    rows = pool_->num_envs();
  } else if (which == "final") {
    if (pool_->autoreset_mode() != AutoresetMode::kSameStep) {
      throw py::value_error("final infos are kept only in SAME_STEP autoreset mode");
    }
    src = pool_->final_info();
  } else {
    throw py::value_error("which must be 'step', 'reset' or 'final', got '" + which + "'");
  }
  py::array_t<double> out({static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(row)});
  std::memcpy(out.mutable_data(), src, static_cast<size_t>(rows * row) * sizeof(double));
  return out;
}

void PyVectorPool::CheckEnvIndex(int64_t env) const {
  const int64_t n = pool_->num_envs();
  if (env < 0 || env >= n) {
    throw py::index_error("env index " + std::to_string(env) + " is out of range for " +
                          std::to_string(n) + " envs");
  }
}

void PyVectorPool::RaiseMissing(const std::string& cannot, uint32_t since,
                                const std::string& member) const {
  const uint32_t version = type_.api->abi_version;
  const std::string why = version < since
                              ? "its table was built for ABI version " + std::to_string(version) +
                                    " (this came in version " + std::to_string(since) +
                                    "): rebuild it against this fastbatch's headers"
                              : "its env class has no " + member + " (fastbatch/env.h)";
  const std::string message = std::string(pool_->spec().id) + " " + cannot + ": " + why;
  PyErr_SetString(PyExc_NotImplementedError, message.c_str());
  throw py::error_already_set();
}

py::array_t<double> PyVectorPool::GetState(int64_t env) {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  CheckEnvIndex(env);
  double buffer[256];
  const int64_t n = pool_->GetState(env, buffer, 256);
  if (n == 0) throw py::value_error("this env type does not expose its state");
  return py::array_t<double>(std::min<int64_t>(n, 256), buffer);
}

void PyVectorPool::SetState(int64_t env, py::handle state) {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  CheckEnvIndex(env);
  if (!pool_->can_set_state()) {
    RaiseMissing("cannot set an env's state", 5, "`void SetState(const double* state)`");
  }
  const int64_t size = pool_->GetState(env, nullptr, 0);  // 0: a table without get_state
  const DoubleArray checked = CheckState(state, size > 0 ? size : -1);
  pool_->SetState(env, checked.data(), checked.shape(0));
}

py::array_t<uint8_t> PyVectorPool::Render(int64_t env) {
  CallGuard guard(&busy_, &closing_);
  CheckOpen();
  CheckEnvIndex(env);
  const FrameSize frame = pool_->frame();
  if (frame.height == 0) RaiseMissing("does not draw itself", 7, "`void Render(uint8_t* rgb)`");
  py::array_t<uint8_t> out({static_cast<py::ssize_t>(frame.height),
                            static_cast<py::ssize_t>(frame.width), py::ssize_t{3}});
  pool_->Render(env, out.mutable_data());
  return out;
}

void PyVectorPool::Close() {
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
  step_slots_.Clear();
  recv_slots_.Clear();
  rollout_.reset();
  rollout_storage_ = py::none();
  last_obs_ = py::none();
  // ~VectorPool finishes the steps in flight and joins the threads: without the GIL, because an
  // env may call into Python meanwhile (a MuJoCo timer or control callback set from Python runs
  // on the pool's threads), and holding it here would deadlock.
  std::unique_ptr<VectorPool> pool = std::move(pool_);
  py::gil_scoped_release release;
  pool.reset();
}

void PyVectorPool::Abandon() {
  closing_.store(true, std::memory_order_release);
  // Leaked on purpose: ~VectorPool would join (and the async mode stop) threads that exist
  // only in the process that built the pool.
  static_cast<void>(pool_.release());
  rollout_.reset();
  rollout_storage_ = py::none();
  last_obs_ = py::none();
}

uintptr_t PyVectorPool::RolloutContextFor(py::array obs, py::array reward, py::array terminated,
                                          py::array truncated, py::array final_obs) {
  CheckOpen();
  if (pool_->num_agents() > 1) {
    throw py::value_error(std::string(pool_->spec().id) +
                          " is a multi-agent env: the rollout op steps single-agent envs only");
  }
  const int64_t n = pool_->num_envs();
  const int64_t t = reward.ndim() == 2 ? reward.shape(0) : -1;
  auto check = [&](const py::array& a, const char* name, py::ssize_t rows, int64_t row_bytes) {
    if (!(a.flags() & py::array::c_style) || !a.writeable() || a.ndim() < 2 || a.shape(0) != rows ||
        a.shape(1) != n || a.nbytes() != rows * n * row_bytes) {
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
  rollout_storage_ = py::make_tuple(obs, reward, terminated, truncated, final_obs);
  return reinterpret_cast<uintptr_t>(rollout_.get());
}

py::tuple PyVectorPool::RolloutEpisodes() {
  CheckOpen();
  if (!rollout_) return py::make_tuple(py::array_t<double>(0), py::array_t<int64_t>(0));
  const auto count = static_cast<py::ssize_t>(rollout_->episode_returns.size());
  py::array_t<double> returns(count, rollout_->episode_returns.data());
  py::array_t<int64_t> lengths(count, rollout_->episode_lengths.data());
  rollout_->episode_returns.clear();
  rollout_->episode_lengths.clear();
  return py::make_tuple(returns, lengths);
}

}  // namespace fastbatch
