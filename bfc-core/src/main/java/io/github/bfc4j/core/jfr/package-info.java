/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
/**
 * JDK Flight Recorder events of the allocator (category "bfc4j"), listed with their fields in
 * docs/observability.md. Region extends, region frees and out-of-memory failures are slow-path
 * events, enabled by default in a recording; allocation samples are emitted only when
 * {@link io.github.bfc4j.core.BfcOptions#jfrAllocationSamplePeriod()} is positive.
 */
package io.github.bfc4j.core.jfr;
