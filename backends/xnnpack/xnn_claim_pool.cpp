#include "xnn_claim_pool.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace co_up::xnnpack {
namespace {

// How long an idle worker keeps polling for the next job before it sleeps, and how long the
// caller polls for running chunks before it sleeps. Layers of one frame follow each other within
// microseconds, so a short spin catches them; longer would take the core from other work. Both
// by the clock: a count of pause instructions lasts 10x longer on one CPU than on another.
constexpr auto kWorkerSpin = std::chrono::microseconds(30);
constexpr auto kCallerSpin = std::chrono::microseconds(30);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

// The claim word: generation (32 bits) | chunk count (16) | next unclaimed chunk (16). One word,
// so a claim by a late worker can never pair one job's generation with another job's count.
constexpr uint64_t kFieldMask = 0xFFFF;
uint64_t pack(uint32_t generation, uint64_t limit, uint64_t next) {
  return (uint64_t(generation) << 32) | (limit << 16) | next;
}

int64_t ticks(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

struct ClaimPool::State {
  std::mutex job_mutex;            // one job at a time
  uint32_t last_generation = 0;    // guarded by job_mutex
  std::atomic<uint64_t> claim{0};  // see pack()
  // The current job's ClaimOrder: stored before the claim word publishes the job (and only once
  // every chunk of the previous one is claimed), so a worker that read a word with unclaimed
  // chunks reads its job's order; a stale pairing only ever meets a failing compare-and-swap.
  std::atomic<bool> from_back{true};
  std::atomic<uint32_t> generation{0};  // the newest job
  // Rung (incremented and notified) for every new job, every Warm and at stop: sleeping workers
  // wait on it, so a Warm can wake them without publishing a job.
  std::atomic<uint32_t> bell{0};
  std::atomic<int> warm{0};      // live Warm objects: idle workers never sleep while > 0
  std::atomic<int64_t> warm_deadline{0};  // warm_until(): steady-clock ns; polling until then
  std::atomic<int> sleeping{0};  // workers in (or entering) bell.wait: a job rings for them
  std::atomic<uint32_t> done{0};        // chunks of the current job that have returned
  std::atomic<bool> stop{false};
  std::atomic<int> holds{0};
  std::atomic<int64_t> worker_chunks{0};
  // Per worker: the newest job it has handled (claimed what it could, or found closed); tests.
  std::unique_ptr<std::atomic<uint32_t>[]> handled;
  // The current job's body: written under job_mutex before the claim word publishes the job, read
  // only by a participant that has claimed one of its chunks (so it is still alive).
  const std::function<void(int64_t)>* body = nullptr;
  uint64_t total = 0;  // the current job's chunk count; written and read like body
  std::mutex error_mutex;
  std::exception_ptr error;  // the first exception a worker's chunk threw, guarded by error_mutex

  void ring_bell() {
    bell.fetch_add(1, std::memory_order_seq_cst);
    bell.notify_all();
  }
  // Whether idle workers must keep polling at `now` (a Warm lives, or a warm_until() runs).
  bool warm_at(std::chrono::steady_clock::time_point now, std::memory_order order) const {
    return warm.load(order) > 0 || ticks(now) < warm_deadline.load(order);
  }
};

ClaimPool::ClaimPool(int workers, std::span<const int> cores) : state_(std::make_unique<State>()) {
  if (workers < 0) throw std::runtime_error("worker count must be >= 0");
  auto stop_all = [&] {
    state_->stop.store(true, std::memory_order_release);
    state_->generation.fetch_add(1, std::memory_order_release);
    state_->ring_bell();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  };
  state_->handled = std::make_unique<std::atomic<uint32_t>[]>(static_cast<size_t>(workers));
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) {
    try {
      workers_.emplace_back([this, i] { worker_loop(i); });
    } catch (const std::system_error& e) {
      stop_all();
      throw std::runtime_error("cannot start pool worker " + std::to_string(i + 1) + ": " + e.what());
    }
    if (cores.empty()) continue;
    const int core = cores[static_cast<size_t>(i + 1) % cores.size()];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (const int rc = pthread_setaffinity_np(workers_.back().native_handle(), sizeof(set), &set); rc != 0) {
      stop_all();
      throw std::runtime_error("cannot pin a pool worker to CPU " + std::to_string(core) + ": " +
                               std::strerror(rc) +
                               " (is the core online and in this process's affinity mask?)");
    }
  }
}

ClaimPool::~ClaimPool() {
  state_->stop.store(true, std::memory_order_release);
  state_->generation.fetch_add(1, std::memory_order_release);
  state_->ring_bell();
  for (std::thread& t : workers_) t.join();
}

void ClaimPool::claim_and_run(uint32_t generation, bool on_worker) const {
  State& s = *state_;
  uint64_t word = s.claim.load(std::memory_order_acquire);
  for (;;) {
    if (uint32_t(word >> 32) != generation) break;
    const uint64_t limit = (word >> 16) & kFieldMask;
    const uint64_t next = word & kFieldMask;
    if (next >= limit) break;
    // kBothEnds: the caller claims from the front, workers from the back: on two threads each
    // runs one contiguous half of the chunks (as far as their speeds allow), the same half in
    // every layer. kInOrder: everyone from the front.
    const bool back = on_worker && s.from_back.load(std::memory_order_relaxed);
    const uint64_t claimed = back ? limit - 1 : next;
    const uint64_t next_word = back ? word - (uint64_t(1) << 16) : word + 1;
    if (!s.claim.compare_exchange_weak(word, next_word, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      continue;
    }
    const uint64_t total = s.total;  // before `done` moves: then the next job may overwrite it
    try {
      (*s.body)(static_cast<int64_t>(claimed));
    } catch (...) {
      const std::lock_guard lock(s.error_mutex);
      if (!s.error) s.error = std::current_exception();
    }
    if (on_worker) s.worker_chunks.fetch_add(1, std::memory_order_relaxed);
    // Nothing of the job may be touched after this: the caller may return and free the body.
    if (s.done.fetch_add(1, std::memory_order_acq_rel) + 1 == total) s.done.notify_one();
    word = s.claim.load(std::memory_order_acquire);
  }
}

void ClaimPool::worker_loop(int index) const {
  State& s = *state_;
  uint32_t seen = 0;
  for (;;) {
    uint32_t current = s.generation.load(std::memory_order_acquire);
    if (current == seen) {
      const auto until = std::chrono::steady_clock::now() + kWorkerSpin;
      while (current == seen) {
        for (int i = 0; i < 64 && current == seen; ++i) {
          cpu_relax();
          current = s.generation.load(std::memory_order_acquire);
        }
        if (current != seen) break;
        const auto now = std::chrono::steady_clock::now();
        if (now <= until) continue;
        if (!s.warm_at(now, std::memory_order_relaxed)) break;
        // A Warm keeps us polling past the spin, but yielding: on an idle core this is a spin,
        // and where other threads want the core they get it (a worker that burnt its share
        // spinning would be preempted in the middle of its next chunk instead).
        std::this_thread::yield();
      }
      if (current == seen) {
        // The bell is read before the last look at the job, the Warm count and the warm deadline,
        // so a job or a Warm that comes after that look has rung it since: the wait then returns
        // at once.
        const uint32_t bell = s.bell.load(std::memory_order_seq_cst);
        if (s.generation.load(std::memory_order_seq_cst) == seen &&
            !s.warm_at(std::chrono::steady_clock::now(), std::memory_order_seq_cst)) {
          s.sleeping.fetch_add(1, std::memory_order_seq_cst);
          s.bell.wait(bell, std::memory_order_seq_cst);
          s.sleeping.fetch_sub(1, std::memory_order_relaxed);
        }
        continue;
      }
    }
    seen = current;
    if (s.stop.load(std::memory_order_acquire)) return;
    for (int held = s.holds.load(std::memory_order_acquire); held > 0;
         held = s.holds.load(std::memory_order_acquire)) {
      s.holds.wait(held, std::memory_order_acquire);
    }
    claim_and_run(seen, true);
    s.handled[static_cast<size_t>(index)].store(seen, std::memory_order_release);
  }
}

void ClaimPool::run(int64_t chunks, const std::function<void(int64_t)>& chunk, ClaimOrder order) const {
  if (chunks <= 0) return;
  if (chunks > int64_t(kFieldMask)) {
    throw std::invalid_argument("ClaimPool::run: " + std::to_string(chunks) +
                                " chunks, at most 65535");
  }
  if (workers_.empty()) {
    for (int64_t i = 0; i < chunks; ++i) chunk(i);
    return;
  }
  State& s = *state_;
  const std::lock_guard job_lock(s.job_mutex);
  const uint32_t generation = ++s.last_generation;
  s.body = &chunk;
  s.total = uint64_t(chunks);
  s.done.store(0, std::memory_order_relaxed);
  s.from_back.store(order == ClaimOrder::kBothEnds, std::memory_order_relaxed);
  s.claim.store(pack(generation, uint64_t(chunks), 0), std::memory_order_release);
  s.generation.store(generation, std::memory_order_seq_cst);
  // Only sleepers need the futex call (a polling worker sees the generation). The bell moves
  // before the count is read: a worker that counts itself asleep after that read finds the bell
  // moved and does not sleep.
  s.bell.fetch_add(1, std::memory_order_seq_cst);
  if (s.sleeping.load(std::memory_order_seq_cst) > 0) s.bell.notify_all();

  // The caller is a participant like any worker; a chunk it runs cannot outlive this call.
  claim_and_run(generation, false);
  // Every chunk is claimed: wait only for those still running on a worker.
  std::chrono::steady_clock::time_point spin_until{};
  bool spinning = true;
  for (int poll = 0;; ++poll) {
    const uint32_t finished = s.done.load(std::memory_order_acquire);
    if (finished >= uint32_t(chunks)) break;
    if (poll == 0) {
      spin_until = std::chrono::steady_clock::now() + kCallerSpin;
    } else if (spinning && poll % 64 == 0) {
      spinning = std::chrono::steady_clock::now() < spin_until;
    }
    if (spinning) {
      cpu_relax();
    } else {
      s.done.wait(finished, std::memory_order_acquire);
    }
  }
  s.body = nullptr;
  std::exception_ptr worker_error;
  {
    const std::lock_guard lock(s.error_mutex);
    worker_error = std::exchange(s.error, nullptr);
  }
  if (worker_error) std::rethrow_exception(worker_error);
}

ClaimPool::Hold::Hold(const ClaimPool& pool) : pool_(pool) {
  pool_.state_->holds.fetch_add(1, std::memory_order_acq_rel);
}

ClaimPool::Hold::~Hold() {
  pool_.state_->holds.fetch_sub(1, std::memory_order_acq_rel);
  pool_.state_->holds.notify_all();
}

ClaimPool::Warm::Warm(const ClaimPool& pool) : pool_(pool) {
  pool_.state_->warm.fetch_add(1, std::memory_order_seq_cst);
  pool_.state_->ring_bell();
}

ClaimPool::Warm::~Warm() { pool_.state_->warm.fetch_sub(1, std::memory_order_seq_cst); }

void ClaimPool::warm_until(std::chrono::steady_clock::time_point deadline) const {
  State& s = *state_;
  const int64_t until = ticks(deadline);
  int64_t current = s.warm_deadline.load(std::memory_order_seq_cst);
  while (current < until &&
         !s.warm_deadline.compare_exchange_weak(current, until, std::memory_order_seq_cst)) {
  }
  s.ring_bell();
}

void ClaimPool::end_warm_until(std::chrono::steady_clock::time_point deadline) const {
  int64_t expected = ticks(deadline);
  state_->warm_deadline.compare_exchange_strong(expected, 0, std::memory_order_seq_cst);
}

int ClaimPool::sleeping_workers() const { return state_->sleeping.load(std::memory_order_relaxed); }

void ClaimPool::wait_for_workers_to_catch_up() const {
  State& s = *state_;
  const std::lock_guard job_lock(s.job_mutex);  // no new job meanwhile
  const uint32_t newest = s.last_generation;
  for (size_t i = 0; i < workers_.size(); ++i) {
    while (s.handled[i].load(std::memory_order_acquire) != newest) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

int ClaimPool::thread_index() const {
  const std::thread::id me = std::this_thread::get_id();
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].get_id() == me) return static_cast<int>(i) + 1;
  }
  return 0;
}

int64_t ClaimPool::chunks_run_by_workers() const {
  return state_->worker_chunks.load(std::memory_order_relaxed);
}

}  // namespace co_up::xnnpack
