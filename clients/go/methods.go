package httpdns

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"sync"
)

// Resolution is a resolve answer. Source is cache, upstream, system, literal, static or fleet.
// TTLs is nil unless family both was asked for.
type Resolution struct {
	Host     string      `json:"host"`
	IPv4     []string    `json:"ipv4"`
	IPv6     []string    `json:"ipv6"`
	TTL      int         `json:"ttl"`
	TTLs     *FamilyTTLs `json:"ttls,omitempty"`
	Stale    bool        `json:"stale"`
	Source   string      `json:"source"`
	Upstream string      `json:"upstream,omitempty"`
	// HostsMapKey is the calling uid's key to the daemon's hosts map, only with the hostsMap
	// param (which the NSS module sends).
	HostsMapKey string `json:"hostsMapKey,omitempty"`
}

// FamilyTTLs is resolve's ttls (family both only): each family's own TTL in seconds, the
// negative answer's for a family without an address.
type FamilyTTLs struct {
	IPv4 int `json:"ipv4"`
	IPv6 int `json:"ipv6"`
}

// Addresses is every address of the answer, IPv4 first (the order connections try them in).
func (r *Resolution) Addresses() []string {
	return append(append([]string{}, r.IPv4...), r.IPv6...)
}

// ResolveOptions are resolve's optional parameters (zero values are left out).
type ResolveOptions struct {
	Family     string // "ipv4", "ipv6" or "both"
	AllowStale *bool
	TimeoutMs  int
}

// ReverseLookup is a reverse answer: the host names the daemon handed Address out for, most
// recent first. Names holds the same hosts in the same order, each with its TTLs.
type ReverseLookup struct {
	Address string        `json:"address"`
	Hosts   []string      `json:"hosts"`
	TTL     int           `json:"ttl"`
	Names   []ReverseName `json:"names"`
}

// ReverseName is one name of a reverse answer: TTL is the seconds its own answer is still valid
// (0 past it), RememberedFor the seconds until the daemon forgets the name for the address.
type ReverseName struct {
	Host          string `json:"host"`
	TTL           int    `json:"ttl"`
	RememberedFor int    `json:"rememberedFor"`
}

// Rejection is one refused Set-Cookie value: its index and why (syntax, domain-mismatch, ...).
type Rejection struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

// StoredCookies is a handleSetCookie answer.
type StoredCookies struct {
	Host     string      `json:"host"`
	Stored   int         `json:"stored"`
	Rejected []Rejection `json:"rejected"`
}

// Cookie is one cookie of the jar as listCookies gives it (Expires nil: a session cookie).
type Cookie struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	Domain      string `json:"domain"`
	HostOnly    bool   `json:"hostOnly"`
	Path        string `json:"path"`
	Expires     *int64 `json:"expires"`
	Secure      bool   `json:"secure"`
	HTTPOnly    bool   `json:"httpOnly"`
	SameSite    string `json:"sameSite"`
	Partitioned bool   `json:"partitioned"`
	Created     int64  `json:"created"`
}

// UpstreamStatus is one configured upstream in a status answer. ServiceAddresses is nil for an
// upstream with one service address. Answered counts the queries it answered since the daemon
// started. Domains (with Route= lines only, else nil) lists the routed domains it is asked for,
// "." standing for the names outside every route. Warning (else empty) says what is wrong with
// the upstream's configuration: a billed upstream that every name outside the routes goes to.
type UpstreamStatus struct {
	Name             string            `json:"name"`
	Kind             string            `json:"kind"`
	Healthy          bool              `json:"healthy"`
	LastError        *string           `json:"lastError"`
	LatencyMs        *float64          `json:"latencyMs"`
	Answered         *int64            `json:"answered,omitempty"`
	Domains          []string          `json:"domains,omitempty"`
	ServiceAddresses *ServiceAddresses `json:"serviceAddresses,omitempty"`
	Warning          string            `json:"warning,omitempty"`
}

