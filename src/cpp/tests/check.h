// A minimal test harness for the C++ unit tests (no dependency): FB_TEST(Name) { ... } defines
// a test case; FB_CHECK(cond), FB_CHECK_MSG(cond, message), FB_CHECK_EQ(a, b) and
// FB_CHECK_THROWS(statement, type) record a failure with its file and line and carry on;
// FB_TEST_MAIN() runs every case of the file. An exception escaping a case fails it.
//
// Threading: checks may be called from the test's own thread only (the failure count is not
// atomic); tests that run code on worker threads collect results and check them afterwards.
#ifndef FASTBATCH_TESTS_CHECK_H_
#define FASTBATCH_TESTS_CHECK_H_

#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

namespace fastbatch::testing {

struct TestCase {
  const char* name;
  void (*run)();
};

inline std::vector<TestCase>& Registry() {
  static std::vector<TestCase> cases;
  return cases;
}

inline int& Failures() {
  static int failures = 0;
  return failures;
}

struct Register {
  Register(const char* name, void (*run)()) { Registry().push_back({name, run}); }
};

inline void Fail(const char* file, int line, const std::string& what) {
  ++Failures();
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what.c_str());
}

template <typename T>
std::string Show(const T& value) {
  std::ostringstream out;
  if constexpr (sizeof(T) == 1) {
    out << static_cast<int>(value);  // int8_t / uint8_t / bool as numbers
  } else {
    out << value;
  }
  return out.str();
}

// Runs every registered case; returns the process exit status (0: all passed).
inline int RunAll() {
  for (const TestCase& test : Registry()) {
    const int before = Failures();
    try {
      test.run();
    } catch (const std::exception& e) {
      Fail(__FILE__, __LINE__, std::string(test.name) + " threw: " + e.what());
    }
    std::printf("%s %s\n", Failures() == before ? "[ OK ]" : "[FAIL]", test.name);
  }
  std::printf("%zu cases, %d failed checks\n", Registry().size(), Failures());
  return Failures() == 0 ? 0 : 1;
}

}  // namespace fastbatch::testing

#define FB_TEST(name)                                                            \
  static void name();                                                            \
  static const ::fastbatch::testing::Register name##_registration(#name, &name); \
  static void name()

#define FB_CHECK(cond)                                                  \
  do {                                                                  \
    if (!(cond)) ::fastbatch::testing::Fail(__FILE__, __LINE__, #cond); \
  } while (0)

// FB_CHECK with a message (a std::string expression, built only on failure).
#define FB_CHECK_MSG(cond, message)                                                      \
  do {                                                                                   \
    if (!(cond)) ::fastbatch::testing::Fail(__FILE__, __LINE__, #cond ": " + (message)); \
  } while (0)

#define FB_CHECK_EQ(a, b)                                                         \
  do {                                                                            \
    const auto fb_a_ = (a); /* copies: (a) may refer into a temporary */          \
    const auto fb_b_ = (b);                                                       \
    if (!(fb_a_ == fb_b_)) {                                                      \
      ::fastbatch::testing::Fail(__FILE__, __LINE__,                              \
                                 std::string(#a " == " #b ", got ") +             \
                                     ::fastbatch::testing::Show(fb_a_) + " vs " + \
                                     ::fastbatch::testing::Show(fb_b_));          \
    }                                                                             \
  } while (0)

// Passes when `statement` throws an exception of type `type` (or derived from it).
#define FB_CHECK_THROWS(statement, type)                                                  \
  do {                                                                                    \
    bool fb_thrown_ = false;                                                              \
    try {                                                                                 \
      statement;                                                                          \
    } catch (const type&) {                                                               \
      fb_thrown_ = true;                                                                  \
    }                                                                                     \
    if (!fb_thrown_) {                                                                    \
      ::fastbatch::testing::Fail(__FILE__, __LINE__, #statement " did not throw " #type); \
    }                                                                                     \
  } while (0)

#define FB_TEST_MAIN() \
  int main() { return ::fastbatch::testing::RunAll(); }

#endif  // FASTBATCH_TESTS_CHECK_H_
