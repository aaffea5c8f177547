/**
 * ONNX Runtime (JavaCPP presets) on bfc4j memory: {@link io.github.bfc4j.onnxruntime.BfcOrtAllocator}
 * registers an {@code OrtAllocator} over a {@code BfcAllocator} (or a {@code ShardedBfcAllocator},
 * for sessions run from many threads at once) with ORT's environment for the CPU
 * memory of sessions created with {@code session.use_env_allocators=1};
 * {@link io.github.bfc4j.onnxruntime.BfcCudaProvider} gives ORT's CUDA provider its device memory
 * from bfc-cuda's {@code GpuBfcAllocator}. See docs/integrations.md.
 */
package io.github.bfc4j.onnxruntime;
