'use strict';
// httpdns: the Node.js client of httpdnsd, the machine's HTTPDNS cache and shared cookie jar,
// over its JSON-RPC socket (httpdnsd-rpc(7)). No dependencies; Node 18 or later.
//
//   const httpdns = require('httpdns');          // or: import * as httpdns from 'httpdns'
//   const client = httpdns.connect();
//   const response = await client.fetch('https://app.example.com/api/me');
//
// client.fetch goes IP-direct to the daemon's addresses with the machine's session, following
// redirects itself with the daemon's cookies on every hop; client.lookup is a dns.lookup for the
// `lookup` option of http/https requests and agents.

const events = require('node:events');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const net = require('node:net');
const path = require('node:path');
const { Readable } = require('node:stream');

const SYSTEM_SOCKET = '/run/httpdnsd/httpdnsd.sock';
// Bounds what one answer line may make the reader hold (an exported jar is the largest answer).
const MAX_LINE = 256 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 30000;
const MAX_REDIRECTS = 20; // the fetch standard's limit
const DEFAULT_CONNECT_TIMEOUT_MS = 10000;
// What a connection attempt that never reached the origin fails with.
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL']);

/** The socket httpdnsd-rpc(7) says to use: `explicit`, else $HTTPDNSD_SOCKET, else the
 * per-user socket when $XDG_RUNTIME_DIR is set and it exists, else the system socket. */
function socketPath(explicit) {
  if (explicit) return explicit;
  if (process.env.HTTPDNSD_SOCKET) return process.env.HTTPDNSD_SOCKET;
  if (process.env.XDG_RUNTIME_DIR) {
    const perUser = path.join(process.env.XDG_RUNTIME_DIR, 'httpdnsd', 'httpdnsd.sock');
    if (fs.existsSync(perUser)) return perUser;
  }
  return SYSTEM_SOCKET;
}

/** The host name of `url` as this client parses it, or undefined for an IP literal (then an
 * explicit host, or the daemon's per-user address memory, decides). */
function urlHost(url) {
  let host;
  try {
    host = new URL(String(url)).hostname;
  } catch {
    return undefined;
  }
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  return bare && net.isIP(bare) === 0 ? bare : undefined;
}

// The names of JSON-RPC's own codes, for an error answer without data.name.
const RPC_NAMES = { '-32700': 'ParseError', '-32600': 'InvalidRequest', '-32601': 'MethodNotFound', '-32602': 'InvalidParams', '-32603': 'InternalError' };

/** An error answer of the daemon: `code` as Node's errors have one, ERR_HTTPDNS_ and data.name
 * in capitals (ERR_HTTPDNS_INVALID_PARAMS, ERR_HTTPDNS_HOST_NOT_FOUND, ...), `rpcCode` the
 * JSON-RPC code (-32602, -32001, ...), and `data` as sent (`data.name` is the stable name;
 * `field`, `reason`, `candidates`, ... are kept whatever they are). */
