package server

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// folderTimeout bounds one restore or save, transfer included.
const folderTimeout = 10 * time.Minute

// AgentRoot is the path of roots' agent folder, or "" when it has none:
// Options.Agent for a sandboxd serving those roots.
func AgentRoot(roots *sandbox.Roots) string {
	if roots == nil {
		return ""
	}
	for _, rt := range roots.All() {
		if rt.Name == "agent" {
			return rt.Path
		}
	}
	return ""
}

// agentFolder restores and saves the fleet's folder. One operation runs at
// a time. The security boundary is the Agent root: every write of a
// restore goes through an os.Root on it, and an archive is checked whole
// before anything is changed (names local, no "..", regular files,
// directories and links that stay inside, no hardlinks); the URLs given are
// the only places sandboxd reaches, https or http to loopback.
type agentFolder struct {
	dir  string
	http *http.Client

	mu       sync.Mutex
	restored bool   // a restore was made (sandboxd restores once)
	version  string // its AgentRestore.Version
	failed   string // why it failed, when it did
}

func newAgentFolder(dir string) *agentFolder {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return &agentFolder{dir: dir, http: &http.Client{
		Transport: t,
		// A presigned URL is answered where it points; a redirect would
		// lead sandboxd somewhere the runner did not choose.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// folderError is a refusal with its HTTP status.
type folderError struct {
	status int
	msg    string
}

func (e *folderError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) *folderError {
	return &folderError{status: status, msg: fmt.Sprintf(format, args...)}
}

// folderRequest authenticates r and decodes its body into v; it answers
// and returns false when it cannot.
func (s *Server) folderRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxd"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return false
	}
	if s.folder == nil {
		writeError(w, http.StatusNotFound, "this sandboxd serves no fleet folder (sandboxd --agent)")
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxBodyBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "the body could not be read")
		return false
	}
	if !wire.IsObject(body) || json.Unmarshal(body, v) != nil {
		writeError(w, http.StatusBadRequest, `the body must be a JSON object {"url": "…"}`)
		return false
	}
	return true
}

func (s *Server) agentRestore(w http.ResponseWriter, r *http.Request) {
	var req wire.AgentRestore
	if !s.folderRequest(w, r, &req) {
		return
	}
	s.begin()
	defer s.end()
	f := s.folder
	if req.URL != "" {
		if err := checkStorageURL(req.URL); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.restored {
		if f.failed != "" {
			writeError(w, http.StatusConflict, "the fleet's folder was restored before and that failed: "+f.failed)
			return
		}
		writeJSON(w, http.StatusOK, wire.AgentResult{Version: f.version, Already: true})
		return
	}
	f.restored = true
	ctx, cancel := context.WithTimeout(r.Context(), folderTimeout)
	defer cancel()
	start := time.Now()
	res, err := f.restore(ctx, req)
	if err != nil {
		f.failed = err.msg
		s.log.Warn("restore the fleet's folder", "status", err.status, "err", err.msg)
		writeError(w, err.status, err.msg)
		return
	}
	f.version = req.Version
	res.Version = req.Version
	s.log.Info("restored the fleet's folder", "files", res.Files, "bytes", res.Bytes, "ms", time.Since(start).Milliseconds())
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) agentSave(w http.ResponseWriter, r *http.Request) {
	var req wire.AgentSave
	if !s.folderRequest(w, r, &req) {
		return
	}
	s.begin()
	defer s.end()
	if err := checkStorageURL(req.URL); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	f := s.folder
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), folderTimeout)
	defer cancel()
	start := time.Now()
	res, err := f.save(ctx, req)
	if err != nil {
		s.log.Warn("save the fleet's folder", "status", err.status, "err", err.msg)
		writeError(w, err.status, err.msg)
		return
	}
	s.log.Info("saved the fleet's folder", "files", res.Files, "bytes", res.Bytes, "archive", res.Archive,
		"skipped", len(res.Skipped), "ms", time.Since(start).Milliseconds())
	writeJSON(w, http.StatusOK, res)
}

// checkStorageURL refuses a URL that is not https, or http to a loopback
// address (tests), or that carries credentials of its own.
func checkStorageURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errors.New("the url must be an absolute https URL")
	}
	if u.User != nil {
		return errors.New("the url must not carry a user or password")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		h := u.Hostname()
		if ip := net.ParseIP(h); strings.EqualFold(h, "localhost") || ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("the url must be https: plain http is allowed to a loopback address only, not %s", u.Host)
	}
	return errors.New("the url must be an absolute https URL")
}

