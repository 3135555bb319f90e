#include "CHTTPDNSShims.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Only async-signal-safe calls between fork and exec: the parent may have other threads. */
static void exec_tied_child(pid_t parent, const char *path, char *const argv[], char *const envp[],
                            int child_reads, int child_writes, int report) {
    /* SIGKILL when the forking thread ends, so the child never outlives this process. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) goto fail;
    if (setpgid(0, 0) != 0) goto fail;
    /* Out of the way of 0, 3 and 4 first, in case any already is one of them. */
    report = fcntl(report, F_DUPFD_CLOEXEC, 10);
    if (report < 0) _exit(127);
    int reads = fcntl(child_reads, F_DUPFD, 10);
    int writes = fcntl(child_writes, F_DUPFD, 10);
    if (reads < 0 || writes < 0) goto fail;
    if (dup2(reads, 3) != 3 || dup2(writes, 4) != 4) goto fail;
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) != 0) goto fail;
    /* Every other descriptor closes at exec (`report` too, which is needed until then). */
    if (close_range(5, ~0U, CLOSE_RANGE_CLOEXEC) != 0) goto fail;
    static const int reset[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD};
    for (unsigned i = 0; i < sizeof reset / sizeof reset[0]; i++) signal(reset[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, argv, envp);
fail:;
    int code = errno;
    (void)!write(report, &code, sizeof code);
    _exit(127);
}

pid_t chttpdns_spawn_tied(const char *path, char *const argv[], char *const envp[], int child_reads,
                          int child_writes) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int code = errno;
        close(report[0]);
        close(report[1]);
        errno = code;
        return -1;
    }
    if (pid == 0) exec_tied_child(parent, path, argv, envp, child_reads, child_writes, report[1]);
    close(report[1]);
    int code = 0;
    ssize_t got;
    do got = read(report[0], &code, sizeof code);
    while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof code) {
        /* exec failed: the child is gone; reap it so no zombie stays. */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        errno = code;
        return -1;
    }
    return pid;
}
