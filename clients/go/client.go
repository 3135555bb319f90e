// Package httpdns is the Go client of httpdnsd, the machine's HTTPDNS cache and shared cookie
// jar, over its JSON-RPC socket (httpdnsd-rpc(7)). Standard library only.
//
//	c, err := httpdns.Dial("") // the socket rules of httpdnsd-rpc(7)
//	client := &http.Client{Transport: c.Transport()}
//
// is the whole setup for net/http: every connection goes to the addresses the daemon gives for
// the URL's host (TLS and the Host header keep the host name; an IP URL with req.Host is that
// host at that address) and every cookie lives in the daemon's jar, shared with every other
// process of the user. c.Jar() is an http.CookieJar for other transports.
package httpdns

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// SystemSocket is the system instance's socket.
const SystemSocket = "/run/httpdnsd/httpdnsd.sock"

// maxLine bounds what one answer line may make the reader hold (an exported jar is the largest).
const maxLine = 256 << 20

// SocketPath returns the socket httpdnsd-rpc(7) says to use: explicit when not empty, else
// $HTTPDNSD_SOCKET, else the per-user socket when $XDG_RUNTIME_DIR is set and it exists, else
// the system socket.
func SocketPath(explicit string) string {
	if explicit != "" {
		return explicit
	}
	if fromEnvironment := os.Getenv("HTTPDNSD_SOCKET"); fromEnvironment != "" {
		return fromEnvironment
	}
	if runtime := os.Getenv("XDG_RUNTIME_DIR"); runtime != "" {
		perUser := filepath.Join(runtime, "httpdnsd", "httpdnsd.sock")
		if _, err := os.Stat(perUser); err == nil {
			return perUser
		}
	}
	return SystemSocket
}

// RPCError is an error answer of the daemon: the JSON-RPC code, the daemon's message and the
// error's data object as sent (Data["name"] is the stable name: "InvalidParams",
// "HostNotFound", ...; other members such as "field", "reason" or "candidates" are kept
// whatever they are).
type RPCError struct {
	Method  string
	Code    int
	Message string
	Data    map[string]any
}

func (e *RPCError) Error() string {
	var details []string
	for key, value := range e.Data {
		if key != "name" {
			details = append(details, fmt.Sprintf("%s=%v", key, value))
		}
	}
	text := fmt.Sprintf("httpdnsd: %s: %s (%d %s", e.Method, e.Message, e.Code, e.Name())
	if len(details) > 0 {
		text += ": " + strings.Join(details, ", ")
	}
	return text + ")"
}

func (e *RPCError) member(key string) string {
	value, _ := e.Data[key].(string)
	return value
}

// Name is data.name: "InvalidParams", "HostNotFound", "LimitExceeded", ...
func (e *RPCError) Name() string { return e.member("name") }

// Field is data.field: the parameter an InvalidParams error is about.
func (e *RPCError) Field() string { return e.member("field") }

// Reason is data.reason: "ambiguous-address", "ambiguous-url", an upstream's failure, ...
func (e *RPCError) Reason() string { return e.member("reason") }

// Candidates is data.candidates: the host names of an "ambiguous-address" refusal.
func (e *RPCError) Candidates() []string {
	list, _ := e.Data["candidates"].([]any)
	names := make([]string, 0, len(list))
	for _, item := range list {
		if name, ok := item.(string); ok {
			names = append(names, name)
		}
	}
	return names
}

// Is reports an "ambiguous-address" refusal as ErrAmbiguousAddress.
func (e *RPCError) Is(target error) bool {
	return target == ErrAmbiguousAddress && e.Reason() == "ambiguous-address"
}

