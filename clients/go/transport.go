package httpdns

import (
	"context"
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

var dialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// DialContext connects to addr ("host:port") at the addresses the daemon gives for host, in
// turn (the next one when a connection fails); an IP literal, or a proxy of a Transport, is
// dialed as it is.
func (c *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if net.ParseIP(host) != nil || c.routes.isProxy(addr) {
		return dialer.DialContext(ctx, network, addr)
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
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("httpdnsd could not resolve %s: %w", host, err)}
	}
	addresses := answer.Addresses()
	c.routes.moved(host, addresses)
	var failures []error
	for _, address := range addresses {
		conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(address, port))
		if err == nil {
			return conn, nil
		}
		failures = append(failures, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(failures) == 0 {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("httpdnsd gave no address for %s", host)}
	}
	if len(failures) == 1 {
		return nil, failures[0]
	}
	described := make([]string, len(failures))
	for i, failure := range failures {
		described[i] = failure.Error()
	}
	return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("every address failed: " + strings.Join(described, "; "))}
}

// Transport returns an *http.Transport set up as http.DefaultTransport (proxies from the
// environment, timeouts, HTTP/2) whose connections go to the daemon's addresses for each URL's
// host; TLS keeps the URL's host for SNI and the certificate check, and the Host header is
// the URL's. Connections are reused per host and address: when a host's answer changes, the
// idle connections are closed. Requests that go through a proxy connect to the proxy as
// net/http does (no IP-direct connection).
func (c *Client) Transport() *http.Transport {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = c.DialContext
	transport.Proxy = c.Proxy(transport, transport.Proxy)
	return transport
}

// Proxy wraps a proxy function (such as http.ProxyURL(u)) for a transport of this client:
// set transport.Proxy = c.Proxy(transport, f) instead of f, so that the proxy's own name is
// dialed as net/http does and connections still follow a host whose address changed.
func (c *Client) Proxy(transport *http.Transport, proxy func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
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
func (c *Client) followMoves(ctx context.Context, transport *http.Transport, host string) {
	if host == "" || net.ParseIP(host) != nil {
		return
	}
	if _, hasDeadline := ctx.Deadline(); !hasDeadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
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
