/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
/**
 * Micrometer meters for a {@link io.github.bfc4j.core.BfcAllocator}:
 * {@link io.github.bfc4j.micrometer.BfcAllocatorMetrics} binds them,
 * {@link io.github.bfc4j.micrometer.BfcAllocatorMeters} documents each one (docs/metrics.md lists
 * them with their Prometheus names). Meters read the allocator at scrape time; nothing is added
 * to its allocate/free path.
 */
package io.github.bfc4j.micrometer;