var (
	// ErrClosed is returned by calls on a closed Client.
	ErrClosed = errors.New("httpdns: client closed")
	// ErrAmbiguousAddress is what errors.Is finds in a refusal of a cookie call for an IP
	// literal that the caller resolved for several host names (an *RPCError, and the
	// Transport's *AmbiguousAddressError).
	ErrAmbiguousAddress = errors.New("httpdns: ambiguous address")
	// ErrUnsupportedScheme is what errors.Is finds when the Transport is given a URL that is
	// neither http nor https.
	ErrUnsupportedScheme = errors.New("unsupported protocol scheme")
	// ErrDaemonUnavailable is what errors.Is finds in a *ConnectionError.
	ErrDaemonUnavailable = errors.New("httpdns: httpdnsd unavailable")
)

// AmbiguousAddressError is the Transport's refusal, before sending, of a request to an IP
// literal that names no host when the caller resolved that address for several names.
type AmbiguousAddressError struct {
	Address    string
	Candidates []string
	Err        error // the daemon's *RPCError
}

func (e *AmbiguousAddressError) Error() string {
	return fmt.Sprintf("httpdns: %s is the address of several host names you resolved (%s): "+
		"name the one meant with req.Host (or a Host header)", e.Address, strings.Join(e.Candidates, ", "))
}

func (e *AmbiguousAddressError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrAmbiguousAddress) true.
func (e *AmbiguousAddressError) Is(target error) bool { return target == ErrAmbiguousAddress }

// ConnectionError says that the daemon could not be reached, closed the connection before
// answering, or did not answer within the call's deadline (then errors.Is finds
// context.DeadlineExceeded, and Timeout is true). errors.Is(err, ErrDaemonUnavailable) finds
// it too.
type ConnectionError struct {
	Socket string
	Err    error
	// retryable: the request went out on a connection that had answered before and had
	// nothing else in flight; the daemon closes only idle connections without answering
	// (IdleTimeout=), so it never read that request.
	retryable bool
}

func (e *ConnectionError) Error() string {
	return fmt.Sprintf("httpdns: httpdnsd at %s: %v", e.Socket, e.Err)
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDaemonUnavailable) true.
func (e *ConnectionError) Is(target error) bool { return target == ErrDaemonUnavailable }

// Timeout is net.Error's: the daemon did not answer within the deadline (or the connection
// timed out).
func (e *ConnectionError) Timeout() bool {
	var timeout interface{ Timeout() bool }
	return errors.As(e.Err, &timeout) && timeout.Timeout()
}

// Temporary is net.Error's (deprecated there): false.
func (e *ConnectionError) Temporary() bool { return false }

// Notification is a message of the daemon without an id (what a streaming method sends after
// its answer).
type Notification struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

type message struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
	Params json.RawMessage  `json:"params"`
	Result json.RawMessage  `json:"result"`
	Error  *wireError       `json:"error"`
}

type outcome struct {
	msg message
	err error
}

type pendingCall struct {
	answer    chan outcome
	retryable bool
}

// conn is one connection: a reader goroutine routes answers to their callers by id (the
// daemon may answer out of order) and notifications to onNotification.
type conn struct {
	socket         string
	nc             net.Conn
	writeMu        sync.Mutex
	mu             sync.Mutex
	nextID         uint64
	answers        int
	pending        map[uint64]*pendingCall
	closedErr      error
	onNotification func(Notification)
	// finished is closed when the reader goroutine has ended, after every notification.
	finished chan struct{}
}

func openConn(ctx context.Context, socket string, onNotification func(Notification)) (*conn, error) {
	var dialer net.Dialer
	nc, err := dialer.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, &ConnectionError{Socket: socket, Err: err}
	}
	cn := &conn{socket: socket, nc: nc, pending: map[uint64]*pendingCall{}, onNotification: onNotification,
		finished: make(chan struct{})}
	go cn.read()
	return cn, nil
}

func (cn *conn) closed() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.closedErr != nil
}

