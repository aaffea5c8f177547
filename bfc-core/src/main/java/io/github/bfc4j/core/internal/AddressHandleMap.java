/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

/**
 * Maps the start address of every live chunk to its handle: the lookup half of upstream's
 * {@code AllocationRegion::handles_}, as an open-addressing hash table of primitive arrays.
 *
 * <p>Upstream keeps one 8-byte handle per 256-byte slot of every region (32 MiB of host memory
 * per GiB of region, zero-filled when the region is added: 1.7 s for one 80 GiB region).
 * Only the slots where a chunk starts ever hold a handle, so a table keyed by those addresses
 * answers every lookup the same way (a slot without a chunk start is "no handle") with memory
 * proportional to the number of chunks, not to the bytes of the regions.
 *
 * <p>Linear probing with backward-shift deletion (no tombstones), load factor at most 1/2,
 * Fibonacci hashing of {@code address >>> 8}. Key 0 marks an empty slot (0 is never an
 * address a sub-allocator hands out). Grows only on insert past the load factor. Not
 * thread-safe.
 */
public final class AddressHandleMap {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private long[] keys;
    private int[] values;
    private int mask;
    private int shift;
    private int size;

    /** @param expectedEntries the number of entries to make room for up front */
    public AddressHandleMap(int expectedEntries) {
        int capacity = Integer.highestOneBit(Math.max(16, expectedEntries * 2 - 1)) << 1;
        allocate(capacity);
    }

    private void allocate(int capacity) {
        keys = new long[capacity];
        values = new int[capacity];
        mask = capacity - 1;
        shift = 64 - Integer.numberOfTrailingZeros(capacity);
        size = 0;
    }

    private int slotOf(long key) {
        return (int) (((key >>> 8) * GOLDEN) >>> shift);
    }

    /**
     * The handle of the chunk starting at {@code address}.
     *
     * @param address an address, 0 allowed
     * @return the handle, or {@link ChunkTable#INVALID_CHUNK_HANDLE} if no chunk starts there
     */
    public int get(long address) {
        if (address == 0) {
            return ChunkTable.INVALID_CHUNK_HANDLE;
        }
        final long[] k = keys;
        final int m = mask;
        for (int i = slotOf(address); ; i = (i + 1) & m) {
            long key = k[i];
            if (key == address) {
                return values[i];
            }
            if (key == 0) {
                return ChunkTable.INVALID_CHUNK_HANDLE;
            }
        }
    }

    /**
     * Records (or replaces) the handle of the chunk starting at {@code address}.
     *
     * @param address a non-zero address
     * @param h the handle
     */
    public void put(long address, int h) {
        assert address != 0;
        final long[] k = keys;
        final int m = mask;
        for (int i = slotOf(address); ; i = (i + 1) & m) {
            long key = k[i];
            if (key == address) {
                values[i] = h;
                return;
            }
            if (key == 0) {
                k[i] = address;
                values[i] = h;
                if (++size * 2 > k.length) {
                    rehash(k.length * 2);
                }
                return;
            }
        }
    }

    /**
     * Forgets the chunk starting at {@code address}, if any.
     *
     * @param address an address
     */
    public void remove(long address) {
        if (address == 0) {
            return;
        }
        final long[] k = keys;
        final int m = mask;
        int i = slotOf(address);
        while (true) {
            long key = k[i];
            if (key == 0) {
                return;
            }
            if (key == address) {
                break;
            }
            i = (i + 1) & m;
        }
        // Backward-shift deletion: move later entries of the probe run into the hole.
        int hole = i;
        for (int j = (hole + 1) & m; ; j = (j + 1) & m) {
            long key = k[j];
            if (key == 0) {
                break;
            }
            int home = slotOf(key);
            // Can the entry at j move to the hole? Only if its home is not in (hole, j].
            boolean homeInRange = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!homeInRange) {
                k[hole] = key;
                values[hole] = values[j];
                hole = j;
            }
        }
        k[hole] = 0;
        size--;
    }

    /** @return the number of entries */
    public int size() {
        return size;
    }

    /** Removes every entry. */
    public void clear() {
        java.util.Arrays.fill(keys, 0L);
        size = 0;
    }

    /** @return bytes of heap held by the table's arrays (for metadata accounting) */
    public long heapBytes() {
        return (long) keys.length * (Long.BYTES + Integer.BYTES);
    }

    private void rehash(int capacity) {
        long[] oldKeys = keys;
        int[] oldValues = values;
        allocate(capacity);
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldKeys[i] != 0) {
                put(oldKeys[i], oldValues[i]);
            }
        }
    }
}
