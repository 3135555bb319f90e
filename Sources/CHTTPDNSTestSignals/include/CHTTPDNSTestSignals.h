#pragma once
#include <stddef.h>
#include <sys/types.h>

/* For test processes: a terminating signal (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2)
   whose disposition is still the default first writes one line to stderr naming it and the
   process that sent it (pid and command line), then ends the process as the signal would have.
   SwiftPM prints nothing when a test process dies of such a signal. Idempotent. */
void chttpdns_report_terminating_signals(void);

/* The line that report writes for `signal` sent by `sender` whose command line (NUL-separated, as
   /proc/PID/cmdline holds it) is `command`: written into `buffer`, NUL-terminated and cut to
   fit; returns its length. Async-signal-safe. */
size_t chttpdns_format_signal_report(
    char *buffer, size_t capacity, int signal, pid_t sender, const char *command, size_t command_length);
