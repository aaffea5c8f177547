// Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
// oracle: answers a BFC trace (format v1) with TensorFlow's own BFCAllocator.
// Usage: oracle IN [OUT]   (IN may be '-' ; .gz input is read via zcat by the caller)
// Reads header + calls, ignores any answers/sub/chunk/stats lines, writes the
// trace with the reference's answers: "=> addr|null", sub lines, chunk after
// every successful alloc, stats after every call.
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>
#include <cstring>
#include <fstream>
#include <iostream>
#include <unordered_map>

#include "xla/tsl/framework/bfc_allocator.h"

using tsl::BFCAllocator;

static std::string hex(uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

static void die(long line, const std::string& msg) {
  fprintf(stderr, "oracle: line %ld: %s\n", line, msg.c_str());
  exit(2);
}

static uint64_t parse_u64(const std::string& s, long line) {
  if (s.empty()) die(line, "empty number");
  char* end = nullptr;
  errno = 0;
  uint64_t v;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    v = strtoull(s.c_str() + 2, &end, 16);
  else
    v = strtoull(s.c_str(), &end, 10);
  if (errno || *end) die(line, "bad number: " + s);
  return v;
}

static bool parse_bool(const std::string& s, long line) {
  if (s == "true") return true;
  if (s == "false") return false;
  die(line, "bad bool: " + s);
  return false;
}

static std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') i++;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') j++;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// Where the answers go. Calls are answered into g_outbuf, written out every 1 MiB; when
// upstream cannot go on (a hang, an abort), stop() writes the calls answered so far, a
// shorter but valid trace, and exits.
static std::ostream* g_out;
static std::string* g_outbuf;
static int g_out_fd = -1;

// Exit status 3: upstream would never return from the call in progress; 4: it would abort
// (CHECK, LOG(FATAL), or a DCHECK in this build without NDEBUG).
static void stop(const char* why, int status) {
  struct itimerval off = {};
  setitimer(ITIMER_PROF, &off, nullptr);  // the watchdog would write the same calls again
  if (g_out != nullptr) {
    g_out->write(g_outbuf->data(), g_outbuf->size());
    g_out->flush();
  }
  fprintf(stderr, "oracle: %s: trace truncated before this call\n", why);
  std::_Exit(status);
}

// The sim sub-allocator of docs/trace-format.md.
class SimSubAllocator : public tsl::SubAllocator {
 public:
  SimSubAllocator(uint64_t base, uint64_t capacity, uint64_t gap, bool coalescing,
                  std::vector<std::string>* log)
      : gap_(gap), coalescing_(coalescing), log_(log) {
    if (capacity > 0) free_[base] = base + capacity;
  }
  void* Alloc(size_t alignment, size_t n, size_t* bytes_received) override {
    uint64_t A = std::max<uint64_t>(alignment, 256);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      uint64_t s = it->first, e = it->second;
      uint64_t p = (s + A - 1) / A * A;
      if (p < s) continue;  // overflow
      // p + n + gap <= e, written without overflow
      if (p <= e && n <= e - p && gap_ <= e - p - n) {
        uint64_t r_end = p + n + gap_;
        free_.erase(it);
        if (p > s) free_[s] = p;
        if (e > r_end) free_[r_end] = e;
        *bytes_received = n;
        refused_2304_ = 0;
        log_->push_back("sub alloc " + std::to_string(n) + " => " + hex(p));
        return reinterpret_cast<void*>(p);
      }
    }
    log_->push_back("sub alloc " + std::to_string(n) + " => null");
    // Upstream never terminates when it backpedals below 2304 bytes against a
    // sub-allocator that keeps refusing (bytes sticks at 2304): detect it.
    if (n == 2304 && ++refused_2304_ > 1000) stop("upstream hang (backpedal stuck at 2304 bytes)", 3);
    *bytes_received = 0;
    return nullptr;
  }
  void Free(void* ptr, size_t n) override {
    uint64_t p = reinterpret_cast<uint64_t>(ptr);
    log_->push_back("sub free " + hex(p) + " " + std::to_string(n));
    uint64_t s = p, e = p + n + gap_;
    auto next = free_.lower_bound(s);
    if (next != free_.end() && next->first < e) {
      fprintf(stderr, "oracle: sim Free overlaps free space\n");
      abort();
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->second > s) { fprintf(stderr, "oracle: sim Free overlaps\n"); abort(); }
      if (prev->second == s) { s = prev->first; free_.erase(prev); }
    }
    next = free_.lower_bound(e);
    if (next != free_.end() && next->first == e) { e = next->second; free_.erase(next); }
    free_[s] = e;
  }
  bool SupportsCoalescing() const override { return coalescing_; }

 private:
  std::map<uint64_t, uint64_t> free_;  // start -> end
  uint64_t gap_;
  bool coalescing_;
  std::vector<std::string>* log_;
  long refused_2304_ = 0;
};

