/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's BFCAllocator::Bin::FreeChunkSet
 * (Copyright 2015 The TensorFlow Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

/**
 * The free chunks of one bin, ordered by upstream's {@code ChunkComparator}: size, then address
 * (both unsigned). Port of {@code BFCAllocator::Bin::FreeChunkSet}, an {@code std::set} of
 * chunk handles, which libstdc++ implements as a red-black tree; so is this.
 *
 * <p>DEVIATION(port) (representation only, docs/deviations.md): the tree is intrusive. Its
 * links live in the {@link ChunkTable}, in one {@code int[] binLinks} holding a 16-byte node
 * per chunk handle (left, right, parent, tag: the set's id and the node's colour), shared by every set of
 * the table because a free chunk is in at most one bin. Adding, removing and searching create
 * no object (a {@code TreeSet<Integer>} created a 40-byte entry per insertion), and the order,
 * hence every decision of the allocator, is the same. The balancing is the textbook one
 * (Cormen et al., <i>Introduction to Algorithms</i>, ch. 13, as in {@code java.util.TreeMap}),
 * except that deletion relinks the successor node instead of copying its key, since a node is
 * its handle, and that each fix-up is written once for both sides (the book's "same as then
 * clause with right and left exchanged" is a side index, {@code LEFT} or {@code RIGHT}).
 *
 * <pre>
 *  bin 3 (chunks of 2 KiB .. 4 KiB), ordered by (size, ptr):
 *
 *                 h7 (3072, 0x..1000) black
 *                /                      \
 *   h2 (2048, 0x..9000) black     h5 (3584, 0x..0400) black
 *                                     /
 *                       h9 (3072, 0x..8000) red
 *
 *  binLinks[h7 * 4 ..] = {left h2, right h5, parent NONE, tag id(bin 3) << 1 | black}
 *  binLinks[h9 * 4 ..] = {left NONE, right NONE, parent h5, tag id(bin 3) << 1 | red}
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

    // Offsets in a node of ChunkTable.binLinks. LEFT and RIGHT must stay 0 and 1: a side d's
    // other side is d ^ 1.
    static final int LEFT = 0;
    static final int RIGHT = 1;
    static final int PARENT = 2;
    static final int TAG = 3;

    private final ChunkTable chunks;
    /** This set's tag for a black node; {@code | RED} for a red one. */
    private final int blackTag;
    private int root = NONE;
    /**
     * The smallest chunk (lowest address among equals), kept up to date as libstdc++'s
     * {@code std::set} keeps its leftmost node for {@code begin()}: {@link #first()} and the
     * usual hit of {@link #ceilingSize} are then one read instead of a walk down the tree.
     * Measured: {@code CpuTimeReplay} of big-random-1m, 12 JVMs alternated, median 197 ns per
     * call without, 183 with (docs/performance.md).
     */
    private int min = NONE;
    private int count;

    // The table's arrays, re-read when the table grows (it calls sync()).
    private long[] size;
    private long[] ptr;
    /** Per handle h, at h * 4: left child, right child, parent, tag (one 16-byte node). */
    private int[] links;

    /** @param chunks the table whose sizes and addresses order the handles, and which holds the links */
    public FreeChunkSet(ChunkTable chunks) {
        this.chunks = chunks;
        this.blackTag = chunks.register(this) << 1;
        sync();
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
            if ((links[(h << 2) | TAG] & ~RED) == blackTag) {
                return false;
            }
            throw new IllegalStateException("chunk handle " + h
                    + " is already in another FreeChunkSet of this ChunkTable; remove it there first");
        }
        final long s = size[h];
        final long p = ptr[h];
        int x = root;
        int xp = NONE;
        int cmp = 0;
        boolean leftmost = true;
        while (x != NONE) {
            xp = x;
            cmp = compare(s, p, x);
            if (cmp < 0) {
                x = links[(x << 2) | LEFT];
            } else if (cmp > 0) {
                x = links[(x << 2) | RIGHT];
                leftmost = false;
            } else {
                return false;
            }
        }
        if (leftmost) {
            min = h;
        }
        links[(h << 2) | LEFT] = NONE;
        links[(h << 2) | RIGHT] = NONE;
        links[(h << 2) | PARENT] = xp;
        links[(h << 2) | TAG] = blackTag | RED;
        if (xp == NONE) {
            root = h;
        } else if (cmp < 0) {
            links[(xp << 2) | LEFT] = h;
        } else {
            links[(xp << 2) | RIGHT] = h;
        }
        count++;
        fixAfterInsertion(h);
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
        if ((links[(h << 2) | TAG] & ~RED) != blackTag) {
            z = find(size[h], ptr[h]);
            if (z == NONE) {
                return false;
            }
        }
        if (z == min) {
            min = successor(z);
        }
        delete(z);
        links[(z << 2) | TAG] = 0;
        count--;
        return true;
    }

    /**
     * @param h a live handle
     * @return true if it (or a chunk of the same size and address) is in
     */
    public boolean contains(int h) {
        return (links[(h << 2) | TAG] & ~RED) == blackTag || find(size[h], ptr[h]) != NONE;
    }

    /**
     * The first chunk at or after (size, ptr) in the order.
     *
     * @param size the size to search from
     * @param ptr the address to search from, among chunks of exactly {@code size}
     * @return its handle, or {@link #NONE}
     */
    public int ceiling(long size, long ptr) {
        int best = NONE;
        int x = root;
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
        return best;
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
        final int m = min;
        if (m != NONE && Long.compareUnsigned(this.size[m], size) >= 0) {
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
        if ((links[(h << 2) | TAG] & ~RED) == blackTag) {
            return successor(h);
        }
        final long s = size[h];
        final long p = ptr[h];
        int best = NONE;
        int x = root;
        while (x != NONE) {
            if (compare(s, p, x) < 0) {
                best = x;
                x = links[(x << 2) | LEFT];
            } else {
                x = links[(x << 2) | RIGHT];
            }
        }
        return best;
    }

    /** @return the smallest chunk (lowest address among equals), or {@link #NONE} */
    public int first() {
        return min;
    }

    /** @return the largest chunk (highest address among equals), or {@link #NONE} */
    public int last() {
        int x = root;
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
            int next = successor(h);
            links[(h << 2) | TAG] = 0;
            h = next;
        }
        root = NONE;
        min = NONE;
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
        int x = root;
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
    private void rotate(int x, int d) {
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
            root = y;
        } else {
            links[(xp << 2) | (links[(xp << 2) | LEFT] == x ? LEFT : RIGHT)] = y;
        }
        links[(y << 2) | d] = x;
        links[(x << 2) | PARENT] = y;
    }

    private void fixAfterInsertion(int x) {
        int xp;
        while (x != root && isRed(xp = links[(x << 2) | PARENT])) {
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
                    rotate(x, d);
                    xp = links[(x << 2) | PARENT];
                }
                setBlack(xp);
                setRed(xpp);
                rotate(xpp, o);
            }
        }
        setBlack(root);
    }

    /** Replaces the subtree rooted at {@code u} by the one rooted at {@code v} (may be NONE). */
    private void transplant(int u, int v) {
        int up = links[(u << 2) | PARENT];
        if (up == NONE) {
            root = v;
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
    private void delete(int z) {
        boolean removedBlack = (links[(z << 2) | TAG] & RED) == 0;
        int x;
        int xp;
        if (links[(z << 2) | LEFT] == NONE) {
            x = links[(z << 2) | RIGHT];
            xp = links[(z << 2) | PARENT];
            transplant(z, x);
        } else if (links[(z << 2) | RIGHT] == NONE) {
            x = links[(z << 2) | LEFT];
            xp = links[(z << 2) | PARENT];
            transplant(z, x);
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
                transplant(y, x);
                links[(y << 2) | RIGHT] = links[(z << 2) | RIGHT];
                links[(links[(y << 2) | RIGHT] << 2) | PARENT] = y;
            }
            transplant(z, y);
            links[(y << 2) | LEFT] = links[(z << 2) | LEFT];
            links[(links[(y << 2) | LEFT] << 2) | PARENT] = y;
            links[(y << 2) | TAG] = (links[(y << 2) | TAG] & ~RED) | (links[(z << 2) | TAG] & RED);
        }
        if (removedBlack) {
            fixAfterDeletion(x, xp);
        }
    }

    private void fixAfterDeletion(int x, int xp) {
        while (x != root && !isRed(x)) {
            // d: the side of xp that x is on (LEFT when x is NONE and xp has no left child,
            // as in the textbook); o: the sibling's side.
            final int d = x == links[(xp << 2) | LEFT] ? LEFT : RIGHT;
            final int o = d ^ 1;
            int w = links[(xp << 2) | o];
            if (isRed(w)) {
                setBlack(w);
                setRed(xp);
                rotate(xp, d);
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
                    rotate(w, o);
                    w = links[(xp << 2) | o];
                }
                if (isRed(xp)) {
                    setRed(w);
                } else {
                    setBlack(w);
                }
                setBlack(xp);
                setBlack(links[(w << 2) | o]);
                rotate(xp, d);
                x = root;
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
        if (root != NONE && (links[(root << 2) | PARENT] != NONE || isRed(root))) {
            throw new IllegalStateException("root " + root + " has a parent or is red");
        }
        int leftmost = root;
        if (leftmost != NONE) {
            while (links[(leftmost << 2) | LEFT] != NONE) {
                leftmost = links[(leftmost << 2) | LEFT];
            }
        }
        if (min != leftmost) {
            throw new IllegalStateException("cached first " + min + " but the leftmost node is " + leftmost);
        }
        int[] n = new int[1];
        int bh = check(root, n);
        if (n[0] != count) {
            throw new IllegalStateException("count " + count + " but " + n[0] + " nodes");
        }
        return bh;
    }

    private int check(int x, int[] n) {
        if (x == NONE) {
            return 1;
        }
        n[0]++;
        if ((links[(x << 2) | TAG] & ~RED) != blackTag) {
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
        int bl = check(l, n);
        int br = check(r, n);
        if (bl != br) {
            throw new IllegalStateException("black heights differ under " + x);
        }
        return bl + (isRed(x) ? 0 : 1);
    }
}
