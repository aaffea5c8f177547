/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */

/** Micrometer meters {@code bfc.allocator.*} for any BFC allocator, read at scrape time. */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module io.github.bfc4j.micrometer {
    requires transitive io.github.bfc4j.core;
    // Micrometer declares its module names in its manifests (Automatic-Module-Name).
    requires transitive micrometer.core;
    requires transitive micrometer.commons;

    exports io.github.bfc4j.micrometer;
}
