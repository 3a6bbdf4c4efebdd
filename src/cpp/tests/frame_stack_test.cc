// FrameStack alone (core/frame_stack.h), on hand-made specs: the stacked spec (shape, tiled
// bounds, the fields the table's version has), Start's k copies, Push's rows oldest first over
// many wraps of the ring whatever output rows it is given, envs stacked independently (one thread
// per env at once), and the refusals of a bad k and of specs that cannot be stacked.
#include "core/frame_stack.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "core/plugin_loader.h"
#include "fastbatch/abi.h"

namespace fastbatch {
namespace {

// A float32 Box observation of `shape` ([f] or [a, b]), bounds -1 - j and 1 + j for element j.
struct BoxSpec {
  explicit BoxSpec(std::vector<int64_t> shape) {
    spec.id = "Box-v0";
    fb_space& obs = spec.observation;
    obs.dtype = FB_FLOAT32;
    obs.ndim = static_cast<int32_t>(shape.size());
    int64_t size = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      obs.shape[d] = shape[d];
      size *= shape[d];
    }
    for (int64_t j = 0; j < size; ++j) {
      low.push_back(-1.0 - static_cast<double>(j));
      high.push_back(1.0 + static_cast<double>(j));
    }
    obs.low = low.data();
    obs.high = high.data();
    spec.action.is_discrete = 1;
    spec.action.dtype = FB_INT64;
    spec.action.n = 3;
    spec.max_episode_steps = 77;
  }
  fb_spec spec{};
  std::vector<double> low, high;
};

using Row = std::vector<float>;

// Env i's raw row of `stack` becomes `frame`.
void Write(FrameStack& stack, int64_t i, const Row& frame) {
  auto* raw = static_cast<float*>(stack.raw_rows()) + i * static_cast<int64_t>(frame.size());
  for (size_t j = 0; j < frame.size(); ++j) raw[j] = frame[j];
}

uint8_t* Bytes(Row& row) { return reinterpret_cast<uint8_t*>(row.data()); }

// Frame t of an env: two floats, {100 * env + t, -t}.
Row Frame(int64_t env, int64_t t) {
  return {static_cast<float>(100 * env + t), static_cast<float>(-t)};
}

// The stacked row expected after frames `first` (the episode's start) to `last` of env `env`:
// the last k frames, oldest first, the start frame repeated where fewer than k came after it.
Row Expected(int64_t env, int64_t first, int64_t last, int64_t k) {
  Row row;
  for (int64_t t = last - k + 1; t <= last; ++t) {
    const Row frame = Frame(env, t < first ? first : t);
    row.insert(row.end(), frame.begin(), frame.end());
  }
  return row;
}

// What the constructor throws, or "" when it does not.
std::string Refusal(const fb_spec& spec, size_t spec_bytes, int64_t k) {
  try {
    FrameStack stack(spec, spec_bytes, k, 2);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

FB_TEST(StackedSpecHasANewFirstAxisAndTiledBounds) {
  BoxSpec box({2, 3});
  box.spec.num_infos = 5;  // a version-3 field: not copied from a version-2 table's spec
  const FrameStack stack(box.spec, SpecBytes(2), 4, 3);
  const fb_spec& spec = stack.spec();
  FB_CHECK_EQ(stack.k(), int64_t{4});
  FB_CHECK_EQ(stack.frame_bytes(), int64_t{24});
  FB_CHECK_EQ(stack.row_bytes(), int64_t{96});
  FB_CHECK_EQ(spec.observation.ndim, 3);
  FB_CHECK_EQ(spec.observation.shape[0], int64_t{4});
  FB_CHECK_EQ(spec.observation.shape[1], int64_t{2});
  FB_CHECK_EQ(spec.observation.shape[2], int64_t{3});
  FB_CHECK_EQ(spec.observation.dtype, static_cast<int32_t>(FB_FLOAT32));
  for (int f = 0; f < 4; ++f) {
    for (int j = 0; j < 6; ++j) {
      FB_CHECK_EQ(spec.observation.low[6 * f + j], box.low[static_cast<size_t>(j)]);
      FB_CHECK_EQ(spec.observation.high[6 * f + j], box.high[static_cast<size_t>(j)]);
    }
  }
  FB_CHECK(spec.observation.low != box.low.data());  // its own copy, not the env's
  FB_CHECK(spec.id == box.spec.id);
  FB_CHECK_EQ(spec.action.n, int64_t{3});
  FB_CHECK_EQ(spec.max_episode_steps, int64_t{77});
  FB_CHECK_EQ(spec.num_infos, 0);
  FB_CHECK_EQ(box.spec.observation.ndim, 2);  // the env's spec is left as it was

  BoxSpec unbounded({5});
  unbounded.spec.observation.low = nullptr;
  unbounded.spec.observation.high = nullptr;
  const FrameStack open_stack(unbounded.spec, sizeof(fb_spec), 2, 1);
  FB_CHECK(open_stack.spec().observation.low == nullptr);
  FB_CHECK(open_stack.spec().observation.high == nullptr);
  FB_CHECK_EQ(open_stack.spec().observation.shape[0], int64_t{2});
  FB_CHECK_EQ(open_stack.spec().observation.shape[1], int64_t{5});
}

FB_TEST(StartFillsEveryFrameWithTheFirstObservation) {
  BoxSpec box({2});
  for (int64_t k : {1, 2, 3, 5}) {
    FrameStack stack(box.spec, sizeof(fb_spec), k, 2);
    Row out(static_cast<size_t>(2 * k), -7.0f);
    Write(stack, 1, Frame(1, 0));
    stack.Start(1, Bytes(out));
    FB_CHECK_MSG(out == Expected(1, 0, 0, k), "k = " + std::to_string(k));
    Write(stack, 1, Frame(1, 1));  // the ring holds the k copies, not only the output row
    Row next(static_cast<size_t>(2 * k), -7.0f);
    stack.Push(1, Bytes(next));
    FB_CHECK_MSG(next == Expected(1, 0, 1, k), "k = " + std::to_string(k));
  }
}

// Every Push writes a fresh output row (filled with junk first), so the history can only come
// from the ring; 4k + 1 pushes wrap the ring four times, and a Start halfway begins again.
FB_TEST(PushWritesTheLastKFramesOldestFirstAcrossRingWraps) {
  BoxSpec box({2});
  for (int64_t k : {1, 2, 3, 4, 7}) {
    FrameStack stack(box.spec, sizeof(fb_spec), k, 1);
    int64_t first = 0;
    Write(stack, 0, Frame(0, 0));
    Row start(static_cast<size_t>(2 * k), -7.0f);
    stack.Start(0, Bytes(start));
    for (int64_t t = 1; t <= 8 * k + 2; ++t) {
      Write(stack, 0, Frame(0, t));
      Row out(static_cast<size_t>(2 * k), -7.0f);
      if (t == 4 * k + 1) {
        first = t;
        stack.Start(0, Bytes(out));
      } else {
        stack.Push(0, Bytes(out));
      }
      FB_CHECK_MSG(out == Expected(0, first, t, k),
                   "k = " + std::to_string(k) + ", frame " + std::to_string(t));
    }
  }
}

// Each env's ring is its own: envs started and pushed at different times, first in turn on
// one thread, then each on a thread of its own at once.
FB_TEST(EnvsAreStackedIndependently) {
  BoxSpec box({2});
  constexpr int64_t kEnvs = 4, k = 3;
  FrameStack stack(box.spec, sizeof(fb_spec), k, kEnvs);
  std::vector<int64_t> first(kEnvs), last(kEnvs);
  for (int64_t i = 0; i < kEnvs; ++i) {
    first[static_cast<size_t>(i)] = last[static_cast<size_t>(i)] = 10 * i;
    Write(stack, i, Frame(i, 10 * i));
    Row out(2 * k);
    stack.Start(i, Bytes(out));
  }
  for (int64_t round = 0; round < 9; ++round) {
    for (int64_t i = 0; i <= round % kEnvs; ++i) {  // env 0 the most often, env 3 the least
      const auto e = static_cast<size_t>(i);
      Write(stack, i, Frame(i, ++last[e]));
      Row out(2 * k, -7.0f);
      stack.Push(i, Bytes(out));
      FB_CHECK_MSG(out == Expected(i, first[e], last[e], k),
                   "env " + std::to_string(i) + ", round " + std::to_string(round));
    }
  }

  constexpr int64_t kPushes = 2000;
  std::vector<int64_t> wrong(kEnvs, -1);  // each thread's first wrong frame
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < kEnvs; ++i) {
    threads.emplace_back([&, i] {
      const auto e = static_cast<size_t>(i);
      for (int64_t n = 0; n < kPushes; ++n) {
        Write(stack, i, Frame(i, ++last[e]));
        Row out(2 * k, -7.0f);
        stack.Push(i, Bytes(out));
        if (out != Expected(i, first[e], last[e], k) && wrong[e] < 0) wrong[e] = last[e];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int64_t i = 0; i < kEnvs; ++i) {
    FB_CHECK_MSG(
        wrong[static_cast<size_t>(i)] < 0,
        "env " + std::to_string(i) + " at frame " + std::to_string(wrong[static_cast<size_t>(i)]));
  }
}

FB_TEST(BadKAndUnstackableSpacesAreRefusedWithAMessage) {
  BoxSpec box({2});
  for (int64_t k : {0, -1, -5}) {
    const std::string message = Refusal(box.spec, sizeof(fb_spec), k);
    FB_CHECK_MSG(
        Contains(message, "frame_stack must be a positive integer, got " + std::to_string(k)),
        message);
  }
  FB_CHECK_EQ(Refusal(box.spec, sizeof(fb_spec), 1), std::string());

  fb_spec discrete = box.spec;
  discrete.id = "Discrete-v0";
  discrete.observation = fb_space{};
  discrete.observation.is_discrete = 1;
  discrete.observation.dtype = FB_INT64;
  discrete.observation.n = 4;
  std::string message = Refusal(discrete, sizeof(fb_spec), 2);
  FB_CHECK_MSG(Contains(message, "Discrete-v0: frame_stack needs a Box observation space"),
               message);

  BoxSpec deep({1, 1, 2, 1});  // FASTBATCH_MAX_NDIM axes: no room for the stack's
  message = Refusal(deep.spec, sizeof(fb_spec), 2);
  FB_CHECK_MSG(Contains(message, "Box-v0: frame_stack adds a first axis") &&
                   Contains(message, "at most " + std::to_string(FASTBATCH_MAX_NDIM)),
               message);
  BoxSpec room({1, 2, 1});
  FB_CHECK_EQ(Refusal(room.spec, sizeof(fb_spec), 2), std::string());
}

}  // namespace
}  // namespace fastbatch

FB_TEST_MAIN()
