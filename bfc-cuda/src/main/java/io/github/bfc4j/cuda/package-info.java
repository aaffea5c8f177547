/**
 * GPU memory behind the allocator, through JavaCPP's CUDA presets: the sub-allocators
 * {@link io.github.bfc4j.cuda.CudaDeviceSubAllocator} ({@code cuMemAlloc}),
 * {@link io.github.bfc4j.cuda.CudaHostSubAllocator} (pinned host memory) and
 * {@link io.github.bfc4j.cuda.CudaVirtualMemorySubAllocator} (one reserved virtual range,
 * contiguous, pausable); {@link io.github.bfc4j.cuda.GpuBfcAllocators}, which builds a BFC
 * allocator the way TensorFlow's {@code GPUBFCAllocator} does, with stream-ordered frees; and
 * {@link io.github.bfc4j.cuda.CudaProbe}, which says in one sentence why CUDA cannot be used
 * when it cannot.
 *
 * <p>All CUDA calls go through {@link io.github.bfc4j.cuda.CudaDriver}; only
 * {@code JavaCppCudaDriver} touches the presets. See docs/cuda.md.
 */
package io.github.bfc4j.cuda;
