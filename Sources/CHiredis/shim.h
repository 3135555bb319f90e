#pragma once
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>

/* redisCommand is variadic: Swift sends every command through redisCommandArgv /
 * redisAppendCommandArgv, which are not. */

/* The reply's element at `index` (the element vector is a pointer to pointers). */
static inline redisReply *chiredis_reply_element(const redisReply *reply, size_t index) {
    return reply->element[index];
}

/* hiredis writes with write(2), which raises SIGPIPE when Redis has closed the connection.
 * Blocking it on the calling thread turns that into EPIPE for this thread only. */
static inline int chiredis_block_sigpipe(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}
