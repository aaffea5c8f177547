/**
 * GPU memory behind the allocator: CUDA sub-allocators through JavaCPP's CUDA
 * presets, a device probe and {@code CudaException}.
 *
 * <p>Not filled yet: this module builds so that the layout is in place; the
 * bfc-cuda issue fills it.
 */
package io.github.bfc4j.cuda;
