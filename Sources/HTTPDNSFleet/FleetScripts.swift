import HTTPDNSRedis

/// The Lua scripts the fleet runs in Redis. Each touches only keys of one fleet, which share
/// one hash tag, so they also run on a Redis Cluster.
enum FleetScripts {
    /// Appends cookie changes to the stream and keeps the snapshot at the newest version of each
    /// cookie, atomically. KEYS: stream, snapshot. ARGV: MAXLEN, then for each change its
    /// snapshot field, its 48-character version sort key, its sealed stream entry and its sealed
    /// snapshot value. Returns the last stream id.
    ///
    /// Versions are compared byte by byte (Lua's `<` on strings uses the server's collation).
    static let publishChanges = RedisScript(
        """
        local function newer(a, b)
          for i = 1, #a do
            local x, y = string.byte(a, i), string.byte(b, i)
            if y == nil or x ~= y then return y == nil or x > y end
          end
          return false
        end
        local last = false
        for i = 2, #ARGV, 4 do
          last = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'c', ARGV[i + 2])
          local current = redis.call('HGET', KEYS[2], ARGV[i])
          if (not current) or newer(ARGV[i + 1], string.sub(current, 1, #ARGV[i + 1])) then
            redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1] .. ARGV[i + 3])
          end
        end
        return last
        """)

    /// Deletes KEYS[1] only if it still holds ARGV[1]: a lock is released only by its holder (a
    /// holder that outlived its lock must not free another machine's).
    static let releaseLock = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """)

    /// Deletes field ARGV[1] of hash KEYS[1] only if it still holds ARGV[2] (a newer change that
    /// arrived meanwhile is kept).
    static let deleteFieldIfUnchanged = RedisScript(
        """
        if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
        return 0
        """)
}
