// dm_control's `rewards.tolerance` (dm_control/utils/rewards.py) with every sigmoid, as numpy
// computes it for one value: 1 inside [lower, upper]; outside, 0 when margin is 0, else the
// sigmoid of the distance to the nearest bound over the margin, scaled so that a distance of one
// margin gives `value_at_margin`.
//
// numpy's float64 `x ** 2` is libm's pow for a scalar (a task passing one value) and x * x for
// an array element (a task passing a vector): `Scalar` and `Element` keep the two apart.
// Transcendentals are libm's. numpy may use its own SIMD exp, log and hyperbolic functions
// (AVX-512 builds), which differ from libm in the last bit of a float64 now and then; rewards
// reach Python as float32, where a one-ulp float64 difference vanishes in the rounding.
#ifndef FASTBATCH_DM_CONTROL_REWARDS_H_
#define FASTBATCH_DM_CONTROL_REWARDS_H_

#include <cmath>
#include <limits>

namespace fastbatch::dm_control {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kPi = 3.141592653589793;

enum class Sigmoid {
  kGaussian,
  kHyperbolic,
  kLongTail,
  kReciprocal,
  kCosine,
  kLinear,
  kQuadratic,
  kTanhSquared
};

// How `x ** 2` rounds: a numpy scalar (libm pow) or an array element (x * x).
enum class Input { kScalar, kElement };

inline double Square(double x, Input input) {
  if (input == Input::kElement) return x * x;
  static volatile double two = 2.0;  // keeps the compiler from turning pow into x * x
  return std::pow(x, two);
}

inline double SigmoidValue(double x, double value_at_1, Sigmoid sigmoid, Input input) {
  switch (sigmoid) {
    case Sigmoid::kGaussian: {
      const double scale = std::sqrt(-2 * std::log(value_at_1));
      return std::exp(-0.5 * Square(x * scale, input));
    }
    case Sigmoid::kHyperbolic: {
      const double scale = std::acosh(1 / value_at_1);
      return 1 / std::cosh(x * scale);
    }
    case Sigmoid::kLongTail: {
      const double scale = std::sqrt(1 / value_at_1 - 1);
      return 1 / (Square(x * scale, input) + 1);
    }
    case Sigmoid::kReciprocal: {
      const double scale = 1 / value_at_1 - 1;
      return 1 / (std::fabs(x) * scale + 1);
    }
    case Sigmoid::kCosine: {
      const double scale = std::acos(2 * value_at_1 - 1) / kPi;
      const double scaled = x * scale;
      return std::fabs(scaled) < 1 ? (1 + std::cos(kPi * scaled)) / 2 : 0.0;
    }
    case Sigmoid::kLinear: {
      const double scaled = x * (1 - value_at_1);
      return std::fabs(scaled) < 1 ? 1 - scaled : 0.0;
    }
    case Sigmoid::kQuadratic: {
      const double scaled = x * std::sqrt(1 - value_at_1);
      return std::fabs(scaled) < 1 ? 1 - Square(scaled, input) : 0.0;
    }
    case Sigmoid::kTanhSquared: {
      const double scale = std::atanh(std::sqrt(1 - value_at_1));
      return 1 - Square(std::tanh(x * scale), input);
    }
  }
  return 0.0;
}

struct Tolerance {
  double lower = 0.0;
  double upper = 0.0;
  double margin = 0.0;
  Sigmoid sigmoid = Sigmoid::kGaussian;
  double value_at_margin = 0.1;  // dm_control's _DEFAULT_VALUE_AT_MARGIN

  double operator()(double x, Input input = Input::kScalar) const {
    if (lower <= x && x <= upper) return 1.0;
    if (margin == 0) return 0.0;
    const double d = (x < lower ? lower - x : x - upper) / margin;
    return SigmoidValue(d, value_at_margin, sigmoid, input);
  }
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_REWARDS_H_
