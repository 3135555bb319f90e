package httpdns

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSocketPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HTTPDNSD_SOCKET", "")
	t.Setenv("XDG_RUNTIME_DIR", dir)
	if got := SocketPath(""); got != SystemSocket {
		t.Fatalf("no per-user socket: %q", got)
	}
	perUser := filepath.Join(dir, "httpdnsd", "httpdnsd.sock")
	os.MkdirAll(filepath.Dir(perUser), 0o755)
	listener, err := net.Listen("unix", perUser)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	if got := SocketPath(""); got != perUser {
		t.Fatalf("per-user: %q", got)
	}
	t.Setenv("HTTPDNSD_SOCKET", "/tmp/env.sock")
	if got := SocketPath(""); got != "/tmp/env.sock" {
		t.Fatalf("environment: %q", got)
	}
	if got := SocketPath("/tmp/explicit.sock"); got != "/tmp/explicit.sock" {
		t.Fatalf("explicit: %q", got)
	}
}

func TestURLHost(t *testing.T) {
	for rawURL, want := range map[string]string{
		"https://App.Example.test:8443/x": "App.Example.test",
		"https://203.0.113.10/login":      "",
		"http://[2001:db8::1]:80/":        "",
	} {
		if got := URLHost(rawURL); got != want {
			t.Errorf("URLHost(%q) = %q, want %q", rawURL, got, want)
		}
	}
}

// fakeDaemon serves a Unix socket; handle gets each connection's requests.
type fakeDaemon struct {
	path        string
	listener    net.Listener
	mu          sync.Mutex
	connections int
}

func newFake(t *testing.T, handle func(conn net.Conn, requests *bufio.Scanner)) *fakeDaemon {
	path := filepath.Join(t.TempDir(), "fake.sock")
	listener, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeDaemon{path: path, listener: listener}
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			fake.mu.Lock()
			fake.connections++
			fake.mu.Unlock()
			go handle(conn, bufio.NewScanner(conn))
		}
	}()
	t.Cleanup(func() { listener.Close() })
	return fake
}

type request struct {
	ID     uint64         `json:"id"`
	Method string         `json:"method"`
	Params map[string]any `json:"params"`
}

func next(requests *bufio.Scanner) request {
	var r request
	requests.Scan()
	json.Unmarshal(requests.Bytes(), &r)
	return r
}

func answer(conn net.Conn, value map[string]any) {
	line, _ := json.Marshal(value)
	conn.Write(append(line, '\n'))
}