// setHeaders copies the signed headers onto req; those the transport sets
// itself are left out.
func setHeaders(req *http.Request, h map[string]string) {
	for k, v := range h {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Authorization":
			continue
		}
		req.Header.Set(k, v)
	}
}

// storageFailed is a refusal for an answer of the storage that is not 2xx,
// with the start of its body (S3's error code).
func storageFailed(what string, resp *http.Response) *folderError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	msg := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
	if msg != "" {
		msg = ": " + msg
	}
	return refuse(http.StatusBadGateway, "%s: the storage answered %d %s%s", what, resp.StatusCode, http.StatusText(resp.StatusCode), msg)
}

// entry is one member of an archive, as checked.
type entry struct {
	name   string // clean, local, slash-separated
	kind   byte   // tar.TypeReg, tar.TypeDir or tar.TypeSymlink
	target string // a link's target, relative
	size   int64
	mode   fs.FileMode
}

// cleanName returns an archive name as a clean local path, or why not.
func cleanName(name string) (string, string) {
	if strings.ContainsRune(name, 0) || strings.Contains(name, "\\") {
		return "", "the name holds a NUL or a backslash"
	}
	if strings.HasPrefix(name, "/") {
		return "", "an absolute path"
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", `a path with ".."`
		}
	}
	clean := path.Clean(strings.TrimPrefix(name, "./"))
	if clean == "." || clean == "" {
		return ".", ""
	}
	return clean, ""
}

// linkProblem says why a link at name with target (relative, as stored)
// would not stay inside the folder, or "" when it does. links are the
// archive's links: a path through another link is refused, so that where a
// link leads is decided by its text alone.
func linkProblem(name, target string, links map[string]bool) string {
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsRune(target, 0) {
		return "a link with an absolute or empty target"
	}
	to := path.Join(path.Dir(name), target)
	if to == ".." || strings.HasPrefix(to, "../") {
		return fmt.Sprintf("a link leading out of the folder (to %s)", target)
	}
	if p := throughLink(to, links); p != "" {
		return fmt.Sprintf("a link whose target goes through the link %s", p)
	}
	return ""
}

// throughLink returns the first proper parent of p that is a link.
func throughLink(p string, links map[string]bool) string {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && links[p[:i]] {
			return p[:i]
		}
	}
	return ""
}

// restore replaces the folder with the archive at req.URL (or empties it).
func (f *agentFolder) restore(ctx context.Context, req wire.AgentRestore) (wire.AgentResult, *folderError) {
	var archive int64
	var tmp *os.File
	if req.URL != "" {
		var ferr *folderError
		tmp, archive, ferr = f.download(ctx, req)
		if ferr != nil {
			return wire.AgentResult{}, ferr
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		if _, ferr = readEntries(tmp, nil); ferr != nil {
			return wire.AgentResult{}, ferr
		}
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return wire.AgentResult{}, refuse(http.StatusInternalServerError, "open the fleet's folder: %v", err)
	}
	defer root.Close()
	if err := clearRoot(root); err != nil {
		return wire.AgentResult{}, refuse(http.StatusInternalServerError, "empty the fleet's folder: %v", err)
	}
	res := wire.AgentResult{Archive: archive}
	if tmp == nil {
		return res, nil
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return wire.AgentResult{}, refuse(http.StatusInternalServerError, "reread the archive: %v", err)
	}
	_, ferr := readEntries(tmp, func(e entry, r io.Reader) error {
		res.Files++
		res.Bytes += e.size
		return unpack(root, e, r)
	})
	if ferr != nil {
		return wire.AgentResult{}, ferr
	}
	return res, nil
}

// download fetches the archive into a temporary file, at most
// wire.MaxAgentArchive bytes.
func (f *agentFolder) download(ctx context.Context, req wire.AgentRestore) (*os.File, int64, *folderError) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return nil, 0, refuse(http.StatusBadRequest, "the url cannot be requested")
	}
	setHeaders(hreq, req.Header)
	resp, err := f.http.Do(hreq)
	if err != nil {
		return nil, 0, refuse(http.StatusBadGateway, "download the fleet's folder: %v", unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, storageFailed("download the fleet's folder", resp)
	}
	if resp.ContentLength > wire.MaxAgentArchive {
		return nil, 0, refuse(http.StatusRequestEntityTooLarge, "the fleet's folder archive is %d bytes, more than the %d allowed", resp.ContentLength, wire.MaxAgentArchive)
	}
	tmp, err := os.CreateTemp("", "sandboxd-agent-*.tar.gz")
	if err != nil {
		return nil, 0, refuse(http.StatusInternalServerError, "a temporary file for the archive: %v", err)
	}
	n, err := io.Copy(tmp, io.LimitReader(resp.Body, wire.MaxAgentArchive+1))
	switch {
	case err != nil:
		err = fmt.Errorf("download the fleet's folder: %v", err)
	case n > wire.MaxAgentArchive:
		err = refuse(http.StatusRequestEntityTooLarge, "the fleet's folder archive is more than the %d bytes allowed", wire.MaxAgentArchive)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		var fe *folderError
		if errors.As(err, &fe) {
			return nil, 0, fe
		}
		return nil, 0, refuse(http.StatusBadGateway, "%v", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, 0, refuse(http.StatusInternalServerError, "reread the archive: %v", err)
	}
	return tmp, n, nil
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err // its text repeats the URL, signature included
	}
	return err
}

