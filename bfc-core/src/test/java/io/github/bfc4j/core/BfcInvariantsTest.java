/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.internal.ChunkTable;
import io.github.bfc4j.core.internal.RegionManager;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.lang.reflect.Field;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * {@link BfcAllocator#checkInvariants()} itself: it passes on every state the allocator reaches
 * (the randomized, property, fuzz and fault-injection tests run it after every call), and here:
 * it catches each kind of corruption, planted through reflection or by a sub-allocator that
 * breaks its contract, with a message that names the broken invariant and dumps the region.
 * And {@code -Dbfc4j.checkInvariants=true} catches a corruption at the call that causes it.
 */
class BfcInvariantsTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    /** An allocator with one region: [p 1 KiB in use][q 1 KiB in use][free rest]. */
    private static BfcAllocator twoAllocations() {
        BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 4 * MIB, 0, true), MIB, "inv",
                BfcOptions.builder().allowRetryOnFailure(false).build());
        assertThat(a.allocateRaw(64, 1000)).isEqualTo(BASE);
        assertThat(a.allocateRaw(64, 1000)).isEqualTo(BASE + 1024);
        a.checkInvariants();
        return a;
    }

    /** The allocator's port, whose fields the tests corrupt. */
    private static BfcPort port(BfcAllocator a) throws ReflectiveOperationException {
        Field f = BfcAllocator.class.getDeclaredField("port");
        f.setAccessible(true);
        return (BfcPort) f.get(a);
    }

    private static Object field(BfcAllocator a, String name) throws ReflectiveOperationException {
        Field f = BfcPort.class.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(port(a));
    }

    private static void addToLong(BfcAllocator a, String name, long delta) throws ReflectiveOperationException {
        Field f = BfcPort.class.getDeclaredField(name);
        f.setAccessible(true);
        f.setLong(port(a), f.getLong(port(a)) + delta);
    }

    private static void assertCaught(BfcAllocator a, String invariant) {
        assertThatThrownBy(a::checkInvariants)
                .isInstanceOf(BfcInvariantViolation.class)
                .hasMessageContaining("allocator 'inv'")
                .hasMessageContaining(invariant)
                .hasMessageContaining("region 0 [0x7f0000000000, 0x7f0000100000), 1048576 bytes:")
                .hasMessageContaining("h=0 ptr=0x7f0000000000 size=");
    }

    private static void corruptChunks(String invariant, Consumer<ChunkTable> corruption) throws Exception {
        BfcAllocator a = twoAllocations();
        ChunkTable chunks = (ChunkTable) field(a, "chunks");
        corruption.accept(chunks);
        assertCaught(a, invariant);
    }

    @Test
    void everyStateOfASimpleRunPasses() {
        try (BfcAllocator a = twoAllocations()) {
            a.deallocateRaw(BASE);
            a.checkInvariants();
            a.deallocateRaw(BASE + 1024);
            a.checkInvariants();
            a.close();
            a.checkInvariants();
        }
    }

    @Test
    void aChunkThatNoLongerTilesTheRegionIsCaught() throws Exception {
        // Handles: 0 is p, 1 is q, 2 the free rest.
        corruptChunks("chunk h=1 starts at 0x7f0000000400, but the chunk before it ends at"
                + " 0x7f0000000500 (chunks must tile the region without gap or overlap)", c -> c.setSize(0, 1280));
    }

    @Test
    void aBrokenPrevLinkIsCaught() throws Exception {
        corruptChunks("has prev=-1, but follows h=0", c -> c.setPrev(c.next(0), ChunkTable.INVALID_CHUNK_HANDLE));
    }

    @Test
    void aFreeChunkInTheWrongBinIsCaught() throws Exception {
        corruptChunks("has bin_num=3 (expected: 11)", c -> c.setBinNum(c.next(c.next(0)), 3));
    }

    @Test
    void aChunkInUseThatIsStillInABinIsCaught() throws Exception {
        corruptChunks("is in use but has bin_num=11", c -> c.setAllocationId(c.next(c.next(0)), 1));
    }

    @Test
    void aRequestLargerThanItsChunkIsCaught() throws Exception {
        corruptChunks("holds a request of 5000 bytes", c -> c.setRequestedSize(0, 5000));
    }

    @Test
    void aStaleAllocationIdIsCaught() throws Exception {
        corruptChunks("has allocation id 7 (expected: 1 to 2)", c -> c.setAllocationId(0, 7));
    }

    @Test
    void anAddressMapWithoutAChunkIsCaught() throws Exception {
        BfcAllocator a = twoAllocations();
        ((RegionManager) field(a, "regionManager")).erase(BASE + 1024);
        assertCaught(a, "the address map gives -1 for 0x7f0000000400");
    }

    @Test
    void anAddressMapWithAnExtraEntryIsCaught() throws Exception {
        BfcAllocator a = twoAllocations();
        ((RegionManager) field(a, "regionManager")).setHandle(BASE + 256, 0);
        assertCaught(a, "the address map holds 3 addresses, the regions 2 chunks in the map (of 3)");
    }

    @Test
    void statsThatDisagreeWithTheChunksAreCaught() throws Exception {
        BfcAllocator a = twoAllocations();
        addToLong(a, "bytesInUse", 256);
        assertCaught(a, "stats say bytes_in_use=2304, the chunks in use add up to 2048");
        BfcAllocator b = twoAllocations();
        addToLong(b, "poolBytes", -256);
        assertCaught(b, "stats say pool_bytes=1048320, the regions add up to 1048576");
        BfcAllocator c = twoAllocations();
        addToLong(c, "numAllocs", 5);
        assertCaught(c, "stats say num_allocs=7");
    }

    /** A sub-allocator that hands out 100 bytes less than asked (a broken device driver). */
    private static final class ShortSubAllocator implements SubAllocator {
        @Override
        public Block alloc(long alignment, long numBytes) {
            return new Block(BASE, numBytes - 100);
        }

        @Override
        public void free(long ptr, long numBytes) {
        }

        @Override
        public boolean supportsCoalescing() {
            return false;
        }
    }

    @Test
    void aRegionFromABrokenSubAllocatorIsCaught() {
        BfcAllocator a = new BfcAllocator(new ShortSubAllocator(), 16 * MIB, "broken",
                BfcOptions.builder().allowGrowth(true).allowRetryOnFailure(false).build());
        String broken = "allocator 'broken': region 0 has size 2097052 (expected: a positive"
                + " multiple of 256 equal to end - start)";
        if (Boolean.getBoolean("bfc4j.checkInvariants")) {
            // With the flag, the call that took the broken region throws, and releases the lock.
            assertThatThrownBy(() -> a.allocateRaw(64, 1000))
                    .isInstanceOf(BfcInvariantViolation.class).hasMessageContaining(broken);
            assertThat(a.getStats().poolBytes()).isEqualTo(2 * MIB - 100);
        } else {
            // Without it, nothing notices until someone checks.
            assertThat(a.allocateRaw(64, 1000)).isEqualTo(BASE);
            assertThatThrownBy(a::checkInvariants)
                    .isInstanceOf(BfcInvariantViolation.class).hasMessageContaining(broken);
        }
    }
}
