// Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
// Minimal stand-ins for the absl/tsl pieces TensorFlow's bfc_allocator.{h,cc}
// use (the two files come from a TensorFlow source tree, see README.md).
// LOG/VLOG compile away, LOG(FATAL) and CHECK abort, DCHECK follows NDEBUG as
// in tsl's logging.h, tracing/profiling/memory-map dumps are no-ops, the
// mutexes are std::mutex.
#ifndef ORACLE_SHIM_H_
#define ORACLE_SHIM_H_
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#define ABSL_EXCLUSIVE_LOCKS_REQUIRED(...)
#define ABSL_GUARDED_BY(x)
#define ABSL_NO_THREAD_SAFETY_ANALYSIS
#define TF_EXCLUSIVE_LOCKS_REQUIRED(...)
#define TF_GUARDED_BY(x)
#define TF_NO_THREAD_SAFETY_ANALYSIS

namespace absl {
using std::string_view;
template <class T> using optional = std::optional<T>;
template <class T>
struct flat_hash_set : std::unordered_set<T> {
  bool contains(const T& v) const { return this->count(v) != 0; }
};
template <class... Args>
void StrAppend(std::string* s, const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  *s += os.str();
}
template <class... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
class Status {
 public:
  bool ok() const { return true; }
  friend std::ostream& operator<<(std::ostream& o, const Status&) { return o << "OK"; }
};
class Mutex {
 public:
  void Lock() { m_.lock(); }
  void Unlock() { m_.unlock(); }
 private:
  std::mutex m_;
};
}  // namespace absl

namespace oracle_log {
// Set by the driver: called when upstream would abort (CHECK/LOG(FATAL), and
// DCHECK in a build without NDEBUG); the driver then writes the calls answered
// so far and exits.
inline void (*fail_hook)(const char* what) = nullptr;
struct Sink {
  template <class T> Sink& operator<<(const T&) { return *this; }
};
struct Fatal {
  const char* file; int line; const char* what;
  template <class T> Fatal& operator<<(const T&) { return *this; }
  [[noreturn]] ~Fatal() {
    std::fprintf(stderr, "oracle: fatal at %s:%d: %s\n", file, line, what);
    if (fail_hook) fail_hook(what);
    std::abort();
  }
};
}  // namespace oracle_log

