// OpenCV's `cv2.resize(src, (width, height), interpolation=cv2.INTER_AREA)` for uint8 images
// shrunk by a factor of at least 1 on each axis, bit for bit (what gymnasium's
// AtariPreprocessing calls; tests/native_atari checks it against cv2 on random images and game
// frames). Each source row is reduced along x once; both passes run over whole rows.
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
      : src_height_(src_height),
        channels_(channels),
        src_row_(src_width * channels),
        dst_row_(dst_width * channels) {
    if (dst_height > src_height || dst_width > src_width || dst_height < 1 || dst_width < 1) {
      throw std::invalid_argument(
          "the area resize shrinks: the screen size must be 1 to the frame's");
    }
    BuildColumns(Table(src_width, dst_width));
    rows_ = Table(src_height, dst_height);
    row_.resize(static_cast<size_t>(src_row_));
    reduced_.resize(static_cast<size_t>(src_height * dst_row_));
    sum_.resize(static_cast<size_t>(dst_row_));
  }

  // src: [src_height, src_width, channels] row-major; dst: [dst_height, dst_width, channels].
  void operator()(const uint8_t* src, uint8_t* dst) {
    for (int64_t r = 0; r < src_height_; ++r) {
      ReduceRow(src + r * src_row_, reduced_.data() + r * dst_row_);
    }
    float* sum = sum_.data();
    const int64_t width = dst_row_;
    for (size_t k = 0; k < rows_.size(); ++k) {
      const Entry& y = rows_[k];
      const float* row = reduced_.data() + y.src * width;
      if (k == 0 || y.dst != rows_[k - 1].dst) {
        for (int64_t e = 0; e < width; ++e) sum[e] = y.weight * row[e];
      } else {
        for (int64_t e = 0; e < width; ++e) sum[e] += y.weight * row[e];
      }
      if (k + 1 == rows_.size() || rows_[k + 1].dst != y.dst) Store(dst + y.dst * width);
    }
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
        const float weight = static_cast<float>((static_cast<double>(first) - start) / cell);
        table.push_back({d, first - 1, weight});
      }
      for (int64_t s = first; s < last; ++s) {
        table.push_back({d, s, static_cast<float>(1.0 / cell)});
      }
      if (end - static_cast<double>(last) > 1e-3) {
        const double part = std::min(std::min(end - static_cast<double>(last), 1.0), cell);
        table.push_back({d, last, static_cast<float>(part / cell)});
      }
    }
    return table;
  }

  // The x table as `terms_` planes over the destination elements (column x channel): plane k
  // holds each element's k-th source element and weight, in table order, padded with weight 0
  // (adding 0 * x = +0 to a sum of non-negative terms leaves it as it is).
  void BuildColumns(const std::vector<Entry>& table) {
    std::vector<int64_t> count(static_cast<size_t>(dst_row_ / channels_), 0);
    for (const Entry& x : table) terms_ = std::max(terms_, ++count[static_cast<size_t>(x.dst)]);
    source_.assign(static_cast<size_t>(terms_ * dst_row_), 0);
    weight_.assign(source_.size(), 0.0f);
    std::fill(count.begin(), count.end(), 0);
    for (const Entry& x : table) {
      const int64_t k = count[static_cast<size_t>(x.dst)]++;
      for (int64_t c = 0; c < channels_; ++c) {
        const auto at = static_cast<size_t>(k * dst_row_ + x.dst * channels_ + c);
        source_[at] = static_cast<int32_t>(x.src * channels_ + c);
        weight_[at] = x.weight;
      }
    }
  }

  // One source row along x: each element's terms summed in table order (OpenCV's order). The
  // row is made float once (exact for uint8), so each term is a load, a multiply and an add.
  void ReduceRow(const uint8_t* in, float* __restrict out) {
    float* __restrict row = row_.data();
    for (int64_t e = 0; e < src_row_; ++e) row[e] = static_cast<float>(in[e]);
    const int32_t* source = source_.data();
    const float* weight = weight_.data();
    for (int64_t e = 0; e < dst_row_; ++e) out[e] = row[source[e]] * weight[e];
    for (int64_t k = 1; k < terms_; ++k) {
      const int32_t* s = source + k * dst_row_;
      const float* w = weight + k * dst_row_;
      for (int64_t e = 0; e < dst_row_; ++e) out[e] += row[s[e]] * w[e];
    }
  }

  // std::lrint is one instruction here: the library builds with -fno-math-errno (CMakeLists).
  void Store(uint8_t* out) const {
    for (int64_t e = 0; e < dst_row_; ++e) {
      const long rounded = std::lrint(sum_[static_cast<size_t>(e)]);  // nearest, ties to even
      out[e] = static_cast<uint8_t>(std::clamp<long>(rounded, 0, 255));
    }
  }

  int64_t src_height_, channels_, src_row_, dst_row_;
  int64_t terms_ = 0;                 // the most x terms of one destination element
  std::vector<int32_t> source_;       // [terms_, dst_row_]: source element of each term
  std::vector<float> weight_;         // [terms_, dst_row_]: its weight (0: padding)
  std::vector<Entry> rows_;           // the y table
  std::vector<float> row_;            // the source row being reduced, as floats
  std::vector<float> reduced_, sum_;  // every source row along x; one destination row's sums
};

}  // namespace fastbatch_atari

#endif  // FASTBATCH_ATARI_RESIZE_AREA_H_
