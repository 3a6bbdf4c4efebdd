// OpenCV's `cv2.resize(src, (width, height), interpolation=cv2.INTER_AREA)` for uint8 images
// shrunk by a factor of at least 1 on each axis, bit for bit (what gymnasium's
// AtariPreprocessing calls; tests/native_atari checks it against cv2 on random images and game
// frames).
//
// The area method: each destination pixel is the mean of the source area it covers, source
// pixels cut by the cell's edge weighted by the part inside. Per axis, a table lists
// (destination index, source index, weight) in order; weights are float32, computed in double
// from the scale src / dst. Each source row needed is first reduced along x (float32 sums over
// the x table, in table order), then the rows of a destination row are summed with their y
// weights (float32), and the sum is rounded to nearest, ties to even, and clamped to 0-255.
// Summation order is part of the result, so it follows that description exactly.
#ifndef FASTBATCH_ATARI_RESIZE_AREA_H_
#define FASTBATCH_ATARI_RESIZE_AREA_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace fastbatch_atari {

class AreaResize {
 public:
  AreaResize(int64_t src_height, int64_t src_width, int64_t dst_height, int64_t dst_width,
             int64_t channels)
      : src_width_(src_width), dst_width_(dst_width), channels_(channels) {
    if (dst_height > src_height || dst_width > src_width || dst_height < 1 || dst_width < 1) {
      throw std::invalid_argument(
          "the area resize shrinks: the screen size must be 1 to the frame's");
    }
    x_ = Table(src_width, dst_width);
    y_ = Table(src_height, dst_height);
    row_.resize(static_cast<size_t>(dst_width * channels));
    sum_.resize(row_.size());
  }

  // src: [src_height, src_width, channels] row-major; dst: [dst_height, dst_width, channels].
  void operator()(const uint8_t* src, uint8_t* dst) {
    const size_t width = row_.size();
    int64_t current = y_.front().dst;
    std::fill(sum_.begin(), sum_.end(), 0.0f);
    for (const Entry& y : y_) {
      ReduceRow(src + y.src * src_width_ * channels_);
      if (y.dst != current) {
        Store(dst + current * dst_width_ * channels_);
        for (size_t k = 0; k < width; ++k) sum_[k] = y.weight * row_[k];
        current = y.dst;
      } else {
        for (size_t k = 0; k < width; ++k) sum_[k] += y.weight * row_[k];
      }
    }
    Store(dst + current * dst_width_ * channels_);
  }

 private:
  struct Entry {
    int64_t dst, src;
    float weight;
  };

  static std::vector<Entry> Table(int64_t src_size, int64_t dst_size) {
    const double scale = static_cast<double>(src_size) / static_cast<double>(dst_size);
    std::vector<Entry> table;
    for (int64_t d = 0; d < dst_size; ++d) {
      const double start = static_cast<double>(d) * scale;
      const double end = start + scale;
      const double cell = std::min(scale, static_cast<double>(src_size) - start);
      int64_t first = static_cast<int64_t>(std::ceil(start));
      int64_t last = static_cast<int64_t>(std::floor(end));
      last = std::min(last, src_size - 1);
      first = std::min(first, last);
      if (static_cast<double>(first) - start > 1e-3) {
        table.push_back(
            {d, first - 1, static_cast<float>((static_cast<double>(first) - start) / cell)});
      }
      for (int64_t s = first; s < last; ++s)
        table.push_back({d, s, static_cast<float>(1.0 / cell)});
      if (end - static_cast<double>(last) > 1e-3) {
        const double part = std::min(std::min(end - static_cast<double>(last), 1.0), cell);
        table.push_back({d, last, static_cast<float>(part / cell)});
      }
    }
    return table;
  }

  void ReduceRow(const uint8_t* row) {
    std::fill(row_.begin(), row_.end(), 0.0f);
    for (const Entry& x : x_) {
      const uint8_t* in = row + x.src * channels_;
      float* out = row_.data() + x.dst * channels_;
      for (int64_t c = 0; c < channels_; ++c) out[c] += static_cast<float>(in[c]) * x.weight;
    }
  }

  void Store(uint8_t* out) const {
    for (size_t k = 0; k < sum_.size(); ++k) {
      const long rounded = std::lrint(sum_[k]);  // to nearest, ties to even
      out[k] = static_cast<uint8_t>(std::clamp<long>(rounded, 0, 255));
    }
  }

  int64_t src_width_, dst_width_, channels_;
  std::vector<Entry> x_, y_;
  std::vector<float> row_, sum_;  // one reduced source row; the destination row's sums
};

}  // namespace fastbatch_atari

#endif  // FASTBATCH_ATARI_RESIZE_AREA_H_