class RPCError extends Error {
  constructor(method, error) {
    const data = error && typeof error.data === 'object' && error.data !== null ? error.data : {};
    const text = String(error.message || 'error');
    // The daemon's message names most of data already: the rest once, in parentheses.
    const details = Object.entries(data).filter(([key, value]) => key !== 'name' &&
      !(typeof value === 'string' && value.length > 2 && text.includes(value)))
      .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join(',') : typeof value === 'string' ? value : JSON.stringify(value)}`);
    super(`httpdnsd: ${method}: ${text}${details.length ? ` (${details.join(', ')})` : ''}`);
    this.name = 'RPCError';
    this.method = method;
    this.rpcCode = error.code;
    const name = typeof data.name === 'string' ? data.name : RPC_NAMES[error.code] || 'Error';
    this.code = `ERR_HTTPDNS_${name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}`;
    this.data = data;
  }

  /** data.field: the parameter an InvalidParams error is about. */
  get field() { return this.data.field; }
  /** data.reason: "ambiguous-address", "ambiguous-url", an upstream's failure, ... */
  get reason() { return this.data.reason; }
  /** data.candidates: the host names of an "ambiguous-address" refusal. */
  get candidates() { return Array.isArray(this.data.candidates) ? this.data.candidates : []; }
}

/** The daemon could not be reached, closed the connection before answering, or did not answer
 * in time: `code` is the system error's (ENOENT, ECONNREFUSED, EACCES, ...), ECONNRESET for a
 * connection it closed, ETIMEDOUT for a call past its deadline; `detail` is the message without
 * the socket. */
class ConnectionError extends Error {
  constructor(socket, detail, { retryable = false, cause, code } = {}) {
    super(`httpdnsd at ${socket}: ${detail}`, cause ? { cause } : undefined);
    this.name = 'ConnectionError';
    this.detail = detail;
    this.address = socket;
    this.code = code || (cause && cause.code) || 'ECONNRESET';
    if (cause && cause.errno !== undefined) this.errno = cause.errno;
    if (cause && cause.syscall) this.syscall = cause.syscall;
    // The request went out on a connection that had answered before with nothing else in
    // flight: the daemon closes only idle connections without answering (IdleTimeout=), so it
    // never read it, and sending it again is safe.
    this.retryable = retryable;
  }
}

/** One connection: answers are routed to their callers by id (the daemon may answer out of
 * order), notifications (a method without an id) are emitted as 'notification' events. */
class Connection extends events.EventEmitter {
  constructor(socket) {
    super();
    this.socket = socket;
    this.pending = new Map();
    this.nextId = 0;
    this.answers = 0;
    this.closed = null;
    this.buffered = [];
    this.bufferedLength = 0;
    this.stream = net.createConnection(socket);
    this.stream.on('data', (chunk) => this.receive(chunk));
    // A system error's message repeats the socket path: its syscall and code say the rest.
    this.stream.on('error', (error) => this.shut(new ConnectionError(socket,
      error.syscall && error.code ? `${error.syscall} ${error.code}` : error.message, { cause: error })));
    this.stream.on('close', () => this.shut(this.orphan
      ? new ConnectionError(socket, `closed after error ${this.orphan.code}: ${this.orphan.message}`)
      : new ConnectionError(socket, 'the daemon closed the connection')));
    this.stream.unref(); // an idle client does not keep the process alive
  }

  send(method, params, { signal, timeoutMs } = {}) {
    if (this.closed) return Promise.reject(new ConnectionError(this.socket, this.closed.detail, { retryable: true }));
    if (signal && signal.aborted) return Promise.reject(signal.reason);
    const id = ++this.nextId;
    const request = { jsonrpc: '2.0', id, method };
    if (params !== undefined && params !== null) request.params = params;
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject, retryable: this.pending.size === 0 && this.answers > 0 };
      const onAbort = () => { this.forget(id); reject(signal.reason); };
      const timer = setTimeout(() => {
        this.forget(id);
        reject(new ConnectionError(this.socket, `${method}: no answer within ${timeoutMs} ms`, { code: 'ETIMEDOUT' }));
      }, timeoutMs);
      entry.cleanup = () => {
        clearTimeout(timer);
        if (signal) signal.removeEventListener('abort', onAbort);
      };
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, entry);
      this.stream.ref();
      this.stream.write(JSON.stringify(request) + '\n');
    });
  }

  forget(id) {
    const entry = this.pending.get(id);
    if (entry) {
      entry.cleanup();
      this.pending.delete(id);
    }
    if (this.pending.size === 0 && !this.closed) this.stream.unref();
  }

  close() {
    this.shut(new ConnectionError(this.socket, 'the client closed the connection'));
    this.stream.destroy();
  }

  shut(reason) {
    if (!this.closed) this.closed = reason;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const entry of pending) {
      entry.cleanup();
      entry.reject(new ConnectionError(this.socket, reason.detail,
        { retryable: entry.retryable && !this.orphan, cause: reason.cause, code: reason.code }));
    }
  }

  receive(chunk) {
    let start = 0;
    let newline;
    while ((newline = chunk.indexOf(10, start)) !== -1) {
      this.buffered.push(chunk.subarray(start, newline));
      const line = Buffer.concat(this.buffered).toString('utf8');
      this.buffered = [];
      this.bufferedLength = 0;
      start = newline + 1;
      if (line.trim()) this.dispatch(line);
    }
    if (start < chunk.length) {
      this.buffered.push(chunk.subarray(start));
      this.bufferedLength += chunk.length - start;
      if (this.bufferedLength > MAX_LINE) {
        this.shut(new ConnectionError(this.socket, `an answer longer than ${MAX_LINE} bytes`, { code: 'ERR_HTTPDNS_PROTOCOL' }));
        this.stream.destroy();
      }
    }
  }

  dispatch(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch (error) {
      this.shut(new ConnectionError(this.socket, `the daemon sent a line that is not JSON: ${error.message}`, { code: 'ERR_HTTPDNS_PROTOCOL' }));
      this.stream.destroy();
      return;
    }
    for (const item of Array.isArray(message) ? message : [message]) {
      if (item === null || typeof item !== 'object') continue;
      if (!('id' in item) && typeof item.method === 'string') {
        this.emit('notification', item);
        continue;
      }
      if (item.id === null) {
        this.orphan = item.error || {}; // a line too large, a line timeout
        continue;
      }
      this.answers++;
      const entry = this.pending.get(item.id);
      if (entry) {
        this.forget(item.id);
        entry.resolve(item);
      }
    }
  }
}

/** One monitor subscription: an async iterator of events that ends when its connection closes. */
class Monitor {
  constructor(connection) {
    this.connection = connection;
    this.queue = [];
    this.waiting = [];
    this.ended = false;
    connection.on('notification', (message) => {
      if (message.method !== 'monitorEvent' || message.params === null || typeof message.params !== 'object') return;
      const waiter = this.waiting.shift();
      if (waiter) waiter({ value: message.params, done: false });
      else this.queue.push(message.params);
    });
    connection.stream.on('close', () => {
      this.ended = true;
      for (const waiter of this.waiting.splice(0)) waiter({ value: undefined, done: true });
    });
  }

  /** The next event ({ value, done }), as an async iterator's next. */
  next() {
    if (this.queue.length > 0) return Promise.resolve({ value: this.queue.shift(), done: false });
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Ends the subscription (what leaving a for await loop calls). */
  return() {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /** Closes the subscription's connection. */
  close() {
    this.connection.close();
  }
}

function familyOf(options) {
  const family = typeof options === 'number' ? options : options && options.family;
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

function isNullBodyStatus(status) {
  return status === 101 || status === 204 || status === 205 || status === 304;
}

/** A request body as bytes (replayable on a 307/308) or as a stream (not replayable). */
async function requestBody(body, headers) {
  if (body === undefined || body === null) return null;
  const contentType = (type) => { if (!headers.has('content-type')) headers.set('content-type', type); };
  if (typeof body === 'string') {
    contentType('text/plain;charset=UTF-8');
    return { bytes: Buffer.from(body) };
  }
  if (body instanceof URLSearchParams) {
    contentType('application/x-www-form-urlencoded;charset=UTF-8');
    return { bytes: Buffer.from(body.toString()) };
  }
  if (body instanceof ArrayBuffer) return { bytes: Buffer.from(body) };
  if (ArrayBuffer.isView(body)) return { bytes: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
  if (typeof Blob !== 'undefined' && body instanceof Blob) {
    if (body.type) contentType(body.type);
    return { bytes: Buffer.from(await body.arrayBuffer()) };
  }
  if (typeof body.getReader === 'function') return { stream: Readable.fromWeb(body) };
  if (typeof body[Symbol.asyncIterator] === 'function' || typeof body.pipe === 'function') {
    return { stream: Readable.from(body) };
  }
  throw fetchError('unsupported body type', 'ERR_INVALID_ARG_TYPE');
}

/** An https/http agent whose pools are per host, port and the daemon's addresses. */
function ipDirectAgent(Base, options) {
  class IPDirectAgent extends Base {
    getName(requestOptions) {
      return `${super.getName(requestOptions)}:${requestOptions.httpdnsAddresses || ''}`;
    }
  }
  return new IPDirectAgent({ keepAlive: true, ...options });
}

// The answers of every method, as the daemon sends them (httpdnsd-rpc(7), the OpenRPC
// document): a bracketed property may be absent; a daemon may add members.

/**
 * @typedef {object} FamilyTTLs resolve's `ttls` (family both only): each family's own TTL in
 *   seconds, the negative answer's for a family without an address.
 * @property {number} ipv4
 * @property {number} ipv6
 */

/**
 * @typedef {object} Resolution A resolve answer.
 * @property {string} host
 * @property {string[]} ipv4
 * @property {string[]} ipv6
 * @property {number} ttl seconds before the addresses expire (0 when stale)
 * @property {FamilyTTLs} [ttls] with family both only
 * @property {boolean} stale
 * @property {('cache'|'upstream'|'system'|'literal'|'static'|'fleet')} source where the answer came from (fleet: through the fleet tier)
 * @property {string} [upstream] the upstream that answered
 * @property {string} [hostsMapKey] the calling uid's key to the daemon's hosts map (only with the hostsMap param, which the NSS module sends)
 */

/**
 * @typedef {object} ReverseAnswer A reverse answer: the caller's host names for an address.
 * @property {string} address the address in canonical form
 * @property {string[]} hosts most recent first
 * @property {number} ttl seconds the most recent answer for it is still valid
 * @property {ReverseName[]} names the same hosts in the same order, each with its TTLs
 */

/**
 * @typedef {object} ReverseName One name of a reverse answer.
 * @property {string} host
 * @property {number} ttl seconds the name's own answer is still valid (0 past it)
 * @property {number} rememberedFor seconds until the daemon forgets the name for the address
 */

/**
 * @typedef {object} ForgottenAddresses A forget answer.
 * @property {number} forgotten how many addresses the caller's memory no longer holds
 */

/**
 * @typedef {object} CookieHeader A getCookieHeader answer.
 * @property {string} header "" when no cookie matches
 * @property {number} count
 */

/**
 * @typedef {object} RejectedCookie One Set-Cookie value the jar refused.
 * @property {number} index position in setCookie, from 0
 * @property {string} reason syntax, domain-mismatch, public-suffix, secure-required, prefix, too-large, limit, ...
 */

/**
 * @typedef {object} StoredCookies A handleSetCookie answer.
 * @property {string} host the host name the cookies were stored under
 * @property {number} stored
 * @property {RejectedCookie[]} rejected
 */

/**
 * @typedef {object} DeletedCookies A deleteCookies answer.
 * @property {number} deleted how many cookies were deleted
 */

/**
 * @typedef {object} Cookie One cookie of the jar.
 * @property {string} name
 * @property {string} value
 * @property {string} domain the host name the cookie is keyed by (never an IP when a host name is known)
 * @property {boolean} hostOnly no Domain attribute: sent to exactly this host
 * @property {string} path
 * @property {(number|null)} expires Unix seconds; null for a session cookie
 * @property {boolean} secure
 * @property {boolean} httpOnly
 * @property {('strict'|'lax'|'none'|'default')} sameSite default: no valid SameSite attribute
 * @property {boolean} partitioned
 * @property {number} created Unix seconds
 */

/**
 * @typedef {object} CookieList A listCookies answer.
 * @property {Cookie[]} cookies
 */

/**
 * @typedef {object} ImportedCookies An importCookies answer.
 * @property {number} imported how many cookies were imported
 */

/**
 * @typedef {object} LeftOutCookie A cookie cookies.txt cannot hold.
 * @property {string} domain
 * @property {string} path
 * @property {string} name
 */

/**
 * @typedef {object} ExportedCookies An exportCookies answer.
 * @property {string} data the whole cookies.txt text
 * @property {LeftOutCookie[]} [leftOut] the cookies left out of data
 */

/**
 * @typedef {object} FlushedCache A flushCache answer.
 * @property {number} flushed how many cache entries were dropped
 */

/**
 * @typedef {object} CacheCounters The shared cache (status.cache, statistics.cache): entries
 *   now, and its hits, misses and stale answers served.
 * @property {number} entries
 * @property {number} hits
 * @property {number} misses
 * @property {number} staleServed
 */

/**
 * @typedef {object} CookieCount The caller's jar in a status answer.
 * @property {number} count cookies in the caller's jar
 */

/**
 * @typedef {object} ServiceAddress One service address of an upstream.
 * @property {string} address
 * @property {number} failures service failures in a row since it last answered
 * @property {boolean} backingOff rotated out until its backoff ends
 */

/**
 * @typedef {object} ServiceAddresses Where an upstream with several service addresses sends its queries.
 * @property {('configured'|'boot'|'persisted'|'scheduler')} source where the addresses came from
 * @property {string} current the address queries go to now
 * @property {ServiceAddress[]} addresses
 * @property {(string|null)} schedulerError why the last scheduler round got no answer
 * @property {(number|null)} nextRefresh seconds until the scheduler is asked again (0 while it is, null without one)
 */

/**
 * @typedef {object} UpstreamStatus One configured upstream in a status answer.
 * @property {string} name
 * @property {('alibaba'|'tencent'|'doh'|'doh-json'|'system')} kind
 * @property {boolean} healthy
 * @property {(string|null)} lastError
 * @property {(number|null)} latencyMs the last successful query's
 * @property {number} [answered] queries it answered since the daemon started
 * @property {string[]} [domains] with Route= lines: the routed domains it is asked for
 * @property {ServiceAddresses} [serviceAddresses] only for an upstream with several service addresses
 * @property {string} [warning] what is wrong with its configuration (a billed upstream every unrouted name goes to)
 */

/**
 * @typedef {object} FleetStatus status.fleet: the fleet tier as this daemon sees it ([Fleet] only).
 * @property {boolean} connected Redis answers (with state full, reads do but writes do not)
 * @property {('connecting'|'connected'|'unreachable'|'authentication-failed'|'full')} state
 * @property {(string|null)} lastError the last failure, kept after recovery; never a secret
 * @property {number} lastStateChange Unix seconds of the last change of state
 * @property {(number|null)} lag seconds from a change's publication to its application here (null before the first read)
 * @property {number} outbox local changes of shared jars not yet taken by the fleet
 * @property {number} rejected fleet entries that failed to open or validate since start
 */

/**
 * @typedef {object} NetworkStatus The machine's address and route changes as the daemon saw them.
 * @property {boolean} watching whether it reads the kernel's notifications
 * @property {number} changes changes seen since start
 * @property {(number|null)} lastChange Unix seconds of the last change (null before the first)
 */

/**
 * @typedef {object} Status A status answer.
 * @property {string} version
 * @property {number} uptime seconds since the daemon started
 * @property {CacheCounters} cache
 * @property {CookieCount} cookies
 * @property {UpstreamStatus[]} upstreams
 * @property {FleetStatus} [fleet] only with a [Fleet] section
 * @property {NetworkStatus} [network]
 */

/**
 * @typedef {object} CacheEntry One cache entry the caller may see.
 * @property {string} host
 * @property {('ipv4'|'ipv6')} family
 * @property {string[]} addresses empty: the name has no address of this family
 * @property {number} ttl seconds left before the answer expires (0 once it has)
 * @property {boolean} stale expired, kept only to be served while the upstreams fail (MaxStale=)
 * @property {(string|null)} upstream the upstream that answered, when known
 */

/**
 * @typedef {object} CacheListing A showCache answer.
 * @property {CacheEntry[]} entries by host, then family
 */

/**
 * @typedef {object} UpstreamStatistics One upstream's counters.
 * @property {string} name
 * @property {number} queries queries sent to it
 * @property {number} failures those that failed (timeout, HTTP or parse error)
 */

/**
 * @typedef {object} CookieStatistics The cookie counters.
 * @property {number} stored cookies stored or replaced
 * @property {number} rejected Set-Cookie values refused
 * @property {number} deleted cookies removed (deleteCookies, expiry, eviction, a deleting Set-Cookie)
 * @property {number} headers Cookie headers built (getCookieHeader)
 */

/**
 * @typedef {object} Statistics A statistics answer: every user's counters since `since`.
 * @property {number} since Unix seconds the counters start from: the daemon's start or the last reset
 * @property {CacheCounters} cache
 * @property {UpstreamStatistics[]} upstreams
 * @property {CookieStatistics} cookies
 */

/**
 * @typedef {object} StatisticsReset A resetStatistics answer.
 * @property {number} since Unix seconds: statistics.since from now on
 */

/**
 * @typedef {object} Metrics A metrics answer.
 * @property {string} contentType text/plain; version=0.0.4; charset=utf-8
 * @property {string} text the exposition, each line ended by a newline
 */

/**
 * @typedef {object} Subscription A monitor answer.
 * @property {('all'|'own')} scope all: every user's events; own: the caller's
 * @property {number} queueLimit events that may wait before newer ones are dropped and counted
 */

/**
 * @typedef {object} OpenRPCDocument The daemon's OpenRPC document (rpc.discover).
 * @property {string} openrpc
 * @property {object} info the document's info object
 * @property {object[]} methods the method descriptions
 */

/** A connection to httpdnsd, shared by everything that uses it; reopened when the daemon closed it. */
class Client {
  /** options: `socket` (default: the rules of socketPath), `timeoutMs` per call (30 s),
   * `connectTimeoutMs` for each of client.fetch's connections to an origin (10 s), `ca` (extra
   * trusted certificates for client.fetch), `agentOptions` for its http/https agents, and
   * `onRejectedCookie({ url, host, setCookie, index, reason })`, called for each Set-Cookie
   * value of a fetch that the daemon's policy refused (without it, a process warning of type
   * HttpdnsCookieWarning, code HTTPDNS_COOKIE_REJECTED, names the cookie and the reason). */
  constructor(options = {}) {
    this.socketPath = socketPath(options.socket);
    this.onRejectedCookie = options.onRejectedCookie;
    this.timeoutMs = options.timeoutMs || DEFAULT_TIMEOUT_MS;
    this.connectTimeoutMs = options.connectTimeoutMs || DEFAULT_CONNECT_TIMEOUT_MS;
    this.connection = null;
    this.closed = false;
    const agentOptions = { ...(options.agentOptions || {}) };
    this.httpAgent = ipDirectAgent(http.Agent, agentOptions);
    this.httpsAgent = ipDirectAgent(https.Agent, options.ca ? { ...agentOptions, ca: options.ca } : agentOptions);
    this.lookup = this.lookup.bind(this);
    this.fetch = this.fetch.bind(this);
  }

  connected() {
    if (this.closed) throw new ConnectionError(this.socketPath, 'the client is closed', { code: 'ERR_HTTPDNS_CLIENT_CLOSED' });
    if (!this.connection || this.connection.closed) this.connection = new Connection(this.socketPath);
    return this.connection;
  }

  /** Calls `method` with `params` (an object, by name) and resolves to its result; rejects with
   * RPCError for an error answer, ConnectionError when the daemon is unreachable.
   * options: `signal` (AbortSignal), `timeoutMs`. */
  async call(method, params, options = {}) {
    const timeoutMs = options.timeoutMs || this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      let response;
      try {
        response = await this.connected().send(method, params, { signal: options.signal, timeoutMs });
      } catch (error) {
        if (error instanceof ConnectionError && error.retryable && attempt === 0) continue;
        throw error;
      }
      if (response.error) throw new RPCError(method, response.error);
      if (!('result' in response)) throw new ConnectionError(this.socketPath, `${method}: an answer without a result`, { code: 'ERR_HTTPDNS_PROTOCOL' });
      return response.result;
    }
  }

  /** Closes the connection and the agents' idle sockets. */
  close() {
    this.closed = true;
    if (this.connection) this.connection.close();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  static cookieParams(url, host, extra) {
    const params = { url: String(url) };
    const name = host || urlHost(url);
    if (name) params.host = name;
    for (const [key, value] of Object.entries(extra)) if (value !== undefined && value !== null) params[key] = value;
    return params;
  }

  /** resolve: { host, ipv4, ipv6, ttl, ttls?, stale, source, upstream? }.
   * @returns {Promise<Resolution>} */
  resolve(host, { family, allowStale, timeoutMs, signal } = {}) {
    const params = { host };
    if (family) params.family = family;
    if (allowStale !== undefined) params.allowStale = allowStale;
    if (timeoutMs) params.timeoutMs = timeoutMs;
    return this.call('resolve', params, { signal, timeoutMs: timeoutMs ? Math.max(this.timeoutMs, timeoutMs + 5000) : undefined });
  }

  /** reverse: { address, hosts, ttl, names: [{ host, ttl, rememberedFor }] }.
   * @returns {Promise<ReverseAnswer>} */
  reverse(address, { signal } = {}) {
    return this.call('reverse', { address }, { signal });
  }

  /** forget: drops this user's own memory of `address` (an IP literal), every name it was
   * handed out for; the cache, the jar and other users' memory stay. Resolves to how many
   * addresses were forgotten (0 or 1). Anything but a non-empty string is a TypeError
   * (code ERR_INVALID_ARG_TYPE) before the daemon is asked; forgetAll forgets every address.
   * @returns {Promise<number>} ForgottenAddresses' forgotten */
  async forget(address, { signal } = {}) {
    if (typeof address !== 'string' || address === '') {
      throw Object.assign(new TypeError(`forget: the address must be a non-empty string (an IP literal), not ${
        typeof address === 'string' ? "''" : typeof address}; forgetAll() forgets every address`),
      { code: 'ERR_INVALID_ARG_TYPE' });
    }
    return (await this.call('forget', { address }, { signal })).forgotten;
  }

  /** forget with all: true: drops every address of this user's own memory; resolves to how many there were.
   * @returns {Promise<number>} ForgottenAddresses' forgotten */
  async forgetAll({ signal } = {}) {
    return (await this.call('forget', { all: true }, { signal })).forgotten;
  }

  /** getCookieHeader: the Cookie header value for `url` ('' for none). `host` names the real host
   * of an IP-literal URL; by default the URL's own host name is sent, so the jar never guesses.
   * @returns {Promise<string>} CookieHeader's header */
  async getCookieHeader(url, { host, forScript, siteForCookies, topLevelNavigation, signal } = {}) {
    const params = Client.cookieParams(url, host, { forScript, siteForCookies, topLevelNavigation });
    return (await this.call('getCookieHeader', params, { signal })).header;
  }

  /** handleSetCookie: stores Set-Cookie values (a string or an array) for `url`: { host, stored, rejected }.
   * @returns {Promise<StoredCookies>} */
  handleSetCookie(url, setCookie, { host, signal } = {}) {
    const values = typeof setCookie === 'string' ? [setCookie] : [...setCookie];
    return this.call('handleSetCookie', Client.cookieParams(url, host, { setCookie: values }), { signal });
  }

  /** deleteCookies: exactly one of `url`, `domain`, `all: true`; `name` narrows it. Resolves to the count.
   * @returns {Promise<number>} DeletedCookies' deleted */
  async deleteCookies({ url, host, domain, all, name, signal } = {}) {
    const params = url !== undefined ? Client.cookieParams(url, host, {}) : {};
    if (domain !== undefined) params.domain = domain;
    if (all) params.all = true;
    if (name !== undefined) params.name = name;
    return (await this.call('deleteCookies', params, { signal })).deleted;
  }

  /** listCookies: the cookies of this user's jar (of `domain` and its subdomains when given).
   * @returns {Promise<Cookie[]>} */
  async listCookies({ domain, signal } = {}) {
    return (await this.call('listCookies', domain !== undefined ? { domain } : undefined, { signal })).cookies;
  }

  /** importCookies: adds the cookies of Netscape cookies.txt text; resolves to the count.
   * @returns {Promise<number>} ImportedCookies' imported */
  async importCookies(data, { format, signal } = {}) {
    return (await this.call('importCookies', format ? { data, format } : { data }, { signal })).imported;
  }

  /** exportCookies: this user's jar as Netscape cookies.txt text (`call('exportCookies')` for
   * ExportedCookies' leftOut too).
   * @returns {Promise<string>} */
  async exportCookies({ format, signal } = {}) {
    return (await this.call('exportCookies', format ? { format } : undefined, { signal })).data;
  }

  /** flushCache (root and the daemon's user only): resolves to the number of entries dropped.
   * @returns {Promise<number>} FlushedCache's flushed */
  async flushCache(host, { signal } = {}) {
    return (await this.call('flushCache', host ? { host } : undefined, { signal })).flushed;
  }

  /** status: { version, uptime, cache, cookies, upstreams, fleet?, network? }.
   * @returns {Promise<Status>} */
  status({ signal } = {}) {
    return this.call('status', undefined, { signal });
  }

  /** showCache: the cache entries this user may see ({ host, family, addresses, ttl, stale,
   * upstream }), by host, then family.
   * @returns {Promise<CacheEntry[]>} */
  async showCache({ signal } = {}) {
    return (await this.call('showCache', undefined, { signal })).entries;
  }

  /** statistics: { since, cache, upstreams, cookies }, every user's counters since `since`.
   * @returns {Promise<Statistics>} */
  statistics({ signal } = {}) {
    return this.call('statistics', undefined, { signal });
  }

  /** resetStatistics (root and the daemon's user only): resolves to the new `since` (Unix seconds).
   * @returns {Promise<number>} StatisticsReset's since */
  async resetStatistics({ signal } = {}) {
    return (await this.call('resetStatistics', undefined, { signal })).since;
  }

  /** metrics: the Prometheus text exposition (format 0.0.4).
   * @returns {Promise<string>} Metrics' text */
  async metrics({ signal } = {}) {
    return (await this.call('metrics', undefined, { signal })).text;
  }

  /** monitor: subscribes on a connection of its own and resolves to a Monitor, an async
   * iterator of the monitorEvent notifications' params ({ time, type, uid, ... }); events caused
   * after it resolves are delivered. Leaving a `for await` loop, or close(), closes the
   * connection. */
  async monitor({ signal } = {}) {
    const connection = new Connection(this.socketPath);
    const monitor = new Monitor(connection);
    try {
      const response = await connection.send('monitor', undefined, { signal, timeoutMs: this.timeoutMs });
      if (response.error) throw new RPCError('monitor', response.error);
      /** @type {Subscription} */
      const result = response.result || {};
      monitor.scope = result.scope;
      monitor.queueLimit = result.queueLimit;
    } catch (error) {
      monitor.close();
      throw error;
    }
    connection.stream.ref(); // a subscription keeps the process alive until it is closed
    return monitor;
  }

  /** rpc.discover: the daemon's OpenRPC document.
   * @returns {Promise<OpenRPCDocument>} */
  discover({ signal } = {}) {
    return this.call('rpc.discover', undefined, { signal });
  }

  /** A dns.lookup for the `lookup` option of net, http and https: answers from the daemon.
   * A name the daemon reports as not existing is ENOTFOUND, other failures EAI_AGAIN, with the
   * daemon's error as `cause`. */
  lookup(hostname, options, callback) {
    if (typeof options === 'function') {
      callback = options;
      options = {};
    }
    const family = familyOf(options);
    const all = Boolean(options && options.all);
    const literal = net.isIP(hostname);
    const answer = (list) => {
      if (all) callback(null, list);
      else callback(null, list[0].address, list[0].family);
    };
    if (literal) {
      process.nextTick(answer, [{ address: hostname, family: literal }]);
      return;
    }
    this.resolve(hostname, { family: family === 4 ? 'ipv4' : family === 6 ? 'ipv6' : undefined }).then(
      (result) => {
        const list = [...result.ipv4.map((address) => ({ address, family: 4 })),
          ...result.ipv6.map((address) => ({ address, family: 6 }))];
        if (list.length === 0) throw new RPCError('resolve', { code: -32001, message: `Host not found: ${hostname}`, data: { name: 'HostNotFound' } });
        answer(list);
      }).catch((cause) => {
      const code = cause instanceof RPCError && cause.rpcCode === -32001 ? 'ENOTFOUND' : 'EAI_AGAIN';
      // As dns.lookup words it; the daemon's error is the cause.
      const error = new Error(`getaddrinfo ${code} ${hostname}`, { cause });
      Object.assign(error, { code, errno: code, syscall: 'getaddrinfo', hostname });
      callback(error);
    });
  }

  /** fetch(url, init) over http/https, IP-direct to the daemon's addresses for each hop's host
   * (tried in turn; TLS SNI, the certificate check and Host keep the name), following redirects
   * itself (the fetch standard's rules: 303, and 301/302 after POST, become a GET without the
   * body; at most 20) with the daemon's Cookie header on every hop and every hop's Set-Cookie
   * stored through the daemon. Resolves to a WHATWG Response with a streaming body.
   * init: method, headers, body, redirect ('follow', 'manual', 'error'), signal; and, beyond
   * the standard, `host` (the host name of an IP-literal URL, as a Host header also names it:
   * connect to the IP, check TLS for the name, key cookies by it), `onRejectedCookie` (see
   * Client), `agent` (an agent of your own, such as a proxy's: no IP-direct connection, the
   * daemon's cookies still) and `ca`. A redirect to another host drops the Host header and the
   * name: that hop is its own URL's host. A stale answer (resolve's stale: true) whose every
   * address refuses or times out (connectTimeoutMs) is asked again with allowStale: false, and
   * the request goes to the fresh addresses. */
  async fetch(input, init = {}) {
    let url = new URL(String(input && input.url ? input.url : input));
    checkScheme(url);
    let method = (init.method || 'GET').toUpperCase();
    const headers = new Headers(init.headers);
    let hostHeader = headers.get('host');
    headers.delete('host');
    let name = hostName(url, init.host, hostHeader);
    let body = await requestBody(init.body, headers);
    const redirect = init.redirect || 'follow';
    const signal = init.signal;
    let redirected = false;
    for (let hop = 0; ; hop++) {
      if (signal && signal.aborted) throw signal.reason;
      const hopHeaders = new Headers(headers);
      if (hostHeader) hopHeaders.set('host', hostHeader);
      else if (name && !urlHost(url.href)) hopHeaders.set('host', url.port ? `${name}:${url.port}` : name);
      let jarHeader;
      try {
        jarHeader = await this.getCookieHeader(url.href, { host: name, signal });
      } catch (error) {
        if (error instanceof RPCError && error.reason === 'ambiguous-address') {
          throw Object.assign(fetchError(`${url.hostname} is an address of ${error.candidates.join(', ')}: ` +
            'name the host with init.host or a Host header', 'ERR_HTTPDNS_AMBIGUOUS_ADDRESS', error),
          { address: url.hostname, candidates: error.candidates });
        }
        throw error;
      }
      if (jarHeader) {
        const own = hopHeaders.get('cookie');
        hopHeaders.set('cookie', own ? `${jarHeader}; ${own}` : jarHeader);
      }
      const response = await this.request(url, name, method, hopHeaders, body, init);
      const setCookie = response.headers['set-cookie'];
      if (setCookie && setCookie.length) {
        const stored = await this.handleSetCookie(url.href, setCookie, { host: name, signal });
        for (const { index, reason } of stored.rejected || []) {
          this.reportRejectedCookie({ url: url.href, host: stored.host, setCookie: setCookie[index], index, reason },
            init.onRejectedCookie);
        }
      }
      const status = response.statusCode;
      const location = response.headers.location;
      if (![301, 302, 303, 307, 308].includes(status) || !location || redirect === 'manual') {
        return toResponse(response, url, method, redirected);
      }
      response.resume();
      if (redirect === 'error') throw fetchError(`${url.href} redirected (redirect: 'error')`, 'ERR_HTTPDNS_REDIRECTED');
      if (hop >= MAX_REDIRECTS) throw fetchError(`more than ${MAX_REDIRECTS} redirects`, 'ERR_HTTPDNS_TOO_MANY_REDIRECTS');
      const next = new URL(location, url);
      checkScheme(next);
      if ((status === 303 && method !== 'GET' && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST')) {
        method = 'GET';
        body = null;
        for (const header of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location']) {
          headers.delete(header);
        }
      } else if (body && body.stream) {
        throw fetchError('a streamed body cannot be sent again on a redirect', 'ERR_HTTPDNS_BODY_NOT_REPLAYABLE');
      }
      if (next.origin !== url.origin) headers.delete('authorization');
      if (next.host !== url.host) {
        // Another host: the caller's Host header and name were about the first one only.
        hostHeader = null;
        name = urlHost(next.href);
      }
      url = next;
      redirected = true;
    }
  }

  /** A cookie the daemon refused: to the hook of init or of the client, else a process warning. */
  reportRejectedCookie(refusal, hook) {
    const report = hook || this.onRejectedCookie;
    if (report) {
      report(refusal);
      return;
    }
    const cookieName = String(refusal.setCookie).split(/[=;]/, 1)[0].trim();
    process.emitWarning(`httpdnsd refused the cookie ${cookieName} from ${refusal.url}: ${refusal.reason}`,
      { type: 'HttpdnsCookieWarning', code: 'HTTPDNS_COOKIE_REJECTED' });
  }

  async request(url, name, method, headers, body, init) {
    const secure = url.protocol === 'https:';
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const options = {
      method,
      host: hostname,
      port: url.port || (secure ? 443 : 80),
      path: url.pathname + url.search,
      headers: Object.fromEntries(headers),
      signal: init.signal,
    };
    if (body && body.bytes) options.headers['content-length'] = String(body.bytes.length);
    if (init.ca) options.ca = init.ca;
    if (init.agent) return this.send({ ...options, agent: init.agent }, secure, body);
    options.agent = secure ? this.httpsAgent : this.httpAgent;
    options.autoSelectFamily = true; // every address in turn (Node >= 18.13)
    if (secure && name) options.servername = name;
    const direct = (addresses) => this.send({
      ...options,
      httpdnsAddresses: addresses.map((a) => a.address).join(','),
      lookup: (_name, lookupOptions, callback) => {
        if (lookupOptions && lookupOptions.all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      },
    }, secure, body);
    if (net.isIP(hostname)) return direct([{ address: hostname, family: net.isIP(hostname) }]);
    const answer = await this.addresses(hostname, { signal: init.signal });
    try {
      return await direct(answer.list);
    } catch (error) {
      // A stale answer whose every address refused or timed out: the request never left, so
      // it goes once more to the fresh answer (the daemon waits for its upstream for it).
      if (!answer.stale || !error.beforeConnect) throw error;
      const fresh = await this.addresses(hostname, { signal: init.signal, allowStale: false });
      if (fresh.list.map((a) => a.address).join(',') === answer.list.map((a) => a.address).join(',')) throw error;
      return direct(fresh.list);
    }
  }

  /** One HTTP request; an error before the connection was made (refused, unreachable, the
   * connect timeout) is marked `beforeConnect`, and a streamed body is read only once connected,
   * so such a request can be sent again. */
  send(options, secure, body) {
    return new Promise((resolve, reject) => {
      const request = (secure ? https : http).request(options, resolve);
      let connected = false;
      let timer;
      request.on('error', (error) => {
        clearTimeout(timer);
        if (!connected && CONNECT_FAILURES.has(error.code)) error.beforeConnect = true;
        reject(error);
      });
      const start = () => {
        connected = true;
        clearTimeout(timer);
        if (body && body.stream) {
          body.stream.on('error', (error) => request.destroy(error));
          body.stream.pipe(request);
        }
      };
      request.on('socket', (socket) => {
        if (!socket.connecting) return start();
        socket.once('connect', start);
        timer = setTimeout(() => request.destroy(Object.assign(
          new Error(`connect ETIMEDOUT ${options.host}:${options.port} (no connection within ${this.connectTimeoutMs} ms)`),
          { code: 'ETIMEDOUT', syscall: 'connect' })), this.connectTimeoutMs);
      });
      if (!body || !body.stream) request.end(body && body.bytes);
    });
  }

  /** The daemon's addresses for `hostname` ({ list, stale }); its errors (RPCError,
   * ConnectionError) as they are. */
  async addresses(hostname, { signal, allowStale } = {}) {
    const answer = await this.resolve(hostname, { signal, allowStale });
    const list = [...answer.ipv4.map((address) => ({ address, family: 4 })),
      ...answer.ipv6.map((address) => ({ address, family: 6 }))];
    if (list.length === 0) throw fetchError(`httpdnsd has no address for ${hostname}`, 'ERR_HTTPDNS_NO_ADDRESS');
    return { list, stale: answer.stale === true };
  }
}

/** A TypeError of client.fetch (as the fetch standard's errors are) with a Node-style `code`. */
function fetchError(message, code, cause) {
  return Object.assign(new TypeError(`client.fetch: ${message}`, cause ? { cause } : undefined), { code });
}

/** Only http: and https: are fetched; anything else is said to be so before the daemon is asked. */
function checkScheme(url) {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw fetchError(`the scheme ${url.protocol} is not supported (only http: and https:)`, 'ERR_INVALID_PROTOCOL');
  }
}

/** The host name a fetch of `url` is for: the URL's own, else `init.host` or the Host header's
 * (without its port) for an IP literal, else undefined (the daemon's address memory decides). */
function hostName(url, explicit, hostHeader) {
  const own = urlHost(url.href);
  let fromHeader;
  try {
    if (hostHeader && /[@/\\?#\s]/.test(hostHeader)) throw new Error('not a host');
    fromHeader = hostHeader ? new URL(`http://${hostHeader}`).hostname : undefined;
  } catch {
    throw fetchError(`the Host header ${JSON.stringify(hostHeader)} is not a host`, 'ERR_INVALID_ARG_VALUE');
  }
  const given = explicit ? String(explicit).toLowerCase() : fromHeader;
  if (explicit && fromHeader && given !== fromHeader) {
    throw fetchError(`init.host ${given} and the Host header ${fromHeader} differ`, 'ERR_INVALID_ARG_VALUE');
  }
  if (own) {
    if (explicit && given !== own) {
      throw fetchError(`init.host ${given} is not the URL's host ${own}`, 'ERR_INVALID_ARG_VALUE');
    }
    return own;
  }
  return given;
}

function toResponse(incoming, url, method, redirected) {
  const headers = new Headers();
  for (let i = 0; i < incoming.rawHeaders.length; i += 2) headers.append(incoming.rawHeaders[i], incoming.rawHeaders[i + 1]);
  const status = incoming.statusCode;
  const empty = isNullBodyStatus(status) || method === 'HEAD';
  if (empty) incoming.resume();
  const response = new Response(empty ? null : Readable.toWeb(incoming), {
    status, statusText: incoming.statusMessage, headers,
  });
  Object.defineProperty(response, 'url', { value: url.href });
  Object.defineProperty(response, 'redirected', { value: redirected });
  return response;
}

/** A client on the socket of `options.socket` or httpdnsd-rpc(7)'s rules (see Client). */
function connect(options = {}) {
  return new Client(options);
}

module.exports = { connect, Client, Monitor, RPCError, ConnectionError, socketPath, urlHost, SYSTEM_SOCKET, Connection };