func TestAnswersOutOfOrderReachTheirCallers(t *testing.T) {
	fake := newFake(t, func(conn net.Conn, requests *bufio.Scanner) {
		first, second := next(requests), next(requests)
		for _, r := range []request{second, first} {
			answer(conn, map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": r.Params["n"]})
		}
	})
	c, err := Dial(fake.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	results := make([]float64, 2)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := c.Call(context.Background(), "echo", map[string]any{"n": i + 1}, &results[i]); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if results[0] != 1 || results[1] != 2 {
		t.Fatalf("results %v", results)
	}
}

func TestNotificationsAreRoutedToTheConnectionsHandler(t *testing.T) {
	fake := newFake(t, func(conn net.Conn, requests *bufio.Scanner) {
		r := next(requests)
		answer(conn, map[string]any{"jsonrpc": "2.0", "method": "event", "params": map[string]any{"n": 1}})
		answer(conn, map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": true})
		answer(conn, map[string]any{"jsonrpc": "2.0", "method": "event", "params": map[string]any{"n": 2}})
	})
	events := make(chan Notification, 2)
	cn, err := openConn(context.Background(), fake.path, func(n Notification) { events <- n })
	if err != nil {
		t.Fatal(err)
	}
	defer cn.close()
	msg, err := cn.call(context.Background(), "subscribe", nil)
	if err != nil || string(msg.Result) != "true" {
		t.Fatalf("answer %s %v", msg.Result, err)
	}
	for _, want := range []string{`{"n":1}`, `{"n":2}`} {
		select {
		case n := <-events:
			if n.Method != "event" || string(n.Params) != want {
				t.Fatalf("notification %v", n)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no notification")
		}
	}
}

func TestErrorDataIsCarriedThrough(t *testing.T) {
	data := map[string]any{"name": "InvalidParams", "field": "url", "reason": "ambiguous-url",
		"serialized": `https://a.example/\@b.example/`, "hosts": []any{"a.example", "b.example"}}
	fake := newFake(t, func(conn net.Conn, requests *bufio.Scanner) {
		r := next(requests)
		answer(conn, map[string]any{"jsonrpc": "2.0", "id": r.ID,
			"error": map[string]any{"code": -32602, "message": "Invalid params", "data": data}})
	})
	c, _ := Dial(fake.path)
	defer c.Close()
	_, err := c.GetCookieHeader(context.Background(), `https://a.example/\@b.example/`, "", nil)
	var rpcError *RPCError
	if !errors.As(err, &rpcError) {
		t.Fatalf("error %v", err)
	}
	if rpcError.Code != -32602 || rpcError.Name() != "InvalidParams" || rpcError.Field() != "url" ||
		rpcError.Reason() != "ambiguous-url" || rpcError.Method != "getCookieHeader" {
		t.Fatalf("%#v", rpcError)
	}
	if fmt.Sprint(rpcError.Data["hosts"]) != "[a.example b.example]" || !strings.Contains(err.Error(), "ambiguous-url") {
		t.Fatalf("data %v / %v", rpcError.Data, err)
	}
}

func TestAConnectionClosedWhileIdleIsOpenedAgain(t *testing.T) {
	fake := newFake(t, func(conn net.Conn, requests *bufio.Scanner) {
		r := next(requests)
		answer(conn, map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": "ok"})
		conn.Close() // as the daemon does after IdleTimeout=
	})
	c, _ := Dial(fake.path)
	defer c.Close()
	for i := 0; i < 2; i++ {
		var result string
		if err := c.Call(context.Background(), "status", nil, &result); err != nil || result != "ok" {
			t.Fatalf("call %d: %q %v", i, result, err)
		}
	}
	if fake.connections != 2 {
		t.Fatalf("%d connections", fake.connections)
	}
}

func TestContextCancellationStopsTheWait(t *testing.T) {
	release := make(chan struct{})
	fake := newFake(t, func(conn net.Conn, requests *bufio.Scanner) {
		first := next(requests)
		<-release
		answer(conn, map[string]any{"jsonrpc": "2.0", "id": first.ID, "result": "late"})
		second := next(requests)
		answer(conn, map[string]any{"jsonrpc": "2.0", "id": second.ID, "result": "second"})
	})
	c, _ := Dial(fake.path)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Call(ctx, "status", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	close(release)
	var result string
	if err := c.Call(context.Background(), "status", nil, &result); err != nil || result != "second" {
		t.Fatalf("next call: %q %v", result, err)
	}
}

func TestAnUnreachableDaemonIsAConnectionError(t *testing.T) {
	_, err := Dial(filepath.Join(t.TempDir(), "nobody.sock"))
	var connectionError *ConnectionError
	if !errors.As(err, &connectionError) || !errors.Is(err, ErrDaemonUnavailable) || !strings.Contains(err.Error(), "nobody.sock") {
		t.Fatalf("%v", err)
	}
}

// -- typed results of the OpenRPC document's examples --------------------------------------------

// documentExample is the result of method's example name in rpc-schema/httpdnsd.openrpc.json.
func documentExample(t *testing.T, method, name string) json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "rpc-schema", "httpdnsd.openrpc.json"))
	if err != nil {
		t.Fatal(err)
	}
	var document struct {
		Methods []struct {
			Name     string
			Examples []struct {
				Name   string
				Result struct{ Value json.RawMessage }
			}
		}
	}
	if err := json.Unmarshal(data, &document); err != nil {
		t.Fatal(err)
	}
	for _, m := range document.Methods {
		for _, example := range m.Examples {
			if m.Name == method && example.Name == name {
				return example.Result.Value
			}
		}
	}
	t.Fatalf("the document has no example %q of %s", name, method)
	return nil
}

func TestReverseExampleHasTypedNames(t *testing.T) {
	var lookup ReverseLookup
	if err := json.Unmarshal(documentExample(t, "reverse", "known address"), &lookup); err != nil {
		t.Fatal(err)
	}
	want := []ReverseName{{Host: "api.example.com", TTL: 57, RememberedFor: 86457}}
	if !reflect.DeepEqual(lookup.Names, want) || !reflect.DeepEqual(lookup.Hosts, []string{"api.example.com"}) {
		t.Fatalf("reverse %+v", lookup)
	}
}

// Forget sends exactly one of address and all: true, and refuses an empty address without a call.
func TestForgetSendsOneTargetAndRefusesAnEmptyAddress(t *testing.T) {
	received := make(chan request, 4)
	fake := newFake(t, func(conn net.Conn, requests *bufio.Scanner) {
		for {
			r := next(requests)
			if r.Method == "" {
				return
			}
			received <- r
			answer(conn, map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": map[string]any{"forgotten": 3}})
		}
	})
	c, err := Dial(fake.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if n, err := c.Forget(ctx, ""); err == nil || !strings.Contains(err.Error(), "forget: an empty address") || n != 0 {
		t.Fatalf("an empty address: %d %v", n, err)
	}
	if n, err := c.Forget(ctx, "203.0.113.10"); err != nil || n != 3 {
		t.Fatalf("forget an address: %d %v", n, err)
	}
	if n, err := c.ForgetAll(ctx); err != nil || n != 3 {
		t.Fatalf("forget all: %d %v", n, err)
	}
	for _, want := range []map[string]any{{"address": "203.0.113.10"}, {"all": true}} {
		if r := <-received; r.Method != "forget" || !reflect.DeepEqual(r.Params, want) {
			t.Fatalf("sent %+v, want forget %v", r, want)
		}
	}
	if len(received) != 0 {
		t.Fatalf("the empty address reached the daemon: %+v", <-received)
	}
}

func TestStatusExampleHasTypedServiceAddressesAndNetwork(t *testing.T) {
	var status Status
	if err := json.Unmarshal(documentExample(t, "status", "running"), &status); err != nil {
		t.Fatal(err)
	}
	refresh := 20100.0
	want := &ServiceAddresses{Source: "scheduler", Current: "203.0.113.2", Addresses: []ServiceAddress{
		{Address: "203.0.113.1", Failures: 0, BackingOff: true},
		{Address: "203.0.113.2", Failures: 0, BackingOff: false},
	}, SchedulerError: nil, NextRefresh: &refresh}
	if len(status.Upstreams) != 2 || !reflect.DeepEqual(status.Upstreams[0].ServiceAddresses, want) {
		t.Fatalf("serviceAddresses %+v", status.Upstreams)
	}
	if status.Upstreams[1].ServiceAddresses != nil {
		t.Fatalf("an upstream without serviceAddresses has %+v", status.Upstreams[1].ServiceAddresses)
	}
	for i, want := range []int64{25, 0} {
		if up := status.Upstreams[i]; up.Answered == nil || *up.Answered != want || up.Domains != nil {
			t.Fatalf("upstream %d: answered %v, domains %v", i, up.Answered, up.Domains)
		}
	}
	var routed UpstreamStatus
	if err := json.Unmarshal([]byte(`{"name":"u","kind":"doh","healthy":true,"lastError":null,"latencyMs":null,`+
		`"answered":3,"domains":["corp.example","."]}`), &routed); err != nil ||
		*routed.Answered != 3 || !reflect.DeepEqual(routed.Domains, []string{"corp.example", "."}) {
		t.Fatalf("routed upstream %+v %v", routed, err)
	}
	var fleet Status
	if err := json.Unmarshal([]byte(`{"fleet":{"connected":true,"state":"connected","lastError":null,`+
		`"lastStateChange":1767228000,"lag":0.25,"outbox":2,"rejected":0}}`), &fleet); err != nil || fleet.Fleet == nil ||
		!fleet.Fleet.Connected || fleet.Fleet.State != "connected" || fleet.Fleet.LastError != nil || *fleet.Fleet.Lag != 0.25 ||
		fleet.Fleet.Outbox != 2 || fleet.Fleet.LastStateChange != 1767228000 || status.Fleet != nil {
		t.Fatalf("fleet %+v %v (without one: %+v)", fleet.Fleet, err, status.Fleet)
	}
	lastChange := int64(1767228900)
	if !reflect.DeepEqual(status.Network, &NetworkStatus{Watching: true, Changes: 1, LastChange: &lastChange}) {
		t.Fatalf("network %+v", status.Network)
	}
}

func TestResolveExamplesHaveTypedTTLsWithFamilyBothOnly(t *testing.T) {
	var fresh, stale Resolution
	if err := json.Unmarshal(documentExample(t, "resolve", "fresh answer"), &fresh); err != nil {
		t.Fatal(err)
	}
	if fresh.TTLs == nil || *fresh.TTLs != (FamilyTTLs{IPv4: 57, IPv6: 30}) {
		t.Fatalf("ttls %+v", fresh.TTLs)
	}
	if err := json.Unmarshal(documentExample(t, "resolve", "stale from cache"), &stale); err != nil {
		t.Fatal(err)
	}
	if stale.TTLs != nil {
		t.Fatalf("a resolve for one family has ttls %+v", stale.TTLs)
	}
}

// -- against the daemon and clients/testing/fixture.py (HTTPDNS_FIXTURE, HTTPDNSD_SOCKET) ------

type world struct {
	Dir       string              `json:"dir"`
	CA        string              `json:"ca"`
	HTTPPort  int                 `json:"httpPort"`
	HTTPSPort int                 `json:"httpsPort"`
	Proxy     string              `json:"proxy"`
	Records   string              `json:"records"`
	ProxyLog  string              `json:"proxyLog"`
	Answers   string              `json:"answers"`
	Hosts     map[string][]string `json:"hosts"`
	socket    string
}

func fixture(t *testing.T) *world {
	path, socket := os.Getenv("HTTPDNS_FIXTURE"), os.Getenv("HTTPDNSD_SOCKET")
	if path == "" || socket == "" {
		t.Skip("needs HTTPDNS_FIXTURE and HTTPDNSD_SOCKET (.ci/test runs these with a daemon)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{socket: socket}
	if err := json.Unmarshal(data, w); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) url(host, path, scheme string) string {
	port := w.HTTPSPort
	if scheme == "http" {
		port = w.HTTPPort
	}
	return fmt.Sprintf("%s://%s:%d%s", scheme, host, port, path)
}

type record struct {
	Server, Peer, SNI, Method, Path, Host, Cookie, Body string
	SNIValue                                            *string `json:"sni"`
}

func (w *world) requestsWith(t *testing.T, token string) []map[string]any {
	data, err := os.ReadFile(w.Records)
	if err != nil {
		t.Fatal(err)
	}
	var found []map[string]any
	for _, line := range strings.Split(string(data), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && strings.Contains(fmt.Sprint(entry["path"]), token) {
			found = append(found, entry)
		}
	}
	return found
}

func (w *world) move(t *testing.T, c *Client, host string, addresses []string) {
	w.setAnswer(t, host, addresses)
	if _, err := c.FlushCache(context.Background(), host); err != nil {
		t.Fatal(err)
	}
}

// setAnswer rewrites answers.json atomically as fixture.set_answers does; answer is a list of
// addresses or {"ips": [...], "ttl": seconds}.
func (w *world) setAnswer(t *testing.T, host string, answer any) {
	data, err := os.ReadFile(w.Answers)
	if err != nil {
		t.Fatal(err)
	}
	var answers map[string]any
	if err := json.Unmarshal(data, &answers); err != nil {
		t.Fatal(err)
	}
	answers[host] = answer
	data, _ = json.Marshal(answers)
	if err := os.WriteFile(w.Answers+".tmp", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w.Answers+".tmp", w.Answers); err != nil {
		t.Fatal(err)
	}
}

// logs collects what a client tells its Logf.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func setup(t *testing.T) (*world, *Client, *http.Client, *Transport) {
	w := fixture(t)
	c, err := Dial(w.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.DeleteCookies(context.Background(), DeleteCookiesParams{All: true}); err != nil {
		t.Fatal(err)
	}
	transport := fixtureTransport(t, w, c)
	return w, c, &http.Client{Transport: transport}, transport
}

// fixtureTransport is c's Transport trusting the fixture's CA, with no proxy from the
// environment (the tests' origins are reached directly).
func fixtureTransport(t *testing.T, w *world, c *Client) *Transport {
	pem, err := os.ReadFile(w.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	transport := c.Transport()
	transport.Proxy = c.Proxy(transport, nil)
	transport.TLSClientConfig = &tls.Config{RootCAs: pool}
	t.Cleanup(transport.CloseIdleConnections)
	return transport
}

func token(t *testing.T) string {
	return fmt.Sprintf("/go-%s-%d", t.Name(), time.Now().UnixNano())
}

func body(t *testing.T) func(*http.Response, error) map[string]any {
	return func(response *http.Response, err error) map[string]any { return decode(t, response, err) }
}

func decode(t *testing.T, response *http.Response, err error) map[string]any {
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	data, _ := io.ReadAll(response.Body)
	var echo map[string]any
	if err := json.Unmarshal(data, &echo); err != nil {
		t.Fatalf("status %d, body %q", response.StatusCode, data)
	}
	return echo
}

func TestTypedCalls(t *testing.T) {
	_, c, _, _ := setup(t)
	ctx := context.Background()
	answer, err := c.Resolve(ctx, "login.example.test", &ResolveOptions{Family: "ipv4", TimeoutMs: 5000})
	if err != nil || len(answer.IPv4) != 1 || answer.IPv4[0] != "127.0.0.2" {
		t.Fatalf("resolve %+v %v", answer, err)
	}
	if reverse, err := c.Reverse(ctx, "127.0.0.2"); err != nil || reverse.Hosts[0] != "login.example.test" {
		t.Fatalf("reverse %+v %v", reverse, err)
	}
	stored, err := c.HandleSetCookie(ctx, "https://127.0.0.4/x", "go.example.test", []string{"k=v; Path=/", "t=1; Domain=com"})
	if err != nil || stored.Host != "go.example.test" || stored.Stored != 1 || stored.Rejected[0].Reason != "public-suffix" {
		t.Fatalf("handleSetCookie %+v %v", stored, err)
	}
	if header, err := c.GetCookieHeader(ctx, "https://go.example.test/", "", nil); err != nil || header != "k=v" {
		t.Fatalf("getCookieHeader %q %v", header, err)
	}
	cookies, err := c.ListCookies(ctx, "go.example.test")
	if err != nil || len(cookies) != 1 || !cookies[0].HostOnly || cookies[0].Expires != nil {
		t.Fatalf("listCookies %+v %v", cookies, err)
	}
	export, err := c.ExportCookies(ctx)
	if err != nil || export.LeftOut != nil {
		t.Fatalf("exportCookies %+v %v", export, err)
	}
	exported := export.Data
	if !strings.Contains(exported, "go.example.test\tFALSE\t/\tFALSE\t0\tk\tv") {
		t.Fatalf("exportCookies %q %v", exported, err)
	}
	if n, err := c.DeleteCookies(ctx, DeleteCookiesParams{URL: "https://go.example.test/", Name: "k"}); err != nil || n != 1 {
		t.Fatalf("deleteCookies %d %v", n, err)
	}
	if n, err := c.ImportCookies(ctx, exported); err != nil || n != 1 {
		t.Fatalf("importCookies %d %v", n, err)
	}
	// family both: each family's TTL; the answer's TTL is the IPv4 one, the only family with addresses.
	both, err := c.Resolve(ctx, "login.example.test", &ResolveOptions{Family: "both"})
	if err != nil || both.TTLs == nil || both.TTLs.IPv4 != both.TTL || both.TTL <= 0 || both.TTLs.IPv6 < 0 {
		t.Fatalf("resolve with family both %+v %v", both, err)
	}
	status, err := c.Status(ctx)
	if err != nil || status.Version == "" || status.Upstreams[0].Kind != "alibaba" || status.Cookies.Count != 1 {
		t.Fatalf("status %+v %v", status, err)
	}
	// The upstream answered login.example.test at least; without Route= lines there are no domains.
	if up := status.Upstreams[0]; up.Answered == nil || *up.Answered < 1 || up.Domains != nil {
		t.Fatalf("status upstream answered %v, domains %v", up.Answered, up.Domains)
	}
	// One service address: no serviceAddresses; the network member is always there.
	var raw struct {
		Network NetworkStatus `json:"network"`
	}
	if json.Unmarshal(status.Raw, &raw) != nil || status.Upstreams[0].ServiceAddresses != nil ||
		status.Network == nil || !reflect.DeepEqual(*status.Network, raw.Network) || status.Network.Changes < 0 {
		t.Fatalf("status network %+v, serviceAddresses %+v", status.Network, status.Upstreams[0].ServiceAddresses)
	}
	document, err := c.Discover(ctx)
	var parsed struct{ Methods []struct{ Name string } }
	if err != nil || json.Unmarshal(document, &parsed) != nil {
		t.Fatalf("discover: %v", err)
	}
	typed := map[string]bool{"resolve": true, "reverse": true, "forget": true, "getCookieHeader": true, "handleSetCookie": true,
		"deleteCookies": true, "listCookies": true, "importCookies": true, "exportCookies": true, "flushCache": true,
		"status": true, "showCache": true, "statistics": true, "resetStatistics": true, "metrics": true,
		"monitor": true, "rpc.discover": true}
	documented := map[string]bool{}
	for _, method := range parsed.Methods {
		documented[method.Name] = true
	}
	if !reflect.DeepEqual(documented, typed) {
		t.Fatalf("the typed calls are not the document's methods: %v", documented)
	}
	_, err = c.Resolve(ctx, "nowhere.example.test", nil)
	var rpcError *RPCError
	if !errors.As(err, &rpcError) || rpcError.Code != -32001 || rpcError.Name() != "HostNotFound" {
		t.Fatalf("unknown host: %v", err)
	}
	err = c.Call(ctx, "noSuchMethod", nil, nil)
	if !errors.As(err, &rpcError) || rpcError.Code != -32601 || rpcError.Data["method"] != "noSuchMethod" {
		t.Fatalf("unknown method: %v", err)
	}
}

func TestReverseNamesAndForget(t *testing.T) {
	w, c, _, _ := setup(t)
	ctx := context.Background()
	// A name of its own on an address of its own, so that no other test's names share it.
	w.setAnswer(t, "forget-go.example.test", []string{"127.0.0.7"})
	if _, err := c.Resolve(ctx, "forget-go.example.test", nil); err != nil {
		t.Fatal(err)
	}
	lookup, err := c.Reverse(ctx, "127.0.0.7")
	if err != nil || len(lookup.Names) != 1 || !reflect.DeepEqual(lookup.Hosts, []string{"forget-go.example.test"}) {
		t.Fatalf("reverse %+v %v", lookup, err)
	}
	if name := lookup.Names[0]; name.Host != lookup.Hosts[0] || name.TTL <= 0 || name.TTL > name.RememberedFor ||
		name.TTL != lookup.TTL {
		t.Fatalf("reverse names %+v", lookup.Names)
	}
	if n, err := c.Forget(ctx, "127.0.0.7"); err != nil || n != 1 {
		t.Fatalf("forget %d %v", n, err)
	}
	hostNotFound := func(address string) {
		t.Helper()
		_, err := c.Reverse(ctx, address)
		var rpcError *RPCError
		if !errors.As(err, &rpcError) || rpcError.Code != -32001 || rpcError.Name() != "HostNotFound" {
			t.Fatalf("reverse %s after forget: %v", address, err)
		}
	}
	hostNotFound("127.0.0.7")
	if n, err := c.Forget(ctx, "127.0.0.7"); err != nil || n != 0 {
		t.Fatalf("forget again %d %v", n, err)
	}
	_, err = c.Forget(ctx, "not-an-address")
	var rpcError *RPCError
	if !errors.As(err, &rpcError) || rpcError.Code != -32602 || rpcError.Field() != "address" {
		t.Fatalf("forget a malformed address: %v", err)
	}

	for _, host := range []string{"forget-go.example.test", "login.example.test"} {
		if _, err := c.Resolve(ctx, host, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.ForgetAll(ctx); err != nil || n < 2 {
		t.Fatalf("forget all %d %v", n, err)
	}
	hostNotFound("127.0.0.7")
	hostNotFound("127.0.0.2")
	if n, err := c.ForgetAll(ctx); err != nil || n != 0 {
		t.Fatalf("forget all again %d %v", n, err)
	}
	// The cache stays: the name resolves from it, and is remembered again.
	if answer, err := c.Resolve(ctx, "forget-go.example.test", nil); err != nil || answer.Source != "cache" {
		t.Fatalf("resolve after forget %+v %v", answer, err)
	}
	if lookup, err := c.Reverse(ctx, "127.0.0.7"); err != nil || lookup.Hosts[0] != "forget-go.example.test" {
		t.Fatalf("reverse after resolving again %+v %v", lookup, err)
	}
}

func TestLoginThroughA302ToAnotherHost(t *testing.T) {
	w, c, client, _ := setup(t)
	tok := token(t)
	home := w.url("app.example.test", tok+"/home/echo", "https")
	login := w.url("login.example.test", tok+"/login?domain=example.test&next="+url.QueryEscape(home), "https")
	echo := body(t)(client.PostForm(login, url.Values{"user": {"gopher"}}))
	if echo["cookie"] != "sid=gopher" {
		t.Fatalf("landed with %v", echo)
	}
	records := w.requestsWith(t, tok)
	if len(records) != 2 {
		t.Fatalf("records %v", records)
	}
	want := []struct{ server, sni, method string }{{"127.0.0.2", "login.example.test", "POST"}, {"127.0.0.3", "app.example.test", "GET"}}
	for i, r := range records {
		hostHeader := fmt.Sprintf("%s:%d", want[i].sni, w.HTTPSPort)
		if r["server"] != want[i].server || r["sni"] != want[i].sni || r["method"] != want[i].method || r["host"] != hostHeader {
			t.Errorf("hop %d: %v", i, r)
		}
	}
	cookies, _ := c.ListCookies(context.Background(), "example.test")
	if len(cookies) != 1 || cookies[0].Name != "sid" || !cookies[0].HTTPOnly || cookies[0].HostOnly {
		t.Fatalf("jar %+v", cookies)
	}
}

func TestFailoverCertificateAndUnknownHost(t *testing.T) {
	w, _, client, _ := setup(t)
	tok := token(t)
	if echo := body(t)(client.Get(w.url("failover.example.test", tok+"/echo", "https"))); echo["server"] != "127.0.0.4" {
		t.Fatalf("failover: %v", echo)
	}
	if _, err := client.Get(w.url("wrongcert.example.test", tok+"/bad/echo", "https")); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a certificate for other names was accepted: %v", err)
	}
	_, err := client.Get(w.url("nowhere.example.test", "/echo", "https"))
	var rpcError *RPCError
	if !errors.As(err, &rpcError) || rpcError.Name() != "HostNotFound" {
		t.Fatalf("unknown host: %v", err)
	}
}

func TestReusePerAddressAndAMove(t *testing.T) {
	w, c, client, _ := setup(t)
	tok := token(t)
	ctx := context.Background()
	c.HandleSetCookie(ctx, w.url("go.example.test", "/", "https"), "", []string{"moved=yes; Path=/"})
	first := body(t)(client.Get(w.url("go.example.test", tok+"/1/echo", "https")))
	second := body(t)(client.Get(w.url("go.example.test", tok+"/2/echo", "https")))
	if first["server"] != "127.0.0.4" || first["peer"] != second["peer"] {
		t.Fatalf("not one connection: %v / %v", first, second)
	}
	w.move(t, c, "go.example.test", []string{"127.0.0.6"})
	defer w.move(t, c, "go.example.test", []string{"127.0.0.4"})
	third := body(t)(client.Get(w.url("go.example.test", tok+"/3/echo", "https")))
	if third["server"] != "127.0.0.6" || third["sni"] != "go.example.test" || third["cookie"] != "moved=yes" {
		t.Fatalf("after the move: %v", third)
	}
}

func TestAProxyIsNetHTTPsOwnAndCookiesStillGoThroughTheDaemon(t *testing.T) {
	w, c, client, transport := setup(t)
	proxyURL, _ := url.Parse(w.Proxy)
	transport.Proxy = c.Proxy(transport, http.ProxyURL(proxyURL))
	tok := token(t)
	ctx := context.Background()
	c.HandleSetCookie(ctx, w.url("app.example.test", "/", "http"), "", []string{"viaproxy=1; Path=/"})
	target := w.url("app.example.test", tok+"/set?cookie=fromproxy%3D2%3B%20Path%3D%2F", "http")
	response, err := client.Get(target)
	if err != nil || response.StatusCode != 200 {
		t.Fatalf("%v %v", response, err)
	}
	response.Body.Close()
	records := w.requestsWith(t, tok)
	if len(records) != 1 || records[0]["cookie"] != "viaproxy=1" {
		t.Fatalf("records %v", records)
	}
	proxied, _ := os.ReadFile(w.ProxyLog)
	if !strings.Contains(string(proxied), `"target": "`+target+`"`) {
		t.Fatalf("the proxy did not see %s", target)
	}
	if header, _ := c.GetCookieHeader(ctx, w.url("app.example.test", "/", "http"), "", nil); !strings.Contains(header, "fromproxy=2") {
		t.Fatalf("jar: %q", header)
	}
}

func TestObservationCalls(t *testing.T) {
	_, c, _, _ := setup(t)
	ctx := context.Background()
	if _, err := c.Resolve(ctx, "login.example.test", nil); err != nil {
		t.Fatal(err)
	}
	entries, err := c.ShowCache(ctx)
	found := false
	for _, entry := range entries {
		found = found || (entry.Host == "login.example.test" && entry.Family == "ipv4" &&
			reflect.DeepEqual(entry.Addresses, []string{"127.0.0.2"}))
	}
	if err != nil || !found {
		t.Fatalf("showCache %+v %v", entries, err)
	}
	statistics, err := c.Statistics(ctx)
	if err != nil || statistics.Cache.Entries < 1 || len(statistics.Upstreams) == 0 {
		t.Fatalf("statistics %+v %v", statistics, err)
	}
	since, err := c.ResetStatistics(ctx) // the tests run as root, who may reset
	if err != nil || since < statistics.Since {
		t.Fatalf("resetStatistics %d %v", since, err)
	}
	if after, err := c.Statistics(ctx); err != nil || after.Since != since {
		t.Fatalf("statistics after the reset %+v %v", after, err)
	}
	text, err := c.Metrics(ctx)
	if err != nil || !strings.Contains("\n"+text, "\n# TYPE ") || !strings.HasSuffix(text, "\n") {
		t.Fatalf("metrics %q %v", text, err)
	}
}

func TestMonitorSeesAResolveMadeOnAnotherConnection(t *testing.T) {
	w, c, _, _ := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor, err := c.Monitor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer monitor.Close()
	if monitor.Scope != "all" {
		t.Fatalf("scope %q (the tests run as root)", monitor.Scope)
	}
	other, err := Dial(w.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Resolve(ctx, "login.example.test", nil); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case event, open := <-monitor.Events():
			if !open {
				t.Fatal("the subscription ended before the resolve event")
			}
			if event.Type == "resolve" && event.Host == "login.example.test" {
				if event.UID != os.Getuid() || event.Time == 0 {
					t.Fatalf("event %s", event.Raw)
				}
				monitor.Close()
				for range monitor.Events() {
				} // closed once the connection has ended
				return
			}
		case <-ctx.Done():
			t.Fatal("no resolve event within 10 s")
		}
	}
}
