package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SystemDirs are the system directories every fleet may read. Permissions
// inside them are the boundary there: sandboxd's file tools and its
// commands run as a non-root user (confine.ActAs when sandboxd is root).
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// ErrOutside is wrapped by every error for a path outside the agent's data.
var ErrOutside = errors.New("outside the agent's data")

// Root is one directory a fleet's tools may reach.
type Root struct {
	Name     string // "workdir", "agent", "data", "workspace" or "system"
	Path     string // absolute and clean
	Writable bool
}

// Roots are the directories a fleet's tools may reach: the system
// directories, the agent folder, the workdir, the mounted data and the turn's
// workspace. Writes go only to the agent folder, the workdir and the
// workspace. A Roots is immutable after New and safe for concurrent use.
type Roots struct {
	workdir string
	roots   []Root // longest path first, so the innermost root wins
}

// Dirs names the directories of a Roots. Workdir is required; the others
// may be empty. Relative paths are taken from the current directory.
type Dirs struct {
	Workdir   string
	Agent     string
	Data      string
	Workspace string
	System    []string // nil means SystemDirs
}

// New checks that every named directory exists and returns the Roots.
func New(d Dirs) (*Roots, error) {
	if d.Workdir == "" {
		return nil, errors.New("roots: the workdir is required")
	}
	r := &Roots{}
	add := func(name, dir string, writable bool, must bool) error {
		if dir == "" {
			return nil
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("roots: %s %q: %w", name, dir, err)
		}
		// A root named through a symbolic link (/lib → usr/lib) is the
		// directory the link names; checks compare against both spellings.
		info, err := os.Stat(abs)
		if err != nil || !info.IsDir() {
			if !must {
				return nil
			}
			if err == nil {
				err = errors.New("not a directory")
			}
			return fmt.Errorf("roots: %s %q: %w", name, dir, err)
		}
		r.roots = append(r.roots, Root{Name: name, Path: abs, Writable: writable})
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			r.roots = append(r.roots, Root{Name: name, Path: real, Writable: writable})
		}
		return nil
	}
	if err := add("workdir", d.Workdir, true, true); err != nil {
		return nil, err
	}
	r.workdir = r.roots[0].Path
	for _, e := range []struct {
		name, dir string
		writable  bool
	}{{"agent", d.Agent, true}, {"workspace", d.Workspace, true}, {"data", d.Data, false}} {
		if err := add(e.name, e.dir, e.writable, true); err != nil {
			return nil, err
		}
	}
	system := d.System
	if system == nil {
		system = SystemDirs
	}
	for _, dir := range system {
		if err := add("system", dir, false, false); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(r.roots, func(a, b Root) int { return len(b.Path) - len(a.Path) })
	return r, nil
}

// Workdir is the absolute workdir.
func (r *Roots) Workdir() string { return r.workdir }

// All returns the roots, innermost first.
func (r *Roots) All() []Root { return slices.Clone(r.roots) }

// WritablePaths returns the writable roots' paths.
func (r *Roots) WritablePaths() []string {
	var out []string
	for _, rt := range r.roots {
		if rt.Writable {
			out = append(out, rt.Path)
		}
	}
	return out
}

// ReadOnlyPaths returns the read-only roots' paths (data and system).
func (r *Roots) ReadOnlyPaths() []string {
	var out []string
	for _, rt := range r.roots {
		if !rt.Writable {
			out = append(out, rt.Path)
		}
	}
	return out
}

// Abs returns p as a clean absolute path, relative paths taken from the
// workdir. It does not check roots.
func (r *Roots) Abs(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.workdir, p)
	}
	return filepath.Clean(p)
}

// Locate returns the innermost root that lexically holds p (absolute or
// relative to the workdir) and p relative to it. It does not follow links:
// use Open, Stat or OpenRoot for that. The error wraps ErrOutside.
func (r *Roots) Locate(p string) (Root, string, error) {
	if strings.ContainsRune(p, 0) {
		return Root{}, "", fmt.Errorf("%q: %w", p, ErrOutside)
	}
	abs := r.Abs(p)
	for _, rt := range r.roots {
		if rel, ok := within(rt.Path, abs); ok {
			return rt, rel, nil
		}
	}
	return Root{}, "", fmt.Errorf("%s is %w", abs, ErrOutside)
}

// within reports whether abs is root or below it, and the relative path.
func within(root, abs string) (string, bool) {
	if abs == root {
		return ".", true
	}
	prefix := root
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	rel, ok := strings.CutPrefix(abs, prefix)
	return rel, ok
}

// Resolved is a path checked against the roots: the root that really holds
// it (after following links) and an os.Root opened on that root.
type Resolved struct {
	Root Root
	Rel  string   // path inside Root, never escaping it
	FS   *os.Root // the caller closes it with Close
	Abs  string   // the absolute path as named (before links)
}

// Close releases the os.Root.
func (rv *Resolved) Close() error { return rv.FS.Close() }

// Real is the absolute path inside its root.
func (rv *Resolved) Real() string { return filepath.Join(rv.Root.Path, rv.Rel) }

// Resolve checks p against the roots and opens the root that holds it. A
// symbolic link may lead from one root into another (workdir → /usr/share),
// never outside all of them: the path's target is found, checked against the
// roots, and every later access goes through an os.Root on the target's root,
// so a link swapped after the check still cannot lead outside. When write is
// true only a writable root will do. Errors for paths outside wrap
// ErrOutside; a missing file is reported by the later access, not here.
func (r *Roots) Resolve(p string, write bool) (*Resolved, error) {
	rt, rel, err := r.Locate(p)
	if err != nil {
		return nil, err
	}
	abs := r.Abs(p)
	if target, ok := r.linkTarget(abs); ok {
		// The path goes through a link: locate where it really points.
		trt, trel, err := r.Locate(target)
		if err != nil {
			return nil, fmt.Errorf("%s points to %s, which is %w", abs, target, ErrOutside)
		}
		rt, rel = trt, trel
	}
	if write && !rt.Writable {
		return nil, fmt.Errorf("%s is in the read-only %s directory %s: writes go only to the workdir, /agent and the workspace", abs, rt.Name, rt.Path)
	}
	fsys, err := os.OpenRoot(rt.Path)
	if err != nil {
		return nil, fmt.Errorf("open root %s: %w", rt.Path, err)
	}
	return &Resolved{Root: rt, Rel: rel, FS: fsys, Abs: abs}, nil
}

// linkTarget returns where abs really points when a component of it is a
// symbolic link. For a path that does not exist yet, the longest existing
// parent is resolved and the rest appended.
func (r *Roots) linkTarget(abs string) (string, bool) {
	if linkFree(abs) {
		return "", false // what EvalSymlinks would find: abs itself
	}
	existing, rest := abs, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return "", false
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil || real == existing {
		return "", false
	}
	return filepath.Join(real, rest), true
}
