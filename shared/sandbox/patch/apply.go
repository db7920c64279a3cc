package patch

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

// MaxFileSize is the largest file apply_patch reads.
const MaxFileSize = 64 << 20

// Change is one line of the success summary: 'A' (added), 'M' (modified,
// or moved: Path is then the new path) or 'D' (deleted), and the path as
// the patch wrote it.
type Change struct {
	Kind byte
	Path string
}

// Apply applies p to the files below roots, all or nothing, and returns the
// changes in the order Codex lists them (added, modified, deleted). Paths
// are relative to the workdir; absolute paths must lie in a writable root.
//
// Guarantee. Every hunk of every file is matched, and every target checked
// (inside a writable root, no symbolic link leading out, the right kind of
// file, parent folders creatable), before anything is written. The new
// content of each file is then written to a temporary file beside it and
// flushed to disk (fsync). Only when all are staged, and no target has
// changed on disk since it was read, are the targets replaced, one rename(2)
// each (deletes last, so a move writes its destination before removing its
// source). If a rename or delete fails, those already made are undone:
// replaced and deleted files are written back from the originals kept in
// memory (content, permission bits and owner; not hard links or extended
// attributes), added files removed, new folders removed. So a failure
// leaves no file changed, and no file is ever seen half-written. The one
// residual window is a crash of sandboxd (or the machine) between the first
// and the last rename: then some files have their new content and others
// their old, and a temporary file named .NAME.apply_patch.*.tmp may remain.
// If undoing itself fails, the error lists the files that may be left
// changed.
//
// Concurrent processes are not locked out: a file changed between the read
// and the commit is detected (size, modification time, inode) and the patch
// refused, but a change during the commit's few renames is not. Apply is
// safe for concurrent use when the callers serialise patches to the same
// files, as the tool does.
//
// The error's message is for the model: it names the file and, for a hunk
// that does not match, the lines that were not found.
func Apply(roots *sandbox.Roots, p *Patch) ([]Change, error) {
	if len(p.Ops) == 0 {
		return nil, failf("No files were modified.")
	}
	a := &applier{roots: roots, targets: map[string]*target{}}
	defer a.close()
	if err := a.plan(p); err != nil {
		return nil, err
	}
	if err := a.commit(); err != nil {
		return nil, err
	}
	return a.summary(), nil
}

// Error is a patch that could not be applied. Its message is for the
// model: Codex's wording where Codex has one.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func failf(format string, args ...any) error { return &Error{msg: fmt.Sprintf(format, args...)} }

// target is one file the patch touches, keyed by its real path.
type target struct {
	rv    *sandbox.Resolved
	shown string // the path as the patch first named it

	// On disk when first read.
	exists, isDir bool
	orig          []byte
	link          string // the target of a symbolic link being deleted
	info          fs.FileInfo

	// What the patch wants.
	touched    bool
	curExists  bool
	cur        []byte
	mode       fs.FileMode
	uid, gid   int // owner to give the file when sandboxd is root; -1 keeps the default
	tmp        string
	createDirs []string // parent folders to create, outermost first
}

func (t *target) changed() bool {
	return t.touched && (t.curExists != t.exists || !bytes.Equal(t.cur, t.orig))
}

type applier struct {
	roots   *sandbox.Roots
	targets map[string]*target
	order   []*target
	added   []string
	updated []string
	deleted []string
	madeDir []madeDir // folders created while staging, in creation order
}

type madeDir struct {
	fs  *os.Root
	rel string
}

func (a *applier) close() {
	for _, t := range a.order {
		t.rv.Close()
	}
}