func (cn *conn) send(method string, params any) (uint64, *pendingCall, error) {
	request := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		request["params"] = params
	}
	cn.mu.Lock()
	if cn.closedErr != nil {
		cn.mu.Unlock()
		return 0, nil, &ConnectionError{Socket: cn.socket, Err: cn.closedErr, retryable: true}
	}
	cn.nextID++
	id := cn.nextID
	call := &pendingCall{answer: make(chan outcome, 1), retryable: len(cn.pending) == 0 && cn.answers > 0}
	cn.pending[id] = call
	cn.mu.Unlock()
	request["id"] = id
	line, err := json.Marshal(request)
	if err != nil {
		cn.forget(id)
		return 0, nil, fmt.Errorf("httpdns: %s: params: %w", method, err)
	}
	cn.writeMu.Lock()
	_, err = cn.nc.Write(append(line, '\n'))
	cn.writeMu.Unlock()
	if err != nil {
		cn.shut(err)
	}
	return id, call, nil
}

func (cn *conn) forget(id uint64) {
	cn.mu.Lock()
	delete(cn.pending, id)
	cn.mu.Unlock()
}

func (cn *conn) close() {
	cn.shut(ErrClosed)
	cn.nc.Close()
}

func (cn *conn) shut(reason error) {
	cn.mu.Lock()
	if cn.closedErr == nil {
		cn.closedErr = reason
	}
	pending := cn.pending
	cn.pending = map[uint64]*pendingCall{}
	cn.mu.Unlock()
	for _, call := range pending {
		call.answer <- outcome{err: &ConnectionError{Socket: cn.socket, Err: reason, retryable: call.retryable}}
	}
}

func (cn *conn) read() {
	defer close(cn.finished)
	scanner := bufio.NewScanner(cn.nc)
	scanner.Buffer(make([]byte, 64<<10), maxLine)
	reason := errors.New("the daemon closed the connection")
	var orphan *wireError
	for scanner.Scan() {
		line := scanner.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var messages []message
		if line[0] == '[' {
			if err := json.Unmarshal(line, &messages); err != nil {
				reason = fmt.Errorf("the daemon sent a line that is not JSON-RPC: %v", err)
				break
			}
		} else {
			var single message
			if err := json.Unmarshal(line, &single); err != nil {
				reason = fmt.Errorf("the daemon sent a line that is not JSON-RPC: %v", err)
				break
			}
			messages = []message{single}
		}
		for _, msg := range messages {
			cn.dispatch(msg, &orphan)
		}
	}
	if err := scanner.Err(); err != nil {
		reason = err
	}
	if orphan != nil {
		reason = fmt.Errorf("the daemon closed the connection after error %d: %s", orphan.Code, orphan.Message)
	}
	cn.mu.Lock()
	if orphan != nil {
		for _, call := range cn.pending {
			call.retryable = false
		}
	}
	cn.mu.Unlock()
	cn.shut(reason)
	cn.nc.Close()
}

func (cn *conn) dispatch(msg message, orphan **wireError) {
	if msg.ID == nil && msg.Method != "" {
		if cn.onNotification != nil {
			cn.onNotification(Notification{Method: msg.Method, Params: msg.Params})
		}
		return
	}
	var id uint64
	if msg.ID == nil || json.Unmarshal(*msg.ID, &id) != nil {
		if msg.Error != nil {
			*orphan = msg.Error // id null: a line too large, a line timeout
		}
		return
	}
	cn.mu.Lock()
	call := cn.pending[id]
	delete(cn.pending, id)
	cn.answers++
	cn.mu.Unlock()
	if call != nil {
		call.answer <- outcome{msg: msg}
	}
}

// call sends one request on cn and waits for its answer or ctx.
func (cn *conn) call(ctx context.Context, method string, params any) (message, error) {
	id, pending, err := cn.send(method, params)
	if err != nil {
		return message{}, err
	}
	select {
	case answer := <-pending.answer:
		return answer.msg, answer.err
	case <-ctx.Done():
		cn.forget(id)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return message{}, &ConnectionError{Socket: cn.socket, Err: fmt.Errorf("no answer to %s: %w", method, ctx.Err())}
		}
		return message{}, fmt.Errorf("httpdns: %s: %w", method, ctx.Err())
	}
}

