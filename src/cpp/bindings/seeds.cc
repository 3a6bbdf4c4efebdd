#include "bindings/seeds.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "fastbatch/rng.h"

namespace fastbatch {

void AppendSeedWords(const py::int_& seed, std::vector<uint32_t>* words) {
  const unsigned long long small = PyLong_AsUnsignedLongLong(seed.ptr());
  if (!(small == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
    words->push_back(static_cast<uint32_t>(small));
    words->push_back(static_cast<uint32_t>(small >> 32));
    return;
  }
  PyErr_Clear();  // negative, or wider than 64 bits
  if (seed < py::int_(0)) {
    throw py::value_error("seeds must be non-negative integers, got " +
                          py::repr(seed).cast<std::string>());
  }
  const py::int_ mask(0xffffffffu);
  const py::int_ shift(32);
  py::object rest = seed;
  while (rest > py::int_(0)) {
    words->push_back((rest & mask).cast<uint32_t>());
    rest = rest >> shift;
  }
}

py::int_ SeedInt(const std::vector<uint32_t>& words) {
  py::object value = py::int_(0);
  const py::int_ shift(32);
  for (size_t k = words.size(); k-- > 0;) value = (value << shift) | py::int_(words[k]);
  return py::int_(value);
}

}  // namespace fastbatch

namespace {

// An Rng state seeded as numpy's `PCG64(SeedSequence(seed, spawn_key=(stream,)))`.
fb_rng SeededState(const py::int_& seed, const std::optional<py::int_>& stream) {
  std::vector<uint32_t> entropy, key;
  fastbatch::AppendSeedWords(seed, &entropy);
  if (stream.has_value()) fastbatch::AppendSeedWords(*stream, &key);
  while (key.size() > 1 && key.back() == 0) key.pop_back();  // numpy's coercion of an int
  fb_rng state;
  fastbatch::Rng::Seed(
      &state, fastbatch::SeedSequence(entropy.data(), entropy.size(), key.data(), key.size()));
  return state;
}

// One draw of `_rng_sequence`: ("raw",), ("uniform",), ("uniform", low, high), ("normal",),
// ("integers", high) or ("integers", low, high), as a Python int or float.
py::object Draw(fastbatch::Rng& rng, const py::tuple& draw) {
  const std::string kind = draw.empty() ? "" : py::str(draw[0]).cast<std::string>();
  const size_t args = draw.empty() ? 0 : draw.size() - 1;
  if (kind == "raw" && args == 0) return py::int_(rng.NextU64());
  if (kind == "uniform" && args == 0) return py::float_(rng.Uniform());
  if (kind == "uniform" && args == 2) {
    return py::float_(rng.Uniform(draw[1].cast<double>(), draw[2].cast<double>()));
  }
  if (kind == "normal" && args == 0) return py::float_(rng.StandardNormal());
  if (kind == "integers" && args == 1) return py::int_(rng.Integers(draw[1].cast<int64_t>()));
  if (kind == "integers" && args == 2) {
    return py::int_(rng.Integers(draw[1].cast<int64_t>(), draw[2].cast<int64_t>()));
  }
  throw py::value_error(
      "a draw is ('raw',), ('uniform',), ('uniform', low, high), ('normal',), ('integers', "
      "high) or ('integers', low, high), got " +
      py::repr(draw).cast<std::string>());
}

}  // namespace

void RegisterRngDraws(py::module_& m) {
  m.def(
      "_rng_draws",
      [](const py::int_& seed, const std::string& kind, int64_t count,
         std::optional<py::int_> stream, int64_t low, std::optional<int64_t> high) -> py::array {
        if (count < 0) throw py::value_error("count must be non-negative");
        if (kind != "raw" && kind != "uniform" && kind != "normal" && kind != "integers") {
          throw py::value_error("kind must be 'raw', 'uniform', 'normal' or 'integers', got '" +
                                kind + "'");
        }
        if ((kind == "integers") != high.has_value()) {
          throw py::value_error("high is given with kind 'integers' and only then");
        }
        fb_rng state = SeededState(seed, stream);
        fastbatch::Rng rng(&state);
        if (kind == "raw") {
          py::array_t<uint64_t> out(count);
          for (int64_t i = 0; i < count; ++i) out.mutable_data()[i] = rng.NextU64();
          return out;
        }
        if (kind == "integers") {
          py::array_t<int64_t> out(count);
          for (int64_t i = 0; i < count; ++i) out.mutable_data()[i] = rng.Integers(low, *high);
          return out;
        }
        py::array_t<double> out(count);
        double* data = out.mutable_data();
        for (int64_t i = 0; i < count; ++i) {
          data[i] = kind == "uniform" ? rng.Uniform() : rng.StandardNormal();
        }
        return out;
      },
      py::arg("seed"), py::arg("kind"), py::arg("count"), py::arg("stream") = py::none(),
      py::arg("low") = 0, py::arg("high") = py::none(),
      "Test hook: `count` draws of fastbatch::Rng seeded as numpy's "
      "`Generator(PCG64(SeedSequence(seed, spawn_key=(stream,))))` (tests/test_seeding.py).");
  m.def(
      "_rng_sequence",
      [](const py::int_& seed, const std::vector<py::tuple>& draws,
         std::optional<py::int_> stream) {
        fb_rng state = SeededState(seed, stream);
        fastbatch::Rng rng(&state);
        py::list out;
        for (const py::tuple& draw : draws) out.append(Draw(rng, draw));
        return out;
      },
      py::arg("seed"), py::arg("draws"), py::arg("stream") = py::none(),
      "Test hook: one fastbatch::Rng, seeded as `_rng_draws` is, making `draws` in order: a "
      "list of Python ints and floats (tests/test_seeding.py).");
}
