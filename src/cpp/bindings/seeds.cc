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

void RegisterRngDraws(py::module_& m) {
  m.def(
      "_rng_draws",
      [](const py::int_& seed, const std::string& kind, int64_t count,
         std::optional<py::int_> stream) -> py::array {
        if (count < 0) throw py::value_error("count must be non-negative");
        if (kind != "raw" && kind != "uniform" && kind != "normal") {
          throw py::value_error("kind must be 'raw', 'uniform' or 'normal', got '" + kind + "'");
        }
        std::vector<uint32_t> entropy, key;
        fastbatch::AppendSeedWords(seed, &entropy);
        if (stream.has_value()) fastbatch::AppendSeedWords(*stream, &key);
        while (key.size() > 1 && key.back() == 0) key.pop_back();  // numpy's coercion of an int
        fb_rng state;
        fastbatch::Rng::Seed(&state, fastbatch::SeedSequence(entropy.data(), entropy.size(),
                                                             key.data(), key.size()));
        fastbatch::Rng rng(&state);
        if (kind == "raw") {
          py::array_t<uint64_t> out(count);
          for (int64_t i = 0; i < count; ++i) out.mutable_data()[i] = rng.NextU64();
          return std::move(out);
        }
        py::array_t<double> out(count);
        double* data = out.mutable_data();
        for (int64_t i = 0; i < count; ++i) {
          data[i] = kind == "uniform" ? rng.Uniform() : rng.StandardNormal();
        }
        return std::move(out);
      },
      py::arg("seed"), py::arg("kind"), py::arg("count"), py::arg("stream") = py::none(),
      "Test hook: `count` draws of fastbatch::Rng seeded as numpy's "
      "`Generator(PCG64(SeedSequence(seed, spawn_key=(stream,))))` (tests/test_seeding.py).");
}
