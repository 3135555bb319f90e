#pragma once
#include <hiredis/hiredis.h>

/* hiredis opens the connection (redisConnectWithTimeout, redisConnectUnixWithTimeout); the
 * commands and replies go over its socket in Swift (RedisConnection), with deadlines and size
 * limits hiredis's own reader does not have. */
