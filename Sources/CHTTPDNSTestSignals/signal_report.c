#include "CHTTPDNSTestSignals.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static size_t append(char *buffer, size_t capacity, size_t length, const char *text, size_t count) {
    for (size_t i = 0; i < count && length + 1 < capacity; i++) buffer[length++] = text[i];
    buffer[length] = '\0';
    return length;
}

static size_t append_number(char *buffer, size_t capacity, size_t length, long value) {
    char digits[24];
    size_t count = 0;
    int negative = value < 0;
    unsigned long magnitude = negative ? (unsigned long)(-(value + 1)) + 1 : (unsigned long)value;
    do {
        digits[sizeof digits - 1 - count++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude > 0);
    if (negative) digits[sizeof digits - 1 - count++] = '-';
    return append(buffer, capacity, length, digits + sizeof digits - count, count);
}

size_t chttpdns_format_signal_report(
    char *buffer, size_t capacity, int signal, pid_t sender, const char *command, size_t command_length) {
    if (capacity == 0) return 0;
    size_t length = 0;
    buffer[0] = '\0';
    static const char head[] = "test process: signal ";
    static const char from[] = " from pid ";
    length = append(buffer, capacity, length, head, sizeof head - 1);
    length = append_number(buffer, capacity, length, signal);
    length = append(buffer, capacity, length, from, sizeof from - 1);
    length = append_number(buffer, capacity, length, sender);
    length = append(buffer, capacity, length, " (", 2);
    // The command line's arguments are NUL-separated; a trailing NUL ends it.
    while (command_length > 0 && command[command_length - 1] == '\0') command_length--;
    for (size_t i = 0; i < command_length; i++) {
        char c = command[i] == '\0' ? ' ' : command[i];
        length = append(buffer, capacity, length, &c, 1);
    }
    return append(buffer, capacity, length, ")\n", 2);
}

static void report(int signal, siginfo_t *info, void *context) {
    (void)context;
    char path[48];
    size_t path_length = append(path, sizeof path, 0, "/proc/", 6);
    path_length = append_number(path, sizeof path, path_length, info->si_pid);
    append(path, sizeof path, path_length, "/cmdline", 8);
    char command[256];
    ssize_t command_length = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        command_length = read(fd, command, sizeof command);
        close(fd);
    }
    char line[512];
    size_t length = chttpdns_format_signal_report(
        line, sizeof line, signal, info->si_pid, command, command_length > 0 ? (size_t)command_length : 0);
    ssize_t ignored = write(STDERR_FILENO, line, length);
    (void)ignored;
    // SA_RESETHAND put the default back: the signal ends the process as it would have.
    raise(signal);
}

void chttpdns_report_terminating_signals(void) {
    static const int signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = report;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction current;
        // Ignored or handled signals stay as they are.
        if (sigaction(signals[i], NULL, &current) == 0 && !(current.sa_flags & SA_SIGINFO)
            && current.sa_handler == SIG_DFL) {
            sigaction(signals[i], &action, NULL);
        }
    }
}