// readEntries reads the tar.gz in r. With each nil it checks every entry
// and the caps and returns the entries; otherwise it calls each for every
// entry with its content, in archive order (the check was made before).
func readEntries(r io.Reader, each func(entry, io.Reader) error) ([]entry, *folderError) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "the fleet's folder archive is not gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	var entries []entry
	links := map[string]bool{}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, refuse(http.StatusBadRequest, "the fleet's folder archive is not a tar: %v", err)
		}
		name, why := cleanName(h.Name)
		if why != "" {
			return nil, refuse(http.StatusBadRequest, "the archive entry %q is refused: %s", limitName(h.Name), why)
		}
		e := entry{name: name, size: h.Size, mode: fs.FileMode(h.Mode) & fs.ModePerm}
		switch h.Typeflag {
		case tar.TypeReg, '\x00': // '\x00': a regular file by the old format (tar.TypeRegA)
			e.kind = tar.TypeReg
		case tar.TypeDir:
			e.kind, e.size = tar.TypeDir, 0
		case tar.TypeSymlink:
			e.kind, e.target, e.size = tar.TypeSymlink, h.Linkname, 0
			links[name] = true
		case tar.TypeLink:
			return nil, refuse(http.StatusBadRequest, "the archive entry %q is refused: a hardlink (only regular files, directories and links inside the folder)", limitName(h.Name))
		default:
			return nil, refuse(http.StatusBadRequest, "the archive entry %q is refused: type %q is not a regular file, directory or link", limitName(h.Name), string(h.Typeflag))
		}
		if name == "." && e.kind != tar.TypeDir {
			return nil, refuse(http.StatusBadRequest, "the archive entry %q is refused: it names the folder itself", limitName(h.Name))
		}
		if each != nil {
			if name == "." {
				continue
			}
			if err := each(e, tr); err != nil {
				return nil, refuse(http.StatusInternalServerError, "unpack %q: %v", limitName(name), err)
			}
			continue
		}
		total += e.size
		if len(entries) >= wire.MaxAgentFiles {
			return nil, refuse(http.StatusRequestEntityTooLarge, "the fleet's folder archive has more than %d entries", wire.MaxAgentFiles)
		}
		if total > wire.MaxAgentUnpacked {
			return nil, refuse(http.StatusRequestEntityTooLarge, "the fleet's folder archive unpacks to more than %d bytes", int64(wire.MaxAgentUnpacked))
		}
		entries = append(entries, e)
	}
	if each != nil {
		return nil, nil
	}
	kinds := map[string]byte{}
	for _, e := range entries {
		if _, dup := kinds[e.name]; dup && e.name != "." {
			return nil, refuse(http.StatusBadRequest, "the archive entry %q is refused: it comes twice", limitName(e.name))
		}
		kinds[e.name] = e.kind
	}
	for _, e := range entries {
		for i := 0; i < len(e.name); i++ {
			if e.name[i] == '/' && kinds[e.name[:i]] == tar.TypeReg {
				return nil, refuse(http.StatusBadRequest, "the archive entry %q is refused: it lies under the file %s", limitName(e.name), e.name[:i])
			}
		}
		if p := throughLink(e.name, links); p != "" {
			return nil, refuse(http.StatusBadRequest, "the archive entry %q is refused: it goes through the link %s", limitName(e.name), p)
		}
		if e.kind == tar.TypeSymlink {
			if why := linkProblem(e.name, e.target, links); why != "" {
				return nil, refuse(http.StatusBadRequest, "the archive entry %q is refused: %s", limitName(e.name), why)
			}
		}
	}
	return entries, nil
}