// ServiceAddresses is status.upstreams[].serviceAddresses: where an upstream with several service
// addresses sends its queries. Source is configured, boot, persisted or scheduler;
// SchedulerError and NextRefresh (seconds) are nil without a scheduler.
type ServiceAddresses struct {
	Source         string           `json:"source"`
	Current        string           `json:"current"`
	Addresses      []ServiceAddress `json:"addresses"`
	SchedulerError *string          `json:"schedulerError"`
	NextRefresh    *float64         `json:"nextRefresh"`
}

// ServiceAddress is one service address of an upstream: its service failures in a row, and
// whether it is rotated out until its backoff ends.
type ServiceAddress struct {
	Address    string `json:"address"`
	Failures   int    `json:"failures"`
	BackingOff bool   `json:"backingOff"`
}

// NetworkStatus is status.network: whether the daemon watches the machine's address and route
// changes, how many it saw, and the Unix time of the last one (nil before the first).
type NetworkStatus struct {
	Watching   bool   `json:"watching"`
	Changes    int    `json:"changes"`
	LastChange *int64 `json:"lastChange"`
}

// CacheCounters is the DNS cache's counters in status and statistics: entries now, and the
// answers served from it (StaleServed: expired ones), or not, since start (or since the reset).
type CacheCounters struct {
	Entries     int64 `json:"entries"`
	Hits        int64 `json:"hits"`
	Misses      int64 `json:"misses"`
	StaleServed int64 `json:"staleServed"`
}

// FleetStatus is status.fleet (with a [Fleet] section only): the fleet tier as this daemon
// sees it. State is connecting, connected, unreachable, authentication-failed or full;
// LastError (never a secret) is kept after recovery; LastStateChange is Unix seconds; Lag is
// the seconds between a change's publication and its application here as last measured (nil
// before the first read); Outbox counts local changes of shared jars not yet taken, Rejected
// fleet entries that failed to open or verify.
type FleetStatus struct {
	Connected       bool     `json:"connected"`
	State           string   `json:"state"`
	LastError       *string  `json:"lastError"`
	LastStateChange int64    `json:"lastStateChange"`
	Lag             *float64 `json:"lag"`
	Outbox          int64    `json:"outbox"`
	Rejected        int64    `json:"rejected"`
}

// Status is a status answer; Raw holds the whole result (members a newer daemon adds too).
type Status struct {
	Version string        `json:"version"`
	Uptime  float64       `json:"uptime"`
	Cache   CacheCounters `json:"cache"`
	Cookies struct {
		Count int `json:"count"`
	} `json:"cookies"`
	Upstreams []UpstreamStatus `json:"upstreams"`
	// Fleet is nil without a [Fleet] section.
	Fleet *FleetStatus `json:"fleet,omitempty"`
	// Network is nil from a daemon that does not send it.
	Network *NetworkStatus  `json:"network,omitempty"`
	Raw     json.RawMessage `json:"-"`
}

// CookieHeaderOptions are getCookieHeader's optional parameters.
type CookieHeaderOptions struct {
	ForScript          bool
	SiteForCookies     string
	TopLevelNavigation bool
}

// DeleteCookiesParams selects what deleteCookies deletes: exactly one of URL, Domain and All;
// Name narrows it to cookies of that name. Host is the real host of an IP-literal URL.
type DeleteCookiesParams struct {
	URL    string
	Host   string
	Domain string
	All    bool
	Name   string
}

// URLHost is the host name of rawURL as this client parses it, or "" when the URL names an IP
// literal (then an explicit host, or the daemon's per-user address memory, decides).
func URLHost(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		return ""
	}
	return host
}

func cookieParams(rawURL, host string) map[string]any {
	params := map[string]any{"url": rawURL}
	if host == "" {
		host = URLHost(rawURL)
	}
	if host != "" {
		params["host"] = host
	}
	return params
}

// Resolve calls resolve: the addresses of host.
func (c *Client) Resolve(ctx context.Context, host string, options *ResolveOptions) (*Resolution, error) {
	params := map[string]any{"host": host}
	if options != nil {
		if options.Family != "" {
			params["family"] = options.Family
		}
		if options.AllowStale != nil {
			params["allowStale"] = *options.AllowStale
		}
		if options.TimeoutMs > 0 {
			params["timeoutMs"] = options.TimeoutMs
		}
	}
	var result Resolution
	if err := c.Call(ctx, "resolve", params, &result); err != nil {
		return nil, err
	}
	return &result, nil
}

