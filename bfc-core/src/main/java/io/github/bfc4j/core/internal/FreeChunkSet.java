/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's BFCAllocator::Bin::FreeChunkSet
 * (Copyright 2015 The TensorFlow Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.Arrays;

/**
 * The free chunks of one bin, ordered by upstream's {@code ChunkComparator}: size, then address
 * (both unsigned). Port of {@code BFCAllocator::Bin::FreeChunkSet}, an {@code std::set} of
 * chunk handles, which libstdc++ implements as a red-black tree; so is this.
 *
 * <p>DEVIATION(port) (representation only, docs/deviations.md): the tree is intrusive, and a
 * bin is 16 trees. The links live in the {@link ChunkTable}, in one {@code int[] binLinks}
 * holding a 16-byte node per chunk handle (left, right, parent, tag: the set's id, the node's
 * subset and its colour), shared by every set of the table because a free chunk is in at most
 * one bin. A bin's size range (2<sup>b</sup> to 2<sup>b+1</sup> - 1 times 256 bytes) is cut
 * into {@value #SUBSETS} equal slices, the <em>subsets</em>, each a tree of its own, with a bit
 * per subset saying whether it has a chunk and its smallest chunk cached. Every chunk of a
 * subset is smaller than every chunk of the next, so walking the subsets in turn walks the bin
 * in upstream's order, and every decision of the allocator is the same. A bin of a few hundred
 * free chunks is many small trees, many of one chunk or none: the first chunk of a subset is
 * added, and its last removed, without a descent or a fix-up, in a method short enough for
 * the JIT to inline; a chunk that comes before every other of its subset (an allocator giving
 * back the lowest address of a size it has just taken) is linked below the subset's cached
 * smallest chunk, where a descent would end, with no descent. Adding, removing and searching
 * create no object (a {@code TreeSet<Integer>} created a 40-byte entry per insertion). The
 * balancing is the textbook one (Cormen et al., <i>Introduction to Algorithms</i>, ch. 13, as
 * in {@code java.util.TreeMap}), except that deletion relinks the successor node instead of
 * copying its key, since a node is its handle, and that each fix-up is written once for both
 * sides (the book's "same as then clause with right and left exchanged" is a side index,
 * {@code LEFT} or {@code RIGHT}).
 *
 * <pre>
 *  bin 3 (chunks of 2 KiB .. 4 KiB - 1, subsets of 128 bytes), ordered by (size, ptr):
 *
 *  nonEmpty = bits 0, 8, 12
 *  subset 0 (2048 .. 2175)   subset 8 (3072 .. 3199)            subset 12 (3584 .. 3711)
 *  h2 (2048, 0x..9000) black       h7 (3072, 0x..1000) black    h5 (3584, 0x..0400) black
 *                                              \
 *                                  h9 (3072, 0x..8000) red
 *
 *  binLinks[h7 * 4 ..] = {left NONE, right h9, parent NONE, tag id(bin 3) &lt;&lt; 7 | 8 &lt;&lt; 1 | black}
 *  binLinks[h9 * 4 ..] = {left NONE, right NONE, parent h7, tag id(bin 3) &lt;&lt; 7 | 8 &lt;&lt; 1 | red}
 * </pre>
 *
 * <p>The API speaks {@code int} handles only. Walk a set in order with
 * {@code for (int h = s.first(); h != NONE; h = s.higher(h))}. As with a {@code TreeSet}, two
 * handles with the same (size, address) are equal. A handle may be in only one set of a table
 * at a time ({@link #add} throws otherwise), and its size and address must not change while it
 * is in.
 *
 * <p>Not thread-safe: guarded by the owning allocator's lock.
 */
public final class FreeChunkSet {

    /** Returned where there is no such handle. */
    public static final int NONE = ChunkTable.INVALID_CHUNK_HANDLE;

    private static final int RED = 1;

    /** The number of subsets (trees) of a set. */
    static final int SUBSETS = 16;
    /** A node's tag: the set's id above SET_SHIFT, its subset above bit 0, its colour in bit 0. */
    static final int SET_SHIFT = 7;
    private static final int NODE_BITS = (1 << SET_SHIFT) - 1;

    // Offsets in a node of ChunkTable.binLinks. LEFT and RIGHT must stay 0 and 1: a side d's
    // other side is d ^ 1.
    static final int LEFT = 0;
    static final int RIGHT = 1;
    static final int PARENT = 2;
    static final int TAG = 3;

    private final ChunkTable chunks;
    /** This set's id, shifted into place in a node's tag. */
    private final int setTag;
    /**
     * The set is split by size into {@link #SUBSETS} subsets, each its own tree: subset k holds
     * the chunks whose {@code (size >>> shift) - SUBSETS} is k (clamped to the first and the
     * last subset), so that every chunk of a lower subset comes before every chunk of a higher
     * one. A bin's subsets are equal slices of its size range.
     */
    private final int shift;
    /** Bit k set: subset k is not empty. */
    private long nonEmpty;
    /**
     * Per subset k: at {@code 2 * k} the root of its tree, at {@code 2 * k + 1} its smallest
     * chunk (lowest address among equals), kept up to date as libstdc++'s {@code std::set} keeps
     * its leftmost node for {@code begin()}: {@link #first()} and the usual hit of
     * {@link #ceilingSize} are then one read instead of a walk down a tree. Side by side, so
     * that a subset's root and first chunk are one cache line.
     */
    private final int[] tops = new int[2 * SUBSETS];
    private int count;

    // The table's arrays, re-read when the table grows (it calls sync()).
    private long[] size;
    private long[] ptr;
    /** Per handle h, at h * 4: left child, right child, parent, tag (one 16-byte node). */
    private int[] links;

    /**
     * A set for chunks of any size: one tree (the first subset) for every size below
     * 2<sup>63</sup>.
     *
     * @param chunks the table whose sizes and addresses order the handles, and which holds the links
     */
    public FreeChunkSet(ChunkTable chunks) {
        this(chunks, Long.MIN_VALUE);
    }

    /**
     * A set for chunks of {@code minSize} to {@code 2 * minSize - 1} bytes (a bin), kept in
     * {@value #SUBSETS} trees of equal slices of that range (chunks outside it are in the first
     * or the last).
     *
     * @param chunks the table whose sizes and addresses order the handles, and which holds the links
     * @param minSize a power of two (unsigned), at least {@value #SUBSETS}
     * @throws IllegalArgumentException if {@code minSize} is not
     */
    public FreeChunkSet(ChunkTable chunks, long minSize) {
        if (Long.bitCount(minSize) != 1 || Long.compareUnsigned(minSize, SUBSETS) < 0) {
            throw new IllegalArgumentException("minSize must be a power of two of at least "
                    + SUBSETS + ", not " + Long.toUnsignedString(minSize));
        }
        this.chunks = chunks;
        this.setTag = chunks.register(this) << SET_SHIFT;
        this.shift = Long.numberOfTrailingZeros(minSize) - Long.numberOfTrailingZeros(SUBSETS);
        Arrays.fill(tops, NONE);
        sync();
    }

    /** The subset of chunks of {@code size} bytes. */
    private int subset(long size) {
        long q = (size >>> shift) - SUBSETS;
        return q < 0 ? 0 : q >= SUBSETS ? SUBSETS - 1 : (int) q;
    }

    /** The smallest chunk of the first non-empty subset above {@code k}, or NONE. */
    private int firstAbove(int k) {
        final long m = nonEmpty & (-2L << k);
        return m == 0 ? NONE : tops[2 * Long.numberOfTrailingZeros(m) + 1];
    }

    /** Re-reads the table's arrays (the table calls it when it has replaced them). */
    void sync() {
        ChunkTable c = chunks;
        size = c.size;
        ptr = c.ptr;
        links = c.binLinks;
    }

    /** @return true if the set holds no chunk */
    public boolean isEmpty() {
        return count == 0;
    }

    /** @return the number of chunks in the set */
    public int size() {
        return count;
    }

    /**
     * Adds a chunk, ordered by its current size and address (neither may change while it is in).
     *
     * @param h a live handle, in no other set of this table
     * @return false if it (or a chunk of the same size and address) was already in
     * @throws IllegalStateException if {@code h} is in another set of the same table
     */
    public boolean add(int h) {
        if (links[(h << 2) | TAG] != 0) {
            return alreadyIn(h);
        }
        final int k = subset(size[h]);
        if (tops[2 * k] != NONE) {
            return insert(h, k);
        }
        // The first chunk of its subset: its tree's root, leftmost, black.
        links[(h << 2) | LEFT] = NONE;
        links[(h << 2) | RIGHT] = NONE;
        links[(h << 2) | PARENT] = NONE;
        links[(h << 2) | TAG] = setTag | (k << 1);
        tops[2 * k] = h;
        tops[2 * k + 1] = h;
        nonEmpty |= 1L << k;
        count++;
        return true;
    }

    private boolean alreadyIn(int h) {
        if ((links[(h << 2) | TAG] & ~NODE_BITS) == setTag) {
            return false;
        }
        throw new IllegalStateException("chunk handle " + h
                + " is already in another FreeChunkSet of this ChunkTable; remove it there first");
    }

    /** Adds {@code h} to the non-empty tree of subset {@code k}. */
    private boolean insert(int h, int k) {
        final long s = size[h];
        final long p = ptr[h];
        final int m = tops[2 * k + 1];
        int cmp = compare(s, p, m);
        int xp;
        if (cmp < 0) {
            // Before the smallest chunk: its empty left link is where a descent would end.
            xp = m;
            tops[2 * k + 1] = h;
        } else if (cmp == 0) {
            return false;
        } else {
            // After the smallest chunk: a descent, which cannot end leftmost.
            xp = NONE;
            for (int x = tops[2 * k]; x != NONE; ) {
                xp = x;
                cmp = compare(s, p, x);
                if (cmp < 0) {
                    x = links[(x << 2) | LEFT];
                } else if (cmp > 0) {
                    x = links[(x << 2) | RIGHT];
                } else {
                    return false;
                }
            }
        }
        links[(h << 2) | LEFT] = NONE;
        links[(h << 2) | RIGHT] = NONE;
        links[(h << 2) | PARENT] = xp;
        links[(h << 2) | TAG] = setTag | (k << 1) | RED;
        if (cmp < 0) {
            links[(xp << 2) | LEFT] = h;
        } else {
            links[(xp << 2) | RIGHT] = h;
        }
        fixAfterInsertion(h, k);
        count++;
        return true;
    }

    /**
     * Removes a chunk (or the chunk of the same size and address).
     *
     * @param h a live handle
     * @return false if it was not in
     */
    public boolean remove(int h) {
        int z = h;
        if ((links[(h << 2) | TAG] & ~NODE_BITS) != setTag) {
            z = find(size[h], ptr[h]);
            if (z == NONE) {
                return false;
            }
        }
        final int k = (links[(z << 2) | TAG] >>> 1) & (SUBSETS - 1);
        if (z == tops[2 * k] && links[(z << 2) | LEFT] == NONE && links[(z << 2) | RIGHT] == NONE) {
            // The only chunk of its subset: no descent, no fix-up.
            tops[2 * k] = NONE;
            tops[2 * k + 1] = NONE;
            nonEmpty &= ~(1L << k);
        } else {
            if (z == tops[2 * k + 1]) {
                tops[2 * k + 1] = successor(z);
            }
            delete(z, k);
        }
        links[(z << 2) | TAG] = 0;
        count--;
        return true;
    }

    /**
     * @param h a live handle
     * @return true if it (or a chunk of the same size and address) is in
     */
    public boolean contains(int h) {
        return (links[(h << 2) | TAG] & ~NODE_BITS) == setTag || find(size[h], ptr[h]) != NONE;
    }

    /**
     * The first chunk at or after (size, ptr) in the order.
     *
     * @param size the size to search from
     * @param ptr the address to search from, among chunks of exactly {@code size}
     * @return its handle, or {@link #NONE}
     */
    public int ceiling(long size, long ptr) {
        final int k = subset(size);
        int best = NONE;
        int x = tops[2 * k];
        while (x != NONE) {
            int cmp = compare(size, ptr, x);
            if (cmp < 0) {
                best = x;
                x = links[(x << 2) | LEFT];
            } else if (cmp > 0) {
                x = links[(x << 2) | RIGHT];
            } else {
                return x;
            }
        }
        return best != NONE ? best : firstAbove(k);
    }

    /**
     * The first chunk of at least {@code size} bytes: {@code ceiling(size, 0)}, answered from
     * the smallest chunk when that one is large enough (always so in the bins above a
     * request's own bin), else by a walk down the tree.
     *
     * @param size the size wanted
     * @return its handle, or {@link #NONE}
     */
    public int ceilingSize(long size) {
        final int k = subset(size);
        final int m = tops[2 * k + 1];
        if (m == NONE) {
            return firstAbove(k);
        }
        if (Long.compareUnsigned(this.size[m], size) >= 0) {
            return m;
        }
        return ceiling(size, 0);
    }

    /**
     * @param h a handle in the set (or any live handle: the first chunk after its size and
     *     address)
     * @return the next chunk after {@code h} in the order, or {@link #NONE}
     */
    public int higher(int h) {
        final long s = size[h];
        final int k = subset(s);
        if ((links[(h << 2) | TAG] & ~NODE_BITS) == setTag) {
            final int next = successor(h);
            return next != NONE ? next : firstAbove(k);
        }
        final long p = ptr[h];
        int best = NONE;
        int x = tops[2 * k];
        while (x != NONE) {
            if (compare(s, p, x) < 0) {
                best = x;
                x = links[(x << 2) | LEFT];
            } else {
                x = links[(x << 2) | RIGHT];
            }
        }
        return best != NONE ? best : firstAbove(k);
    }

    /** @return the smallest chunk (lowest address among equals), or {@link #NONE} */
    public int first() {
        return nonEmpty == 0 ? NONE : tops[2 * Long.numberOfTrailingZeros(nonEmpty) + 1];
    }

    /** @return the largest chunk (highest address among equals), or {@link #NONE} */
    public int last() {
        int x = nonEmpty == 0 ? NONE : tops[2 * (63 - Long.numberOfLeadingZeros(nonEmpty))];
        if (x != NONE) {
            while (links[(x << 2) | RIGHT] != NONE) {
                x = links[(x << 2) | RIGHT];
            }
        }
        return x;
    }

    /** Removes every chunk (linear: each one's tag is reset). */
    public void clear() {
        for (int h = first(); h != NONE;) {
            int next = higher(h);
            links[(h << 2) | TAG] = 0;
            h = next;
        }
        Arrays.fill(tops, NONE);
        nonEmpty = 0;
        count = 0;
    }

    // ---------------------------------------------------------------------------------------
    // The tree
    // ---------------------------------------------------------------------------------------

    /** Upstream's {@code ChunkComparator} of (s, p) against handle {@code x}. */
    private int compare(long s, long p, int x) {
        long sx = size[x];
        if (s != sx) {
            return Long.compareUnsigned(s, sx);
        }
        return Long.compareUnsigned(p, ptr[x]);
    }

    private int find(long s, long p) {
        int x = tops[2 * subset(s)];
        while (x != NONE) {
            int cmp = compare(s, p, x);
            if (cmp < 0) {
                x = links[(x << 2) | LEFT];
            } else if (cmp > 0) {
                x = links[(x << 2) | RIGHT];
            } else {
                return x;
            }
        }
        return NONE;
    }

    private int successor(int x) {
        int r = links[(x << 2) | RIGHT];
        if (r != NONE) {
            while (links[(r << 2) | LEFT] != NONE) {
                r = links[(r << 2) | LEFT];
            }
            return r;
        }
        int p = links[(x << 2) | PARENT];
        while (p != NONE && x == links[(p << 2) | RIGHT]) {
            x = p;
            p = links[(p << 2) | PARENT];
        }
        return p;
    }

    private boolean isRed(int x) {
        return x != NONE && (links[(x << 2) | TAG] & RED) != 0;
    }

    private void setRed(int x) {
        links[(x << 2) | TAG] |= RED;
    }

    private void setBlack(int x) {
        links[(x << 2) | TAG] &= ~RED;
    }

    /**
     * Rotates around {@code x}, which moves down to its side {@code d}: {@code rotate(x, LEFT)}
     * is the textbook left rotation (x's right child takes its place), {@code rotate(x, RIGHT)}
     * its mirror image. The balancing below is written once for both sides: {@code d} is the
     * side the walk is on, {@code d ^ 1} the other.
     */
    private void rotate(int x, int d, int k) {
        final int o = d ^ 1;
        final int y = links[(x << 2) | o];
        final int yd = links[(y << 2) | d];
        links[(x << 2) | o] = yd;
        if (yd != NONE) {
            links[(yd << 2) | PARENT] = x;
        }
        final int xp = links[(x << 2) | PARENT];
        links[(y << 2) | PARENT] = xp;
        if (xp == NONE) {
            tops[2 * k] = y;
        } else {
            links[(xp << 2) | (links[(xp << 2) | LEFT] == x ? LEFT : RIGHT)] = y;
        }
        links[(y << 2) | d] = x;
        links[(x << 2) | PARENT] = y;
    }

    private void fixAfterInsertion(int x, int k) {
        int xp;
        while (isRed(xp = links[(x << 2) | PARENT])) {
            final int xpp = links[(xp << 2) | PARENT];
            // d: the side of xpp that xp is on; o: the uncle's side.
            final int d = xp == links[(xpp << 2) | LEFT] ? LEFT : RIGHT;
            final int o = d ^ 1;
            final int y = links[(xpp << 2) | o];
            if (isRed(y)) {
                setBlack(xp);
                setBlack(y);
                setRed(xpp);
                x = xpp;
            } else {
                if (x == links[(xp << 2) | o]) {
                    x = xp;
                    rotate(x, d, k);
                    xp = links[(x << 2) | PARENT];
                }
                setBlack(xp);
                setRed(xpp);
                rotate(xpp, o, k);
            }
        }
        setBlack(tops[2 * k]);
    }

    /** Replaces the subtree rooted at {@code u} by the one rooted at {@code v} (may be NONE). */
    private void transplant(int u, int v, int k) {
        int up = links[(u << 2) | PARENT];
        if (up == NONE) {
            tops[2 * k] = v;
        } else if (u == links[(up << 2) | LEFT]) {
            links[(up << 2) | LEFT] = v;
        } else {
            links[(up << 2) | RIGHT] = v;
        }
        if (v != NONE) {
            links[(v << 2) | PARENT] = up;
        }
    }

    /** Unlinks node {@code z} (CLRS RB-DELETE, tracking x's parent since there is no sentinel). */
    private void delete(int z, int k) {
        boolean removedBlack = (links[(z << 2) | TAG] & RED) == 0;
        int x;
        int xp;
        if (links[(z << 2) | LEFT] == NONE) {
            x = links[(z << 2) | RIGHT];
            xp = links[(z << 2) | PARENT];
            transplant(z, x, k);
        } else if (links[(z << 2) | RIGHT] == NONE) {
            x = links[(z << 2) | LEFT];
            xp = links[(z << 2) | PARENT];
            transplant(z, x, k);
        } else {
            int y = links[(z << 2) | RIGHT];
            while (links[(y << 2) | LEFT] != NONE) {
                y = links[(y << 2) | LEFT];
            }
            removedBlack = (links[(y << 2) | TAG] & RED) == 0;
            x = links[(y << 2) | RIGHT];
            if (links[(y << 2) | PARENT] == z) {
                xp = y;
            } else {
                xp = links[(y << 2) | PARENT];
                transplant(y, x, k);
                links[(y << 2) | RIGHT] = links[(z << 2) | RIGHT];
                links[(links[(y << 2) | RIGHT] << 2) | PARENT] = y;
            }
            transplant(z, y, k);
            links[(y << 2) | LEFT] = links[(z << 2) | LEFT];
            links[(links[(y << 2) | LEFT] << 2) | PARENT] = y;
            links[(y << 2) | TAG] = (links[(y << 2) | TAG] & ~RED) | (links[(z << 2) | TAG] & RED);
        }
        if (removedBlack) {
            fixAfterDeletion(x, xp, k);
        }
    }

    private void fixAfterDeletion(int x, int xp, int k) {
        while (x != tops[2 * k] && !isRed(x)) {
            // d: the side of xp that x is on (LEFT when x is NONE and xp has no left child,
            // as in the textbook); o: the sibling's side.
            final int d = x == links[(xp << 2) | LEFT] ? LEFT : RIGHT;
            final int o = d ^ 1;
            int w = links[(xp << 2) | o];
            if (isRed(w)) {
                setBlack(w);
                setRed(xp);
                rotate(xp, d, k);
                w = links[(xp << 2) | o];
            }
            if (!isRed(links[(w << 2) | LEFT]) && !isRed(links[(w << 2) | RIGHT])) {
                setRed(w);
                x = xp;
                xp = links[(x << 2) | PARENT];
            } else {
                if (!isRed(links[(w << 2) | o])) {
                    setBlack(links[(w << 2) | d]);
                    setRed(w);
                    rotate(w, o, k);
                    w = links[(xp << 2) | o];
                }
                if (isRed(xp)) {
                    setRed(w);
                } else {
                    setBlack(w);
                }
                setBlack(xp);
                setBlack(links[(w << 2) | o]);
                rotate(xp, d, k);
                x = tops[2 * k];
            }
        }
        if (x != NONE) {
            setBlack(x);
        }
    }

    /**
     * Checks the red-black and order invariants and the size (for tests).
     *
     * @return the black height
     * @throws IllegalStateException if an invariant is broken
     */
    int checkInvariants() {
        int[] n = new int[1];
        int bh = 0;
        int previousLast = NONE;
        for (int k = 0; k < SUBSETS; k++) {
            final int root = tops[2 * k];
            if (((nonEmpty >>> k) & 1) != (root == NONE ? 0 : 1)) {
                throw new IllegalStateException("subset " + k + " marked " + ((nonEmpty >>> k) & 1)
                        + " but its root is " + root);
            }
            if (root != NONE && (links[(root << 2) | PARENT] != NONE || isRed(root))) {
                throw new IllegalStateException("root " + root + " has a parent or is red");
            }
            int leftmost = root;
            if (leftmost != NONE) {
                while (links[(leftmost << 2) | LEFT] != NONE) {
                    leftmost = links[(leftmost << 2) | LEFT];
                }
            }
            if (tops[2 * k + 1] != leftmost) {
                throw new IllegalStateException("cached first " + tops[2 * k + 1] + " of subset " + k
                        + " but the leftmost node is " + leftmost);
            }
            if (leftmost != NONE && previousLast != NONE && chunks.compare(previousLast, leftmost) >= 0) {
                throw new IllegalStateException("subset " + k + " starts before the one below ends");
            }
            int before = n[0];
            bh = Math.max(bh, check(root, n, k));
            if (n[0] > before) {
                int x = root;
                while (links[(x << 2) | RIGHT] != NONE) {
                    x = links[(x << 2) | RIGHT];
                }
                previousLast = x;
            }
        }
        if (n[0] != count) {
            throw new IllegalStateException("count " + count + " but " + n[0] + " nodes");
        }
        return bh;
    }

    private int check(int x, int[] n, int k) {
        if (x == NONE) {
            return 1;
        }
        n[0]++;
        if (subset(size[x]) != k) {
            throw new IllegalStateException("node " + x + " of " + size[x] + " bytes in subset " + k);
        }
        if ((links[(x << 2) | TAG] & ~RED) != (setTag | (k << 1))) {
            throw new IllegalStateException("node " + x + " has tag " + links[(x << 2) | TAG]);
        }
        int l = links[(x << 2) | LEFT];
        int r = links[(x << 2) | RIGHT];
        if (l != NONE && (links[(l << 2) | PARENT] != x || chunks.compare(l, x) >= 0)) {
            throw new IllegalStateException("bad left child " + l + " of " + x);
        }
        if (r != NONE && (links[(r << 2) | PARENT] != x || chunks.compare(r, x) <= 0)) {
            throw new IllegalStateException("bad right child " + r + " of " + x);
        }
        if (isRed(x) && (isRed(l) || isRed(r))) {
            throw new IllegalStateException("red node " + x + " has a red child");
        }
        int bl = check(l, n, k);
        int br = check(r, n, k);
        if (bl != br) {
            throw new IllegalStateException("black heights differ under " + x);
        }
        return bl + (isRed(x) ? 0 : 1);
    }
}
