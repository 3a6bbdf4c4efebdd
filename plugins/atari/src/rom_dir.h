// Where the ROM files are: the installed ale-py's `roms` directory, which Python hands the
// library (`fastbatch_atari_set_rom_dir`, called by `fastbatch_atari.register`) before any env
// is made. Set once a process; read by every env constructor.
#ifndef FASTBATCH_ATARI_ROM_DIR_H_
#define FASTBATCH_ATARI_ROM_DIR_H_

#include <string>

namespace fastbatch_atari {

// The directory set last ("" before the first call).
std::string RomDir();

}  // namespace fastbatch_atari

#endif  // FASTBATCH_ATARI_ROM_DIR_H_