// Watchdog: upstream never returns from Extend once curr_region_allocation_bytes_
// has doubled past 2^64 (it wraps to 0 and the doubling loop spins). One call using more
// than ORACLE_WATCHDOG_S seconds of this process's CPU time (user + system, ITIMER_PROF) is
// treated as that hang: keep the calls answered so far and exit 3. CPU time, not wall-clock
// time, so that a call waiting for a busy host's CPU is not cut short. The limit is per call
// (armed just before each call into upstream, disarmed just after), so a trace's length does
// not count; the environment variable ORACLE_WATCHDOG_S (seconds, a fraction allowed) replaces
// the default: 10, or what -DORACLE_WATCHDOG_S=... compiled in (coverage.sh: 60, as -O0 runs
// several times slower).
#ifndef ORACLE_WATCHDOG_S
#define ORACLE_WATCHDOG_S 10
#endif
#define ORACLE_STR2(x) #x
#define ORACLE_STR(x) ORACLE_STR2(x)
static struct itimerval g_watchdog = {};
static char g_watchdog_msg[160];
static size_t g_watchdog_msg_len = 0;
// The watchdog's limit from the environment (or the default); exits 2 on a bad value.
static void set_watchdog() {
  const char* env = getenv("ORACLE_WATCHDOG_S");
  std::string text = env != nullptr ? env : ORACLE_STR(ORACLE_WATCHDOG_S);
  char* end = nullptr;
  errno = 0;
  double s = strtod(text.c_str(), &end);
  if (text.empty() || errno || *end || !std::isfinite(s) || s < 1e-6 || s > 1e6) {
    fprintf(stderr,
            "oracle: ORACLE_WATCHDOG_S=%s (expected: the CPU seconds one call may take before "
            "it is taken for upstream's endless loop, from 0.000001 to 1000000, e.g. 10 or 0.5)\n",
            text.c_str());
    exit(2);
  }
  long long us = llround(s * 1e6);
  g_watchdog.it_value.tv_sec = us / 1000000;
  g_watchdog.it_value.tv_usec = us % 1000000;
  g_watchdog_msg_len = snprintf(g_watchdog_msg, sizeof g_watchdog_msg,
                                "oracle: upstream hang (call used > %s s of CPU time, "
                                "ORACLE_WATCHDOG_S): trace truncated before this call\n",
                                text.c_str());
  if (g_watchdog_msg_len >= sizeof g_watchdog_msg) g_watchdog_msg_len = sizeof g_watchdog_msg - 1;
}
// Runs only while a call into upstream is in progress: g_outbuf then holds whole calls and
// nothing changes it.
static void on_watchdog(int) {
  if (g_out_fd >= 0) {
    const char* p = g_outbuf->data();
    size_t n = g_outbuf->size();
    while (n > 0) { ssize_t w = write(g_out_fd, p, n); if (w <= 0) break; p += w; n -= w; }
  }
  ssize_t ignored = write(2, g_watchdog_msg, g_watchdog_msg_len);
  (void)ignored;
  _exit(3);
}
static void arm_watchdog() { setitimer(ITIMER_PROF, &g_watchdog, nullptr); }
static void disarm_watchdog() {
  struct itimerval off = {};
  setitimer(ITIMER_PROF, &off, nullptr);
}
static void on_upstream_failure(const char* what) {
  std::string why = std::string("upstream failure (") + what + ")";
  stop(why.c_str(), 4);
}

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: oracle IN|- [OUT]\n"); return 2; }
  std::ifstream fin;
  std::istream* in = &std::cin;
  if (strcmp(argv[1], "-") != 0) {
    fin.open(argv[1]);
    if (!fin) { fprintf(stderr, "oracle: cannot open %s\n", argv[1]); return 2; }
    in = &fin;
  }
  std::ofstream fout;
  std::ostream* out = &std::cout;
  if (argc >= 3) {
    fout.open(argv[2]);
    out = &fout;
    g_out_fd = -2;  // set below: reopen by name for the watchdog
  }
  std::string outbuf;
  outbuf.reserve(1 << 20);
  g_out = out;
  g_outbuf = &outbuf;
  if (g_out_fd == -2) g_out_fd = open(argv[2], O_WRONLY | O_APPEND);
  else g_out_fd = 1;
  set_watchdog();
  signal(SIGPROF, on_watchdog);
  oracle_log::fail_hook = on_upstream_failure;
  auto emit = [&](const std::string& s) {
    outbuf += s;
    outbuf += '\n';
    if (outbuf.size() > (1 << 20)) {
      out->write(outbuf.data(), outbuf.size());
      out->flush();
      outbuf.clear();
    }
  };

  std::string line;
  long lineno = 0;
  std::vector<std::string> header;
  auto next_header = [&](const char* kw) {
    while (std::getline(*in, line)) {
      lineno++;
      if (line.empty() || line[0] == '#') continue;
      if (line.compare(0, strlen(kw), kw) != 0) die(lineno, std::string("expected ") + kw);
      return line;
    }
    die(lineno, std::string("missing ") + kw);
    return std::string();
  };
  std::string l1 = next_header("bfctrace");
  if (l1 != "bfctrace 1") die(lineno, "unsupported version");
  std::string lname = next_header("name");
  next_header("source");
  std::string lopt = next_header("options");
  std::string lsub = next_header("suballocator");

  uint64_t memory_limit = 0;
  BFCAllocator::Options opts;
  opts.allow_retry_on_failure = false;
  bool timing = false;
  for (auto& t : split(lopt)) {
    if (t == "options") continue;
    auto eq = t.find('=');
    if (eq == std::string::npos) die(lineno, "bad option " + t);
    std::string k = t.substr(0, eq), v = t.substr(eq + 1);
    if (k == "memory_limit") memory_limit = parse_u64(v, lineno);
    else if (k == "allow_growth") opts.allow_growth = parse_bool(v, lineno);
    else if (k == "garbage_collection") opts.garbage_collection = parse_bool(v, lineno);
    else if (k == "fragmentation_fraction") opts.fragmentation_fraction = strtod(v.c_str(), nullptr);
    else if (k == "timing_counter") timing = parse_bool(v, lineno);
    else die(lineno, "unknown option " + k);
  }
  uint64_t base = 0, capacity = 0, gap = 0;
  bool coalescing = false;
  {
    auto toks = split(lsub);
    if (toks.size() < 2 || toks[1] != "sim") die(lineno, "only sim sub-allocator");
    for (size_t i = 2; i < toks.size(); i++) {
      auto& t = toks[i];
      auto eq = t.find('=');
      if (eq == std::string::npos) die(lineno, "bad token " + t);
      std::string k = t.substr(0, eq), v = t.substr(eq + 1);
      if (k == "base") base = parse_u64(v, lineno);
      else if (k == "capacity") capacity = parse_u64(v, lineno);
      else if (k == "gap") gap = parse_u64(v, lineno);
      else if (k == "coalescing") coalescing = parse_bool(v, lineno);
      else die(lineno, "unknown key " + k);
    }
  }
  emit("bfctrace 1");
  emit(lname);
  emit("source tensorflow/tensorflow@5263072435bff96f5d4bcea137cfb3755dca8f7f "
       "third_party/xla/xla/tsl/framework/bfc_allocator.cc (classic BFC), built "
       "standalone with logging/tracing shims (bfc4j: bfc-bench/src/cpp); allow_retry_on_failure=false");
  emit(lopt);
  emit(lsub);

  std::vector<std::string> sublog;
  auto* sim = new SimSubAllocator(base, capacity, gap, coalescing, &sublog);
  BFCAllocator alloc(std::unique_ptr<tsl::SubAllocator>(sim), memory_limit, "oracle", opts);
  tsl::SharedCounter counter;
  if (timing) alloc.SetTimingCounter(&counter);

  std::unordered_map<uint64_t, void*> ptrs;
  auto stats_line = [&]() {
    auto st = *alloc.GetStats();
    char b[512];
    snprintf(b, sizeof b,
             "stats num_allocs=%" PRId64 " bytes_in_use=%" PRId64 " peak_bytes_in_use=%" PRId64
             " largest_alloc_size=%" PRId64 " bytes_limit=%" PRId64 " bytes_reserved=%" PRId64
             " peak_bytes_reserved=%" PRId64 " largest_free_block_bytes=%" PRId64
             " pool_bytes=%" PRId64 " peak_pool_bytes=%" PRId64,
             st.num_allocs, st.bytes_in_use, st.peak_bytes_in_use, st.largest_alloc_size,
             st.bytes_limit.value_or(0), st.bytes_reserved, st.peak_bytes_reserved,
             st.largest_free_block_bytes, st.pool_bytes.value_or(0), st.peak_pool_bytes.value_or(0));
    return std::string(b);
  };
  auto flush_sub = [&]() {
    for (auto& s : sublog) emit(s);
    sublog.clear();
  };

  std::string last_alloc_id;
  while (std::getline(*in, line)) {
    lineno++;
    if (line.empty() || line[0] == '#') continue;
    auto toks = split(line);
    const std::string& op = toks[0];
    if (op == "sub" || op == "stats") continue;
    if (op == "chunk") {
      // An expectation about some live pointer: answer it as a query, unless it
      // is the chunk line of the alloc just made (already emitted).
      if (toks.size() < 2) die(lineno, "bad chunk");
      if (toks[1] == last_alloc_id) continue;
      auto it = ptrs.find(parse_u64(toks[1], lineno));
      if (it == ptrs.end() || it->second == nullptr) die(lineno, "chunk of a dead id");
      void* p = it->second;
      emit("chunk " + toks[1] + " size=" + std::to_string(alloc.AllocatedSize(p)) +
           " requested=" + std::to_string(alloc.RequestedSize(p)) +
           " allocation_id=" + std::to_string(alloc.AllocationId(p)));
      continue;
    }
    if (op != "alloc") last_alloc_id.clear();
    if (op == "alloc") {
      if (toks.size() < 3) die(lineno, "short alloc");
      uint64_t id = parse_u64(toks[1], lineno);
      uint64_t bytes = parse_u64(toks[2], lineno);
      uint64_t align = 64, freed_before = 0;
      std::string call = "alloc " + toks[1] + " " + toks[2];
      size_t i = 3;
      for (; i < toks.size() && toks[i] != "=>"; i++) {
        auto& t = toks[i];
        auto eq = t.find('=');
        if (eq == std::string::npos) die(lineno, "bad token " + t);
        std::string k = t.substr(0, eq), v = t.substr(eq + 1);
        if (k == "align") align = parse_u64(v, lineno);
        else if (k == "freed_before") freed_before = parse_u64(v, lineno);
        else die(lineno, "unknown key " + k);
        call += " " + t;
      }
      if (ptrs.count(id)) die(lineno, "duplicate id");
      last_alloc_id = toks[1];
      std::function<uint64_t()> fb = [freed_before]() { return freed_before; };
      tsl::AllocationAttributes attr;
      if (freed_before != 0) attr.freed_by_func = &fb;
      arm_watchdog();
      void* p = alloc.AllocateRaw(align, bytes, attr);
      disarm_watchdog();
      ptrs[id] = p;
      emit(call + " => " + (p ? hex(reinterpret_cast<uint64_t>(p)) : std::string("null")));
      flush_sub();
      if (p) {
        emit("chunk " + toks[1] + " size=" + std::to_string(alloc.AllocatedSize(p)) +
             " requested=" + std::to_string(alloc.RequestedSize(p)) +
             " allocation_id=" + std::to_string(alloc.AllocationId(p)));
      }
      emit(stats_line());
    } else if (op == "free") {
      if (toks.size() != 2) die(lineno, "bad free");
      uint64_t id = parse_u64(toks[1], lineno);
      auto it = ptrs.find(id);
      if (it == ptrs.end()) die(lineno, "free of unknown id");
      arm_watchdog();
      alloc.DeallocateRaw(it->second);
      disarm_watchdog();
      it->second = nullptr;  // freed; a second free would be a trace error anyway
      emit(line);
      if (!sublog.empty()) die(lineno, "free caused sub calls");
      emit(stats_line());
    } else if (op == "frontier") {
      if (toks.size() != 2) die(lineno, "bad frontier");
      uint64_t frontier = parse_u64(toks[1], lineno);
      arm_watchdog();
      alloc.SetSafeFrontier(frontier);
      disarm_watchdog();
      emit(line);
      emit(stats_line());
    } else if (op == "clear_stats") {
      arm_watchdog();
      alloc.ClearStats();
      disarm_watchdog();
      emit(line);
      emit(stats_line());
    } else {
      die(lineno, "unknown line: " + line);
    }
  }
  out->write(outbuf.data(), outbuf.size());
  out->flush();
  // Skip ~BFCAllocator: it would Free every region into the sim (harmless),
  // but nothing is recorded after the last call.
  std::_Exit(0);
}
