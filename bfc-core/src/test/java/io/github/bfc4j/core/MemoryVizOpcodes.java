/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/**
 * Checks that a pickle can be read by pytorch.org/memory_viz, whose page does not use Python's
 * unpickler but its own, in {@code torch/utils/viz/MemoryViz.js} (function {@code unpickle}):
 * it reads protocols 2 to 4 and a fixed list of opcodes, and throws "UNKNOWN OPCODE" on any
 * other. The list below is that function's (pytorch/pytorch, read at 00067369c933), with each
 * opcode's argument length from Python's {@code pickletools}. Also checked, as that function
 * reads them: a {@code LONG1} of at most 8 bytes (longer ones become a JavaScript
 * {@code BigInt}, which the page's arithmetic on addresses and sizes cannot mix with numbers),
 * and strings that are well-formed UTF-8 (it decodes them with {@code TextDecoder}).
 */
final class MemoryVizOpcodes {
    /** Opcode -> bytes of its argument, as in {@link #TABLE}. */
    private static final Map<Integer, Integer> READ = new TreeMap<>();
    private static final Map<Integer, String> NAMES = new TreeMap<>();

    /**
     * The page's opcodes: the byte (hex, or a character in quotes), the name, the argument's
     * length in bytes (-1: a 1-byte length, then that many bytes; -4: a 4-byte length, then
     * that many bytes).
     */
    private static final String TABLE = """
            0x80  PROTO             1
            0x95  FRAME             8
            '.'   STOP              0
            '('   MARK              0
            'a'   APPEND            0
            'e'   APPENDS           0
            'l'   LIST              0
            't'   TUPLE             0
            'd'   DICT              0
            's'   SETITEM           0
            'u'   SETITEMS          0
            0x88  NEWTRUE           0
            0x89  NEWFALSE          0
            'N'   NONE              0
            '}'   EMPTY_DICT        0
            ']'   EMPTY_LIST        0
            ')'   EMPTY_TUPLE       0
            0x85  TUPLE1            0
            0x86  TUPLE2            0
            0x87  TUPLE3            0
            0x94  MEMOIZE           0
            'h'   BINGET            1
            'q'   BINPUT            1
            'j'   LONG_BINGET       4
            'r'   LONG_BINPUT       4
            'J'   BININT            4
            'K'   BININT1           1
            'M'   BININT2           2
            'G'   BINFLOAT          8
            0x8a  LONG1             -1
            0x8c  SHORT_BINUNICODE  -1
            'X'   BINUNICODE        -4
            """;

    static {
        for (String line : TABLE.strip().split("\n")) {
            String[] f = line.strip().split(" +");
            int code = f[0].startsWith("'") ? f[0].charAt(1) : Integer.parseInt(f[0].substring(2), 16);
            READ.put(code, Integer.parseInt(f[2]));
            NAMES.put(code, f[1]);
        }
    }

    private MemoryVizOpcodes() {
    }

    /**
     * Walks the pickle opcode by opcode as MemoryViz.js's {@code unpickle} does.
     *
     * @return how many times each opcode occurs, by name
     * @throws AssertionError naming the offset and the opcode if the page could not read it
     */
    static Map<String, Integer> check(byte[] pickle) {
        Map<String, Integer> seen = new TreeMap<>();
        int at = 0;
        while (true) {
            if (at >= pickle.length) {
                throw new AssertionError("the pickle ends at byte " + at + " without STOP");
            }
            int code = pickle[at] & 0xff;
            Integer argument = READ.get(code);
            if (argument == null) {
                throw new AssertionError(String.format("opcode 0x%02x ('%c') at byte %d: MemoryViz.js's"
                        + " unpickler does not read it (UNKNOWN OPCODE)", code, (char) code, at));
            }
            String name = NAMES.get(code);
            seen.merge(name, 1, Integer::sum);
            int start = at + 1;
            int length = argument;
            if (argument == -1) {
                length = pickle[start] & 0xff;
                start += 1;
            } else if (argument == -4) {
                length = ByteBuffer.wrap(pickle, start, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt();
                start += 4;
            }
            if (length < 0 || start + length > pickle.length) {
                throw new AssertionError(name + " at byte " + at + " runs past the end of the pickle");
            }
            switch (name) {
                case "PROTO" -> {
                    if (pickle[start] < 2 || pickle[start] > 4) {
                        throw new AssertionError("protocol " + pickle[start] + ": MemoryViz.js reads 2 to 4");
                    }
                }
                case "LONG1" -> {
                    if (length > 8) {
                        throw new AssertionError("LONG1 of " + length + " bytes at byte " + at
                                + ": MemoryViz.js makes it a BigInt, which its arithmetic cannot mix with numbers");
                    }
                }
                case "SHORT_BINUNICODE", "BINUNICODE" -> {
                    try {
                        StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                                .onUnmappableCharacter(CodingErrorAction.REPORT)
                                .decode(ByteBuffer.wrap(pickle, start, length));
                    } catch (CharacterCodingException e) {
                        throw new AssertionError(name + " at byte " + at + " is not well-formed UTF-8", e);
                    }
                }
                case "STOP" -> {
                    if (start != pickle.length) {
                        throw new AssertionError("STOP at byte " + at + " but the pickle has " + pickle.length + " bytes");
                    }
                    return seen;
                }
                default -> { }
            }
            at = start + length;
        }
    }
}
