import HTTPDNSRedis

/// The Lua scripts the fleet runs in Redis. Each touches only keys of one fleet, which share
/// one hash tag, so they also run on a Redis Cluster. The read-only ones say so (`no-writes`), so
/// a Redis at `maxmemory` still runs them; they also keep values over a size from being sent.
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

    /// The fleet's answers of one name without reading an oversized one: KEYS are the cache
    /// keys, ARGV[1] the largest value read. Returns, for each key, its value (nil when absent,
    /// the integer -1 when larger than ARGV[1]) and its PTTL.
    static let lookUp = RedisScript(
        """
        #!lua flags=no-writes
        local out = {}
        for i = 1, #KEYS do
          local size = redis.call('STRLEN', KEYS[i])
          if size > tonumber(ARGV[1]) then out[#out + 1] = -1 else out[#out + 1] = redis.call('GET', KEYS[i]) end
          out[#out + 1] = redis.call('PTTL', KEYS[i])
        end
        return out
        """)

    /// One `HSCAN` step of the snapshot without its oversized entries: KEYS[1] the snapshot,
    /// ARGV the cursor, the count and the largest field or value read. Returns the next cursor,
    /// the field/value pairs that fit, and how many did not.
    static let scanSnapshot = RedisScript(
        """
        #!lua flags=no-writes
        local step = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[2])
        local limit = tonumber(ARGV[3])
        local pairs, skipped = {}, 0
        for i = 1, #step[2], 2 do
          local field, value = step[2][i], step[2][i + 1]
          if #field <= limit and #value <= limit then
            pairs[#pairs + 1] = field
            pairs[#pairs + 1] = value
          else
            skipped = skipped + 1
          end
        end
        return {step[1], pairs, skipped}
        """)

    /// What replication needs to know of the stream and the epoch, without an entry's fields
    /// (XINFO STREAM returns the first and last entries whole): KEYS[1] the epoch, KEYS[2] the
    /// stream; ARGV[1] the largest epoch read, then ids to look for. Returns the epoch (nil when
    /// absent, -1 when oversized), the length, the last generated id, the entries added, the
    /// first entry's id (nil for each unknown), then 1 or 0 for each id asked about.
    static let observe = RedisScript(
        """
        #!lua flags=no-writes
        local epoch
        if redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[1]) then epoch = -1 else epoch = redis.call('GET', KEYS[1]) end
        local length, last, added, first = 0, false, false, false
        local ok, info = pcall(redis.call, 'XINFO', 'STREAM', KEYS[2])
        if ok then
          for i = 1, #info, 2 do
            if info[i] == 'length' then length = info[i + 1]
            elseif info[i] == 'last-generated-id' then last = info[i + 1]
            elseif info[i] == 'entries-added' then added = info[i + 1] end
          end
          local head = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
          if #head > 0 then first = head[1][1] end
        end
        local out = {epoch, length, last, added, first}
        for i = 2, #ARGV do
          out[#out + 1] = #redis.call('XRANGE', KEYS[2], ARGV[i], ARGV[i], 'COUNT', 1)
        end
        return out
        """)
}