// target resolves path (write access required) and reads what is there.
// A symbolic link is followed (inside the roots), except that with
// ownLink a link named by path is itself the target: deleting a link
// removes the link, not what it points to.
func (a *applier) target(path string, ownLink bool) (*target, error) {
	var rv *sandbox.Resolved
	var err error
	if ownLink {
		abs := a.roots.Abs(path)
		if rv, err = a.roots.Resolve(filepath.Dir(abs), true); err == nil {
			rv.Rel = filepath.Join(rv.Rel, filepath.Base(abs))
		}
	} else {
		rv, err = a.roots.Resolve(path, true)
	}
	if err != nil {
		return nil, failf("%s: %v", path, err)
	}
	if t, ok := a.targets[rv.Real()]; ok {
		rv.Close()
		return t, nil
	}
	t := &target{rv: rv, shown: path, uid: -1, gid: -1}
	a.targets[rv.Real()] = t
	a.order = append(a.order, t)
	info, err := rv.FS.Lstat(rv.Rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		return nil, failf("%s: %v", path, err)
	case info.Mode()&fs.ModeSymlink != 0 && ownLink:
		link, err := rv.FS.Readlink(rv.Rel)
		if err != nil {
			return nil, failf("%s: %v", path, err)
		}
		t.exists, t.curExists, t.link, t.info = true, true, link, info
		return t, nil
	case info.Mode()&fs.ModeSymlink != 0:
		return nil, failf("%s is a symbolic link that leads nowhere inside the writable folders", path)
	case info.IsDir():
		t.exists, t.isDir, t.info, t.curExists = true, true, info, true
		return t, nil
	case !info.Mode().IsRegular():
		return nil, failf("%s is not a regular file", path)
	}
	data, info, err := readRegular(rv.FS, rv.Rel)
	if err != nil {
		return nil, failf("%s: %v", path, err)
	}
	t.exists, t.orig, t.info = true, data, info
	t.curExists, t.cur, t.mode = true, data, info.Mode().Perm()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		t.uid, t.gid = int(st.Uid), int(st.Gid)
	}
	return t, nil
}

// readRegular reads a regular file without blocking on a FIFO swapped in.
func readRegular(root *os.Root, rel string) ([]byte, fs.FileInfo, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, errors.New("not a regular file")
	}
	if info.Size() > MaxFileSize {
		return nil, nil, failf("the file is %d bytes; apply_patch edits files up to %d bytes", info.Size(), MaxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, nil, err
	}
	return data, info, nil
}

