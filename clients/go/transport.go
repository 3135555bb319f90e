package httpdns

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// routes remembers, per host, the addresses its last connection was dialed with, and the
// proxies the transports use (whose names are not the daemon's to resolve).
type routes struct {
	mu      sync.Mutex
	dialed  map[string]string
	proxies map[string]bool
}

func (r *routes) noteProxy(hostport string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proxies == nil {
		r.proxies = map[string]bool{}
	}
	r.proxies[hostport] = true
}

func (r *routes) isProxy(hostport string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proxies[hostport]
}

// moved records host's addresses; it reports whether they differ from the last ones recorded.
func (r *routes) moved(host string, addresses []string) bool {
	key := strings.Join(addresses, ",")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dialed == nil {
		r.dialed = map[string]string{}
	}
	previous, known := r.dialed[host]
	r.dialed[host] = key
	return known && previous != key
}

// dialer is the dialer of one connection attempt.
func (c *Client) dialer() *net.Dialer {
	timeout := c.ConnectTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
}

// DialContext connects to addr ("host:port") at the addresses the daemon gives for host, in
// turn (the next one when a connection fails); an IP literal, or a proxy of a Transport, is
// dialed as it is. When every address of an expired answer (stale: true) fails, the fresh
// answer is asked for (allowStale false) and its addresses are tried before failing. The
// resolves have ctx's deadline, else the client's Timeout (net/http's dial context has none).
func (c *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if net.ParseIP(host) != nil || c.routes.isProxy(addr) {
		return c.dialer().DialContext(ctx, network, addr)
	}
	options := &ResolveOptions{}
	switch network {
	case "tcp4":
		options.Family = "ipv4"
	case "tcp6":
		options.Family = "ipv6"
	}
	answer, err := c.Resolve(ctx, host, options)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &ResolveError{Host: host, Err: err}}
	}
	conn, failures := c.dialEach(ctx, network, port, answer.Addresses())
	if conn == nil && answer.Stale && ctx.Err() == nil {
		// The expired answer's addresses are dead: the fresh answer may live elsewhere.
		fresh := false
		options.AllowStale = &fresh
		if answer, err = c.Resolve(ctx, host, options); err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &ResolveError{Host: host, Err: err}}
		}
		var more []error
		conn, more = c.dialEach(ctx, network, port, answer.Addresses())
		failures = append(failures, more...)
	}
	c.routes.moved(host, answer.Addresses())
	if conn != nil {
		return conn, nil
	}
	if len(failures) == 0 {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("httpdnsd gave no address for %s", host)}
	}
	if len(failures) == 1 {
		return nil, failures[0]
	}
	return nil, &net.OpError{Op: "dial", Net: network, Err: addressFailures(failures)}
}

