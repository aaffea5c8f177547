/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

/**
 * A device's memory as {@code cuMemGetInfo} reports it.
 *
 * @param freeBytes the free memory
 * @param totalBytes the total memory
 */
public record CudaMemInfo(long freeBytes, long totalBytes) {
}
