/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.NullSweep;
import org.junit.jupiter.api.Test;

/**
 * The public API of bfc-cli that takes a list, iterable or array of objects, where a caller could
 * pass a null element: the sweep does not call this module's API (its receivers need a device or
 * a runtime), so each such parameter is listed here and refused by name and index in a test of its
 * own (named beside it); a new one fails this test until it is checked too.
 */
class PublicApiNullElementsTest {

    @Test
    void everyParameterThatHoldsElementsIsListedWithItsTest() {
        assertThat(NullSweep.elementParameters(NullSweep.publicClassesOf(BfcCommand.class))).containsExactly(
                // BfcCommandTest#mainCalledWithANullWordNamesItsIndex: args[i]=null
                "BfcCommand.main(String[])[0]");
    }
}
