/**
 * ONNX Runtime (JavaCPP presets) on bfc4j memory: {@link io.github.bfc4j.onnxruntime.BfcOrtAllocator}
 * registers an {@code OrtAllocator} over a {@code BfcAllocator} with ORT's environment for the CPU
 * memory of sessions created with {@code session.use_env_allocators=1};
 * {@link io.github.bfc4j.onnxruntime.BfcCudaProvider} gives ORT's CUDA provider its device memory
 * from bfc-cuda's {@code GpuBfcAllocator}. See docs/integrations.md.
 */
package io.github.bfc4j.onnxruntime;
