// Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
// CPU-time replay of a trace's alloc/free calls through TensorFlow's own BFCAllocator,
// mirroring bfc4j's CpuTimeReplay: 5 warm-up passes, then N passes; each pass replays every
// call (repeated as often as it fits in 2M calls, at least once) and frees what is left; reports median and min ns/call.
#define main oracle_main
#include "oracle.cc"
#undef main
#include <algorithm>
#include <ctime>
#include <thread>

static double cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: bench TRACE [passes]\n"); return 2; }
  // A process that has never started a thread lets glibc skip the atomic operations of
  // pthread_mutex_lock/unlock (the std::mutex standing in for TensorFlow's lock) and of malloc's
  // arenas (std::set's nodes): it checks __libc_single_threaded. Every process that runs
  // TensorFlow has other threads (its thread pools), as the JVM running CpuTimeReplay does, and
  // absl::Mutex, TensorFlow's lock, takes no such shortcut. One thread started and joined makes
  // this process multi-threaded for good.
  std::thread([] {}).join();
  int passes = argc > 2 ? atoi(argv[2]) : 15;
  std::ifstream in(argv[1]);
  std::string line;
  uint64_t limit = 0, base = 0, capacity = 0, gap = 0;
  bool coalescing = false;
  BFCAllocator::Options opts;
  opts.allow_retry_on_failure = false;
  std::vector<int64_t> bytes;  // -1 = free
  std::vector<uint64_t> align;
  std::vector<int> slot;
  std::unordered_map<uint64_t, int> slots;
  long lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    if (line.empty() || line[0] == '#') continue;
    auto t = split(line);
    if (t[0] == "options") {
      for (size_t i = 1; i < t.size(); i++) {
        auto eq = t[i].find('=');
        std::string k = t[i].substr(0, eq), v = t[i].substr(eq + 1);
        if (k == "memory_limit") limit = parse_u64(v, lineno);
        else if (k == "allow_growth") opts.allow_growth = parse_bool(v, lineno);
        else if (k == "garbage_collection") opts.garbage_collection = parse_bool(v, lineno);
        else if (k == "fragmentation_fraction") opts.fragmentation_fraction = strtod(v.c_str(), nullptr);
      }
    } else if (t[0] == "suballocator") {
      for (size_t i = 2; i < t.size(); i++) {
        auto eq = t[i].find('=');
        std::string k = t[i].substr(0, eq), v = t[i].substr(eq + 1);
        if (k == "base") base = parse_u64(v, lineno);
        else if (k == "capacity") capacity = parse_u64(v, lineno);
        else if (k == "gap") gap = parse_u64(v, lineno);
        else if (k == "coalescing") coalescing = parse_bool(v, lineno);
      }
    } else if (t[0] == "alloc") {
      uint64_t id = parse_u64(t[1], lineno);
      uint64_t a = 64;
      for (size_t i = 3; i < t.size() && t[i] != "=>"; i++)
        if (t[i].compare(0, 6, "align=") == 0) a = parse_u64(t[i].substr(6), lineno);
      int s = (int)slots.size();
      slots[id] = s;
      bytes.push_back((int64_t)parse_u64(t[2], lineno));
      align.push_back(a);
      slot.push_back(s);
    } else if (t[0] == "free") {
      uint64_t id = parse_u64(t[1], lineno);
      auto it = slots.find(id);
      if (it == slots.end()) continue;
      bytes.push_back(-1);
      align.push_back(0);
      slot.push_back(it->second);
    }
  }
  std::vector<std::string> sublog;
  auto* sim = new SimSubAllocator(base, capacity, gap, coalescing, &sublog);
  BFCAllocator bfc(std::unique_ptr<tsl::SubAllocator>(sim), limit, "bench", opts);
  std::vector<void*> live(slots.size(), nullptr);
  size_t calls = bytes.size();
  int repeat = std::max<int>(1, 2000000 / (int)calls);
  auto pass = [&]() {
    for (int r = 0; r < repeat; r++) {
      for (size_t i = 0; i < calls; i++) {
        if (bytes[i] >= 0) {
          live[slot[i]] = bfc.AllocateRaw(align[i], bytes[i]);
        } else if (live[slot[i]]) {
          bfc.DeallocateRaw(live[slot[i]]);
          live[slot[i]] = nullptr;
        }
      }
      for (auto& p : live) if (p) { bfc.DeallocateRaw(p); p = nullptr; }
      sublog.clear();
    }
  };
  for (int w = 0; w < 5; w++) pass();
  std::vector<double> ns;
  for (int p = 0; p < passes; p++) {
    double t0 = cpu_ns();
    pass();
    ns.push_back((cpu_ns() - t0) / calls / repeat);
  }
  std::sort(ns.begin(), ns.end());
  printf("%s | tf-bfc-c++ | %.1f | %.1f\n", argv[1], ns[passes / 2], ns[0]);
  return 0;
}
