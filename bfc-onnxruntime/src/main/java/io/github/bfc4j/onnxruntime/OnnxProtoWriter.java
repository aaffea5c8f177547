package io.github.bfc4j.onnxruntime;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The few pieces of the protobuf wire format that ONNX models need: varints, length-delimited
 * fields (strings, bytes, nested messages), packed 32-bit floats. One writer per message; a
 * nested message is written into its own writer and added with {@link #message}.
 *
 * <p>Field numbers are those of {@code onnx/onnx.proto} (ONNX 1.x), listed in
 * {@link OnnxModels}. Not a general protobuf library: no reading, no groups, no fixed64.
 */
final class OnnxProtoWriter {

    private static final int WIRE_VARINT = 0;
    private static final int WIRE_LENGTH_DELIMITED = 2;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    /** A varint field ({@code int32}, {@code int64}, enums); negative values take 10 bytes. */
    OnnxProtoWriter varint(int field, long value) {
        tag(field, WIRE_VARINT);
        rawVarint(value);
        return this;
    }

    /** A string field, UTF-8. */
    OnnxProtoWriter string(int field, String value) {
        return bytes(field, value.getBytes(StandardCharsets.UTF_8));
    }

    /** A {@code bytes} field. */
    OnnxProtoWriter bytes(int field, byte[] value) {
        tag(field, WIRE_LENGTH_DELIMITED);
        rawVarint(value.length);
        out.write(value, 0, value.length);
        return this;
    }

    /** A nested message field. */
    OnnxProtoWriter message(int field, OnnxProtoWriter nested) {
        return bytes(field, nested.toByteArray());
    }

    /** A packed repeated {@code float} field (little-endian IEEE 754). */
    OnnxProtoWriter packedFloats(int field, float[] values) {
        byte[] b = new byte[values.length * 4];
        for (int i = 0; i < values.length; i++) {
            int bits = Float.floatToRawIntBits(values[i]);
            b[4 * i] = (byte) bits;
            b[4 * i + 1] = (byte) (bits >>> 8);
            b[4 * i + 2] = (byte) (bits >>> 16);
            b[4 * i + 3] = (byte) (bits >>> 24);
        }
        return bytes(field, b);
    }

    /** A packed repeated {@code int64} field. */
    OnnxProtoWriter packedVarints(int field, long[] values) {
        OnnxProtoWriter body = new OnnxProtoWriter();
        for (long v : values) {
            body.rawVarint(v);
        }
        return bytes(field, body.toByteArray());
    }

    byte[] toByteArray() {
        return out.toByteArray();
    }

    private void tag(int field, int wireType) {
        rawVarint(((long) field << 3) | wireType);
    }

    private void rawVarint(long value) {
        long v = value;
        while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }
}