// dialEach connects to port at each address in turn until one answers; it returns the
// connection, or nil and every address's failure.
func (c *Client) dialEach(ctx context.Context, network, port string, addresses []string) (net.Conn, []error) {
	var failures []error
	for _, address := range addresses {
		conn, err := c.dialer().DialContext(ctx, network, net.JoinHostPort(address, port))
		if err == nil {
			return conn, nil
		}
		failures = append(failures, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, failures
}

// ResolveError is a dial's failed resolve (in a *net.OpError): Err is the daemon's *RPCError
// (HostNotFound, ...) or a *ConnectionError.
type ResolveError struct {
	Host string
	Err  error
}

func (e *ResolveError) Error() string {
	return fmt.Sprintf("httpdnsd could not resolve %s: %v", e.Host, e.Err)
}

func (e *ResolveError) Unwrap() error { return e.Err }

// Timeout makes the *net.OpError (and net/http's *url.Error) around it a timeout when the
// daemon did not answer in time.
func (e *ResolveError) Timeout() bool {
	var timeout interface{ Timeout() bool }
	return errors.As(e.Err, &timeout) && timeout.Timeout()
}

// addressFailures is the failure of every address of a host; it unwraps to the last one and
// is a timeout when every one timed out.
type addressFailures []error

func (e addressFailures) Error() string {
	described := make([]string, len(e))
	for i, failure := range e {
		described[i] = failure.Error()
	}
	return "every address failed: " + strings.Join(described, "; ")
}

func (e addressFailures) Unwrap() error { return e[len(e)-1] }

func (e addressFailures) Timeout() bool {
	for _, failure := range e {
		var timeout interface{ Timeout() bool }
		if !errors.As(failure, &timeout) || !timeout.Timeout() {
			return false
		}
	}
	return true
}

// Transport is the complete path of a net/http request through the daemon: an http.RoundTripper
// whose connections go to the daemon's addresses for each URL's host (the embedded
// *http.Transport, http.DefaultTransport's settings, holds every other setting: TLS, timeouts,
// proxies) and which sends and stores every hop's cookies through the daemon itself, so that
// it needs no Jar (an http.Client with c.Jar() too would store each response's cookies twice).
//
// A request to an IP literal that names its host, with req.Host or a Host header
// (https://127.0.0.3/login with Host app.example.test), connects to that address with TLS
// SNI and the certificate check for the host name, sends that Host, and keys its cookies
// under the host name (the daemon's host param). Without a host name, an address the caller
// resolved for several names is refused before anything is sent (ErrAmbiguousAddress). A
// redirect to another host carries that host's own name: net/http keeps req.Host only for a
// relative Location, and a Host header copied onto a redirect counts only at the same address.
// Set the embedded Transport's fields (TLSClientConfig, ...) before the first request.
type Transport struct {
	*http.Transport
	client *Client
	// CookiesOptional sends a request without its cookies when the daemon cannot give them
	// (an ambiguous address still fails), and hands its response back when the daemon cannot
	// store its cookies, telling the failure to the client's Logf. By default RoundTrip
	// returns the error: a request that needs the session is not sent without it.
	CookiesOptional bool

	mu     sync.Mutex
	pinned map[string]*http.Transport
}

// Transport returns a Transport of this client (see Transport).
func (c *Client) Transport() *Transport {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = c.DialContext
	t := &Transport{Transport: transport, client: c}
	transport.Proxy = c.Proxy(t, transport.Proxy)
	return t
}

// RoundTrip sends one hop: its cookies from the daemon, its Set-Cookie values to the daemon.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("httpdns: a request without a URL")
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		closeBody(req)
		return nil, fmt.Errorf("httpdns: %w %q: only http and https go through httpdnsd", ErrUnsupportedScheme, req.URL.Scheme)
	}
	host, fromHeader := requestHost(req)
	cookieURL := withoutUserinfo(req.URL)
	ctx, cancel := t.client.bounded(req.Context())
	header, err := t.client.GetCookieHeader(ctx, cookieURL, host, nil)
	cancel()
	if err != nil {
		err = explainCookieFailure(req, err)
		// An ambiguous address is the caller's to settle, never the daemon's failure.
		if !t.CookiesOptional || errors.Is(err, ErrAmbiguousAddress) {
			closeBody(req)
			return nil, err
		}
		t.client.logf("httpdns: %s %s sent without its cookies: %v", req.Method, cookieURL, err)
	}
	out := req.Clone(req.Context())
	if fromHeader {
		out.Host = req.Header.Get("Host") // as written, port included
		out.Header.Del("Host")
	}
	if header != "" {
		out.Header.Set("Cookie", mergeCookies(req.Header.Values("Cookie"), header))
	}
	response, err := t.route(out, host).RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if values := response.Header.Values("Set-Cookie"); len(values) > 0 {
		if err := t.store(req, cookieURL, host, values); err != nil {
			if !t.CookiesOptional {
				response.Body.Close()
				return nil, err
			}
			t.client.logf("httpdns: %v", err)
		}
	}
	return response, nil
}

// closeBody closes the body of a request that is not sent, as a RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// store hands a response's Set-Cookie values to the daemon and tells Logf about each one it
// refused (by cookie name: values are secrets).
func (t *Transport) store(req *http.Request, cookieURL, host string, values []string) error {
	ctx, cancel := t.client.bounded(req.Context())
	defer cancel()
	stored, err := t.client.HandleSetCookie(ctx, cookieURL, host, values)
	if err != nil {
		return fmt.Errorf("httpdns: the cookies of %s %s were not stored: %w", req.Method, cookieURL, explainCookieFailure(req, err))
	}
	t.client.reportRejected(cookieURL, values, stored)
	return nil
}

