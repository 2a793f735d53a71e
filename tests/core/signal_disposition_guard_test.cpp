// SignalDispositionGuard: what plugin code changes about signal handling inside a scope is put
// back when the scope ends — to what the process had when the first open scope began, so that a
// handler co_up installed before (its stop signals, its crash handler) stays, and scopes that
// overlap on several threads (parallel compiles) cannot restore a plugin's handler.
#include "core/signal_dispositions.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <semaphore>
#include <thread>
#include <vector>

namespace co_up {
namespace {

void co_up_handler(int) {}
void plugin_handler(int) {}

struct sigaction action_of(int sig) {
  struct sigaction a {};
  sigaction(sig, nullptr, &a);
  return a;
}

void install(int sig, void (*handler)(int), int flags = 0, int masked = 0) {
  struct sigaction a {};
  a.sa_handler = handler;
  a.sa_flags = flags;
  sigemptyset(&a.sa_mask);
  if (masked != 0) sigaddset(&a.sa_mask, masked);
  ASSERT_EQ(sigaction(sig, &a, nullptr), 0);
}

bool blocked(int sig) {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, sig) == 1;
}

class SignalDispositionGuardTest : public ::testing::Test {
 protected:
  // Every signal a test touches goes back as the test binary had it.
  static constexpr int kUsed[] = {SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGURG};
  void SetUp() override {
    for (int sig : kUsed) before_.push_back(action_of(sig));
    pthread_sigmask(SIG_SETMASK, nullptr, &mask_);
  }
  void TearDown() override {
    for (size_t i = 0; i < before_.size(); ++i) sigaction(kUsed[i], &before_[i], nullptr);
    pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
  }
  std::vector<struct sigaction> before_;
  sigset_t mask_;
};

TEST_F(SignalDispositionGuardTest, AHandlerInstalledInsideIsReplacedByTheOneBefore) {
  install(SIGUSR2, co_up_handler);
  SignalDispositionGuard guard;
  install(SIGUSR2, plugin_handler);
  EXPECT_EQ(guard.finish(), std::vector<int>{SIGUSR2});
  EXPECT_EQ(action_of(SIGUSR2).sa_handler, co_up_handler);
  EXPECT_TRUE(guard.finish().empty());  // a second finish is a no-op
}

TEST_F(SignalDispositionGuardTest, TheDestructorRestoresDefaultAndIgnoredDispositions) {
  install(SIGQUIT, SIG_DFL);
  install(SIGURG, SIG_IGN);
  {
    const SignalDispositionGuard guard;
    install(SIGQUIT, plugin_handler);  // what PoCL's LLVM does
    install(SIGURG, SIG_DFL);
  }
  EXPECT_EQ(action_of(SIGQUIT).sa_handler, SIG_DFL);
  EXPECT_EQ(action_of(SIGURG).sa_handler, SIG_IGN);
}

TEST_F(SignalDispositionGuardTest, FlagAndMaskChangesAreRestoredToo) {
  install(SIGUSR1, co_up_handler, SA_RESTART);
  install(SIGUSR2, co_up_handler);
  SignalDispositionGuard guard;
  install(SIGUSR1, co_up_handler, 0);
  install(SIGUSR2, co_up_handler, 0, SIGINT);
  EXPECT_EQ(guard.finish(), (std::vector<int>{SIGUSR1, SIGUSR2}));
  EXPECT_NE(action_of(SIGUSR1).sa_flags & SA_RESTART, 0);
  const struct sigaction usr2 = action_of(SIGUSR2);
  EXPECT_EQ(sigismember(&usr2.sa_mask, SIGINT), 0);
}

TEST_F(SignalDispositionGuardTest, ReinstallingTheSameDispositionIsNoChange) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer's sigaction interceptor reads back another disposition than "
                  "the one installed; the Release and ASan suites check this";
#endif
  const struct sigaction before = action_of(SIGWINCH);
  SignalDispositionGuard guard;
  ASSERT_EQ(sigaction(SIGWINCH, &before, nullptr), 0);  // the C library adds SA_RESTORER
  EXPECT_TRUE(guard.finish().empty());
}

TEST_F(SignalDispositionGuardTest, NestedScopesRestoreWhenTheOutermostCloses) {
  install(SIGUSR2, co_up_handler);
  SignalDispositionGuard outer;
  {
    SignalDispositionGuard inner;
    install(SIGUSR2, plugin_handler);
    EXPECT_TRUE(inner.finish().empty());
  }
  EXPECT_EQ(action_of(SIGUSR2).sa_handler, plugin_handler);
  EXPECT_EQ(outer.finish(), std::vector<int>{SIGUSR2});
  EXPECT_EQ(action_of(SIGUSR2).sa_handler, co_up_handler);
}

// Two compiles on two threads: the second scope opens after the first one's plugin installed a
// handler. A snapshot per scope would "restore" the plugin's handler when the second closes.
TEST_F(SignalDispositionGuardTest, OverlappingScopesOnTwoThreadsRestoreTheStateBeforeTheFirst) {
  install(SIGUSR2, co_up_handler);
  std::binary_semaphore changed{0}, second_open{0};
  std::vector<int> first_restored = {-1};
  std::thread first([&] {
    SignalDispositionGuard guard;
    install(SIGUSR2, plugin_handler);
    changed.release();
    second_open.acquire();
    first_restored = guard.finish();
  });
  changed.acquire();
  SignalDispositionGuard second;
  second_open.release();
  first.join();
  EXPECT_TRUE(first_restored.empty());  // the second scope is still open
  EXPECT_EQ(second.finish(), std::vector<int>{SIGUSR2});
  EXPECT_EQ(action_of(SIGUSR2).sa_handler, co_up_handler);
}

TEST_F(SignalDispositionGuardTest, TheCallingThreadsSignalMaskIsRestored) {
  ASSERT_FALSE(blocked(SIGUSR1));
  SignalDispositionGuard guard;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  EXPECT_TRUE(guard.finish().empty());  // a mask is not a disposition: restored, not reported
  EXPECT_FALSE(blocked(SIGUSR1));
}

TEST(SignalNames, NamesCommonSignalsAndNumbersTheRest) {
  EXPECT_EQ(signal_names({SIGQUIT, SIGSEGV}), "SIGQUIT, SIGSEGV");
  EXPECT_EQ(signal_names({}), "");
  EXPECT_EQ(signal_names({SIGRTMIN + 3}), "signal " + std::to_string(SIGRTMIN + 3));
}

}  // namespace
}  // namespace co_up
