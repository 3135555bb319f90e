package httpdns

import (
	"log"
	"net/http"
	"net/url"
	"strings"
)

// Jar is an http.CookieJar whose cookies live in the daemon's jar, for an http.Client whose
// transport is not this client's Transport (which handles cookies itself): net/http asks it
// on every hop (redirects included) for the Cookie header, and hands it every response's
// cookies. Cookies arrive as net/http parsed them (net/http drops Set-Cookie values it cannot
// parse, as it does for its own cookiejar). The interface sees only the URL, never req.Host:
// for a URL with a host name the cookies are that name's; for an IP literal the daemon keys
// them under the one host name the caller resolved that address for (several: the call fails
// with ambiguous-address, nothing is sent or stored), and by the address itself when it knows
// none. A request to an IP literal naming its host with req.Host needs the Transport. The
// interface has no errors: a failed call goes to OnError (by default the standard logger),
// and the values the daemon refused to the client's Logf.
type Jar struct {
	client *Client
	// OnError is told about calls that failed ("Cookies" or "SetCookies", the URL, the error).
	OnError func(op string, u *url.URL, err error)
}

// Jar returns the http.CookieJar of the daemon's jar.
func (c *Client) Jar() *Jar { return &Jar{client: c} }

func (j *Jar) failed(op string, u *url.URL, err error) {
	if j.OnError != nil {
		j.OnError(op, u, err)
		return
	}
	log.Printf("httpdns: %s %s: %v", op, u.Redacted(), err)
}

// SetCookies stores cookies set by a response from u through the daemon.
func (j *Jar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	if len(cookies) == 0 {
		return
	}
	values := make([]string, 0, len(cookies))
	for _, cookie := range cookies {
		if line := cookie.String(); line != "" {
			values = append(values, line)
		}
	}
	ctx, cancel := j.client.context()
	defer cancel()
	rawURL := withoutUserinfo(u)
	stored, err := j.client.HandleSetCookie(ctx, rawURL, "", values)
	if err != nil {
		j.failed("SetCookies", u, err)
		return
	}
	j.client.reportRejected(rawURL, values, stored)
}

// Cookies returns the cookies the daemon's jar sends to u.
func (j *Jar) Cookies(u *url.URL) []*http.Cookie {
	ctx, cancel := j.client.context()
	defer cancel()
	header, err := j.client.GetCookieHeader(ctx, withoutUserinfo(u), "", nil)
	if err != nil {
		j.failed("Cookies", u, err)
		return nil
	}
	var cookies []*http.Cookie
	for _, pair := range strings.Split(header, "; ") {
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		cookies = append(cookies, &http.Cookie{Name: name, Value: value})
	}
	return cookies
}
