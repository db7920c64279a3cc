package sandboxtest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Server is an HTTP server on loopback that counts the requests it serves:
// a page a test's browser opens, or one it must never reach.
type Server struct {
	*httptest.Server
	// Hits is how many requests it served.
	Hits atomic.Int64
}

// NewServer serves h until the end of t.
func NewServer(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}
