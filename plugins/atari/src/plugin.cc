// The fastbatch-atari plugin library: one env table per game of kGames (gymnasium's
// `ALE/<Name>-v5` ids), and the ROM directory Python sets.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

#include "atari_env.h"
#include "fastbatch/env.h"
#include "games.h"
#include "resize_area.h"
#include "rom_dir.h"

namespace fastbatch_atari {
namespace {

std::mutex rom_dir_mutex;
std::string rom_dir;  // guarded by rom_dir_mutex

template <size_t... G>
const fb_env_api* const* GameApis(int32_t* count, std::index_sequence<G...>) {
  return fastbatch::EnvApis<AtariGame<G>...>(count);
}

}  // namespace

std::string RomDir() {
  std::lock_guard<std::mutex> lock(rom_dir_mutex);
  return rom_dir;
}

}  // namespace fastbatch_atari

extern "C" FASTBATCH_EXPORT_SYMBOL void fastbatch_atari_set_rom_dir(const char* dir) {
  ale::Logger::setMode(ale::Logger::Error);  // ALE's start-up chatter off, as ale-py's env does
  std::lock_guard<std::mutex> lock(fastbatch_atari::rom_dir_mutex);
  fastbatch_atari::rom_dir = dir == nullptr ? "" : dir;
}

// The ALE version this library was built with, for the Python side's check against ale-py.
extern "C" FASTBATCH_EXPORT_SYMBOL const char* fastbatch_atari_ale_version(void) {
  return ALE_VERSION;
}

// For tests (tests/native_atari, against cv2.resize): the INTER_AREA resize of one uint8 image
// [height, width, channels] into [dst_height, dst_width, channels]. Returns 0, or 1 (and writes
// nothing) when the sizes are refused.
extern "C" FASTBATCH_EXPORT_SYMBOL int fastbatch_atari_resize_area(const uint8_t* src,
                                                                   int64_t height, int64_t width,
                                                                   int64_t channels, uint8_t* dst,
                                                                   int64_t dst_height,
                                                                   int64_t dst_width) {
  try {
    fastbatch_atari::AreaResize resize(height, width, dst_height, dst_width, channels);
    resize(src, dst);
    return 0;
  } catch (const std::exception&) {
    return 1;
  }
}

extern "C" FASTBATCH_EXPORT_SYMBOL const fb_env_api* const* fastbatch_get_env_apis(int32_t* count) {
  return fastbatch_atari::GameApis(count, std::make_index_sequence<fastbatch_atari::kNumGames>());
}

extern "C" FASTBATCH_EXPORT_SYMBOL const fb_env_api* fastbatch_get_env_api(void) {
  int32_t count = 0;
  return fastbatch_get_env_apis(&count)[0];
}
