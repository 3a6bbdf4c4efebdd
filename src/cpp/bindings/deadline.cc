#include "bindings/deadline.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace fastbatch {

Deadline::Clock::time_point Deadline::Due(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0.0 || seconds > 1e9) {
    throw std::invalid_argument("a deadline takes a positive, finite number of seconds, got " +
                                std::to_string(seconds));
  }
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

Deadline::Deadline(double seconds, std::string message, int exit_code)
    : due_(Due(seconds)), message_(std::move(message)), exit_code_(exit_code) {
  thread_ = std::thread([this] { Run(); });
}

Deadline::~Deadline() {
  Cancel();
  if (thread_.joinable()) thread_.join();
}

void Deadline::Extend(double seconds, const std::string& message) {
  const Clock::time_point due = Due(seconds);
  std::lock_guard<std::mutex> lock(mutex_);
  due_ = due;
  if (!message.empty()) message_ = message;
  changed_.notify_all();
}

void Deadline::Cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
  changed_.notify_all();
}

void Deadline::Run() {
  std::string line;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!cancelled_ && Clock::now() < due_) changed_.wait_until(lock, due_);
    if (cancelled_) return;
    line = message_;
  }
  // Past the deadline: the lock is released first, so that a caller of Extend or Cancel never
  // waits on a write to a full stderr pipe. The process ends whatever they do now.
  if (line.empty() || line.back() != '\n') line += '\n';
  for (size_t written = 0; written < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::_exit(exit_code_);
}

}  // namespace fastbatch
