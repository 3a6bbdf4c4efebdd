#include "bindings/shared_word.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <ctime>
#include <stdexcept>

namespace fastbatch {
namespace {

std::atomic_ref<uint32_t> Word(uintptr_t address) {
  if (address == 0 || address % alignof(uint32_t) != 0) {
    throw std::invalid_argument("shared word address must be non-null and 4-byte aligned");
  }
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(address));
}

std::atomic_ref<uint32_t> Sleepers(uintptr_t address) {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(address + 4));
}

void WakeSleepers(uintptr_t address) {
  if (Sleepers(address).load(std::memory_order_seq_cst) != 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(address), FUTEX_WAKE, INT32_MAX, nullptr,
            nullptr, 0);
  }
}

}  // namespace

uint32_t WaitWord(uintptr_t address, uint32_t old, double timeout_s, double spin_us, bool yield) {
  auto word = Word(address);
  auto sleepers = Sleepers(address);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto spin_until = start + std::chrono::duration<double, std::micro>(spin_us);
  for (int k = 0;; ++k) {
    const uint32_t v = word.load(std::memory_order_acquire);
    if (v != old) return v;
    if (yield) {
      if (Clock::now() >= spin_until) break;
      sched_yield();
      continue;
    }
    if ((k & 63) == 63 && Clock::now() >= spin_until) break;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  const auto deadline = start + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return word.load(std::memory_order_acquire);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    // Re-check after announcing ourselves: a store that missed the announcement is seen here.
    if (word.load(std::memory_order_seq_cst) == old) {
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(address), FUTEX_WAIT, old, &ts, nullptr, 0);
    }
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
    const uint32_t v = word.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

void StoreWord(uintptr_t address, uint32_t value) {
  Word(address).store(value, std::memory_order_seq_cst);
  WakeSleepers(address);
}

uint32_t AddWord(uintptr_t address, uint32_t delta) {
  const uint32_t v = Word(address).fetch_add(delta, std::memory_order_seq_cst) + delta;
  WakeSleepers(address);
  return v;
}

uint32_t LoadWord(uintptr_t address) { return Word(address).load(std::memory_order_acquire); }

}  // namespace fastbatch