// Reverse calls reverse: the host names the daemon handed address out for, to this user.
func (c *Client) Reverse(ctx context.Context, address string) (*ReverseLookup, error) {
	var result ReverseLookup
	if err := c.Call(ctx, "reverse", map[string]any{"address": address}, &result); err != nil {
		return nil, err
	}
	return &result, nil
}

// Forget calls forget for address (an IP literal): drops this user's own memory of it, every
// name it was handed out for, and returns how many addresses were forgotten (0 or 1). The cache,
// the jar and other users' memory stay. An empty address is refused before asking the daemon.
func (c *Client) Forget(ctx context.Context, address string) (int, error) {
	if address == "" {
		return 0, errors.New("httpdns: forget: an empty address (ForgetAll forgets every address)")
	}
	return c.forget(ctx, map[string]any{"address": address})
}

// ForgetAll calls forget with all: true: drops every address of this user's own memory and
// returns how many there were.
func (c *Client) ForgetAll(ctx context.Context) (int, error) {
	return c.forget(ctx, map[string]any{"all": true})
}

func (c *Client) forget(ctx context.Context, params map[string]any) (int, error) {
	var result ForgetResult
	err := c.Call(ctx, "forget", params, &result)
	return result.Forgotten, err
}

// GetCookieHeader calls getCookieHeader: the Cookie header value for a request to rawURL (""
// for none). host names the real host when rawURL holds an IP literal; "" means the URL's own
// host name, so the jar never guesses.
func (c *Client) GetCookieHeader(ctx context.Context, rawURL, host string, options *CookieHeaderOptions) (string, error) {
	params := cookieParams(rawURL, host)
	if options != nil {
		if options.ForScript {
			params["forScript"] = true
		}
		if options.SiteForCookies != "" {
			params["siteForCookies"] = options.SiteForCookies
		}
		if options.TopLevelNavigation {
			params["topLevelNavigation"] = true
		}
	}
	var result CookieHeaderResult
	if err := c.Call(ctx, "getCookieHeader", params, &result); err != nil {
		return "", err
	}
	return result.Header, nil
}

// HandleSetCookie calls handleSetCookie: stores a response's Set-Cookie values for rawURL.
func (c *Client) HandleSetCookie(ctx context.Context, rawURL, host string, setCookie []string) (*StoredCookies, error) {
	params := cookieParams(rawURL, host)
	params["setCookie"] = append([]string{}, setCookie...)
	var result StoredCookies
	if err := c.Call(ctx, "handleSetCookie", params, &result); err != nil {
		return nil, err
	}
	return &result, nil
}

// DeleteCookies calls deleteCookies and returns how many cookies were deleted.
func (c *Client) DeleteCookies(ctx context.Context, which DeleteCookiesParams) (int, error) {
	params := map[string]any{}
	if which.URL != "" {
		params = cookieParams(which.URL, which.Host)
	}
	if which.Domain != "" {
		params["domain"] = which.Domain
	}
	if which.All {
		params["all"] = true
	}
	if which.Name != "" {
		params["name"] = which.Name
	}
	var result DeleteCookiesResult
	err := c.Call(ctx, "deleteCookies", params, &result)
	return result.Deleted, err
}

// ListCookies calls listCookies: this user's cookies (of domain and its subdomains when given).
func (c *Client) ListCookies(ctx context.Context, domain string) ([]Cookie, error) {
	var params map[string]any
	if domain != "" {
		params = map[string]any{"domain": domain}
	}
	var result ListCookiesResult
	if err := c.Call(ctx, "listCookies", params, &result); err != nil {
		return nil, err
	}
	return result.Cookies, nil
}

// ImportCookies calls importCookies with Netscape cookies.txt text; returns the count.
func (c *Client) ImportCookies(ctx context.Context, data string) (int, error) {
	var result ImportCookiesResult
	err := c.Call(ctx, "importCookies", map[string]any{"data": data}, &result)
	return result.Imported, err
}

// ExportCookies calls exportCookies: this user's jar as Netscape cookies.txt text (Data),
// and the cookies that text could not hold (LeftOut).
func (c *Client) ExportCookies(ctx context.Context) (*ExportCookiesResult, error) {
	var result ExportCookiesResult
	if err := c.Call(ctx, "exportCookies", nil, &result); err != nil {
		return nil, err
	}
	return &result, nil
}

