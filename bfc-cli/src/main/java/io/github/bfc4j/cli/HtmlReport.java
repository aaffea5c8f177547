/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.trace.WorkloadResult;
import java.io.IOException;
import java.io.InputStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;

/**
 * Fills the report template ({@code report-template.html}: inline CSS and JavaScript that draw
 * the charts on canvases, no network at view time) with one replay's figures, as JSON and HTML
 * tables.
 */
final class HtmlReport {
    private static final String TEMPLATE = "report-template.html";
    /** Where the template takes the data. */
    private static final String DATA_MARKER = "/*BFC_DATA*/null";

    private HtmlReport() {
    }

    static void write(Writer out, String traceName, String subtitle, RunConfig config, WorkloadResult r,
            Timeline timeline, Snapshots snapshots, String mapsNote) throws IOException {
        String template;
        try (InputStream in = HtmlReport.class.getResourceAsStream(TEMPLATE)) {
            if (in == null) {
                throw new IllegalStateException(TEMPLATE + " is missing from the jar");
            }
            template = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        // The data's place is found in the template, before the names are put in: a name may
        // hold its marker (a directory named '*BFC_DATA*': escaping leaves '/' and '*' as they are).
        int at = template.indexOf(DATA_MARKER);
        out.write(fill(template.substring(0, at), traceName, subtitle, config, r, snapshots, mapsNote));
        StringBuilder json = new StringBuilder(1 << 16);
        data(json, config, r, timeline, snapshots);
        out.write(json.toString());
        out.write(fill(template.substring(at + DATA_MARKER.length()), traceName, subtitle, config, r, snapshots,
                mapsNote));
    }

    /** A part of the template with the names, summary and bins put in. */
    private static String fill(String part, String traceName, String subtitle, RunConfig config, WorkloadResult r,
            Snapshots snapshots, String mapsNote) {
        return part.replace("<!--BFC_TITLE-->", escape(traceName))
                .replace("<!--BFC_SUBTITLE-->", escape(subtitle))
                .replace("<!--BFC_SUMMARY-->", summary(config, r, mapsNote))
                .replace("<!--BFC_BINS-->", bins(snapshots));
    }

    private static String summary(RunConfig config, WorkloadResult r, String mapsNote) {
        StringBuilder s = new StringBuilder();
        row(s, "options", config.describe());
        row(s, "calls", String.format(Locale.ROOT, "%,d (%,d successful allocation%s)", r.calls(), r.allocations(),
                r.allocations() == 1 ? "" : "s"));
        row(s, "peak in use", Sizes.format(r.peakBytesInUse()) + " (" + r.peakBytesInUse() + " bytes)"
                + (r.peakLine() > 0 ? " at line " + r.peakLine() : ""));
        row(s, "peak reserved", Sizes.format(r.peakPoolBytes()) + " (" + r.peakPoolBytes() + " bytes)");
        row(s, "fragmentation at peak", String.format(Locale.ROOT, "%.4f", r.fragmentationAtPeak())
                + " = 1 - largest free chunk " + Sizes.format(r.largestFreeChunkAtPeak()) + " / free in pool "
                + Sizes.format(r.freeBytesAtPeak()));
        row(s, "regions", r.regionsAtEnd() + " at end, " + r.maxRegions() + " at most, " + r.extendCount()
                + " obtained");
        StringBuilder ooms = new StringBuilder(Integer.toString(r.oomCount()));
        for (int i = 0; i < Math.min(r.oomCount(), ReplayCommand.MAX_OOMS_LISTED); i++) {
            ooms.append(i == 0 ? ": " : ", ").append("line ").append(r.oomLine(i)).append(" (")
                    .append(Sizes.format(r.oomBytes(i))).append(')');
        }
        if (r.oomCount() > ReplayCommand.MAX_OOMS_LISTED) {
            ooms.append(", ... (").append(r.oomCount() - ReplayCommand.MAX_OOMS_LISTED).append(" more)");
        }
        row(s, "out of memory", ooms.toString());
        if (mapsNote != null) {
            row(s, "maps", mapsNote);
        }
        return s.toString();
    }

    private static void row(StringBuilder s, String k, String v) {
        s.append("<tr><td>").append(escape(k)).append("</td><td>").append(escape(v)).append("</td></tr>\n");
    }

    private static String bins(Snapshots snapshots) {
        List<BfcAllocator.BinDebugInfo> bins = null;
        for (Snapshots.Snapshot s : snapshots.taken) {
            if (s.bins != null) {
                bins = s.bins;
            }
        }
        StringBuilder s = new StringBuilder("<tr><th>bin</th><th>chunk sizes from</th><th>chunks</th>"
                + "<th>chunks in use</th><th>bytes in chunks</th><th>bytes in use</th><th>requested in use</th></tr>\n");
        if (bins == null) {
            return s.append("<tr><td colspan=\"7\">nothing was ever in use</td></tr>").toString();
        }
        for (BfcAllocator.BinDebugInfo b : bins) {
            s.append("<tr><td>").append(b.binNum()).append("</td><td>").append(Sizes.format(b.binSize()))
                    .append("</td><td>").append(b.totalChunksInBin()).append("</td><td>").append(b.totalChunksInUse())
                    .append("</td><td>").append(Sizes.format(b.totalBytesInBin())).append("</td><td>")
                    .append(Sizes.format(b.totalBytesInUse())).append("</td><td>")
                    .append(Sizes.format(b.totalRequestedBytesInUse())).append("</td></tr>\n");
        }
        return s.toString();
    }

    private static void data(StringBuilder j, RunConfig config, WorkloadResult r, Timeline t, Snapshots snaps) {
        j.append("{\"calls\":").append(r.calls()).append(",\"limit\":").append(config.memoryLimit());
        j.append(",\"peak\":{\"call\":").append(r.peakCall()).append(",\"line\":").append(r.peakLine())
                .append(",\"inUse\":").append(r.peakBytesInUse()).append(",\"pool\":").append(r.poolBytesAtPeak())
                .append('}');
        j.append(",\"timeline\":{\"width\":").append(t.width).append(",\"count\":").append(t.count);
        array(j.append(",\"min\":"), t.minInUse, t.count);
        array(j.append(",\"max\":"), t.maxInUse, t.count);
        array(j.append(",\"pool\":"), t.maxPool, t.count);
        j.append('}');
        int n = r.oomCount();
        long[] a = new long[n];
        long[] b = new long[n];
        long[] c = new long[n];
        for (int i = 0; i < n; i++) {
            a[i] = r.oomCall(i);
            b[i] = r.oomLine(i);
            c[i] = r.oomBytes(i);
        }
        array(j.append(",\"ooms\":{\"calls\":"), a, n);
        array(j.append(",\"lines\":"), b, n);
        array(j.append(",\"bytes\":"), c, n);
        n = r.extendCount();
        a = new long[n];
        b = new long[n];
        c = new long[n];
        for (int i = 0; i < n; i++) {
            a[i] = r.extendCall(i);
            b[i] = r.extendLine(i);
            c[i] = r.extendBytes(i);
        }
        array(j.append("},\"extends\":{\"calls\":"), a, n);
        array(j.append(",\"lines\":"), b, n);
        array(j.append(",\"bytes\":"), c, n);
        j.append("},\"maps\":[");
        boolean first = true;
        for (Snapshots.Snapshot s : snaps.taken) {
            if (!first) {
                j.append(',');
            }
            first = false;
            j.append("{\"label\":");
            string(j, s.label);
            j.append(",\"call\":").append(s.call).append(",\"line\":").append(s.line).append(",\"inUse\":")
                    .append(s.bytesInUse).append(",\"pool\":").append(s.poolBytes).append(",\"regions\":[");
            for (int i = 0; i < s.regions.size(); i++) {
                j.append(i == 0 ? "[" : ",[").append(s.regions.get(i)[0]).append(',').append(s.regions.get(i)[1])
                        .append(']');
            }
            j.append("],\"chunks\":{\"r\":[");
            for (int i = 0; i < s.chunks; i++) {
                j.append(i == 0 ? "" : ",").append(s.region[i]);
            }
            array(j.append("],\"off\":"), s.offset, s.chunks);
            array(j.append(",\"size\":"), s.size, s.chunks);
            array(j.append(",\"req\":"), s.requested, s.chunks);
            array(j.append(",\"id\":"), s.allocationId, s.chunks);
            j.append(",\"line\":[");
            for (int i = 0; i < s.chunks; i++) {
                j.append(i == 0 ? "" : ",").append(s.allocationId[i] >= 0 ? snaps.lineOf(s.allocationId[i]) : 0);
            }
            j.append("],\"prov\":[");
            for (int i = 0; i < s.chunks; i++) {
                j.append(i == 0 ? "" : ",").append(s.provenance[i]);
            }
            j.append("]},\"holders\":[");
            for (int i = 0; i < s.holders.size(); i++) {
                MemoryMap.Holder h = s.holders.get(i);
                j.append(i == 0 ? "[" : ",[");
                string(j, h.holder());
                j.append(',').append(h.bytes()).append(',').append(h.requestedBytes()).append(',').append(h.chunks())
                        .append(']');
            }
            j.append("]}");
        }
        j.append("],\"provenance\":[");
        for (int i = 0; i < snaps.provenanceTexts.size(); i++) {
            if (i > 0) {
                j.append(',');
            }
            string(j, snaps.provenanceTexts.get(i));
        }
        j.append("]}");
    }

    private static void array(StringBuilder j, long[] v, int n) {
        j.append('[');
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                j.append(',');
            }
            j.append(v[i]);
        }
        j.append(']');
    }

    /** A JSON string that is also safe inside a script element. */
    private static void string(StringBuilder j, String s) {
        j.append('"');
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == '"' || ch == '\\') {
                j.append('\\').append(ch);
            } else if (ch < 0x20 || ch == '<' || ch == '>' || ch == '&' || ch == '\u2028' || ch == '\u2029') {
                j.append(String.format(Locale.ROOT, "\\u%04x", (int) ch));
            } else {
                j.append(ch);
            }
        }
        j.append('"');
    }

    static String escape(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '<': b.append("&lt;"); break;
                case '>': b.append("&gt;"); break;
                case '&': b.append("&amp;"); break;
                case '"': b.append("&quot;"); break;
                default: b.append(ch);
            }
        }
        return b.toString();
    }
}