// plan runs every operation against the files in memory.
func (a *applier) plan(p *Patch) error {
	for _, op := range p.Ops {
		switch op.Kind {
		case Add:
			t, err := a.target(op.Path, false)
			if err != nil {
				return err
			}
			if t.curExists && t.isDir {
				return failf("Add File: %s is a folder", op.Path)
			}
			content := ""
			if len(op.Lines) > 0 {
				content = strings.Join(op.Lines, "\n") + "\n"
			}
			if !t.curExists {
				t.mode = 0o644
			}
			a.set(t, []byte(content))
			a.added = append(a.added, op.Path)
		case Delete:
			t, err := a.target(op.Path, true)
			if err != nil {
				return err
			}
			if !t.curExists {
				return failf("Failed to delete file %s: no such file", op.Path)
			}
			if t.isDir {
				return failf("Failed to delete file %s: it is a folder", op.Path)
			}
			t.touched, t.curExists, t.cur = true, false, nil
			a.deleted = append(a.deleted, op.Path)
		case Update:
			src, err := a.target(op.Path, false)
			if err != nil {
				return err
			}
			if !src.curExists {
				return failf("Failed to read file to update %s: no such file", op.Path)
			}
			if src.isDir {
				return failf("Failed to read file to update %s: it is a folder", op.Path)
			}
			data := src.cur
			if len(op.Chunks) > 0 {
				if data, err = applyChunks(src.cur, op.Chunks, op.Path); err != nil {
					return err
				}
			}
			shown := op.Path
			if op.MoveTo != "" {
				dst, err := a.target(op.MoveTo, false)
				if err != nil {
					return err
				}
				if dst != src {
					if dst.curExists && dst.isDir {
						return failf("Move to: %s is a folder", op.MoveTo)
					}
					dst.mode, dst.uid, dst.gid = src.mode, src.uid, src.gid
					a.set(dst, data)
					src.touched, src.curExists, src.cur = true, false, nil
					shown = op.MoveTo
				}
			}
			if shown == op.Path {
				a.set(src, data)
			}
			a.updated = append(a.updated, shown)
		}
	}
	// Check that new files' parent folders can be made.
	for _, t := range a.order {
		if t.touched && t.curExists && !t.exists {
			if err := a.checkParents(t); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *applier) set(t *target, data []byte) {
	t.touched, t.curExists, t.cur, t.isDir = true, true, data, false
}

// checkParents finds which parent folders of a new file must be created
// and refuses a parent that is a file.
func (a *applier) checkParents(t *target) error {
	dir := filepath.Dir(t.rv.Rel)
	if dir == "." {
		return nil
	}
	parts := strings.Split(dir, string(filepath.Separator))
	for i := range parts {
		rel := filepath.Join(parts[:i+1]...)
		info, err := t.rv.FS.Lstat(rel)
		if errors.Is(err, fs.ErrNotExist) {
			for j := i; j < len(parts); j++ {
				t.createDirs = append(t.createDirs, filepath.Join(parts[:j+1]...))
			}
			return nil
		}
		if err != nil {
			return failf("%s: %v", t.shown, err)
		}
		if !info.IsDir() {
			return failf("cannot create %s: %s is not a folder", t.shown, filepath.Join(t.rv.Root.Path, rel))
		}
	}
	return nil
}

// commit stages every new content, checks nothing changed on disk, then
// renames and deletes, undoing on failure.
func (a *applier) commit() error {
	var writes, deletes []*target
	for _, t := range a.order {
		switch {
		case !t.changed():
		case t.curExists:
			writes = append(writes, t)
		default:
			deletes = append(deletes, t)
		}
	}
	for _, t := range writes {
		if err := a.stage(t); err != nil {
			a.unstage(writes)
			return failf("%s: %v. No file was changed.", t.shown, err)
		}
	}
	_ = hook("verify", "")
	for _, t := range append(append([]*target(nil), writes...), deletes...) {
		if err := t.unchangedOnDisk(); err != nil {
			a.unstage(writes)
			return failf("%s: %v. No file was changed.", t.shown, err)
		}
	}
	var done []*target
	for _, t := range writes {
		if err := hook("rename", t.shown); err != nil {
			return a.rollback(done, writes, failf("write %s: %v", t.shown, err))
		}
		if err := t.rv.FS.Rename(t.tmp, t.rv.Rel); err != nil {
			return a.rollback(done, writes, failf("write %s: %v", t.shown, err))
		}
		t.tmp = ""
		done = append(done, t)
	}
	for _, t := range deletes {
		if err := hook("delete", t.shown); err != nil {
			return a.rollback(done, writes, failf("delete %s: %v", t.shown, err))
		}
		if err := t.rv.FS.Remove(t.rv.Rel); err != nil {
			return a.rollback(done, writes, failf("delete %s: %v", t.shown, err))
		}
		done = append(done, t)
	}
	syncDirs(done)
	return nil
}

// testHook, when set by a test, runs at each commit step ("verify" before
// the on-disk check, then "rename" or "delete" with the file) and may fail
// it, to exercise the undo path.
var testHook func(step, path string) error

func hook(step, path string) error {
	if testHook == nil {
		return nil
	}
	return testHook(step, path)
}

// stage creates t's parent folders and writes its new content to a
// temporary file beside it.
func (a *applier) stage(t *target) error {
	root := t.rv.FS
	for _, d := range t.createDirs {
		err := root.Mkdir(d, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue // made for an earlier file of this patch
		}
		if err != nil {
			return err
		}
		a.madeDir = append(a.madeDir, madeDir{fs: root, rel: d})
		if uid, gid, ok := parentOwner(root, d); ok {
			_ = root.Lchown(d, uid, gid)
		}
	}
	tmp, err := writeTemp(root, t.rv.Rel, t.cur, t.mode, t.uid, t.gid)
	if err != nil {
		return err
	}
	t.tmp = tmp
	return nil
}

// writeTemp writes data to a new temporary file beside rel, with mode and
// owner (uid -1: the parent folder's owner when sandboxd is root, so files
// stay writable by the fleet's processes), flushed to disk.
func writeTemp(root *os.Root, rel string, data []byte, mode fs.FileMode, uid, gid int) (string, error) {
	base := filepath.Base(rel)
	if len(base) > 100 {
		base = base[:100]
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(rel), "."+base+".apply_patch."+hex.EncodeToString(rnd[:])+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		f.Close()
		_ = root.Remove(tmp)
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if os.Geteuid() == 0 {
		if uid < 0 {
			uid, gid, _ = parentOwner(root, rel)
		}
		if uid >= 0 {
			if err := f.Chown(uid, gid); err != nil {
				return fail(err)
			}
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = root.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// parentOwner returns the owner of rel's parent folder when sandboxd runs
// as root, else ok is false.
func parentOwner(root *os.Root, rel string) (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return -1, -1, false
	}
	info, err := root.Stat(filepath.Dir(rel))
	if err != nil {
		return -1, -1, false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, -1, false
	}
	return int(st.Uid), int(st.Gid), true
}

// unchangedOnDisk reports an error when the target changed since it was
// read (or appeared, for a new file).
func (t *target) unchangedOnDisk() error {
	info, err := t.rv.FS.Lstat(t.rv.Rel)
	if !t.exists {
		if err == nil {
			return errors.New("the file appeared while the patch was being applied")
		}
		return nil
	}
	if err != nil {
		return failf("the file changed while the patch was being applied: %v", err)
	}
	same := info.Size() == t.info.Size() && info.ModTime().Equal(t.info.ModTime())
	if a, ok := info.Sys().(*syscall.Stat_t); ok {
		if b, ok := t.info.Sys().(*syscall.Stat_t); ok {
			same = same && a.Ino == b.Ino && a.Dev == b.Dev
		}
	}
	if !same {
		return errors.New("the file changed while the patch was being applied")
	}
	return nil
}

// unstage removes staged temporary files and the folders made for them.
func (a *applier) unstage(writes []*target) {
	for _, t := range writes {
		if t.tmp != "" {
			_ = t.rv.FS.Remove(t.tmp)
			t.tmp = ""
		}
	}
	for i := len(a.madeDir) - 1; i >= 0; i-- {
		_ = a.madeDir[i].fs.Remove(a.madeDir[i].rel) // only succeeds when empty
	}
	a.madeDir = nil
}

// rollback undoes the renames and deletes in done, newest first.
func (a *applier) rollback(done, writes []*target, cause error) error {
	var failed []string
	for i := len(done) - 1; i >= 0; i-- {
		t := done[i]
		var err error
		if t.link != "" {
			_ = t.rv.FS.Remove(t.rv.Rel) // a file written over the link
			err = t.rv.FS.Symlink(t.link, t.rv.Rel)
		} else if t.exists {
			var tmp string
			if tmp, err = writeTemp(t.rv.FS, t.rv.Rel, t.orig, t.info.Mode().Perm(), t.uid, t.gid); err == nil {
				if err = t.rv.FS.Rename(tmp, t.rv.Rel); err != nil {
					_ = t.rv.FS.Remove(tmp)
				}
			}
		} else {
			err = t.rv.FS.Remove(t.rv.Rel)
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", t.shown, err))
		}
	}
	a.unstage(writes)
	if len(failed) > 0 {
		return failf("%v. Undoing the files already written also failed, so these may be left changed: %s",
			cause, strings.Join(failed, ", "))
	}
	return failf("%v. No file was changed: the files already written were restored.", cause)
}

// syncDirs flushes the folders whose entries changed (best effort).
func syncDirs(done []*target) {
	seen := map[string]bool{}
	for _, t := range done {
		dir := filepath.Dir(t.rv.Rel)
		key := t.rv.Root.Path + "\x00" + dir
		if seen[key] {
			continue
		}
		seen[key] = true
		if f, err := t.rv.FS.Open(dir); err == nil {
			_ = f.Sync()
			f.Close()
		}
	}
}

func (a *applier) summary() []Change {
	var out []Change
	seen := map[Change]bool{}
	add := func(kind byte, paths []string) {
		for _, p := range paths {
			c := Change{Kind: kind, Path: p}
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	add('A', a.added)
	add('M', a.updated)
	add('D', a.deleted)
	return out
}
