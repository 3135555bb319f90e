'use strict';
// node --test: the client against a fake daemon, and (with HTTPDNS_FIXTURE and HTTPDNSD_SOCKET,
// as .ci/test runs it) against the daemon and the origins of clients/testing/fixture.py.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const events = require('node:events');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { Readable } = require('node:stream');
const httpdns = require('..');

// Every test has a deadline: a hang is a failure, not a stuck run.
const bounded = { timeout: 60000 };

function temporaryDirectory() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'httpdns-node-'));
}

test('socket rules', bounded, () => {
  const saved = { ...process.env };
  try {
    const dir = temporaryDirectory();
    delete process.env.HTTPDNSD_SOCKET;
    process.env.XDG_RUNTIME_DIR = dir;
    assert.equal(httpdns.socketPath(), httpdns.SYSTEM_SOCKET);
    fs.mkdirSync(path.join(dir, 'httpdnsd'));
    fs.writeFileSync(path.join(dir, 'httpdnsd', 'httpdnsd.sock'), '');
    assert.equal(httpdns.socketPath(), path.join(dir, 'httpdnsd', 'httpdnsd.sock'));
    process.env.HTTPDNSD_SOCKET = '/tmp/env.sock';
    assert.equal(httpdns.socketPath(), '/tmp/env.sock');
    assert.equal(httpdns.socketPath('/tmp/explicit.sock'), '/tmp/explicit.sock');
  } finally {
    process.env = saved;
  }
});

test('urlHost is the client\'s own parse', bounded, () => {
  assert.equal(httpdns.urlHost('https://App.Example.test:8443/x'), 'app.example.test');
  assert.equal(httpdns.urlHost('https://203.0.113.10/'), undefined);
  assert.equal(httpdns.urlHost('http://[2001:db8::1]/'), undefined);
});

/** A fake daemon: handler(socket, requests) where requests() resolves to the next request. */
async function fakeDaemon(handler) {
  const file = path.join(temporaryDirectory(), 'fake.sock');
  const state = { connections: 0 };
  const server = net.createServer((socket) => {
    state.connections++;
    let buffer = '';
    const waiting = [];
    const queued = [];
    socket.on('data', (chunk) => {
      buffer += chunk;
      let index;
      while ((index = buffer.indexOf('\n')) !== -1) {
        const request = JSON.parse(buffer.slice(0, index));
        buffer = buffer.slice(index + 1);
        if (waiting.length) waiting.shift()(request); else queued.push(request);
      }
    });
    const next = () => (queued.length ? Promise.resolve(queued.shift()) : new Promise((resolve) => waiting.push(resolve)));
    const send = (message) => socket.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
    handler({ socket, next, send });
  });
  await new Promise((resolve) => server.listen(file, resolve));
  return { file, state, close: () => server.close() };
}

test('answers out of order reach their callers', bounded, async () => {
  const fake = await fakeDaemon(async ({ next, send }) => {
    const first = await next();
    const second = await next();
    send({ id: second.id, result: second.params.n });
    send({ id: first.id, result: first.params.n });
  });
  const client = httpdns.connect({ socket: fake.file });
  assert.deepEqual(await Promise.all([client.call('echo', { n: 1 }), client.call('echo', { n: 2 })]), [1, 2]);
  client.close();
  fake.close();
});

test('notifications are emitted by the connection; answers still route', bounded, async () => {
  const fake = await fakeDaemon(async ({ next, send }) => {
    const request = await next();
    send({ method: 'event', params: { n: 1 } });
    send({ id: request.id, result: true });
    send({ method: 'event', params: { n: 2 } });
  });
  const connection = new httpdns.Connection(fake.file);
  const events = [];
  const both = new Promise((resolve) => connection.on('notification', (n) => {
    events.push(n.params.n);
    if (events.length === 2) resolve();
  }));
  assert.deepEqual(await connection.send('subscribe', undefined, { timeoutMs: 30000 }), { jsonrpc: '2.0', id: 1, result: true });
  await both;
  assert.deepEqual(events, [1, 2]);
  connection.close();
  fake.close();
});

test('error data is carried through whatever it holds', bounded, async () => {
  const data = { name: 'InvalidParams', field: 'url', reason: 'ambiguous-url', hosts: ['a.example', 'b.example'] };
  const fake = await fakeDaemon(async ({ next, send }) => {
    const request = await next();
    send({ id: request.id, error: { code: -32602, message: 'Invalid params', data } });
  });
  const client = httpdns.connect({ socket: fake.file });
  await assert.rejects(client.getCookieHeader('https://a.example/\\@b.example/'), (error) => {
    assert.ok(error instanceof httpdns.RPCError);
    assert.equal(error.code, 'ERR_HTTPDNS_INVALID_PARAMS');
    assert.equal(error.rpcCode, -32602);
    assert.equal(error.message, 'httpdnsd: getCookieHeader: Invalid params (field=url, reason=ambiguous-url, hosts=a.example,b.example)');
    assert.equal(error.data.name, 'InvalidParams');
    assert.equal(error.reason, 'ambiguous-url');
    assert.equal(error.field, 'url');
    assert.deepEqual(error.data, data);
    assert.equal(error.method, 'getCookieHeader');
    return true;
  });
  client.close();
  fake.close();
});

