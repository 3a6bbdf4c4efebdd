// A deadline that ends the process without Python: for waits inside libraries that hold the
// GIL (TensorFlow's cluster registration holds it while a peer never starts), where no Python
// timer or signal handler can run. The data-parallel trainer's watchdog
// (python/fastbatch/ppo/distribute.py) is one.
//
// A thread waits for the deadline. Unless it is moved (`Extend`) or cancelled in time, it writes
// the message to stderr and ends the process with `_exit(exit_code)`: no destructors, no atexit
// handlers, no Python. Threading: any thread may call any method; none touches Python.
#ifndef FASTBATCH_BINDINGS_DEADLINE_H_
#define FASTBATCH_BINDINGS_DEADLINE_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace fastbatch {

class Deadline {
 public:
  // Ends the process `seconds` from now (> 0, finite; else std::invalid_argument).
  Deadline(double seconds, std::string message, int exit_code);
  ~Deadline();  // cancels, joins
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  // The deadline is now `seconds` from now; a non-empty `message` replaces the message.
  void Extend(double seconds, const std::string& message);
  // No deadline any more (the thread ends).
  void Cancel();

 private:
  using Clock = std::chrono::steady_clock;
  static Clock::time_point Due(double seconds);
  void Run();

  std::mutex mutex_;
  std::condition_variable changed_;
  Clock::time_point due_;
  std::string message_;
  int exit_code_;
  bool cancelled_ = false;
  std::thread thread_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_BINDINGS_DEADLINE_H_
