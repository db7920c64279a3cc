package files

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Glob is the glob tool. It walks the tree through os.Root, one directory
// at a time, so no link leads it outside the root it starts in; it skips
// .git and does not follow symbolic links to directories. Safe for
// concurrent use.
type Glob struct {
	*tool.Def[sandbox.GlobArgs]
	roots   *sandbox.Roots
	timeout time.Duration
}

var _ tool.Tool = (*Glob)(nil)

// NewGlob returns the glob tool over roots. A search stops after timeout
// (the fleet's tool_timeout_seconds; zero means no limit), or after the
// call's own (sandbox.WithToolTimeout), and says so.
func NewGlob(roots *sandbox.Roots, timeout time.Duration) *Glob {
	return &Glob{Def: sandbox.Glob, roots: roots, timeout: timeout}
}

// Run finds the files matching the pattern.
func (t *Glob) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	pattern, res, ok := checkGlobPattern(args.Pattern)
	if !ok {
		return res, nil
	}
	limit := args.MaxResults
	shown := args.Path
	if shown == "" {
		shown = "the workdir"
	}
	rv, res, err := resolve(t.roots, "glob", args.Path)
	if rv == nil {
		return res, err
	}
	defer rv.Close()

	// A literal leading part of the pattern ("src/" in "src/**/*.go")
	// names where to start, so the rest of the tree is not walked.
	base, rest := ".", pattern
	if strings.Contains(pattern, "/") {
		base, rest = doublestar.SplitPattern(pattern)
		if base == "" {
			base = "."
		}
	}
	start := path.Join(rv.Rel, base)
	info, err := rv.FS.Stat(start)
	if err != nil {
		if base != "." && !os.IsPermission(err) {
			return tool.Text(noGlobMatch(args.Pattern, shown)), nil
		}
		if res, ok := fsResult("glob", shown, err); ok {
			return res, nil
		}
		return tool.Result{}, fmt.Errorf("glob: stat %s: %w", rv.Real(), err)
	}
	if !info.IsDir() {
		if base == "." {
			return tool.Errorf("glob: %s is a file, not a directory to search", shown), nil
		}
		return tool.Text(noGlobMatch(args.Pattern, shown)), nil
	}
	dir, err := rv.FS.OpenRoot(start)
	if err != nil {
		if res, ok := fsResult("glob", shown, err); ok {
			return res, nil
		}
		return tool.Result{}, fmt.Errorf("glob: open %s: %w", rv.Real(), err)
	}

	timeout := sandbox.ToolTimeout(ctx, t.timeout) // the call's, else the tool's own
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errToolTimeout)
		defer cancel()
	}
	w := &globWalk{
		ctx:     ctx,
		limit:   limit,
		prefix:  display(t.roots, filepath.Join(rv.Root.Path, start)),
		match:   globMatcher(rest, !strings.Contains(pattern, "/")),
		permits: make(chan struct{}, 2*runtime.GOMAXPROCS(0)),
	}
	top := newListing("")
	top.read(w, dir)
	w.walk(top)

	if len(w.found) == 0 && w.stopped == nil {
		return tool.Text(noGlobMatch(args.Pattern, shown)), nil
	}
	var b strings.Builder
	for i, p := range w.found {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p)
	}
	switch {
	case w.cut:
		fmt.Fprintf(&b, "\n[results cut at %d paths: narrow the pattern or the path, or raise max_results (at most %d)]", limit, sandbox.GlobMaxResults)
	case w.stopped != nil && context.Cause(ctx) == errToolTimeout:
		if len(w.found) == 0 {
			fmt.Fprintf(&b, "[no match found before glob stopped after the tool timeout of %s; narrow the path or the pattern]", seconds(timeout))
		} else {
			fmt.Fprintf(&b, "\n[glob stopped after the tool timeout of %s: these are the matches found so far; narrow the path or the pattern]", seconds(timeout))
		}
	case w.stopped != nil:
		if len(w.found) > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[glob stopped: %v]", w.stopped)
	}
	return tool.Text(b.String()), nil
}

// checkGlobPattern refuses absolute patterns, patterns with a ".." segment
// and malformed ones. It returns the pattern without a leading "./".
func checkGlobPattern(p string) (string, tool.Result, bool) {
	if strings.HasPrefix(p, "/") {
		return "", tool.Errorf("glob: pattern %q must be relative; give the directory to search from as path", p), false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", tool.Errorf("glob: pattern %q must not contain ..; give the directory to search from as path", p), false
		}
	}
	for strings.HasPrefix(p, "./") {
		p = strings.TrimLeft(p[2:], "/")
	}
	if p == "" || p == "." {
		return "", tool.Errorf("glob: pattern %q matches no file; try *", "./"), false
	}
	if !doublestar.ValidatePattern(p) {
		return "", tool.Errorf("glob: pattern %q is malformed (check its [ ] and { } pairs)", p), false
	}
	return p, tool.Result{}, true
}

