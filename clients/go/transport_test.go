package httpdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hop is what an origin saw of one request.
type hop struct{ server, sni, host, cookie string }

func (w *world) hops(t *testing.T, token string) []hop {
	var seen []hop
	for _, r := range w.requestsWith(t, token) {
		seen = append(seen, hop{fmt.Sprint(r["server"]), fmt.Sprint(r["sni"]), fmt.Sprint(r["host"]), fmt.Sprint(r["cookie"])})
	}
	return seen
}

// The request: POST https://127.0.0.3/login with req.Host app.example.test is that
// host at that address, its Domain=example.test cookie stored under the name; the 302 to
// another host carries that host's own name.
func TestAnIPURLWithReqHostIsThatHostAtThatAddress(t *testing.T) {
	w, c, client, _ := setup(t)
	tok := token(t)
	next := w.url("login.example.test", tok+"/landed/echo", "https")
	login := w.url("127.0.0.3", tok+"/login?domain=example.test&next="+url.QueryEscape(next), "https")
	request, _ := http.NewRequest("POST", login, strings.NewReader("user=gopher"))
	request.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	request.Host = "app.example.test"
	echo := body(t)(client.Do(request))
	if echo["cookie"] != "sid=gopher" {
		t.Fatalf("landed with %v", echo)
	}
	want := []hop{
		{"127.0.0.3", "app.example.test", "app.example.test", "<nil>"},
		{"127.0.0.2", "login.example.test", fmt.Sprintf("login.example.test:%d", w.HTTPSPort), "sid=gopher"},
	}
	if got := w.hops(t, tok); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("hops %v, want %v", got, want)
	}
	cookies, err := c.ListCookies(context.Background(), "example.test")
	if err != nil || len(cookies) != 1 || cookies[0].Domain != "example.test" || cookies[0].HostOnly {
		t.Fatalf("jar %+v %v", cookies, err)
	}
}

// A Host header names the host as req.Host does; it holds across a redirect at the same
// address, and not across one to another host.
func TestAHostHeaderNamesTheHostAtThatAddressOnly(t *testing.T) {
	w, c, client, _ := setup(t)
	tok := token(t)
	ctx := context.Background()
	if _, err := c.HandleSetCookie(ctx, w.url("app.example.test", "/", "https"), "", []string{"a=1; Path=/"}); err != nil {
		t.Fatal(err)
	}
	relative := w.url("127.0.0.3", tok+"/1/redirect?status=302&to="+url.QueryEscape(tok+"/2/echo"), "https")
	request, _ := http.NewRequest("GET", relative, nil)
	request.Header.Set("Host", "app.example.test")
	if echo := body(t)(client.Do(request)); echo["cookie"] != "a=1" {
		t.Fatalf("relative redirect landed with %v", echo)
	}
	away := w.url("login.example.test", tok+"/4/echo", "https")
	absolute := w.url("127.0.0.3", tok+"/3/redirect?status=302&to="+url.QueryEscape(away), "https")
	request, _ = http.NewRequest("GET", absolute, nil)
	request.Header.Set("Host", fmt.Sprintf("app.example.test:%d", w.HTTPSPort))
	if echo := body(t)(client.Do(request)); echo["cookie"] != nil {
		t.Fatalf("app's cookie went to another host: %v", echo)
	}
	want := []hop{
		{"127.0.0.3", "app.example.test", "app.example.test", "a=1"},
		{"127.0.0.3", "app.example.test", "app.example.test", "a=1"},
		{"127.0.0.3", "app.example.test", fmt.Sprintf("app.example.test:%d", w.HTTPSPort), "a=1"},
		{"127.0.0.2", "login.example.test", fmt.Sprintf("login.example.test:%d", w.HTTPSPort), "<nil>"},
	}
	if got := w.hops(t, tok); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("hops %v, want %v", got, want)
	}
}

