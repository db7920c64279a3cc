package files

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// List is the list tool. It keeps only the entries it will show, so a
// directory of a million files costs no more memory than one of 500. Safe
// for concurrent use.
type List struct {
	*tool.Def[sandbox.ListArgs]
	roots *sandbox.Roots
}

var _ tool.Tool = (*List)(nil)

// NewList returns the list tool over roots.
func NewList(roots *sandbox.Roots) *List { return &List{Def: sandbox.List, roots: roots} }

// Run lists the directory the arguments name.
func (t *List) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	shown := args.Path
	if shown == "" {
		shown = "the workdir"
	}
	rv, res, err := resolve(t.roots, "list", args.Path)
	if rv == nil {
		return res, err
	}
	defer rv.Close()
	dir, err := rv.FS.Open(rv.Rel)
	if err != nil {
		if res, ok := fsResult("list", shown, err); ok {
			return res, nil
		}
		return tool.Result{}, fmt.Errorf("list %s: %w", rv.Real(), err)
	}
	defer dir.Close()
	info, err := dir.Stat()
	if err != nil {
		return tool.Result{}, fmt.Errorf("list: stat %s: %w", rv.Real(), err)
	}
	if !info.IsDir() {
		return tool.Errorf("list: %s is a file, not a directory; use read to see it", shown), nil
	}

	keep := &entryHeap{}
	total := 0
	for {
		if ctx.Err() != nil {
			return tool.Errorf("list: stopped: %v", context.Cause(ctx)), nil
		}
		batch, err := dir.ReadDir(1024)
		for _, e := range batch {
			total++
			heap.Push(keep, listEntry{name: e.Name(), dir: t.isDir(rv, e)})
			if keep.Len() > sandbox.ListMaxEntries {
				heap.Pop(keep) // the entry that sorts last
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			if res, ok := fsResult("list", shown, err); ok {
				return res, nil
			}
			return tool.Result{}, fmt.Errorf("list %s: %w", rv.Real(), err)
		}
	}
	if total == 0 {
		return tool.Text(fmt.Sprintf("[%s is an empty directory]", shown)), nil
	}
	entries := []listEntry(*keep)
	slices.SortFunc(entries, compareEntries)
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.name)
		if e.dir {
			b.WriteByte('/')
		}
	}
	if more := total - len(entries); more > 0 {
		fmt.Fprintf(&b, "\n[%d more %s not shown: %s holds %d in all]", more, plural(more, "entry", "entries"), shown, total)
	}
	return tool.Text(b.String()), nil
}

// isDir reports whether e is a directory, following a symbolic link only
// when it leads to a directory inside the roots.
func (t *List) isDir(rv *sandbox.Resolved, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.IsDir()
	}
	target, err := t.roots.Resolve(filepath.Join(rv.Real(), e.Name()), false)
	if err != nil {
		return false
	}
	defer target.Close()
	info, err := target.FS.Stat(target.Rel)
	return err == nil && info.IsDir()
}

type listEntry struct {
	name string
	dir  bool
}

// compareEntries orders directories before files, then by name.
func compareEntries(a, b listEntry) int {
	if a.dir != b.dir {
		if a.dir {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.name, b.name)
}

// entryHeap is a max-heap under compareEntries: its top is the entry that
// would be shown last, the one to drop when there are too many.
type entryHeap []listEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return compareEntries(h[i], h[j]) > 0 }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(listEntry)) }
func (h *entryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
