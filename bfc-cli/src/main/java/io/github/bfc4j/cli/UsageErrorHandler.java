/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import picocli.CommandLine;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * Reports a command-line error (unknown option, missing parameter, bad boolean) as one line,
 * {@code bfc replay: Unknown option: '--x' (see 'bfc replay --help')}, with exit status 2,
 * instead of picocli's message followed by the whole usage text.
 */
final class UsageErrorHandler implements IParameterExceptionHandler {

    @Override
    public int handleParseException(ParameterException ex, String[] args) {
        CommandLine c = ex.getCommandLine();
        String name = c.getCommandSpec().qualifiedName(" ");
        String message = ex.getMessage() == null ? ex.toString() : ex.getMessage().replace('\n', ' ').trim();
        String hint = "";
        if (ex instanceof UnmatchedArgumentException u && !u.getSuggestions().isEmpty()) {
            hint = " (did you mean " + String.join(" or ", u.getSuggestions()) + "?)";
        }
        c.getErr().println(name + ": " + message + hint + " (see '" + name + " --help')");
        c.getErr().flush();
        return CommandRunner.EXIT_USAGE;
    }
}