func limitName(s string) string {
	if len(s) > 200 {
		return strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

// clearRoot removes everything inside root, not root itself (it may be a
// mount).
func clearRoot(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := root.RemoveAll(n); err != nil {
			return err
		}
	}
	return nil
}

// unpack writes one checked entry through root.
func unpack(root *os.Root, e entry, r io.Reader) error {
	if dir := path.Dir(e.name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	switch e.kind {
	case tar.TypeDir:
		if err := root.MkdirAll(e.name, 0o755); err != nil {
			return err
		}
		return root.Chmod(e.name, e.mode|0o700)
	case tar.TypeSymlink:
		return root.Symlink(e.target, e.name)
	}
	out, err := root.OpenFile(e.name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, e.mode|0o600)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, r, e.size); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// save packs the folder and uploads it.
func (f *agentFolder) save(ctx context.Context, req wire.AgentSave) (wire.AgentResult, *folderError) {
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return wire.AgentResult{}, refuse(http.StatusInternalServerError, "open the fleet's folder: %v", err)
	}
	defer root.Close()
	entries, skipped, ferr := f.walk(root)
	if ferr != nil {
		return wire.AgentResult{}, ferr
	}
	tmp, err := os.CreateTemp("", "sandboxd-agent-*.tar.gz")
	if err != nil {
		return wire.AgentResult{}, refuse(http.StatusInternalServerError, "a temporary file for the archive: %v", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	res := wire.AgentResult{}
	lw := &limitWriter{w: tmp, n: wire.MaxAgentArchive}
	zw := gzip.NewWriter(lw)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		note, err := pack(root, tw, e)
		if err != nil {
			if lw.over {
				return wire.AgentResult{}, refuse(http.StatusRequestEntityTooLarge, "the fleet's folder is more than %d bytes compressed: remove files from it (build outputs, caches)", wire.MaxAgentArchive)
			}
			return wire.AgentResult{}, refuse(http.StatusInternalServerError, "pack %q: %v", limitName(e.name), err)
		}
		if note != "" {
			skipped = append(skipped, e.name+": "+note)
		}
		res.Files++
		res.Bytes += e.size
	}
	err = tw.Close()
	if err == nil {
		err = zw.Close()
	}
	if lw.over {
		return wire.AgentResult{}, refuse(http.StatusRequestEntityTooLarge, "the fleet's folder is more than %d bytes compressed: remove files from it (build outputs, caches)", wire.MaxAgentArchive)
	}
	if err != nil {
		return wire.AgentResult{}, refuse(http.StatusInternalServerError, "finish the archive: %v", err)
	}
	res.Archive = lw.written
	if len(skipped) > wire.MaxAgentSkipped {
		skipped = append(skipped[:wire.MaxAgentSkipped], fmt.Sprintf("and %d more", len(skipped)-wire.MaxAgentSkipped))
	}
	res.Skipped = skipped
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return wire.AgentResult{}, refuse(http.StatusInternalServerError, "reread the archive: %v", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPut, req.URL, io.NopCloser(tmp))
	if err != nil {
		return wire.AgentResult{}, refuse(http.StatusBadRequest, "the url cannot be requested")
	}
	hreq.ContentLength = res.Archive
	hreq.Header.Set("Content-Type", "application/gzip")
	setHeaders(hreq, req.Header)
	resp, err := f.http.Do(hreq)
	if err != nil {
		return wire.AgentResult{}, refuse(http.StatusBadGateway, "upload the fleet's folder: %v", unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fe := storageFailed("upload the fleet's folder", resp)
		if resp.StatusCode == http.StatusPreconditionFailed {
			fe.msg += " (the stored folder changed since it was restored: another run saved it meanwhile)"
		}
		return wire.AgentResult{}, fe
	}
	return res, nil
}

// walk lists the folder in a stable order: directories, regular files and
// links that stay inside it; the rest is skipped with a note.
func (f *agentFolder) walk(root *os.Root) ([]entry, []string, *folderError) {
	var entries []entry
	var skipped []string
	var total int64
	links := map[string]bool{}
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			skipped = append(skipped, p+": "+err.Error())
			return nil
		}
		if p == "." {
			return nil
		}
		e := entry{name: p}
		switch t := d.Type(); {
		case t.IsDir():
			e.kind = tar.TypeDir
		case t.IsRegular():
			e.kind = tar.TypeReg
		case t&fs.ModeSymlink != 0:
			target, err := root.Readlink(p)
			if err != nil {
				skipped = append(skipped, p+": "+err.Error())
				return nil
			}
			if filepath.IsAbs(target) {
				// A link to /agent/x is kept as a link to x.
				rel, ok := inside(f.dir, p, target)
				if !ok {
					skipped = append(skipped, p+": a link leading out of the folder (to "+target+")")
					return nil
				}
				target = rel
			}
			e.kind, e.target = tar.TypeSymlink, target
			links[p] = true
		default:
			skipped = append(skipped, p+": not a regular file, directory or link")
			return nil
		}
		info, err := d.Info()
		if err != nil {
			skipped = append(skipped, p+": "+err.Error())
			return nil
		}
		e.mode = info.Mode().Perm()
		if e.kind == tar.TypeReg {
			e.size = info.Size()
		}
		total += e.size
		if len(entries) >= wire.MaxAgentFiles {
			return refuse(http.StatusRequestEntityTooLarge, "the fleet's folder has more than %d entries: remove files from it", wire.MaxAgentFiles)
		}
		if total > wire.MaxAgentUnpacked {
			return refuse(http.StatusRequestEntityTooLarge, "the fleet's folder holds more than %d bytes: remove files from it", int64(wire.MaxAgentUnpacked))
		}
		entries = append(entries, e)
		return nil
	})
	var fe *folderError
	if errors.As(err, &fe) {
		return nil, nil, fe
	}
	if err != nil {
		return nil, nil, refuse(http.StatusInternalServerError, "list the fleet's folder: %v", err)
	}
	// Links that a restore would refuse are left out, saying so.
	kept := entries[:0]
	for _, e := range entries {
		if e.kind == tar.TypeSymlink {
			if why := linkProblem(e.name, e.target, links); why != "" {
				skipped = append(skipped, e.name+": "+why)
				continue
			}
		}
		kept = append(kept, e)
	}
	return kept, skipped, nil
}

