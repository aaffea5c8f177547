/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
/**
 * Allocation traces, format version 1 ({@code docs/trace-format.md}): a streaming
 * {@link io.github.bfc4j.trace.TraceReader}, a {@link io.github.bfc4j.trace.TraceWriter} that
 * writes the canonical line format, and a {@link io.github.bfc4j.trace.TraceReplayer} that
 * replays a trace on a {@link io.github.bfc4j.core.BfcAllocator} backed by the simulated
 * address space ({@link io.github.bfc4j.core.sim.SimSubAllocator}) and reports the first answer
 * that differs from the reference's.
 *
 * <p>Typical use:
 * <pre>{@code
 * ReplayResult r = TraceReplayer.replay(Path.of("tiny-single.bfctrace"));
 * if (!r.passed()) {
 *     System.out.println("line " + r.failureLine() + ": expected " + r.expected() + ", got " + r.actual());
 * }
 * }</pre>
 */
package io.github.bfc4j.trace;