#define ORACLE_LOG_INFO if (true) {} else ::oracle_log::Sink()
#define ORACLE_LOG_WARNING if (true) {} else ::oracle_log::Sink()
#define ORACLE_LOG_ERROR if (true) {} else ::oracle_log::Sink()
#define ORACLE_LOG_FATAL ::oracle_log::Fatal{__FILE__, __LINE__, "LOG(FATAL)"}
#define LOG(sev) ORACLE_LOG_##sev
#define VLOG(n) if (true) {} else ::oracle_log::Sink()
#define VLOG_IS_ON(n) false
#define CHECK(cond) \
  if (cond) {} else ::oracle_log::Fatal{__FILE__, __LINE__, "CHECK(" #cond ")"}
#define CHECK_EQ(a, b) CHECK((a) == (b))
#define CHECK_NE(a, b) CHECK((a) != (b))
#define CHECK_GE(a, b) CHECK((a) >= (b))
#define CHECK_GT(a, b) CHECK((a) > (b))
#define CHECK_LE(a, b) CHECK((a) <= (b))
#define CHECK_LT(a, b) CHECK((a) < (b))
// DCHECK as tsl's logging.h defines it: a CHECK without NDEBUG; with NDEBUG (a
// release build, bazel -c opt) the condition is parsed but never evaluated.
#ifndef NDEBUG
#define DCHECK(c) CHECK(c)
#define DCHECK_EQ(a, b) CHECK_EQ(a, b)
#define DCHECK_NE(a, b) CHECK_NE(a, b)
#define DCHECK_GE(a, b) CHECK_GE(a, b)
#define DCHECK_GT(a, b) CHECK_GT(a, b)
#define DCHECK_LE(a, b) CHECK_LE(a, b)
#define DCHECK_LT(a, b) CHECK_LT(a, b)
#else
#define DCHECK(c) while (false && (c)) ::oracle_log::Sink()
#define ORACLE_DCHECK_NOP(a, b) while (false && ((void)(a), (void)(b), 0)) ::oracle_log::Sink()
#define DCHECK_EQ(a, b) ORACLE_DCHECK_NOP(a, b)
#define DCHECK_NE(a, b) ORACLE_DCHECK_NOP(a, b)
#define DCHECK_GE(a, b) ORACLE_DCHECK_NOP(a, b)
#define DCHECK_GT(a, b) ORACLE_DCHECK_NOP(a, b)
#define DCHECK_LE(a, b) ORACLE_DCHECK_NOP(a, b)
#define DCHECK_LT(a, b) ORACLE_DCHECK_NOP(a, b)
#endif
// Older tsl headers of this allocator use these macros.
#define TF_DISALLOW_COPY_AND_ASSIGN(T) \
  T(const T&) = delete;                \
  void operator=(const T&) = delete

namespace tensorflow {
struct MemAllocatorStats {
  template <class T> void set_num_allocs(T) {}
  template <class T> void set_bytes_in_use(T) {}
  template <class T> void set_peak_bytes_in_use(T) {}
  template <class T> void set_largest_alloc_size(T) {}
  template <class T> void set_fragmentation_metric(T) {}
};
struct BinSummary {
  template <class T> void set_bin(T) {}
  template <class T> void set_total_bytes_in_use(T) {}
  template <class T> void set_total_bytes_in_bin(T) {}
  template <class T> void set_total_chunks_in_use(T) {}
  template <class T> void set_total_chunks_in_bin(T) {}
};
struct MemChunk {
  template <class T> void set_in_use(T) {}
  template <class T> void set_address(T) {}
  template <class T> void set_size(T) {}
  template <class T> void set_requested_size(T) {}
  template <class T> void set_bin(T) {}
  template <class T> void set_freed_at_count(T) {}
  template <class T> void set_op_name(T) {}
  template <class T> void set_step_id(T) {}
  template <class T> void set_action_count(T) {}
};
class MemoryDump {
 public:
  void set_allocator_name(const std::string&) {}
  MemAllocatorStats* mutable_stats() { return &stats_; }
  BinSummary* add_bin_summary() { return &bs_; }
  MemChunk* add_chunk() { return &mc_; }
  std::string SerializeAsString() const { return std::string(); }
 private:
  MemAllocatorStats stats_;
  BinSummary bs_;
  MemChunk mc_;
};
}  // namespace tensorflow

namespace tsl {
using std::string;
typedef int32_t int32;
typedef int64_t int64;
typedef uint64_t uint64;

template <class To, class From>
To safe_reinterpret_cast(From f) { return reinterpret_cast<To>(f); }

inline int Log2Floor64(uint64_t n) { return n == 0 ? -1 : 63 ^ __builtin_clzll(n); }

inline std::string CurrentStackTrace() { return std::string(); }

namespace strings {
inline std::string HumanReadableNumBytes(int64_t n) { return std::to_string(n) + "B"; }
using absl::StrAppend;
using absl::StrCat;
inline std::string Hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%llx", (unsigned long long)v);
  return b;
}
}  // namespace strings

class mutex {
 public:
  void lock() { m_.lock(); }
  void unlock() { m_.unlock(); }
 private:
  std::mutex m_;
};
class mutex_lock {
 public:
  explicit mutex_lock(mutex& m) : m_(m) { m_.lock(); }
  ~mutex_lock() { m_.unlock(); }
 private:
  mutex& m_;
};

struct AllocatorStats {
  int64_t num_allocs = 0;
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t largest_alloc_size = 0;
  std::optional<int64_t> bytes_limit;
  int64_t bytes_reserved = 0;
  int64_t peak_bytes_reserved = 0;
  std::optional<int64_t> bytes_reservable_limit;
  int64_t largest_free_block_bytes = 0;
  std::optional<int64_t> pool_bytes;
  std::optional<int64_t> peak_pool_bytes;
  std::string DebugString() const { return std::string(); }
};

struct AllocationAttributes {
  AllocationAttributes() = default;
  bool retry_on_failure = true;
  bool allocation_will_be_logged = false;
  std::function<uint64()>* freed_by_func = nullptr;
};

enum class AllocatorMemoryType { kUnknown = 0, kDevice = 1, kHostPageable = 2, kHostPinned = 3 };

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() = 0;
  virtual void* AllocateRaw(size_t alignment, size_t num_bytes) = 0;
  virtual void* AllocateRaw(size_t alignment, size_t num_bytes,
                            const AllocationAttributes& allocation_attr) = 0;
  virtual void DeallocateRaw(void* ptr) = 0;
  virtual bool TracksAllocationSizes() const { return false; }
  virtual size_t RequestedSize(const void* ptr) const { return 0; }
  virtual size_t AllocatedSize(const void* ptr) const { return 0; }
  virtual int64_t AllocationId(const void* ptr) const { return 0; }
  virtual std::optional<AllocatorStats> GetStats() { return std::nullopt; }
  virtual bool ClearStats() { return false; }
  virtual void SetSafeFrontier(uint64_t count) {}
  virtual AllocatorMemoryType GetMemoryType() const { return AllocatorMemoryType::kUnknown; }
};