// An address this user resolved for two names, with no host named: refused before sending,
// the error naming both and how to pick one.
func TestAnAmbiguousAddressIsRefusedBeforeSending(t *testing.T) {
	w, c, client, transport := setup(t)
	tok := token(t)
	ctx := context.Background()
	for _, name := range []string{"go.example.test", "py.example.test"} {
		if _, err := c.Resolve(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := client.Get(w.url("127.0.0.4", tok+"/echo", "http"))
	var ambiguous *AmbiguousAddressError
	if !errors.Is(err, ErrAmbiguousAddress) || !errors.As(err, &ambiguous) || ambiguous.Address != "127.0.0.4" ||
		!strings.Contains(err.Error(), "go.example.test") || !strings.Contains(err.Error(), "py.example.test") ||
		!strings.Contains(err.Error(), "req.Host") {
		t.Fatalf("an ambiguous address: %v", err)
	}
	// Not a failure of the daemon that CookiesOptional lets pass; the unsent body is closed.
	transport.CookiesOptional = true
	form := &closeCounter{Reader: strings.NewReader("user=x")}
	_, err = client.Post(w.url("127.0.0.4", tok+"/echo", "http"), "application/x-www-form-urlencoded", form)
	if !errors.Is(err, ErrAmbiguousAddress) || form.closed == 0 {
		t.Fatalf("with CookiesOptional: %v (body closed %d times)", err, form.closed)
	}
	if records := w.requestsWith(t, tok); len(records) != 0 {
		t.Fatalf("sent anyway: %v", records)
	}
}

type closeCounter struct {
	*strings.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// Set-Cookie values the daemon refuses are told to Logf, by name, with the reason.
func TestRefusedCookiesAreLogged(t *testing.T) {
	w, c, client, _ := setup(t)
	var seen logs
	c.Logf = seen.logf
	tok := token(t)
	target := w.url("go.example.test", tok+"/set?cookie=ok%3D1%3B%20Path%3D%2F&cookie=wide%3D2%3B%20Domain%3Dcom", "https")
	response, err := client.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	response.Body.Close()
	if text := seen.String(); !strings.Contains(text, `"wide"`) || !strings.Contains(text, "public-suffix") ||
		strings.Contains(text, `"ok"`) {
		t.Fatalf("logged %q", text)
	}
	if header, _ := c.GetCookieHeader(context.Background(), w.url("go.example.test", "/", "https"), "", nil); header != "ok=1" {
		t.Fatalf("jar %q", header)
	}
}

// The Jar, with another transport, keys cookies by the URL's host and tells Logf what the
// daemon refused.
func TestTheJarWithAnotherTransport(t *testing.T) {
	w, c, _, transport := setup(t)
	var seen logs
	c.Logf = seen.logf
	plain := transport.Transport.Clone()
	defer plain.CloseIdleConnections()
	client := &http.Client{Jar: c.Jar(), Transport: plain}
	tok := token(t)
	home := w.url("app.example.test", tok+"/home/echo", "https")
	login := w.url("login.example.test", tok+"/login?domain=example.test&next="+url.QueryEscape(home), "https")
	if echo := body(t)(client.PostForm(login, url.Values{"user": {"jar"}})); echo["cookie"] != "sid=jar" {
		t.Fatalf("landed with %v", echo)
	}
	response, err := client.Get(w.url("go.example.test", tok+"/set?cookie=wide%3D2%3B%20Domain%3Dcom", "https"))
	if err != nil {
		t.Fatal(err)
	}
	response.Body.Close()
	if text := seen.String(); !strings.Contains(text, `"wide"`) || !strings.Contains(text, "public-suffix") {
		t.Fatalf("logged %q", text)
	}
}

// Errors are values errors.Is and errors.As find: an unsupported scheme, an ambiguous address
// (from a call too), an unknown host, an unreachable daemon.
func TestErrorsAreWhatErrorsIsAndAsFind(t *testing.T) {
	w, c, client, _ := setup(t)
	_, err := client.Get("ftp://go.example.test/file")
	if !errors.Is(err, ErrUnsupportedScheme) || !strings.Contains(err.Error(), `unsupported protocol scheme "ftp"`) {
		t.Fatalf("ftp: %v", err)
	}
	ctx := context.Background()
	for _, name := range []string{"go.example.test", "py.example.test"} {
		if _, err := c.Resolve(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.GetCookieHeader(ctx, w.url("127.0.0.4", "/", "https"), "", nil)
	var rpcError *RPCError
	if !errors.Is(err, ErrAmbiguousAddress) || !errors.As(err, &rpcError) || len(rpcError.Candidates()) < 2 {
		t.Fatalf("getCookieHeader of an ambiguous address: %v", err)
	}
	if _, err := c.Resolve(ctx, "nowhere.example.test", nil); errors.Is(err, ErrAmbiguousAddress) || errors.Is(err, ErrDaemonUnavailable) {
		t.Fatalf("an unknown host: %v", err)
	}
	_, err = client.Get(w.url("nowhere.example.test", "/echo", "https"))
	var resolveError *ResolveError
	if !errors.As(err, &resolveError) || resolveError.Host != "nowhere.example.test" || !errors.As(err, &rpcError) ||
		rpcError.Name() != "HostNotFound" {
		t.Fatalf("a request to an unknown host: %v", err)
	}
	other, err := Dial(w.socket)
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	if _, err := other.Resolve(ctx, "go.example.test", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("a closed client: %v", err)
	}
}

// An expired answer whose address is dead: the fresh answer is asked for and dialed, and the
// first request succeeds within the connect timeout of the dead address plus 1 s.
func TestADeadStaleAddressCostsNoFailedRequest(t *testing.T) {
	w, c, client, _ := setup(t)
	c.ConnectTimeout = 2 * time.Second
	t.Run("refusing", func(t *testing.T) { staleThenMoved(t, w, c, client, "stale-go.example.test") })
	t.Run("black-holed", func(t *testing.T) {
		blackHole(t, "127.0.0.9", w.HTTPPort)
		staleThenMoved(t, w, c, client, "blackholed-go.example.test")
	})
}

func staleThenMoved(t *testing.T, w *world, c *Client, client *http.Client, host string) {
	w.setAnswer(t, host, map[string]any{"ips": []string{"127.0.0.9"}, "ttl": 1})
	ctx := context.Background()
	if _, err := c.FlushCache(ctx, host); err != nil {
		t.Fatal(err)
	}
	if answer, err := c.Resolve(ctx, host, nil); err != nil || answer.IPv4[0] != "127.0.0.9" || answer.TTL > 1 {
		t.Fatalf("resolve %+v %v", answer, err)
	}
	time.Sleep(2500 * time.Millisecond)
	w.setAnswer(t, host, map[string]any{"ips": []string{"127.0.0.4"}, "ttl": 300})
	tok := token(t)
	started := time.Now()
	echo := body(t)(client.Get(w.url(host, tok+"/echo", "http")))
	elapsed := time.Since(started)
	t.Logf("the first request took %v", elapsed)
	if echo["server"] != "127.0.0.4" || elapsed > c.ConnectTimeout+time.Second {
		t.Fatalf("after %v: %v", elapsed, echo)
	}
}

// blackHole makes address:port drop every connection attempt: a listener with a backlog of 0
// that never accepts, its queue filled.
func blackHole(t *testing.T, address string, port int) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	ip := net.ParseIP(address).To4()
	socketAddress := &syscall.SockaddrInet4{Port: port}
	copy(socketAddress.Addr[:], ip)
	if err := syscall.Bind(fd, socketAddress); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	target := net.JoinHostPort(address, fmt.Sprint(port))
	for i := 0; ; i++ {
		conn, err := net.DialTimeout("tcp", target, 300*time.Millisecond)
		if err != nil {
			break // the queue is full: attempts go unanswered
		}
		t.Cleanup(func() { conn.Close() })
		if i == 10 {
			t.Fatal("the backlog does not fill")
		}
	}
}
