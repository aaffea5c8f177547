/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.onnxruntime;

import org.bytedeco.javacpp.FunctionPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * The C function behind a JavaCPP callback. JavaCPP makes 10 native functions per callback class
 * for the whole process; a callback made while other code holds all 10 of its class gets none,
 * and handing it to ONNX Runtime would give ORT a null function to call.
 */
final class JavaCppCallbacks {
    private JavaCppCallbacks() {
    }

    /**
     * @param callback a callback just made
     * @return the address of its C function (JavaCPP's callback struct holds it first), or 0 if
     *     JavaCPP had none left for its class
     */
    static long nativeFunction(FunctionPointer callback) {
        Pointer function = new PointerPointer<Pointer>(callback).get(0);
        return function == null ? 0 : function.address();
    }
}