class SubAllocator {
 public:
  virtual ~SubAllocator() = default;
  virtual void* Alloc(size_t alignment, size_t num_bytes, size_t* bytes_received) = 0;
  virtual void Free(void* ptr, size_t num_bytes) = 0;
  virtual bool SupportsCoalescing() const = 0;
  virtual AllocatorMemoryType GetMemoryType() const { return AllocatorMemoryType::kUnknown; }
};

class SharedCounter {
 public:
  int64_t get() { return value_; }
  int64_t next() { return ++value_; }
 private:
  std::atomic<int64_t> value_{0};
};

// AllocateRaw is never exercised: traces use allow_retry_on_failure=false. NotifyDealloc is:
// upstream's DeallocateRaw calls it on every free, whatever the options, and it does what
// upstream's does (allocator_retry.h: take its own mutex, wake every waiter, of which there are
// none here, give the mutex back), so that bench pays for it as TensorFlow's release build does.
class AllocatorRetry {
 public:
  void* AllocateRaw(std::function<void*(size_t, size_t, bool)> alloc_func,
                    int max_millis_to_wait, size_t alignment, size_t bytes) {
    std::fprintf(stderr, "oracle: AllocatorRetry used\n");
    std::abort();
  }
  void NotifyDealloc() {
    std::lock_guard<std::mutex> l(mu_);
    memory_returned_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable memory_returned_;
};

class WritableFile {
 public:
  absl::Status Append(const std::string&) { return absl::Status(); }
};
class Env {
 public:
  static Env* Default() { static Env e; return &e; }
  uint64_t NowMicros() { return 0; }
  absl::Status NewWritableFile(const std::string&, std::unique_ptr<WritableFile>* f) {
    f->reset(new WritableFile());
    return absl::Status();
  }
};

namespace profiler {
enum class TraceMeLevel { kCritical = 1, kInfo = 2, kVerbose = 3 };
struct TraceMeArg {
  template <class T> TraceMeArg(const char*, const T&) {}
};
inline std::string TraceMeEncode(absl::string_view, std::initializer_list<TraceMeArg>) {
  return std::string();
}
struct TraceMe {
  // The real TraceMe only runs the lambda when tracing is active: never here.
  template <class F> static void InstantActivity(F&&, TraceMeLevel = TraceMeLevel::kCritical) {}
};
struct MemoryDebugAnnotation {
  const char* pending_op_name = nullptr;
  int64_t pending_step_id = 0;
  const char* pending_region_type = nullptr;
  int32_t pending_data_type = 0;
  std::function<std::string()> pending_shape_func = []() { return std::string(); };
};
struct ScopedMemoryDebugAnnotation {
  static const MemoryDebugAnnotation& CurrentAnnotation() {
    static MemoryDebugAnnotation a;
    return a;
  }
};
}  // namespace profiler
}  // namespace tsl
#endif  // ORACLE_SHIM_H_
