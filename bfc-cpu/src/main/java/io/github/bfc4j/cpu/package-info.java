/**
 * Host memory behind the allocator: an aligned off-heap {@code SubAllocator} and
 * Java views ({@code ByteBuffer}, JavaCPP {@code Pointer}) of allocated memory.
 *
 * <p>Not filled yet: this module builds so that the layout is in place; the
 * bfc-cpu issue fills it.
 */
package io.github.bfc4j.cpu;
