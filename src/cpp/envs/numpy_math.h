// Scalar helpers that reproduce NumPy 2 scalar arithmetic bit for bit, for the built-in envs
// that must match gymnasium's Python reference exactly.
#ifndef FASTBATCH_ENVS_NUMPY_MATH_H_
#define FASTBATCH_ENVS_NUMPY_MATH_H_

#include <cmath>

namespace fastbatch::envs {

// NumPy's scalar `x ** 2` (and Python's `math.pow(x, 2)`) call libm's pow, which is not always
// equal to x * x. The exponent is read through a volatile so the compiler cannot fold the call
// into a multiplication.
inline double Pow2(double x) {
  static volatile double two = 2.0;
  return std::pow(x, two);
}
inline float Pow2(float x) {
  static volatile float two = 2.0f;
  return std::pow(x, two);
}

// Rounds x to the nearest float32, as NumPy does when it stores a value into a float32 array.
// The round trip goes through a volatile: GCC 12's SLP vectorizer was seen to fold
// (double)(float)x into x when two such stores sit side by side, silently skipping the rounding.
inline double RoundToF32(double x) {
  volatile float f = static_cast<float>(x);
  return f;
}

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_NUMPY_MATH_H_