// Client is a connection to httpdnsd shared by every goroutine that uses it. It connects again
// when the daemon has closed the connection (an idle timeout, a restart).
type Client struct {
	socket string
	// Timeout bounds every call whose context has no deadline (30 s by default): the Jar's,
	// the Transport's and those given context.Background().
	Timeout time.Duration
	// ConnectTimeout bounds each connection attempt of DialContext to one address (30 s by
	// default), so that a dead address leaves time for the next one.
	ConnectTimeout time.Duration
	// Logf is told what the adapters cannot return as an error: Set-Cookie values the daemon
	// refused (by cookie name and reason) and failures that the Jar's interface, or the
	// Transport's CookiesOptional, lets pass. nil means log.Printf.
	Logf func(format string, args ...any)

	mu     sync.Mutex
	cn     *conn
	closed bool

	routes routes
}

// Dial connects to the daemon at socket ("" for the rules of SocketPath).
func Dial(socket string) (*Client, error) {
	c := &Client{socket: SocketPath(socket), Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.connection(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Socket is the path of the daemon's socket.
func (c *Client) Socket() string { return c.socket }

func (c *Client) connection(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.cn == nil || c.cn.closed() {
		cn, err := openConn(ctx, c.socket, nil)
		if err != nil {
			return nil, err
		}
		c.cn = cn
	}
	return c.cn, nil
}

// Close closes the connection; calls after it return ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	cn := c.cn
	c.cn = nil
	c.mu.Unlock()
	if cn != nil {
		cn.close()
	}
	return nil
}

// Call calls method with params (a value that encodes to a JSON object, or nil) and decodes
// the answer's result into result (nil to drop it). An error answer is an *RPCError; an
// unreachable daemon a *ConnectionError. Without a deadline in ctx the call has the client's
// Timeout.
func (c *Client) Call(ctx context.Context, method string, params any, result any) error {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		cn, err := c.connection(ctx)
		if err != nil {
			return err
		}
		msg, err := cn.call(ctx, method, params)
		var connectionError *ConnectionError
		if errors.As(err, &connectionError) && connectionError.retryable && attempt == 0 {
			continue // the daemon closed the idle connection before reading the request
		}
		if err != nil {
			return err
		}
		return decodeAnswer(method, msg, result)
	}
}

// decodeAnswer turns an answer into an *RPCError or decodes its result into result (nil to
// drop it).
func decodeAnswer(method string, msg message, result any) error {
	if msg.Error != nil {
		rpcError := &RPCError{Method: method, Code: msg.Error.Code, Message: msg.Error.Message}
		if len(msg.Error.Data) > 0 {
			if err := json.Unmarshal(msg.Error.Data, &rpcError.Data); err != nil {
				rpcError.Data = map[string]any{"value": string(msg.Error.Data)}
			}
		}
		return rpcError
	}
	if msg.Result == nil {
		return fmt.Errorf("httpdns: %s: an answer with neither result nor error", method)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(msg.Result, result); err != nil {
		return fmt.Errorf("httpdns: %s: malformed result: %w", method, err)
	}
	return nil
}

func (c *Client) context() (context.Context, context.CancelFunc) {
	return c.bounded(context.Background())
}

// bounded is ctx when it has a deadline, else ctx with the client's Timeout.
func (c *Client) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, hasDeadline := ctx.Deadline(); hasDeadline {
		return ctx, func() {}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return context.WithTimeout(ctx, timeout)
}

func (c *Client) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// reportRejected tells Logf about each Set-Cookie value the daemon refused, by its cookie's
// name (the values are secrets).
func (c *Client) reportRejected(rawURL string, values []string, stored *StoredCookies) {
	for _, rejection := range stored.Rejected {
		name := "?"
		if rejection.Index >= 0 && rejection.Index < len(values) {
			name, _, _ = strings.Cut(values[rejection.Index], "=")
			name = strings.TrimSpace(name)
		}
		c.logf("httpdns: the cookie %q from %s was refused (%s) and not stored", name, rawURL, rejection.Reason)
	}
}
