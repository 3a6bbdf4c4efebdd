// fastbatch._core: the private extension module. Registration only: the classes, functions,
// exceptions and constants; each job lives in its own file beside this one. The Python package
// `fastbatch` owns the public names and docs; everything here starts with `_` or is re-exported
// there. python/fastbatch/_core.pyi is the typed stub of this module (tests/test_core_stub.py
// keeps the two equal).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bindings/checks.h"
#include "bindings/deadline.h"
#include "bindings/native_loop.h"
#include "bindings/py_vector_pool.h"
#include "bindings/rollout_abi.h"
#include "bindings/seeds.h"
#include "bindings/shared_word.h"
#include "bindings/spec_dict.h"
#include "core/plugin_loader.h"
#include "core/vector_pool.h"
#include "core/worker_pool.h"
#include "envs/builtin.h"

namespace py = pybind11;

namespace {

constexpr const char* kCapsuleName = "fastbatch.env_api";

void RegisterExceptions(py::module_& m) {
  using fastbatch::EnvError;
  static py::exception<EnvError> env_error(m, "EnvError", PyExc_RuntimeError);
  // EnvError carries the failing env's index: "env 3: <message>" and an `env_index` attribute.
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
  // Where gymnasium has an error for the same rule, ours subclasses it too, so code written
  // against gymnasium's vector envs catches ours.
  py::module_ gym_error = py::module_::import("gymnasium.error");
  py::register_exception<fastbatch::AsyncStateError>(
      m, "AsyncStateError",
      py::make_tuple(py::handle(PyExc_RuntimeError), gym_error.attr("AlreadyPendingCallError"),
                     gym_error.attr("NoAsyncCallError")));
  py::register_exception<fastbatch::PluginError>(m, "PluginError", PyExc_ValueError);
  py::register_exception<fastbatch::ClosedError>(
      m, "ClosedEnvError",
      py::make_tuple(py::handle(PyExc_RuntimeError), gym_error.attr("ClosedEnvironmentError")));
}

void RegisterEnvTypes(py::module_& m) {
  using fastbatch::EnvType;
  py::class_<EnvType>(m, "_EnvType")
      .def_property_readonly("spec", &EnvType::Spec)
      .def_property_readonly("id", &EnvType::Id)
      .def_property_readonly("abi_version", &EnvType::AbiVersion)
      .def_property_readonly("spec_depends_on_params", [](const EnvType& t) {
        return t.api->abi_version >= 2 && t.api->block_spec != nullptr;
      });

  m.def("_builtin_env_types", []() {
    py::dict out;
    for (const fb_env_api* api : fastbatch::envs::BuiltinEnvs()) {
      fastbatch::ValidateApi(api, std::string("built-in env ") + api->spec()->id);
      out[py::str(api->spec()->id)] = EnvType{api, py::none()};
    }
    return out;
  });
  m.def(
      "_load_plugin",
      [](const std::string& path, const std::string& symbol) {
        std::vector<EnvType> types;
        for (const fb_env_api* api : fastbatch::LoadPluginLibrary(path, symbol)) {
          types.push_back(EnvType{api, py::none()});
        }
        return types;
      },
      py::arg("path"), py::arg("symbol") = "",
      "Opens a plugin library (kept loaded for the process lifetime) and checks its tables: "
      "every env it exports, or the one `symbol` returns.");
  m.def(
      "_env_type_from_capsule",
      [](const py::capsule& capsule) {
        if (capsule.name() == nullptr || std::string(capsule.name()) != kCapsuleName) {
          throw fastbatch::PluginError(std::string("expected a capsule named '") + kCapsuleName +
                                       "', got '" + (capsule.name() ? capsule.name() : "") + "'");
        }
        const auto* api = capsule.get_pointer<const fb_env_api>();
        fastbatch::ValidateApi(api, "capsule");
        return EnvType{api, capsule};
      },
      py::arg("capsule"),
      "An env type from a capsule named 'fastbatch.env_api' holding a `const fb_env_api*`; "
      "the capsule's owner must keep the table alive.");
  m.attr("CAPSULE_NAME") = kCapsuleName;
}

void RegisterActionChecker(py::module_& m) {
  using fastbatch::ActionChecker;
  py::class_<ActionChecker>(m, "_ActionChecker")
      .def(py::init([](bool discrete, int64_t n, int64_t start, std::vector<py::ssize_t> row_shape,
                       const py::object& dtype) {
             return ActionChecker(discrete, n, start, std::move(row_shape),
                                  py::dtype::from_args(dtype));
           }),
           py::arg("discrete"), py::arg("n"), py::arg("start"), py::arg("row_shape"),
           py::arg("dtype"))
      .def(
          "check",
          [](const ActionChecker& checker, py::handle actions, int64_t rows,
             const py::object& env_ids) {
            if (rows < 0) throw py::value_error("rows must be >= 0, got " + std::to_string(rows));
            if (env_ids.is_none()) return checker.Check(actions, rows);
            const fastbatch::Int64Array ids = fastbatch::CheckEnvIds(env_ids);
            if (ids.shape(0) != rows) {
              throw py::value_error("env_ids must have " + std::to_string(rows) + " entries, got " +
                                    std::to_string(ids.shape(0)));
            }
            return checker.Check(actions, rows, ids.data());
          },
          py::arg("actions"), py::arg("rows"), py::arg("env_ids") = py::none());
}

void RegisterVectorPool(py::module_& m) {
  using fastbatch::PyVectorPool;
  py::class_<PyVectorPool>(m, "_VectorPool")
      .def(py::init<const fastbatch::EnvType&, int64_t, int, int, int64_t, std::vector<double>,
                    int64_t, int, int64_t>(),
           py::arg("env_type"), py::arg("num_envs"), py::arg("num_threads"),
           py::arg("autoreset_mode"), py::arg("max_episode_steps"), py::arg("params"),
           py::arg("batch_size") = 0, py::arg("max_async_threads") = 0, py::arg("frame_stack") = 1)
      .def("send", &PyVectorPool::Send, py::arg("actions"), py::arg("env_ids"))
      .def("recv", &PyVectorPool::Recv)
      .def("send_recv", &PyVectorPool::SendRecv, py::arg("actions"), py::arg("env_ids"))
      .def("seed", &PyVectorPool::Seed, py::arg("seeds"))
      .def("np_random_seeds", &PyVectorPool::NpRandomSeeds)
      .def("reset", &PyVectorPool::Reset, py::arg("mask") = py::none())
      .def("step", &PyVectorPool::Step, py::arg("actions"))
      .def("step_into", &PyVectorPool::StepInto, py::arg("actions"), py::arg("obs"),
           py::arg("reward"), py::arg("terminated"), py::arg("truncated"))
      .def("episode_stats", &PyVectorPool::EpisodeStats)
      .def("final_obs", &PyVectorPool::FinalObs)
      .def("agent_active", &PyVectorPool::AgentActive)
      .def_property_readonly("num_agents", &PyVectorPool::num_agents)
      .def("infos", &PyVectorPool::Infos, py::arg("which") = "step")
      .def("get_state", &PyVectorPool::GetState, py::arg("env"))
      .def("set_state", &PyVectorPool::SetState, py::arg("env"), py::arg("state"))
      .def("render", &PyVectorPool::Render, py::arg("env"))
      .def("rollout_context", &PyVectorPool::RolloutContextFor, py::arg("obs"), py::arg("reward"),
           py::arg("terminated"), py::arg("truncated"), py::arg("final_obs"))
      .def("rollout_episodes", &PyVectorPool::RolloutEpisodes)
      .def("close", &PyVectorPool::Close)
      .def("_abandon", &PyVectorPool::Abandon)
      .def_property_readonly("num_threads", &PyVectorPool::num_threads)
      .def_property_readonly("active_threads", &PyVectorPool::active_threads)
      .def_property_readonly("spec", &PyVectorPool::Spec);

  m.attr("_rollout_step_address") = reinterpret_cast<uintptr_t>(&FastbatchRolloutStep);
  m.attr("_rollout_error_address") = reinterpret_cast<uintptr_t>(&FastbatchRolloutError);
}

void RegisterSharedWords(py::module_& m) {
  m.def("_wait_word", &fastbatch::WaitWord, py::arg("address"), py::arg("old"),
        py::arg("timeout_s"), py::arg("spin_us") = 0.0, py::arg("yield_") = false,
        py::call_guard<py::gil_scoped_release>(),
        "Waits for a shared uint32 to change (spin, then futex).");
  m.def("_store_word", &fastbatch::StoreWord, py::arg("address"), py::arg("value"),
        "Stores a shared uint32 and wakes its sleepers, if any.");
  m.def("_add_word", &fastbatch::AddWord, py::arg("address"), py::arg("delta") = 1,
        "Adds to a shared uint32, wakes its sleepers, returns the new value.");
  m.def("_load_word", &fastbatch::LoadWord, py::arg("address"));
}

// The native pool's thread tuner, for the process backend's choice of how many blocks of envs
// the caller steps itself (python/fastbatch/process/rebalance.py): one rule for both backends.
void RegisterThreadTuner(py::module_& m) {
  using fastbatch::ThreadTuner;
  py::class_<ThreadTuner>(m, "_ThreadTuner")
      .def(py::init<int, int>(), py::arg("max_threads"), py::arg("start") = 0)
      .def_property_readonly("threads", &ThreadTuner::threads)
      .def_property_readonly("chosen", &ThreadTuner::chosen)
      .def("record", &ThreadTuner::Record, py::arg("seconds"))
      .def("set_probe_cost", &ThreadTuner::set_probe_cost, py::arg("seconds"))
      .def("skip_probe", &ThreadTuner::SkipProbe);
}

void RegisterDeadline(py::module_& m) {
  using fastbatch::Deadline;
  py::class_<Deadline>(m, "_Deadline")
      .def(py::init<double, std::string, int>(), py::arg("seconds"), py::arg("message"),
           py::arg("exit_code"))
      .def("extend", &Deadline::Extend, py::arg("seconds"), py::arg("message") = std::string(),
           "The deadline is now `seconds` from now (a non-empty message replaces the message).")
      .def("cancel", &Deadline::Cancel, "No deadline any more.");
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "fastbatch private extension: the C++ engine. Use the `fastbatch` package instead.";
  m.attr("ABI_VERSION") = FASTBATCH_ABI_VERSION;
  RegisterExceptions(m);
  RegisterEnvTypes(m);
  RegisterActionChecker(m);
  RegisterVectorPool(m);
  RegisterSharedWords(m);
  RegisterRngDraws(m);
  RegisterDeadline(m);
  RegisterThreadTuner(m);
  m.def(
      "_native_loop_seconds",
      [](const fastbatch::EnvType& type, int64_t num_envs, int64_t steps, uint64_t seed,
         int num_threads, std::optional<py::array_t<float, py::array::c_style>> actions,
         int64_t batch_size, std::vector<double> params, int64_t frame_stack) {
        std::vector<float> table;
        if (actions.has_value()) table.assign(actions->data(), actions->data() + actions->size());
        py::gil_scoped_release release;
        return fastbatch::NativeLoopSeconds(type.api, num_envs, steps, seed, num_threads, table,
                                            batch_size, params, frame_stack);
      },
      py::arg("env_type"), py::arg("num_envs"), py::arg("steps"), py::arg("seed") = 0,
      py::arg("num_threads") = 1, py::arg("actions") = py::none(), py::arg("batch_size") = 0,
      py::arg("params") = std::vector<double>{}, py::arg("frame_stack") = 1,
      "Seconds of `steps` batch steps of a pool on `num_threads` threads driven by a C++ loop, "
      "with Box actions cycling through `actions` [tables, num_envs, *shape] if given; "
      "`batch_size` < num_envs: async, each step a recv of batch_size envs and a send; "
      "`params`: encoded param values (NativeEnvSpec.encode_params; empty: the defaults); "
      "`frame_stack`: observations stacked per env (bench/).");
}