// FlushCache calls flushCache (root and the daemon's user only) for host, or for every host
// when host is ""; returns how many entries were dropped.
func (c *Client) FlushCache(ctx context.Context, host string) (int, error) {
	var params map[string]any
	if host != "" {
		params = map[string]any{"host": host}
	}
	var result FlushCacheResult
	err := c.Call(ctx, "flushCache", params, &result)
	return result.Flushed, err
}

// Status calls status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var result Status
	raw, err := c.callKeepingRaw(ctx, "status", &result)
	if err != nil {
		return nil, err
	}
	result.Raw = raw
	return &result, nil
}

// callKeepingRaw calls method without params, decodes its result into result and returns the
// result's JSON too (for the Raw member of an answer type).
func (c *Client) callKeepingRaw(ctx context.Context, method string, result any) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, method, nil, &raw); err != nil {
		return nil, err
	}
	return raw, json.Unmarshal(raw, result)
}

// Discover calls rpc.discover: the daemon's OpenRPC document (DiscoverResult reads its top
// members).
func (c *Client) Discover(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.Call(ctx, "rpc.discover", nil, &raw)
	return raw, err
}

// CacheEntry is one entry of showCache. Upstream is nil when the daemon does not know it.
type CacheEntry struct {
	Host      string   `json:"host"`
	Family    string   `json:"family"`
	Addresses []string `json:"addresses"`
	TTL       int      `json:"ttl"`
	Stale     bool     `json:"stale"`
	Upstream  *string  `json:"upstream"`
}

// ShowCache calls showCache: the cache entries the caller may see, by host, then family.
func (c *Client) ShowCache(ctx context.Context) ([]CacheEntry, error) {
	var result ShowCacheResult
	err := c.Call(ctx, "showCache", nil, &result)
	return result.Entries, err
}

// UpstreamStatistics is one upstream's counters in statistics.
type UpstreamStatistics struct {
	Name     string `json:"name"`
	Queries  int64  `json:"queries"`
	Failures int64  `json:"failures"`
}

// CookieCounters is statistics.cookies: Set-Cookie values stored and rejected, cookies
// deleted and Cookie headers given, since Since.
type CookieCounters struct {
	Stored   int64 `json:"stored"`
	Rejected int64 `json:"rejected"`
	Deleted  int64 `json:"deleted"`
	Headers  int64 `json:"headers"`
}

// Statistics is a statistics answer; Raw holds all of it (members a newer daemon adds too).
type Statistics struct {
	Since     int64                `json:"since"`
	Upstreams []UpstreamStatistics `json:"upstreams"`
	Cache     CacheCounters        `json:"cache"`
	Cookies   CookieCounters       `json:"cookies"`
	Raw       json.RawMessage      `json:"-"`
}

// Statistics calls statistics: every user's counters since Since (Unix seconds).
func (c *Client) Statistics(ctx context.Context) (*Statistics, error) {
	var result Statistics
	raw, err := c.callKeepingRaw(ctx, "statistics", &result)
	if err != nil {
		return nil, err
	}
	result.Raw = raw
	return &result, nil
}

// ResetStatistics calls resetStatistics (root and the daemon's user only); returns the new
// since (Unix seconds).
func (c *Client) ResetStatistics(ctx context.Context) (int64, error) {
	var result ResetStatisticsResult
	err := c.Call(ctx, "resetStatistics", nil, &result)
	return result.Since, err
}

// Metrics calls metrics: the Prometheus text exposition (format 0.0.4).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	var result MetricsResult
	err := c.Call(ctx, "metrics", nil, &result)
	return result.Text, err
}

// MonitorEvent is the params of one monitorEvent notification; Raw holds all of it (the
// members of its type: addresses, error, cookie action, dropped count, ...).
type MonitorEvent struct {
	Time int64           `json:"time"`
	Type string          `json:"type"`
	UID  int             `json:"uid"`
	Host string          `json:"host"`
	Raw  json.RawMessage `json:"-"`
}