// route is the transport that sends out: the embedded one, or for HTTPS to an IP literal with
// a host name one whose TLS is for that name (net/http takes SNI from the URL), so that its
// pooled connections are per address and name; it is a clone of the embedded one as it is at
// the name's first such request. A request that goes through a proxy is the
// proxy's, as net/http sends it.
func (t *Transport) route(out *http.Request, host string) http.RoundTripper {
	if host == "" || out.URL.Scheme != "https" || net.ParseIP(out.URL.Hostname()) == nil {
		return t.Transport
	}
	if t.Transport.Proxy != nil {
		if proxyURL, err := t.Transport.Proxy(out); err != nil || proxyURL != nil {
			return t.Transport
		}
	}
	host = strings.ToLower(host)
	t.mu.Lock()
	defer t.mu.Unlock()
	if pinned := t.pinned[host]; pinned != nil {
		return pinned
	}
	pinned := t.Transport.Clone()
	pinned.Proxy = nil
	if pinned.TLSClientConfig == nil {
		pinned.TLSClientConfig = &tls.Config{}
	}
	pinned.TLSClientConfig.ServerName = host
	if t.pinned == nil {
		t.pinned = map[string]*http.Transport{}
	}
	t.pinned[host] = pinned
	return pinned
}

// CloseIdleConnections closes the idle connections of every transport it sends with.
func (t *Transport) CloseIdleConnections() {
	t.Transport.CloseIdleConnections()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pinned := range t.pinned {
		pinned.CloseIdleConnections()
	}
}

// requestHost is the host name a request to an IP literal names, and whether it came from a
// Host header (which net/http does not send: it sends req.Host). A Host header counts on a
// redirect only when it stays at the same address, as net/http keeps req.Host only for a
// relative Location. "" for a URL with a host name: that name is the host.
func requestHost(req *http.Request) (string, bool) {
	if net.ParseIP(req.URL.Hostname()) == nil {
		return "", false
	}
	if name := hostName(req.Host); name != "" {
		return name, false
	}
	if req.Response != nil && req.Response.Request != nil && req.Response.Request.URL.Host != req.URL.Host {
		return "", false
	}
	if name := hostName(req.Header.Get("Host")); name != "" {
		return name, true
	}
	return "", false
}

// hostName is the name of a Host value ("" for none, or for an IP literal).
func hostName(value string) string {
	if value == "" {
		return ""
	}
	name := value
	if host, _, err := net.SplitHostPort(value); err == nil {
		name = host
	}
	if net.ParseIP(strings.Trim(name, "[]")) != nil {
		return ""
	}
	return name
}

func withoutUserinfo(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	copied := *u
	copied.User = nil
	return copied.String()
}

// mergeCookies adds the daemon's pairs to the request's own Cookie header, each pair once.
func mergeCookies(own []string, daemon string) string {
	seen := map[string]bool{}
	var pairs []string
	for _, header := range append(own, daemon) {
		for _, pair := range strings.Split(header, ";") {
			pair = strings.TrimSpace(pair)
			if pair != "" && !seen[pair] {
				seen[pair] = true
				pairs = append(pairs, pair)
			}
		}
	}
	return strings.Join(pairs, "; ")
}

// explainCookieFailure says, for an address the caller resolved for several names, which
// names and how to pick one.
func explainCookieFailure(req *http.Request, err error) error {
	var rpcError *RPCError
	if errors.As(err, &rpcError) && rpcError.Reason() == "ambiguous-address" {
		return &AmbiguousAddressError{Address: req.URL.Hostname(), Candidates: rpcError.Candidates(), Err: err}
	}
	return err
}

// Proxy wraps a proxy function (such as http.ProxyURL(u)) for a transport of this client:
// set transport.Proxy = c.Proxy(transport, f) instead of f, so that the proxy's own name is
// dialed as net/http does and connections still follow a host whose address changed.
func (c *Client) Proxy(transport interface{ CloseIdleConnections() }, proxy func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(request *http.Request) (*url.URL, error) {
		if proxy != nil {
			proxyURL, err := proxy(request)
			if err != nil || proxyURL != nil {
				if proxyURL != nil {
					c.routes.noteProxy(canonicalHostPort(proxyURL))
				}
				return proxyURL, err
			}
		}
		c.followMoves(request.Context(), transport, request.URL.Hostname())
		return nil, nil
	}
}

// followMoves closes the transport's idle connections when host's addresses changed since it
// was last dialed, so that the next request connects to the new ones.
func (c *Client) followMoves(ctx context.Context, transport interface{ CloseIdleConnections() }, host string) {
	if host == "" || net.ParseIP(host) != nil {
		return
	}
	answer, err := c.Resolve(ctx, host, nil)
	if err == nil && c.routes.moved(host, answer.Addresses()) {
		transport.CloseIdleConnections()
	}
}

func canonicalHostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "socks5":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
