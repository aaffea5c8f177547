/**
 * Host memory behind the allocator: {@link io.github.bfc4j.cpu.AlignedHostSubAllocator}, aligned
 * off-heap regions through JavaCPP. The Java views of allocated memory
 * ({@code Allocation.asByteBuffer()}, {@code asPointer()}) live on bfc-core's
 * {@code Allocation}; this module brings the native library they need.
 */
package io.github.bfc4j.cpu;
