package web_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var loopback = netip.MustParseAddr("127.0.0.1")

// names is the resolver every test service uses: no test needs DNS. The
// *.example.com names map to loopback (the admitted test server, whose TLS
// certificate covers example.com and *.example.com); the others map to
// addresses the policy refuses, so nothing is ever dialed for them.
var names = egress.Hosts{
	"www.example.com":      {loopback},
	"api.example.com":      {loopback},
	"evil.example.com":     {loopback},
	"search.example.com":   {loopback},
	"pushover.example.com": {loopback},
	"internal.example.com": {netip.MustParseAddr("10.0.0.5")},
	"meta.example.com":     {netip.MustParseAddr("169.254.169.254")},
	"ula.example.com":      {netip.MustParseAddr("fd00::1")},
	"public.example.com":   {netip.MustParseAddr("8.8.8.8")},
}

// server is an httptest server that counts requests per host name, so a
// test can show that nothing reached a host.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func (s *server) hitsFor(host string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[host]
}

// port is the server's port as a string.
func (s *server) port() string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// url is scheme://host:port+path for the server under the name host.
func (s *server) url(host, path string) string {
	scheme := "http"
	if s.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, s.port()) + path
}

func startServer(t *testing.T, tls bool, h http.Handler) *server {
	t.Helper()
	s := &server{hits: map[string]int{}}
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		s.mu.Lock()
		s.hits[host]++
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
	s.Server = httptest.NewUnstartedServer(wrapped)
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // refused TLS handshakes are expected
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newService returns a Service whose escape hatch admits exactly srv.
func newService(t *testing.T, srv *server, mutate ...func(*web.Config)) *web.Service {
	t.Helper()
	cfg := web.Config{
		Resolver:  names,
		AllowAddr: netip.MustParseAddrPort(srv.Listener.Addr().String()),
		Timeout:   10 * time.Second,
		Logger:    quietLog(),
	}
	if srv.TLS != nil {
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		cfg.RootCAs = pool
	}
	for _, m := range mutate {
		m(&cfg)
	}
	svc, err := web.NewService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// fleet is what a Request carries about the fleet.
type fleet struct {
	hosts   []string
	secrets map[string]string
}

func call(t *testing.T, svc *web.Service, tool string, args any, f fleet) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Call(context.Background(), wire.Request{Tool: tool, Arguments: raw, Hosts: f.hosts, Secrets: f.secrets, RunID: "run_test"})
	if err != nil {
		t.Fatalf("%s(%s): Go error %v", tool, raw, err)
	}
	return res
}

func wantError(t *testing.T, res tool.Result, substrings ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("got a normal result %q, want an error result", res.Output)
	}
	for _, s := range substrings {
		if !strings.Contains(res.Output, s) {
			t.Fatalf("error result %q does not contain %q", res.Output, s)
		}
	}
}

// wantText fails unless res is an error result that reads exactly want.
func wantText(t *testing.T, res tool.Result, want string) {
	t.Helper()
	if !res.IsError || res.Output != want {
		t.Fatalf("got %q (error %v), want the error result %q", res.Output, res.IsError, want)
	}
}

func wantOK(t *testing.T, res tool.Result, substrings ...string) {
	t.Helper()
	if res.IsError {
		t.Fatalf("got an error result %q, want a normal result", res.Output)
	}
	for _, s := range substrings {
		if !strings.Contains(res.Output, s) {
			t.Fatalf("result %q does not contain %q", res.Output, s)
		}
	}
}

// countingSource counts reads, to show that a refused request read no
// secret.
type countingSource struct {
	src   secret.Source
	mu    sync.Mutex
	reads int
}

func (c *countingSource) SecretValue(ctx context.Context, id string) (string, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.src.SecretValue(ctx, id)
}

func (c *countingSource) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}