func noGlobMatch(pattern, shown string) string {
	return fmt.Sprintf("No files match %s in %s.", pattern, shown)
}

// globWalk is one glob search: a depth-first walk in path order that stops
// after limit+1 matches or when ctx is done. It reads directories a little
// ahead of the walk on other goroutines (at most prefetch at a time), so
// the walk keeps its order and stops early, yet uses more than one CPU.
type globWalk struct {
	ctx     context.Context
	limit   int
	prefix  string                      // how the start directory is shown
	match   func(rel, name string) bool // the pattern (globMatcher)
	found   []string
	cut     bool
	stopped error         // why the walk stopped early, other than the limit
	permits chan struct{} // bounds the directories read ahead
}

// prefetchAhead is how many subdirectories of a directory are read ahead.
const prefetchAhead = 8

// listing is one directory, opened relative to its parent's os.Root and
// read, maybe ahead of the walk. Only one goroutine walks it.
type listing struct {
	rel     string        // the directory below the start ("" for the start)
	done    chan struct{} // closed when root and entries are set
	root    *os.Root      // nil when the directory could not be opened
	entries []dirent      // its subdirectories (but .git) and matching files, sorted by name
}

func newListing(rel string) *listing { return &listing{rel: rel, done: make(chan struct{})} }

// read fills l from root (which l then owns), keeping only what the walk
// needs, so that matching and sorting happen on the reading goroutine.
func (l *listing) read(w *globWalk, root *os.Root) {
	defer close(l.done)
	f, err := root.Open(".")
	if err != nil {
		root.Close()
		return // unreadable directory: skip it, as find and rg do
	}
	all, _ := readDirent(root, f)
	f.Close()
	keep := all[:0]
	for _, e := range all {
		if e.typ == fs.ModeDir {
			if e.name != ".git" {
				keep = append(keep, e)
			}
			continue
		}
		if w.match(l.rel, e.name) {
			keep = append(keep, e)
		}
	}
	slices.SortFunc(keep, func(a, b dirent) int { return cmp.Compare(a.name, b.name) })
	l.entries, l.root = keep, root
}

// open returns the listing of parent's subdirectory name. With ahead, it is
// read on another goroutine if a permit is free, else nil is returned;
// otherwise it is read now. Each step opens one name relative to its
// parent's os.Root, so a directory swapped for a link cannot lead outside.
func (w *globWalk) open(parent *os.Root, rel, name string, ahead bool) *listing {
	l := newListing(joinRel(rel, name))
	fill := func() {
		sub, err := parent.OpenRoot(name)
		if err != nil {
			close(l.done)
			return
		}
		l.read(w, sub)
	}
	if !ahead {
		fill()
		return l
	}
	select {
	case w.permits <- struct{}{}:
		go func() {
			defer func() { <-w.permits }()
			fill()
		}()
		return l
	default:
		return nil
	}
}

// discard waits for a listing read ahead and releases it.
func discard(l *listing) {
	if l == nil {
		return
	}
	<-l.done
	if l.root != nil {
		l.root.Close()
	}
}

// walk visits the directory of l, closes it, and returns false to stop.
func (w *globWalk) walk(l *listing) bool {
	<-l.done
	if l.root == nil {
		return true
	}
	defer l.root.Close()
	if err := w.ctx.Err(); err != nil {
		w.stopped = context.Cause(w.ctx)
		return false
	}
	var subdirs []int // indexes of the subdirectories to walk
	for i, e := range l.entries {
		if e.typ == fs.ModeDir {
			subdirs = append(subdirs, i)
		}
	}
	ahead := make(map[int]*listing, prefetchAhead)
	next := 0 // subdirs[next] is the first not yet read ahead
	defer func() {
		for _, a := range ahead {
			discard(a)
		}
	}()
	sub := 0 // subdirs[sub] is the next subdirectory the walk enters
	for i, e := range l.entries {
		if e.typ == fs.ModeDir {
			// Read ahead the subdirectories after this one.
			for next = max(next, sub+1); next < len(subdirs) && next <= sub+prefetchAhead; next++ {
				a := w.open(l.root, l.rel, l.entries[subdirs[next]].name, true)
				if a == nil {
					break
				}
				ahead[subdirs[next]] = a
			}
			sub++
			child, ok := ahead[i]
			delete(ahead, i)
			if !ok {
				child = w.open(l.root, l.rel, e.name, false)
			}
			if !w.walk(child) {
				return false
			}
			continue
		}
		if len(w.found) == w.limit {
			w.cut = true
			return false
		}
		w.found = append(w.found, joinShown(w.prefix, joinRel(l.rel, e.name)))
	}
	return true
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func joinShown(prefix, rel string) string {
	if prefix == "." {
		return rel
	}
	return prefix + "/" + rel
}