test('a connection closed while idle is opened again', bounded, async () => {
  const fake = await fakeDaemon(async ({ socket, next, send }) => {
    const request = await next();
    send({ id: request.id, result: 'ok' });
    socket.end(); // as the daemon does after IdleTimeout=
  });
  const client = httpdns.connect({ socket: fake.file });
  assert.equal(await client.call('status'), 'ok');
  await new Promise((resolve) => setTimeout(resolve, 50)); // lets the close arrive first; either order must work
  assert.equal(await client.call('status'), 'ok');
  assert.equal(fake.state.connections, 2);
  client.close();
  fake.close();
});

test('an AbortSignal stops the wait', bounded, async () => {
  const fake = await fakeDaemon(async () => {});
  const client = httpdns.connect({ socket: fake.file });
  const controller = new AbortController();
  const call = client.call('status', undefined, { signal: controller.signal });
  controller.abort();
  await assert.rejects(call, { name: 'AbortError' });
  client.close();
  fake.close();
});

test('an unreachable daemon is a ConnectionError with the system error\'s code, said once', bounded, async () => {
  const missing = path.join(temporaryDirectory(), 'nobody.sock');
  const client = httpdns.connect({ socket: missing });
  const expected = { name: 'ConnectionError', code: 'ENOENT', syscall: 'connect', message: `httpdnsd at ${missing}: connect ENOENT` };
  await assert.rejects(client.status(), expected);
  await assert.rejects(client.fetch('https://node.example.test/'), expected); // the cookie lookup failed: nothing is sent
  client.close();
  // A socket file nobody listens on (bound, never listening).
  const refusing = path.join(temporaryDirectory(), 'refusing.sock');
  execFileSync('/usr/bin/python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', refusing]);
  const refused = httpdns.connect({ socket: refusing });
  await assert.rejects(refused.resolve('node.example.test'),
    { name: 'ConnectionError', code: 'ECONNREFUSED', message: `httpdnsd at ${refusing}: connect ECONNREFUSED` });
  await assert.rejects(new Promise((resolve, reject) => refused.lookup('node.example.test', (e) => (e ? reject(e) : resolve()))),
    (error) => error.code === 'EAI_AGAIN' && error.message === 'getaddrinfo EAI_AGAIN node.example.test' && error.cause.code === 'ECONNREFUSED');
  refused.close();
});

test('forget refuses anything but a non-empty address string, before asking the daemon', bounded, async () => {
  // No daemon listens here: a call that reached the socket would be a ConnectionError instead.
  const client = httpdns.connect({ socket: path.join(os.tmpdir(), `httpdns-no-daemon-${process.pid}.sock`) });
  try {
    for (const address of [undefined, '', 2130706434, { all: true }]) {
      await assert.rejects(client.forget(address), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: /^forget: / });
    }
  } finally {
    client.close();
  }
});

test('fetch says an unsupported scheme is one, before asking the daemon', bounded, async () => {
  const client = httpdns.connect({ socket: path.join(temporaryDirectory(), 'nobody.sock') });
  await assert.rejects(client.fetch('ftp://node.example.test/file'),
    { name: 'TypeError', code: 'ERR_INVALID_PROTOCOL', message: 'client.fetch: the scheme ftp: is not supported (only http: and https:)' });
  // A Host header that is no host name is the caller's error too, not the jar's to read.
  await assert.rejects(client.fetch('https://127.0.0.3/', { headers: { host: 'evil@app.example.test' } }),
    { code: 'ERR_INVALID_ARG_VALUE', message: 'client.fetch: the Host header "evil@app.example.test" is not a host' });
  client.close();
});

test('the ESM entry point exports the same objects', bounded, async () => {
  const esm = await import('../index.mjs');
  assert.equal(esm.connect, httpdns.connect);
  assert.equal(esm.RPCError, httpdns.RPCError);
  assert.equal(esm.default, httpdns);
});

/** npm without a registry: a cache of its own, nothing asked of the network. */
function npmEnvironment(dir) {
  return { ...process.env, npm_config_cache: path.join(dir, 'cache'), npm_config_update_notifier: 'false' };
}

test('npm pack builds the package, and npm install --offline installs it; it loads from CommonJS and ESM', bounded, () => {
  const dir = temporaryDirectory();
  const npmEnv = npmEnvironment(dir);
  const tarball = execFileSync('npm', ['pack', '--offline', '--pack-destination', dir, path.join(__dirname, '..')],
    { env: npmEnv, encoding: 'utf8' }).trim().split('\n').pop();
  assert.match(tarball, /^httpdns-\d+\.\d+\.\d+\.tgz$/);
  const project = path.join(dir, 'project');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), '{"name":"consumer","private":true}');
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(dir, tarball)],
    { cwd: project, env: npmEnv, encoding: 'utf8' });
  assert.equal(JSON.parse(fs.readFileSync(path.join(project, 'package.json'), 'utf8')).dependencies.httpdns, `file:../${tarball}`);
  const loaded = execFileSync(process.execPath, ['-e', 'console.log(typeof require("httpdns").connect)'], { cwd: project, encoding: 'utf8' });
  assert.equal(loaded.trim(), 'function');
  fs.writeFileSync(path.join(project, 'probe.mjs'), 'import { connect } from "httpdns"; console.log(typeof connect);');
  assert.equal(execFileSync(process.execPath, ['probe.mjs'], { cwd: project, encoding: 'utf8' }).trim(), 'function');
});

// -- the answers' typedefs ------------------------------------------------------------------------

const documentPath = path.join(__dirname, '..', '..', '..', 'rpc-schema', 'httpdnsd.openrpc.json');