// Monitor is one monitor subscription on a connection of its own.
type Monitor struct {
	// Scope is "all" (every user's events) or "own".
	Scope string
	// QueueLimit is how many events the daemon holds for the subscription before it drops
	// them (a "dropped" event says how many).
	QueueLimit int

	cn     *conn
	events chan MonitorEvent
	stop   chan struct{}
	once   sync.Once
}

// Events delivers the subscription's events; it is closed when the connection ends (Close, or
// the daemon closing it).
func (m *Monitor) Events() <-chan MonitorEvent { return m.events }

// Close ends the subscription and closes its connection.
func (m *Monitor) Close() error {
	m.once.Do(func() {
		close(m.stop)
		m.cn.close()
	})
	return nil
}

// Monitor calls monitor on a new connection: events caused after it returns are delivered on
// the Monitor's Events channel until Close.
func (c *Client) Monitor(ctx context.Context) (*Monitor, error) {
	ctx, cancel := c.bounded(ctx) // the subscription itself lasts until Close
	defer cancel()
	m := &Monitor{events: make(chan MonitorEvent, 64), stop: make(chan struct{})}
	cn, err := openConn(ctx, c.socket, func(n Notification) {
		if n.Method != "monitorEvent" {
			return
		}
		event := MonitorEvent{Raw: n.Params}
		if json.Unmarshal(n.Params, &event) != nil {
			return
		}
		select {
		case m.events <- event:
		case <-m.stop:
		}
	})
	if err != nil {
		return nil, err
	}
	m.cn = cn
	go func() {
		<-cn.finished
		close(m.events)
	}()
	msg, err := cn.call(ctx, "monitor", nil)
	if err == nil {
		var result MonitorResult
		err = decodeAnswer("monitor", msg, &result)
		m.Scope, m.QueueLimit = result.Scope, result.QueueLimit
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// The results of the calls whose typed method gives one member, for Call, each member as the
// OpenRPC document has it.
type (
	// CookieHeaderResult is getCookieHeader's: the header and the number of cookies in it.
	CookieHeaderResult struct {
		Header string `json:"header"`
		Count  int    `json:"count"`
	}
	// ForgetResult is forget's: how many addresses the caller's memory no longer holds.
	ForgetResult struct {
		Forgotten int `json:"forgotten"`
	}
	// DeleteCookiesResult is deleteCookies's.
	DeleteCookiesResult struct {
		Deleted int `json:"deleted"`
	}
	// ListCookiesResult is listCookies's.
	ListCookiesResult struct {
		Cookies []Cookie `json:"cookies"`
	}
	// ImportCookiesResult is importCookies's.
	ImportCookiesResult struct {
		Imported int `json:"imported"`
	}
	// ExportCookiesResult is exportCookies's: the cookies.txt text, and the cookies left out
	// of it (nil when none was).
	ExportCookiesResult struct {
		Data    string          `json:"data"`
		LeftOut []LeftOutCookie `json:"leftOut,omitempty"`
	}
	// LeftOutCookie names a cookie exportCookies left out.
	LeftOutCookie struct {
		Domain string `json:"domain"`
		Path   string `json:"path"`
		Name   string `json:"name"`
	}
	// FlushCacheResult is flushCache's.
	FlushCacheResult struct {
		Flushed int `json:"flushed"`
	}
	// ShowCacheResult is showCache's.
	ShowCacheResult struct {
		Entries []CacheEntry `json:"entries"`
	}
	// ResetStatisticsResult is resetStatistics's: the new since (Unix seconds).
	ResetStatisticsResult struct {
		Since int64 `json:"since"`
	}
	// MetricsResult is metrics's: the text and its Content-Type.
	MetricsResult struct {
		ContentType string `json:"contentType"`
		Text        string `json:"text"`
	}
	// MonitorResult is monitor's answer, before its notifications.
	MonitorResult struct {
		Scope      string `json:"scope"`
		QueueLimit int    `json:"queueLimit"`
	}
	// DiscoverResult is the top of rpc.discover's document.
	DiscoverResult struct {
		OpenRPC string            `json:"openrpc"`
		Info    map[string]any    `json:"info"`
		Methods []json.RawMessage `json:"methods"`
	}
)
