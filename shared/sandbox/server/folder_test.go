package server_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

const folderToken = "folder-test-token-0123456789"

// bucket stands in for S3 on loopback: GET and PUT of one object, with
// If-Match and If-None-Match: * on PUT as S3 has them.
type bucket struct {
	mu   sync.Mutex
	data []byte
	etag int
	puts int
}

func (b *bucket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		if b.data == nil {
			http.Error(w, "<Code>NoSuchKey</Code>", http.StatusNotFound)
			return
		}
		w.Write(b.data)
	case http.MethodPut:
		if r.ContentLength < 0 {
			http.Error(w, "<Code>MissingContentLength</Code>", http.StatusLengthRequired)
			return
		}
		cur := strconv.Itoa(b.etag)
		if m := r.Header.Get("If-Match"); m != "" && (b.data == nil || m != cur) ||
			r.Header.Get("If-None-Match") == "*" && b.data != nil {
			http.Error(w, "<Code>PreconditionFailed</Code>", http.StatusPreconditionFailed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		b.data, b.puts = body, b.puts+1
		b.etag++
	}
}

func newBucket(t *testing.T) (*bucket, string) {
	b := &bucket{}
	ts := httptest.NewServer(b)
	t.Cleanup(ts.Close)
	return b, ts.URL + "/bucket/fleets/f/agent.tar.gz"
}

// folderAPI is a sandboxd serving agent as the fleet's folder.
func folderAPI(t *testing.T, agent string) string {
	t.Helper()
	srv, err := server.New(server.Options{Token: folderToken, Agent: agent, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL
}

// post sends body to sandboxd's path and returns the status and answer.
func post(t *testing.T, base, path string, body any) (int, wire.AgentResult, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
	req.Header.Set(wire.AuthorizationHeader, wire.Bearer(folderToken))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var res wire.AgentResult
	var eb wire.ErrorBody
	if resp.StatusCode == http.StatusOK {
		json.Unmarshal(raw, &res)
	} else {
		json.Unmarshal(raw, &eb)
	}
	return resp.StatusCode, res, eb.Error
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFolderRoundTrip(t *testing.T) {
	t.Parallel()
	b, url := newBucket(t)
	one := t.TempDir()
	writeFile(t, filepath.Join(one, "notes.txt"), "remember this\n")
	writeFile(t, filepath.Join(one, "repo", "src", "main.go"), "package main\n")
	os.Mkdir(filepath.Join(one, "empty"), 0o755)
	os.Symlink("notes.txt", filepath.Join(one, "link"))
	os.Symlink(filepath.Join(one, "repo", "src"), filepath.Join(one, "abs-inside"))
	os.Symlink("/etc/passwd", filepath.Join(one, "out"))
	os.Symlink("../../..", filepath.Join(one, "repo", "up"))

	status, res, msg := post(t, folderAPI(t, one), wire.AgentSavePath, wire.AgentSave{URL: url})
	if status != http.StatusOK {
		t.Fatalf("save: %d %s", status, msg)
	}
	if b.puts != 1 || res.Archive != int64(len(b.data)) {
		t.Errorf("save put %d times, archive %d bytes, stored %d", b.puts, res.Archive, len(b.data))
	}
	skipped := strings.Join(res.Skipped, "\n")
	if !strings.Contains(skipped, "out: a link leading out") || !strings.Contains(skipped, "repo/up: a link leading out") {
		t.Errorf("skipped %q, want out and repo/up named", skipped)
	}

	two := t.TempDir()
	writeFile(t, filepath.Join(two, "stale.txt"), "from another fleet")
	api := folderAPI(t, two)
	status, res, msg = post(t, api, wire.AgentRestorePath, wire.AgentRestore{URL: url, Version: "v1"})
	if status != http.StatusOK {
		t.Fatalf("restore: %d %s", status, msg)
	}
	if got, err := os.ReadFile(filepath.Join(two, "notes.txt")); string(got) != "remember this\n" {
		t.Errorf("notes.txt = %q, %v", got, err)
	}
	if got, _ := os.ReadFile(filepath.Join(two, "repo", "src", "main.go")); string(got) != "package main\n" {
		t.Errorf("repo/src/main.go = %q", got)
	}
	if got, err := os.Readlink(filepath.Join(two, "link")); got != "notes.txt" {
		t.Errorf("link -> %q, %v", got, err)
	}
	if got, err := os.Readlink(filepath.Join(two, "abs-inside")); got != "repo/src" {
		t.Errorf("abs-inside -> %q, %v: an absolute link inside is kept relative", got, err)
	}
	if info, err := os.Stat(filepath.Join(two, "empty")); err != nil || !info.IsDir() {
		t.Errorf("empty/ not restored: %v", err)
	}
	for _, gone := range []string{"stale.txt", "out", "repo/up"} {
		if _, err := os.Lstat(filepath.Join(two, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is there after the restore (%v), want it gone", gone, err)
		}
	}
	if res.Version != "v1" || res.Already {
		t.Errorf("restore result %+v", res)
	}

	// A second restore (a runner invoked again) changes nothing.
	writeFile(t, filepath.Join(two, "work.txt"), "this run's work")
	status, res, _ = post(t, api, wire.AgentRestorePath, wire.AgentRestore{URL: url, Version: "v2"})
	if status != http.StatusOK || !res.Already || res.Version != "v1" {
		t.Errorf("second restore: %d %+v, want already with v1", status, res)
	}
	if _, err := os.Stat(filepath.Join(two, "work.txt")); err != nil {
		t.Errorf("the second restore wiped the run's work: %v", err)
	}

	// A conditional save on a stale version is refused by the storage.
	status, _, msg = post(t, api, wire.AgentSavePath, wire.AgentSave{URL: url, Header: map[string]string{"If-Match": "0"}})
	if status != http.StatusBadGateway || !strings.Contains(msg, "412") || !strings.Contains(msg, "another run") {
		t.Errorf("stale save: %d %q, want 502 saying 412 and another run", status, msg)
	}
}

// archive builds a tar.gz of entries.
func archive(t *testing.T, hs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range hs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg && h.Size > 0 && h.Size < 1<<20 {
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func file(name string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}
}

func link(name, target string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}
}

func TestFolderRestoreRefusesUnsafeEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		entries []*tar.Header
		want    string
	}{
		{"traversal", []*tar.Header{file("ok.txt"), file("../evil.txt")}, `"../evil.txt" is refused: a path with ".."`},
		{"inner traversal", []*tar.Header{file("a/../../evil.txt")}, `"a/../../evil.txt" is refused`},
		{"absolute", []*tar.Header{file("/etc/cron.d/evil")}, `"/etc/cron.d/evil" is refused: an absolute path`},
		{"symlink out", []*tar.Header{link("l", "../../etc")}, `"l" is refused: a link leading out`},
		{"absolute symlink", []*tar.Header{link("l", "/etc")}, `"l" is refused: a link with an absolute`},
		{"write through a link", []*tar.Header{link("l", "sub"), file("l/x")}, `"l/x" is refused: it goes through the link l`},
		{"link out through ..", []*tar.Header{link("p", "."), link("q", "p/../..")}, `"q" is refused: a link leading out`},
		{"link through a link", []*tar.Header{link("p", "sub"), link("q", "p/x")}, `"q" is refused: a link whose target goes through the link p`},
		{"hardlink", []*tar.Header{file("a"), {Name: "h", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"}}, `"h" is refused: a hardlink`},
		{"device", []*tar.Header{{Name: "dev", Typeflag: tar.TypeChar}}, `"dev" is refused: type`},
		{"twice", []*tar.Header{file("a"), file("a")}, `"a" is refused: it comes twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, url := newBucket(t)
			b.data = archive(t, tc.entries...)
			agent := t.TempDir()
			writeFile(t, filepath.Join(agent, "kept.txt"), "still here")
			status, _, msg := post(t, folderAPI(t, agent), wire.AgentRestorePath, wire.AgentRestore{URL: url})
			if status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
				t.Errorf("got %d %q, want 400 with %q", status, msg, tc.want)
			}
			if _, err := os.Stat(filepath.Join(agent, "kept.txt")); err != nil {
				t.Errorf("a refused archive changed the folder: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(agent), "evil.txt")); err == nil {
				t.Errorf("evil.txt was written outside the folder")
			}
		})
	}
}

func TestFolderCaps(t *testing.T) {
	t.Parallel()
	// A declared length past the cap is refused before it is read.
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(wire.MaxAgentArchive+1))
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(big.Close)
	status, _, msg := post(t, folderAPI(t, t.TempDir()), wire.AgentRestorePath, wire.AgentRestore{URL: big.URL + "/x"})
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "more than") {
		t.Errorf("big archive: %d %q, want 413", status, msg)
	}

	// A small archive that would unpack past the cap.
	b, url := newBucket(t)
	b.data = archive(t, &tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Mode: 0o644, Size: wire.MaxAgentUnpacked + 1})
	status, _, msg = post(t, folderAPI(t, t.TempDir()), wire.AgentRestorePath, wire.AgentRestore{URL: url})
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "unpacks to more than") {
		t.Errorf("bomb: %d %q, want 413", status, msg)
	}
}

func TestFolderURLs(t *testing.T) {
	t.Parallel()
	api := folderAPI(t, t.TempDir())
	for _, u := range []string{"http://example.com/bucket/key", "http://10.0.0.1/x", "ftp://127.0.0.1/x", "https://user:pw@example.com/x", "/relative"} {
		status, _, msg := post(t, api, wire.AgentSavePath, wire.AgentSave{URL: u})
		if status != http.StatusBadRequest || !strings.Contains(msg, "url") {
			t.Errorf("save to %s: %d %q, want 400", u, status, msg)
		}
	}
	status, _, msg := post(t, api, wire.AgentRestorePath, wire.AgentRestore{URL: "http://example.com/x"})
	if status != http.StatusBadRequest || !strings.Contains(msg, "loopback") {
		t.Errorf("restore from plain http: %d %q, want 400", status, msg)
	}

	// Missing token, and a sandboxd without a folder.
	req, _ := http.NewRequest(http.MethodPost, api+wire.AgentSavePath, strings.NewReader(`{"url":"https://x/y"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	srv, _ := server.New(server.Options{Token: folderToken, Logger: quietLog()})
	none := httptest.NewServer(srv)
	t.Cleanup(none.Close)
	if status, _, _ := post(t, none.URL, wire.AgentSavePath, wire.AgentSave{URL: "https://x/y"}); status != http.StatusNotFound {
		t.Errorf("no folder: %d, want 404", status)
	}
}

func TestFolderRestoreOfNothingEmptiesIt(t *testing.T) {
	t.Parallel()
	agent := t.TempDir()
	writeFile(t, filepath.Join(agent, "old", "x"), "x")
	status, res, msg := post(t, folderAPI(t, agent), wire.AgentRestorePath, wire.AgentRestore{})
	if status != http.StatusOK || res.Files != 0 {
		t.Fatalf("%d %+v %s", status, res, msg)
	}
	if names, _ := os.ReadDir(agent); len(names) != 0 {
		t.Errorf("the folder holds %v, want nothing", names)
	}
}
