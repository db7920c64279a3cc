//go:build linux

package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
)

// store stands in for S3 on loopback: one object, GET and PUT.
type store struct {
	mu   sync.Mutex
	data []byte
}

func (s *store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodPut {
		if r.Header.Get("If-None-Match") == "*" && s.data != nil {
			http.Error(w, "<Code>PreconditionFailed</Code>", http.StatusPreconditionFailed)
			return
		}
		s.data, _ = io.ReadAll(r.Body)
		return
	}
	w.Write(s.data)
}

func folderClient(t *testing.T, agent string) *client.Client {
	t.Helper()
	const token = "client-folder-token-0123456789"
	srv, err := server.New(server.Options{Token: token, Agent: agent, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return newClient(t, client.Config{URL: ts.URL, Token: token})
}

func TestFolderSaveAndRestore(t *testing.T) {
	t.Parallel()
	st := &store{}
	ts := httptest.NewServer(st)
	t.Cleanup(ts.Close)
	url := ts.URL + "/b/fleets/f/agent.tar.gz"
	ctx := context.Background()

	one := t.TempDir()
	if err := os.WriteFile(filepath.Join(one, "notes.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	cone := folderClient(t, one)
	res, err := cone.SaveAgent(ctx, url, http.Header{"If-None-Match": {"*"}})
	if err != nil || res.Files != 1 || res.Bytes != 4 {
		t.Fatalf("save: %+v, %v", res, err)
	}
	// The object exists now: the same conditional save is refused.
	_, err = cone.SaveAgent(ctx, url, http.Header{"If-None-Match": {"*"}})
	wantError(t, err, client.ErrStorage, http.StatusBadGateway, "412")

	two := t.TempDir()
	res, err = folderClient(t, two).RestoreAgent(ctx, url, nil, "etag-1")
	if err != nil || res.Files != 1 || res.Version != "etag-1" {
		t.Fatalf("restore: %+v, %v", res, err)
	}
	if got, _ := os.ReadFile(filepath.Join(two, "notes.txt")); string(got) != "kept" {
		t.Errorf("notes.txt = %q, want kept", got)
	}

	_, err = cone.SaveAgent(ctx, "http://example.com/x", nil)
	e := wantError(t, err, client.ErrBadRequest, http.StatusBadRequest, "loopback")
	if strings.Contains(e.Error(), ts.URL) {
		t.Errorf("the error %q holds the storage URL", e)
	}
	_, err = folderClient(t, "").RestoreAgent(ctx, url, nil, "")
	if !errors.Is(err, client.ErrNoFolder) {
		t.Errorf("restore without a folder: %v, want ErrNoFolder", err)
	}
}
