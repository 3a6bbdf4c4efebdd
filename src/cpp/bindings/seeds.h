// Seeds between Python and C++: a seed is a non-negative Python int of any size; C++ takes it as
// 32-bit words, lowest first (numpy's SeedSequence coercion). Also the private `_rng_draws`
// hook, through which tests compare fastbatch::Rng with numpy's generator.
//
// Threading: every function here holds the GIL.
#ifndef FASTBATCH_BINDINGS_SEEDS_H_
#define FASTBATCH_BINDINGS_SEEDS_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

namespace py = pybind11;

namespace fastbatch {

// Appends `seed`'s words to `words`. Raises ValueError for a negative seed.
void AppendSeedWords(const py::int_& seed, std::vector<uint32_t>* words);
// The Python int of seed words.
py::int_ SeedInt(const std::vector<uint32_t>& words);

}  // namespace fastbatch

// Registers the test hooks `_rng_draws(seed, kind, count, stream=None, low=0, high=None)`:
// `count` draws of kind "raw" (uint64, PCG64's random_raw), "uniform" (float64 in [0, 1)),
// "normal" (standard_normal) or "integers" (int64, integers(low, high)) from an Rng seeded with
// `seed` (and numpy's spawn key `(stream,)` if given), as a numpy array; and
// `_rng_sequence(seed, draws, stream=None)`: the draws of a list of kinds with their arguments
// (e.g. [("integers", 7), ("uniform",), ("integers", -3, 9)]) from one Rng, as a list.
void RegisterRngDraws(py::module_& m);

#endif  // FASTBATCH_BINDINGS_SEEDS_H_
