package httpdns

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemonExecutable is the binary of the daemon serving socket: the process holding it, found
// through /proc, as the tests run as root.
func daemonExecutable(t *testing.T, socket string) string {
	table, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, line := range strings.Split(string(table), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 8 && fields[7] == socket {
			inodes["socket:["+fields[6]+"]"] = true
		}
	}
	descriptors, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, descriptor := range descriptors {
		if target, err := os.Readlink(descriptor); err == nil && inodes[target] {
			executable, err := os.Readlink(filepath.Join(filepath.Dir(filepath.Dir(descriptor)), "exe"))
			if err == nil {
				return executable
			}
		}
	}
	t.Skipf("no process found serving %s", socket)
	return ""
}

// ownDaemon starts a daemon of its own on the fixture's configuration, so that a test may stop
// it; it is continued and ended when the test ends.
func ownDaemon(t *testing.T, w *world) (socket string, process *os.Process) {
	executable := daemonExecutable(t, w.socket)
	directory := t.TempDir()
	socket = filepath.Join(directory, "d.sock")
	command := exec.Command(executable, "--socket", socket, "--state-dir", filepath.Join(directory, "state"),
		"--config", filepath.Join(filepath.Dir(os.Getenv("HTTPDNS_FIXTURE")), "httpdnsd.conf"))
	command.Env = append(os.Environ(), "SWIFT_BACKTRACE=enable=no")
	if err := command.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		command.Process.Signal(syscall.SIGCONT)
		command.Process.Signal(syscall.SIGTERM)
		command.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if info, err := os.Stat(socket); err == nil && info.Mode()&os.ModeSocket != 0 {
			return socket, command.Process
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start")
		}
	}
}

// stoppedDaemon is a client and a transport (no Jar, the fixture's CA) of a daemon of its own,
// stopped with SIGSTOP.
func stoppedDaemon(t *testing.T) (*world, *Client, *Transport) {
	w := fixture(t)
	socket, process := ownDaemon(t, w)
	c, err := Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	transport := fixtureTransport(t, w, c)
	if err := process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return w, c, transport
}

// within runs f and fails the test unless it returns within bound.
func within(t *testing.T, bound time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		t.Fatalf("no answer within %v", bound)
		return nil
	}
}

// A daemon that does not answer costs a request at most the client's Timeout, or the request's
// own deadline, at every daemon call: the resolve of the dial and the cookie lookup.
func TestAStoppedDaemonCostsTheDeadlineOnly(t *testing.T) {
	w, c, transport := stoppedDaemon(t)
	client := &http.Client{Transport: transport}
	tok := token(t)
	c.Timeout = time.Second
	started := time.Now()
	err := within(t, 15*time.Second, func() error {
		_, err := c.Resolve(context.Background(), "go.example.test", nil)
		return err
	})
	var connectionError *ConnectionError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrDaemonUnavailable) ||
		!errors.As(err, &connectionError) || !connectionError.Timeout() || time.Since(started) < time.Second {
		t.Fatalf("resolve without a deadline: %v after %v", err, time.Since(started))
	}
	err = within(t, 15*time.Second, func() error {
		_, err := client.Get(w.url("go.example.test", tok+"/1/echo", "https"))
		return err
	})
	var netError net.Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrDaemonUnavailable) ||
		!errors.As(err, &netError) || !netError.Timeout() {
		t.Fatalf("a request without a deadline: %v", err)
	}
	// The dial's resolve: the timeout is net/http's url.Error's too.
	err = within(t, 15*time.Second, func() error {
		_, err := transport.DialContext(context.Background(), "tcp", "go.example.test:443")
		return err
	})
	var resolveError *ResolveError
	if !errors.As(err, &netError) || !netError.Timeout() || !errors.As(err, &resolveError) || resolveError.Host != "go.example.test" {
		t.Fatalf("a dial: %v", err)
	}
	// The request's deadline, not the client's Timeout, bounds the calls made for it.
	c.Timeout = time.Hour
	err = within(t, 15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		request, _ := http.NewRequestWithContext(ctx, "GET", w.url("go.example.test", tok+"/2/echo", "https"), nil)
		_, err := client.Do(request)
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request with a deadline: %v", err)
	}
	if records := w.requestsWith(t, tok); len(records) != 0 {
		t.Fatalf("sent: %v", records)
	}
}

// A request whose cookies the daemon did not give is not sent without the session, unless
// the transport's CookiesOptional says so (then Logf hears of it).
func TestARequestWithoutItsCookiesIsNotSent(t *testing.T) {
	w, c, transport := stoppedDaemon(t)
	var seen logs
	c.Logf = seen.logf
	c.Timeout = time.Second
	client := &http.Client{Transport: transport}
	tok := token(t)
	get := func(path string) error {
		return within(t, 15*time.Second, func() error {
			request, _ := http.NewRequest("GET", w.url("127.0.0.4", tok+path, "https"), nil)
			request.Host = "go.example.test"
			response, err := client.Do(request)
			if err == nil {
				response.Body.Close()
			}
			return err
		})
	}
	if err := get("/1/echo"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("without the cookies: %v", err)
	}
	if records := w.requestsWith(t, tok); len(records) != 0 {
		t.Fatalf("sent without the session: %v", records)
	}
	transport.CookiesOptional = true
	if err := get("/2/set?cookie=k%3Dv"); err != nil {
		t.Fatal(err)
	}
	if records := w.requestsWith(t, tok); len(records) != 1 || records[0]["cookie"] != nil {
		t.Fatalf("records %v", records)
	}
	if text := seen.String(); !strings.Contains(text, "sent without its cookies") || !strings.Contains(text, "not stored") {
		t.Fatalf("logged %q", text)
	}
}
