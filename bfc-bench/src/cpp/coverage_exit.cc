// Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
// Linked into the coverage build of the oracle only (coverage.sh): the oracle leaves with
// _Exit/_exit (after the last call, and where upstream cannot go on), which skip the exit
// handlers that write gcov's counts; these wrappers (ld --wrap) write them first.
#include <cstdlib>

extern "C" {
void __gcov_dump(void);
[[noreturn]] void __real__Exit(int status);
[[noreturn]] void __real__exit(int status);
[[noreturn]] void __wrap__Exit(int status) {
  __gcov_dump();
  __real__Exit(status);
}
[[noreturn]] void __wrap__exit(int status) {
  __gcov_dump();
  __real__exit(status);
}
}
