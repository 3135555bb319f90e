#include "CHTTPDNSShims.h"
#include <errno.h>
#include <linux/netlink.h>
#include <malloc.h>
#include <netdb.h>
#include <nss.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

int chttpdns_accept_nonblocking(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int chttpdns_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int chttpdns_signalfd(const int *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int chttpdns_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    ssize_t n = read(fd, &info, sizeof info);
    if (n == (ssize_t)sizeof info) return (int)info.ssi_signo;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -1;
}

void chttpdns_unblock_all_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    pthread_sigmask(SIG_SETMASK, &set, NULL);
}

int chttpdns_block_signal(int signal) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int chttpdns_configure_hosts_lookup(const char *services) {
    return __nss_configure_lookup("hosts", services);
}

const int chttpdns_EAI_NODATA = EAI_NODATA;
const int chttpdns_EAI_ADDRFAMILY = EAI_ADDRFAMILY;

void chttpdns_return_freed_heap_pages(void) {
    (void)malloc_trim(0);
}

void chttpdns_name_this_thread(const char *name) {
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
}

int chttpdns_route_netlink_open(uint32_t groups, int receive_buffer) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -1;
    /* A refused size leaves the default (rmem_default): bursts may then overrun, which the reader sees. */
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    struct sockaddr_nl address = {.nl_family = AF_NETLINK, .nl_groups = groups};
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int chttpdns_enter_network_namespace(int fd) {
    return setns(fd, CLONE_NEWNET);
}