/** index.js's JSDoc typedefs: name -> member -> { type, optional }. */
function typedefs() {
  const source = fs.readFileSync(path.join(__dirname, '..', 'index.js'), 'utf8');
  const found = {};
  for (const [block] of source.matchAll(/\/\*\*(?:(?!\*\/)[\s\S])*@typedef(?:(?!\*\/)[\s\S])*\*\//g)) {
    const members = {};
    for (const [, type, open, name] of block.matchAll(/@property \{(.+?)\} (\[?)(\w+)/g)) {
      members[name] = { type, optional: open === '[' };
    }
    found[/@typedef \{object\} (\w+)/.exec(block)[1]] = members;
  }
  return found;
}

// The typedef of each object in the document's results, by where it is (`[]`: an array's items).
const typedefOf = {
  resolve: 'Resolution', 'resolve.ttls': 'FamilyTTLs', reverse: 'ReverseAnswer', 'reverse.names[]': 'ReverseName',
  forget: 'ForgottenAddresses', getCookieHeader: 'CookieHeader',
  handleSetCookie: 'StoredCookies', 'handleSetCookie.rejected[]': 'RejectedCookie', deleteCookies: 'DeletedCookies',
  listCookies: 'CookieList', 'listCookies.cookies[]': 'Cookie', importCookies: 'ImportedCookies',
  exportCookies: 'ExportedCookies', 'exportCookies.leftOut[]': 'LeftOutCookie', flushCache: 'FlushedCache',
  status: 'Status', 'status.cache': 'CacheCounters', 'status.cookies': 'CookieCount', 'status.upstreams[]': 'UpstreamStatus',
  'status.upstreams[].serviceAddresses': 'ServiceAddresses', 'status.upstreams[].serviceAddresses.addresses[]': 'ServiceAddress',
  'status.fleet': 'FleetStatus', 'status.network': 'NetworkStatus', showCache: 'CacheListing', 'showCache.entries[]': 'CacheEntry',
  statistics: 'Statistics', 'statistics.cache': 'CacheCounters', 'statistics.upstreams[]': 'UpstreamStatistics',
  'statistics.cookies': 'CookieStatistics', resetStatistics: 'StatisticsReset', metrics: 'Metrics', monitor: 'Subscription',
  'rpc.discover': 'OpenRPCDocument',
};

/** The JSDoc type a schema's member must have: enums as unions of their values, objects as their typedef. */
function expectedType(schema, where) {
  const types = [].concat(schema.type);
  const main = types.find((type) => type !== 'null');
  let type = { string: 'string', integer: 'number', number: 'number', boolean: 'boolean' }[main];
  if (schema.enum) type = `(${schema.enum.map((value) => `'${value}'`).join('|')})`;
  if (main === 'object') type = typedefOf[where] || 'object';
  if (main === 'array') type = `${schema.items ? expectedType(schema.items, where + '[]') : 'object'}[]`;
  return types.includes('null') ? `(${type}|null)` : type;
}

test('the answer typedefs name every member of every result of the OpenRPC document, typed as it says', bounded, () => {
  const document = JSON.parse(fs.readFileSync(documentPath, 'utf8'));
  const found = typedefs();
  const checked = new Set();
  const check = (schema, where) => {
    const properties = schema.properties || {};
    if (Object.keys(properties).length === 0) return; // rpc.discover's info: the document's own
    const name = typedefOf[where];
    assert.ok(name, `${where}: an object without a typedef`);
    const members = found[name];
    assert.ok(members, `no typedef ${name} (${where})`);
    checked.add(where);
    assert.deepEqual(Object.keys(members).sort(), Object.keys(properties).sort(), `${name}: members of ${where}`);
    for (const [member, { type, optional }] of Object.entries(members)) {
      const label = `${name}.${member} (${where})`;
      assert.equal(optional, !(schema.required || []).includes(member), `${label}: optional`);
      assert.equal(type, expectedType(properties[member], `${where}.${member}`), `${label}: type`);
    }
    for (const [member, value] of Object.entries(properties)) {
      if (value.type === 'object' || value.properties) check(value, `${where}.${member}`);
      if (value.items) check(value.items, `${where}.${member}[]`);
    }
  };
  for (const method of document.methods) check(method.result.schema, method.name);
  assert.deepEqual([...checked].sort(), Object.keys(typedefOf).sort(), 'every typedef is of the document');
  assert.ok(checked.has('status.cache') && checked.has('status.fleet'));
  // The document's examples have no member a typedef leaves out.
  const walk = (value, where) => {
    if (Array.isArray(value)) return value.forEach((item) => walk(item, where + '[]'));
    if (value === null || typeof value !== 'object' || !typedefOf[where]) return;
    for (const [key, member] of Object.entries(value)) {
      assert.ok(key in found[typedefOf[where]], `${where}.${key} of an example`);
      walk(member, `${where}.${key}`);
    }
  };
  for (const method of document.methods) {
    for (const example of method.examples || []) if (example.result) walk(example.result.value, method.name);
  }
});

// -- against the daemon ------------------------------------------------------------------------

const fixturePath = process.env.HTTPDNS_FIXTURE;
const daemonSocket = process.env.HTTPDNSD_SOCKET;
const live = { ...bounded, skip: !fixturePath || !daemonSocket ? 'needs HTTPDNS_FIXTURE and HTTPDNSD_SOCKET' : false };
const world = live.skip ? {} : JSON.parse(fs.readFileSync(fixturePath, 'utf8'));
const url = (host, pathname, scheme = 'https') => `${scheme}://${host}:${scheme === 'https' ? world.httpsPort : world.httpPort}${pathname}`;
const token = (name) => `/node-${name.replace(/\W+/g, '-')}-${Date.now()}`;
const recordsWith = (marker) => fs.readFileSync(world.records, 'utf8').split('\n').filter(Boolean)
  .map((line) => JSON.parse(line)).filter((entry) => entry.path.includes(marker));

async function move(client, host, addresses) {
  const answers = JSON.parse(fs.readFileSync(world.answers, 'utf8'));
  answers[host] = addresses;
  fs.writeFileSync(world.answers + '.tmp', JSON.stringify(answers));
  fs.renameSync(world.answers + '.tmp', world.answers);
  await client.flushCache(host);
}

async function liveClient() {
  const client = httpdns.connect({ socket: daemonSocket, ca: fs.readFileSync(world.ca) });
  await client.deleteCookies({ all: true });
  return client;
}

test('typed calls', live, async () => {
  const client = await liveClient();
  const answer = await client.resolve('login.example.test', { family: 'ipv4', timeoutMs: 5000 });
  assert.deepEqual(answer.ipv4, ['127.0.0.2']);
  assert.equal((await client.reverse('127.0.0.2')).hosts[0], 'login.example.test');
  const stored = await client.handleSetCookie('https://127.0.0.4/x', ['k=v; Path=/', 't=1; Domain=com'], { host: 'node.example.test' });
  assert.deepEqual(stored, { host: 'node.example.test', stored: 1, rejected: [{ index: 1, reason: 'public-suffix' }] });
  assert.equal(await client.getCookieHeader('https://node.example.test/'), 'k=v');
  const [cookie] = await client.listCookies({ domain: 'node.example.test' });
  assert.equal(cookie.hostOnly, true);
  const exported = await client.exportCookies();
  assert.equal(await client.deleteCookies({ url: 'https://node.example.test/', name: 'k' }), 1);
  assert.equal(await client.importCookies(exported), 1);
  // family both: each family's TTL; the answer's ttl is the IPv4 one, the only family with addresses.
  const both = await client.resolve('login.example.test', { family: 'both' });
  assert.deepEqual(Object.keys(both.ttls).sort(), ['ipv4', 'ipv6']);
  assert.ok(both.ttl > 0 && both.ttls.ipv4 === both.ttl && Number.isInteger(both.ttls.ipv6), JSON.stringify(both));
  const status = await client.status();
  assert.equal(status.upstreams[0].kind, 'alibaba');
  // One service address: no serviceAddresses; the network member is always there.
  assert.equal(status.upstreams[0].serviceAddresses, undefined);
  assert.equal(typeof status.network.watching, 'boolean');
  assert.ok(Number.isInteger(status.network.changes) && status.network.changes >= 0);
  assert.ok(status.network.lastChange === null || Number.isInteger(status.network.lastChange));
  const typed = ['resolve', 'reverse', 'forget', 'getCookieHeader', 'handleSetCookie', 'deleteCookies', 'listCookies',
    'importCookies', 'exportCookies', 'flushCache', 'status', 'showCache', 'statistics', 'resetStatistics', 'metrics',
    'monitor', 'rpc.discover'];
  assert.deepEqual((await client.discover()).methods.map((method) => method.name).sort(), typed.sort(),
    'a typed call for every method');
  await assert.rejects(client.resolve('nowhere.example.test'),
    { code: 'ERR_HTTPDNS_HOST_NOT_FOUND', rpcCode: -32001, message: 'httpdnsd: resolve: Host not found: nowhere.example.test (reason=no-data)' });
  await assert.rejects(client.call('noSuchMethod'),
    { code: 'ERR_HTTPDNS_METHOD_NOT_FOUND', rpcCode: -32601, data: { name: 'MethodNotFound', method: 'noSuchMethod' },
      message: 'httpdnsd: noSuchMethod: Method not found: noSuchMethod' });
  // A scheme the daemon refuses is the client's to say, not a getCookieHeader error.
  await assert.rejects(client.fetch('ftp://node.example.test/'), { code: 'ERR_INVALID_PROTOCOL' });
  await assert.rejects(client.fetch(url('login.example.test', `/redirect?status=302&to=${encodeURIComponent('ftp://node.example.test/')}`)),
    { code: 'ERR_INVALID_PROTOCOL', message: 'client.fetch: the scheme ftp: is not supported (only http: and https:)' });
  client.close();
});

test('reverse names each host with its TTLs; forget drops an address, forgetAll every one', live, async () => {
  const client = await liveClient();
  try {
    // A name of its own on an address of its own, so that no other test's names share it.
    const answers = JSON.parse(fs.readFileSync(world.answers, 'utf8'));
    answers['forget-node.example.test'] = ['127.0.0.7'];
    fs.writeFileSync(world.answers + '.tmp', JSON.stringify(answers));
    fs.renameSync(world.answers + '.tmp', world.answers);
    await client.resolve('forget-node.example.test');
    const lookup = await client.reverse('127.0.0.7');
    assert.deepEqual(lookup.hosts, ['forget-node.example.test']);
    assert.deepEqual(Object.keys(lookup.names[0]).sort(), ['host', 'rememberedFor', 'ttl']);
    const [name] = lookup.names;
    assert.ok(lookup.names.length === 1 && name.host === lookup.hosts[0], JSON.stringify(lookup));
    assert.ok(name.ttl > 0 && name.ttl <= name.rememberedFor && name.ttl === lookup.ttl, JSON.stringify(lookup));

    assert.equal(await client.forget('127.0.0.7'), 1);
    const hostNotFound = { code: 'ERR_HTTPDNS_HOST_NOT_FOUND', rpcCode: -32001 };
    await assert.rejects(client.reverse('127.0.0.7'), hostNotFound);
    assert.equal(await client.forget('127.0.0.7'), 0);
    await assert.rejects(client.forget('not-an-address'),
      (error) => error.code === 'ERR_HTTPDNS_INVALID_PARAMS' && error.rpcCode === -32602 && error.data.field === 'address');

    await client.resolve('forget-node.example.test');
    await client.resolve('login.example.test');
    assert.ok(await client.forgetAll() >= 2);
    await assert.rejects(client.reverse('127.0.0.7'), hostNotFound);
    await assert.rejects(client.reverse('127.0.0.2'), hostNotFound);
    assert.equal(await client.forgetAll(), 0);
    // The cache stays: the name resolves from it, and is remembered again.
    assert.equal((await client.resolve('forget-node.example.test')).source, 'cache');
    assert.deepEqual((await client.reverse('127.0.0.7')).hosts, ['forget-node.example.test']);
  } finally {
    client.close();
  }
});

test('showCache, statistics, resetStatistics, metrics', live, async () => {
  const client = await liveClient();
  await client.resolve('login.example.test');
  const entries = await client.showCache();
  assert.ok(entries.some((e) => e.host === 'login.example.test' && e.family === 'ipv4' && e.addresses[0] === '127.0.0.2'),
    JSON.stringify(entries));
  const statistics = await client.statistics();
  assert.ok(statistics.cache.entries >= 1 && statistics.upstreams.length > 0, JSON.stringify(statistics));
  const since = await client.resetStatistics(); // the tests run as root, who may reset
  assert.ok(since >= statistics.since);
  assert.equal((await client.statistics()).since, since);
  const text = await client.metrics();
  assert.match(text, /^# TYPE /m);
  assert.ok(text.endsWith('\n'));
  client.close();
});

test('monitor sees a resolve made on another connection', live, async () => {
  const client = await liveClient();
  const monitor = await client.monitor();
  assert.equal(monitor.scope, 'all'); // the tests run as root
  const other = httpdns.connect({ socket: daemonSocket });
  await other.resolve('login.example.test');
  other.close();
  const deadline = AbortSignal.timeout(10000); // a bounded wait, not a speed target
  const found = new Promise((resolve, reject) => {
    deadline.addEventListener('abort', () => reject(new Error('no resolve event within 10 s')), { once: true });
    (async () => {
      for await (const event of monitor) {
        if (event.type === 'resolve' && event.host === 'login.example.test') return resolve(event);
      }
      reject(new Error('the subscription ended before the resolve event'));
    })();
  });
  try {
    const event = await found;
    assert.equal(event.uid, process.getuid());
    assert.equal(typeof event.time, 'number');
  } finally {
    monitor.close();
  }
  assert.deepEqual(await monitor.next(), { value: undefined, done: true });
  client.close();
});

test('lookup answers as dns.lookup does', live, async () => {
  const client = await liveClient();
  const one = await new Promise((resolve, reject) => client.lookup('app.example.test', {}, (e, address, family) => (e ? reject(e) : resolve([address, family]))));
  assert.deepEqual(one, ['127.0.0.3', 4]);
  const all = await new Promise((resolve, reject) => client.lookup('failover.example.test', { all: true }, (e, list) => (e ? reject(e) : resolve(list))));
  assert.deepEqual(all, [{ address: '127.0.0.9', family: 4 }, { address: '127.0.0.4', family: 4 }]);
  const missing = await new Promise((resolve) => client.lookup('nowhere.example.test', (e) => resolve(e)));
  assert.equal(missing.code, 'ENOTFOUND');
  assert.equal(missing.message, 'getaddrinfo ENOTFOUND nowhere.example.test');
  assert.equal(missing.cause.data.name, 'HostNotFound');
  // As the lookup of an https agent of the user's own.
  const https = require('node:https');
  const marker = token('agent');
  const body = await new Promise((resolve, reject) => {
    https.get(url('app.example.test', marker + '/echo'), { lookup: client.lookup, ca: fs.readFileSync(world.ca) }, (response) => {
      let text = '';
      response.on('data', (chunk) => { text += chunk; });
      response.on('end', () => resolve(JSON.parse(text)));
    }).on('error', reject);
  });
  assert.equal(body.server, '127.0.0.3');
  assert.equal(body.sni, 'app.example.test');
  client.close();
});

test('fetch: login through a 302 to another host', live, async () => {
  const client = await liveClient();
  const marker = token('login');
  const home = url('app.example.test', marker + '/home/echo');
  const response = await client.fetch(url('login.example.test', `${marker}/login?domain=example.test&next=${encodeURIComponent(home)}`),
    { method: 'POST', body: new URLSearchParams({ user: 'node' }) });
  assert.equal(response.status, 200);
  assert.equal(response.redirected, true);
  assert.equal(response.url, home);
  assert.equal((await response.json()).cookie, 'sid=node');
  const [sentLogin, sentHome] = recordsWith(marker);
  assert.deepEqual([sentLogin.server, sentLogin.sni, sentLogin.host, sentLogin.method, sentLogin.body],
    ['127.0.0.2', 'login.example.test', `login.example.test:${world.httpsPort}`, 'POST', 'user=node']);
  assert.deepEqual([sentHome.server, sentHome.sni, sentHome.host, sentHome.method, sentHome.body],
    ['127.0.0.3', 'app.example.test', `app.example.test:${world.httpsPort}`, 'GET', '']);
  const [sid] = await client.listCookies({ domain: 'example.test' });
  assert.deepEqual([sid.name, sid.httpOnly, sid.hostOnly], ['sid', true, false]);
  client.close();
});

test('fetch: redirect methods, each hop\'s cookie, manual and error modes', live, async () => {
  const client = await liveClient();
  for (const [status, method, body] of [[301, 'GET', ''], [303, 'GET', ''], [307, 'POST', 'x=1'], [308, 'POST', 'x=1']]) {
    const marker = token(`r${status}`);
    const target = url('app.example.test', marker + '/landed/echo');
    const start = url('login.example.test', `${marker}/redirect?status=${status}&to=${encodeURIComponent(target)}&cookie=hop%3D${status}`);
    const landed = await (await client.fetch(start, { method: 'POST', body: 'x=1' })).json();
    assert.deepEqual([landed.method, landed.body], [method, body], `status ${status}`);
    const back = await (await client.fetch(url('login.example.test', marker + '/back/echo'))).json();
    assert.equal(back.cookie, `hop=${status}`);
  }
  const marker = token('manual');
  const start = url('login.example.test', `${marker}/redirect?status=302&to=%2Felsewhere`);
  const manual = await client.fetch(start, { redirect: 'manual' });
  assert.equal(manual.status, 302);
  assert.equal(manual.headers.get('location'), '/elsewhere');
  await assert.rejects(client.fetch(start, { redirect: 'error' }), TypeError);
  client.close();
});

test('fetch: failover, the certificate, an unknown host, streaming, abort', live, async () => {
  const client = await liveClient();
  const marker = token('misc');
  assert.equal((await (await client.fetch(url('failover.example.test', marker + '/echo'))).json()).server, '127.0.0.4');
  await assert.rejects(client.fetch(url('wrongcert.example.test', marker + '/bad/echo')), /altnames|certificate/i);
  await assert.rejects(client.fetch(url('nowhere.example.test', '/echo')),
    { code: 'ERR_HTTPDNS_HOST_NOT_FOUND', message: 'httpdnsd: resolve: Host not found: nowhere.example.test (reason=no-data)' });
  const streamed = await client.fetch(url('node.example.test', marker + '/stream?chunks=3'));
  const chunks = [];
  for await (const chunk of streamed.body) chunks.push(Buffer.from(chunk).toString());
  assert.equal(chunks.join(''), 'chunk 0\nchunk 1\nchunk 2\n');
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(client.fetch(url('node.example.test', marker + '/echo'), { signal: controller.signal }), { name: 'AbortError' });
  client.close();
});

test('fetch: one connection per host and address, and a move is followed', live, async () => {
  const client = await liveClient();
  const marker = token('move');
  await client.handleSetCookie(url('node.example.test', '/'), 'moved=yes; Path=/');
  const first = await (await client.fetch(url('node.example.test', marker + '/1/echo'))).json();
  const second = await (await client.fetch(url('node.example.test', marker + '/2/echo'))).json();
  assert.equal(first.server, '127.0.0.4');
  assert.equal(first.peer, second.peer);
  await move(client, 'node.example.test', ['127.0.0.6']);
  try {
    const third = await (await client.fetch(url('node.example.test', marker + '/3/echo'))).json();
    assert.deepEqual([third.server, third.sni, third.cookie], ['127.0.0.6', 'node.example.test', 'moved=yes']);
  } finally {
    await move(client, 'node.example.test', ['127.0.0.4']);
  }
  client.close();
});

test('fetch: an IP URL with a Host header is that host (TLS, Host, cookies); a redirect to another host is its own', live, async () => {
  const client = await liveClient();
  await client.handleSetCookie(url('app.example.test', '/'), 'apponly=1; Path=/');
  const marker = token('ip-host');
  const next = url('login.example.test', `${marker}/redirect?status=302&to=${encodeURIComponent(marker + '/home/echo')}&cookie=hop%3Dlogin`);
  const response = await client.fetch(url('127.0.0.3', `${marker}/login?domain=example.test&next=${encodeURIComponent(next)}`),
    { method: 'POST', headers: { HOST: 'app.example.test' }, body: new URLSearchParams({ user: 'ip' }) });
  assert.equal(response.status, 200);
  const [login, hop, home] = recordsWith(marker);
  assert.deepEqual([login.server, login.sni, login.host, login.cookie], ['127.0.0.3', 'app.example.test', 'app.example.test', 'apponly=1']);
  const named = `login.example.test:${world.httpsPort}`;
  assert.deepEqual([hop.server, hop.sni, hop.host, hop.cookie], ['127.0.0.2', 'login.example.test', named, 'sid=ip']);
  assert.deepEqual([home.server, home.sni, home.host], ['127.0.0.2', 'login.example.test', named]);
  assert.deepEqual(home.cookie.split('; ').sort(), ['hop=login', 'sid=ip']);
  const cookies = Object.fromEntries((await client.listCookies()).map((c) => [c.name, [c.domain, c.hostOnly]]));
  assert.deepEqual(cookies, { apponly: ['app.example.test', true], sid: ['example.test', false], hop: ['login.example.test', true] });
  // init.host names it too; Host then carries the URL's port.
  const echoed = await (await client.fetch(url('127.0.0.3', marker + '/option/echo'), { host: 'app.example.test' })).json();
  assert.deepEqual([echoed.server, echoed.sni, echoed.host, echoed.cookie],
    ['127.0.0.3', 'app.example.test', `app.example.test:${world.httpsPort}`, 'apponly=1; sid=ip']);
  await assert.rejects(client.fetch(url('127.0.0.3', '/echo'), { host: 'app.example.test', headers: { host: 'login.example.test' } }),
    { code: 'ERR_INVALID_ARG_VALUE', message: 'client.fetch: init.host app.example.test and the Host header login.example.test differ' });
  client.close();
});

test('fetch: an address of several hosts without a name is refused before anything is sent', live, async () => {
  const client = await liveClient();
  await client.resolve('node.example.test');
  await client.resolve('go.example.test');
  const marker = token('ambiguous');
  await assert.rejects(client.fetch(url('127.0.0.4', marker + '/echo')), (error) => {
    assert.equal(error.code, 'ERR_HTTPDNS_AMBIGUOUS_ADDRESS');
    assert.ok(error.candidates.includes('node.example.test') && error.candidates.includes('go.example.test'), error.candidates);
    assert.equal(error.message, `client.fetch: 127.0.0.4 is an address of ${error.candidates.join(', ')}: ` +
      'name the host with init.host or a Host header');
    return true;
  });
  assert.deepEqual(recordsWith(marker), []);
  client.close();
});

test('fetch: a cookie the daemon refuses is reported, to the hook or as a warning', live, async () => {
  const refusals = [];
  const client = httpdns.connect({ socket: daemonSocket, ca: fs.readFileSync(world.ca), onRejectedCookie: (r) => refusals.push(r) });
  await client.deleteCookies({ all: true });
  const target = url('node.example.test', `${token('refused')}/set?cookie=ok%3D1&cookie=${encodeURIComponent('t=1; Domain=com')}`);
  assert.equal((await client.fetch(target)).status, 200);
  assert.deepEqual(refusals, [{ url: target, host: 'node.example.test', setCookie: 't=1; Domain=com', index: 1, reason: 'public-suffix' }]);
  client.close();
  const plain = await liveClient();
  const warned = new Promise((resolve) => process.once('warning', resolve));
  await plain.fetch(target);
  const warning = await warned;
  assert.deepEqual([warning.name, warning.code, warning.message],
    ['HttpdnsCookieWarning', 'HTTPDNS_COOKIE_REJECTED', `httpdnsd refused the cookie t from ${target}: public-suffix`]);
  plain.close();
});

/** As fixture.set_answers: answers.json rewritten atomically with `changes` (null drops a name). */
function setAnswers(changes) {
  const answers = JSON.parse(fs.readFileSync(world.answers, 'utf8'));
  for (const [name, answer] of Object.entries(changes)) {
    if (answer === null) delete answers[name]; else answers[name] = answer;
  }
  fs.writeFileSync(world.answers + '.tmp', JSON.stringify(answers));
  fs.renameSync(world.answers + '.tmp', world.answers);
}

/** A stale answer at `deadAddress` (its TTL run out), then the name moved to 127.0.0.4: the first
 * fetch must reach 127.0.0.4 within the connect timeout plus 1 s. */
async function staleThenMoved(deadAddress, connectTimeoutMs) {
  const client = httpdns.connect({ socket: daemonSocket, ca: fs.readFileSync(world.ca), connectTimeoutMs });
  const host = 'moving.example.test';
  setAnswers({ [host]: { ips: [deadAddress], ttl: 1 } });
  try {
    await client.flushCache(host);
    assert.deepEqual((await client.resolve(host)).ipv4, [deadAddress]);
    await new Promise((resolve) => setTimeout(resolve, 2500)); // past the TTL: the daemon serves it stale
    setAnswers({ [host]: ['127.0.0.4'] });
    const marker = token('stale');
    const started = Date.now();
    // A streamed body: read only once connected, so it is whole on the second connection.
    const body = Readable.from(['on', 'ce']);
    const echoed = await (await client.fetch(url(host, marker + '/echo'), { method: 'POST', body })).json();
    const elapsed = Date.now() - started;
    assert.ok(elapsed < connectTimeoutMs + 1000, `${elapsed} ms`);
    assert.deepEqual([echoed.server, echoed.sni, echoed.body], ['127.0.0.4', host, 'once']);
    assert.equal(recordsWith(marker).length, 1);
    return elapsed;
  } finally {
    setAnswers({ [host]: world.hosts[host] });
    await client.flushCache(host);
    client.close();
  }
}

test('fetch: a stale answer whose address refuses is asked again fresh, and the first request succeeds', live, async () => {
  await staleThenMoved('127.0.0.9', 3000); // nothing listens on 127.0.0.9
});

test('fetch: a stale answer whose address is black-holed is asked again after the connect timeout', live, async () => {
  // 127.0.0.8 listens with a full accept queue that is never taken: the kernel drops every
  // further SYN, as a vanished host does not answer.
  const { spawn } = require('node:child_process');
  const listener = spawn('/usr/bin/python3', ['-c', 'import socket, sys\ns = socket.socket()\n' +
    's.bind(("127.0.0.8", int(sys.argv[1])))\ns.listen(0)\nprint("ready", flush=True)\nsys.stdin.read()', String(world.httpsPort)],
  { stdio: ['pipe', 'pipe', 'inherit'] });
  const fillers = [];
  try {
    await new Promise((resolve, reject) => {
      listener.stdout.once('data', resolve);
      listener.once('exit', (code) => reject(new Error(`the listener exited (${code})`)));
    });
    const filler = net.connect(world.httpsPort, '127.0.0.8');
    fillers.push(filler);
    await events.once(filler, 'connect');
    fillers.push(net.connect(world.httpsPort, '127.0.0.8').on('error', () => {}));
    const connectTimeoutMs = 1500;
    const elapsed = await staleThenMoved('127.0.0.8', connectTimeoutMs);
    assert.ok(elapsed >= connectTimeoutMs - 100, `${elapsed} ms: the black hole answered`);
  } finally {
    for (const socket of fillers) socket.destroy();
    listener.stdin.end();
    listener.kill();
  }
});

/** The daemon binary for a test's own daemon: $HTTPDNSD_BIN, the one beside $HTTPDNSCTL, or the
 * checkout's debug build (as .ci/test runs it). */
function daemonBinary() {
  const candidates = [process.env.HTTPDNSD_BIN,
    process.env.HTTPDNSCTL && path.join(path.dirname(process.env.HTTPDNSCTL), 'httpdnsd'),
    path.join(__dirname, '..', '..', '..', '.build', 'debug', 'httpdnsd')];
  return candidates.find((file) => file && fs.existsSync(file));
}

test('every daemon call has a deadline: a stopped daemon is ETIMEDOUT, and fetch sends nothing', live, async () => {
  assert.equal(httpdns.connect().timeoutMs, 30000);
  const binary = daemonBinary();
  assert.ok(binary, 'no httpdnsd binary: set HTTPDNSD_BIN');
  const { spawn } = require('node:child_process');
  const dir = temporaryDirectory();
  const socket = path.join(dir, 'd.sock');
  // A daemon of this test's own, in the fixture's namespace, so stopping it stops nobody else's.
  const daemon = spawn(binary, ['--socket', socket, '--state-dir', path.join(dir, 'state'), '--config', world.config],
    { stdio: 'ignore', env: { ...process.env, SWIFT_BACKTRACE: 'enable=no' } });
  const exited = events.once(daemon, 'exit');
  const clients = [];
  try {
    for (let i = 0; i < 200 && !fs.existsSync(socket); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const client = httpdns.connect({ socket, timeoutMs: 1000, ca: fs.readFileSync(world.ca) });
    clients.push(client);
    assert.equal(typeof (await client.status()).version, 'string');
    process.kill(daemon.pid, 'SIGSTOP');
    const started = Date.now();
    await assert.rejects(client.status(),
      { name: 'ConnectionError', code: 'ETIMEDOUT', message: `httpdnsd at ${socket}: status: no answer within 1000 ms` });
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 900 && elapsed < 10000, `${elapsed} ms`);
    const marker = token('stopped');
    await assert.rejects(client.fetch(url('node.example.test', marker + '/echo')),
      { code: 'ETIMEDOUT', message: `httpdnsd at ${socket}: getCookieHeader: no answer within 1000 ms` });
    assert.deepEqual(recordsWith(marker), []);
    // A new connection: the kernel accepts it for the stopped daemon, which never answers.
    const fresh = httpdns.connect({ socket, timeoutMs: 1000 });
    clients.push(fresh);
    const lookup = await new Promise((resolve) => fresh.lookup('node.example.test', (error) => resolve(error)));
    assert.deepEqual([lookup.code, lookup.cause.code], ['EAI_AGAIN', 'ETIMEDOUT']);
  } finally {
    for (const client of clients) client.close();
    process.kill(daemon.pid, 'SIGCONT');
    daemon.kill('SIGTERM');
    await exited;
  }
});

test('the README\'s Node setup, as written: its npm install line, then its line of code', live, async () => {
  const readme = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
  const block = /<!-- example: js fragment -->\n```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'no js fragment example in README.md');
  const [comment, code] = block[1].trim().split('\n');
  const install = /\((npm install [^)]+)\)/.exec(comment);
  assert.ok(install, comment);
  // A project beside a copy of clients/node, so the README's relative path is the same.
  const dir = temporaryDirectory();
  const project = path.join(dir, 'project');
  fs.cpSync(path.join(__dirname, '..'), path.join(project, 'clients', 'node'),
    { recursive: true, filter: (source) => path.basename(source) !== 'node_modules' });
  fs.writeFileSync(path.join(project, 'package.json'), '{"name":"consumer","private":true}');
  execFileSync('/bin/sh', ['-c', install[1]], { cwd: project, env: npmEnvironment(dir), encoding: 'utf8' });
  const marker = token('readme');
  const program = `const url = ${JSON.stringify(url('node.example.test', marker + '/echo'))}; const init = {};\n` +
    `(async () => {\n${code}\nconsole.log(JSON.stringify(await response.json())); client.close();\n})();\n`;
  fs.writeFileSync(path.join(project, 'setup.js'), program);
  const output = execFileSync(process.execPath, ['setup.js'], { cwd: project, encoding: 'utf8',
    env: { ...process.env, NODE_EXTRA_CA_CERTS: world.ca } });
  const echoed = JSON.parse(output);
  assert.deepEqual([echoed.server, echoed.sni], ['127.0.0.4', 'node.example.test']);
});