// inside returns the absolute link target, as a path relative to the link
// at name in the folder dir, when it lies inside dir.
func inside(dir, name, target string) (string, bool) {
	rel, err := filepath.Rel(dir, filepath.Clean(target))
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	r, err := filepath.Rel(filepath.Dir(filepath.FromSlash(name)), rel)
	if err != nil {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// pack writes e to tw, its content read through root. A file that shrank
// while it was read is padded, and said so.
func pack(root *os.Root, tw *tar.Writer, e entry) (note string, err error) {
	h := &tar.Header{Name: e.name, Mode: int64(e.mode), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	switch e.kind {
	case tar.TypeDir:
		h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		return "", tw.WriteHeader(h)
	case tar.TypeSymlink:
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.target
		return "", tw.WriteHeader(h)
	}
	in, err := root.Open(e.name)
	if err != nil {
		return "", err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("it is no longer a regular file")
	}
	h.Typeflag, h.Size, h.ModTime = tar.TypeReg, e.size, info.ModTime()
	if err := tw.WriteHeader(h); err != nil {
		return "", err
	}
	n, err := io.CopyN(tw, in, e.size)
	if err == io.EOF {
		if _, err := io.CopyN(tw, zeros{}, e.size-n); err != nil {
			return "", err
		}
		return "it shrank while it was saved; the rest is zeros", nil
	}
	return "", err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// limitWriter fails past n bytes.
type limitWriter struct {
	w       io.Writer
	n       int64
	written int64
	over    bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.written+int64(len(p)) > l.n {
		l.over = true
		return 0, errors.New("past the cap")
	}
	n, err := l.w.Write(p)
	l.written += int64(n)
	return n, err
}
