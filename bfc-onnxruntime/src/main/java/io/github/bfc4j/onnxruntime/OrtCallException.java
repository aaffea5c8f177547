package io.github.bfc4j.onnxruntime;

import org.bytedeco.onnxruntime.OrtApi;
import org.bytedeco.onnxruntime.OrtStatus;

/**
 * An ONNX Runtime C API call answered with an error status. The message names the call, ORT's
 * error code and ORT's own message, e.g.
 * {@code RegisterAllocator failed: ORT_INVALID_ARGUMENT (2): An allocator for this device has
 * already been registered for sharing.}
 */
public final class OrtCallException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** {@code OrtErrorCode} names, by value (onnxruntime_c_api.h). */
    private static final String[] CODE_NAMES = {"ORT_OK", "ORT_FAIL", "ORT_INVALID_ARGUMENT",
        "ORT_NO_SUCHFILE", "ORT_NO_MODEL", "ORT_ENGINE_ERROR", "ORT_RUNTIME_EXCEPTION",
        "ORT_INVALID_PROTOBUF", "ORT_MODEL_LOADED", "ORT_NOT_IMPLEMENTED", "ORT_INVALID_GRAPH",
        "ORT_EP_FAIL"};

    private final int code;

    OrtCallException(String call, int code, String ortMessage) {
        super(call + " failed: " + codeName(code) + " (" + code + "): " + ortMessage);
        this.code = code;
    }

    /**
     * ORT's {@code OrtErrorCode}.
     *
     * @return e.g. 2 for {@code ORT_INVALID_ARGUMENT}
     */
    public int code() {
        return code;
    }

    static String codeName(int code) {
        return code >= 0 && code < CODE_NAMES.length ? CODE_NAMES[code] : "ORT error";
    }

    /**
     * Throws if {@code status} is an error; releases it either way.
     *
     * @param api    the API table the status came from
     * @param status null (success) or an error status
     * @param call   what was called, for the message
     * @throws OrtCallException if {@code status} is an error
     */
    static void check(OrtApi api, OrtStatus status, String call) {
        if (status == null || status.isNull()) {
            return;
        }
        int code = api.GetErrorCode().call(status);
        String message = api.GetErrorMessage().call(status).getString();
        api.ReleaseStatus(status);
        throw new OrtCallException(call, code, message);
    }
}
