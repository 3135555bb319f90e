#pragma once
#include <stdint.h>
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* GNU-only calls that Swift's Glibc module does not expose (it is built without _GNU_SOURCE). */

/* accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC). */
int chttpdns_accept_nonblocking(int fd);

/* SO_PEERCRED of a connected Unix socket; 0 or -1 with errno. */
int chttpdns_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/* A signalfd (non-blocking, close-on-exec) for the given signals, which it also blocks. -1 with errno. */
int chttpdns_signalfd(const int *signals, int count);

/* Reads one signalfd record; returns the signal number, 0 when none is pending, -1 with errno. */
int chttpdns_signalfd_read(int fd);

/* Unblocks every signal in this thread (child processes must not inherit the daemon's mask). */
void chttpdns_unblock_all_signals(void);

/* pthread_sigmask(SIG_BLOCK) of one signal, for worker threads that must never take it. */
int chttpdns_block_signal(int signal);

/* __nss_configure_lookup("hosts", services): this process's hosts lookups use these NSS services,
   whatever nsswitch.conf says, and glibc stops reloading nsswitch.conf. 0, or -1 with errno. */
int chttpdns_configure_hosts_lookup(const char *services);

/* Names the calling thread (PR_SET_NAME: at most 15 bytes are kept), as top -H, ps -L, perf and
   gdb show it. */
void chttpdns_name_this_thread(const char *name);

/* malloc_trim(0): freed pages of every malloc arena go back to the system. */
void chttpdns_return_freed_heap_pages(void);

/* getaddrinfo's GNU-only "name exists but has no address of this family" codes. */
extern const int chttpdns_EAI_NODATA;
extern const int chttpdns_EAI_ADDRFAMILY;

/* An rtnetlink socket (NETLINK_ROUTE, non-blocking, close-on-exec) bound to the multicast `groups`
   (RTMGRP_* bits), with a receive buffer of `receive_buffer` bytes if the system allows it. -1 with
   errno (EAFNOSUPPORT under systemd's RestrictAddressFamilies= without AF_NETLINK). */
int chttpdns_route_netlink_open(uint32_t groups, int receive_buffer);

/* setns(fd, CLONE_NEWNET): the calling thread joins the network namespace `fd` opens (sockets it
   creates from then on live there). 0, or -1 with errno. For tests. */
int chttpdns_enter_network_namespace(int fd);

/* fork + execve of `path` with the descriptor `child_reads` as the child's fd 3 and `child_writes`
   as its fd 4 (Chromium's --remote-debugging-pipe), /dev/null as fd 0, no other descriptor but 1
   and 2, default signal handling, in a process group of its own, and SIGKILL when the calling
   thread ends (PR_SET_PDEATHSIG). The child's pid, or -1 with errno (the exec's own when it failed). */
pid_t chttpdns_spawn_tied(const char *path, char *const argv[], char *const envp[], int child_reads,
                          int child_writes);
