package patch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// env is a workdir and an agent folder (writable), a data folder
// (read-only) and a folder outside every root holding a secret file.
type env struct {
	roots                      *sandbox.Roots
	work, agent, data, outside string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{
		work:    filepath.Join(base, "work"),
		agent:   filepath.Join(base, "agent"),
		data:    filepath.Join(base, "data"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{e.work, e.agent, e.data, e.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(e.outside, "secret.txt"), "top secret\n")
	writeFile(t, filepath.Join(e.data, "ro.txt"), "read only\n")
	if err := os.Symlink(e.outside, filepath.Join(e.work, "out-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.outside, "secret.txt"), filepath.Join(e.work, "out-file")); err != nil {
		t.Fatal(err)
	}
	r, err := sandbox.New(sandbox.Dirs{Workdir: e.work, Agent: e.agent, Data: e.data})
	if err != nil {
		t.Fatal(err)
	}
	e.roots = r
	return e
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot returns every file below dir (relative path → content), with
// directories as "<dir>" entries, following no links.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
		case d.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "<link " + target + ">"
		case d.IsDir():
			out[rel] = "<dir>"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func run(t *testing.T, tl tool.Tool, input string) tool.Result {
	t.Helper()
	args, _ := json.Marshal(sandbox.ApplyPatchArgs{Input: input})
	res, err := tl.Run(context.Background(), args)
	if err != nil {
		t.Fatalf("Run error = %v", err)
	}
	return res
}

func TestApplyPatchScenarios(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		before map[string]string // workdir files
		patch  string
		after  map[string]string // expected workdir files besides the links (on success)
		// goneLinks are the links of newEnv the patch deletes.
		goneLinks []string
		output    string // expected output (success) or substring (error)
		wantErr   bool
	}{
		{
			name:   "add with new parent folders",
			patch:  "*** Begin Patch\n*** Add File: a/b/c.txt\n+hello\n+world\n*** End Patch",
			after:  map[string]string{"a": "<dir>", "a/b": "<dir>", "a/b/c.txt": "hello\nworld\n"},
			output: "Success. Updated the following files:\nA a/b/c.txt\n",
		},
		{
			name:   "delete",
			before: map[string]string{"gone.txt": "bye\n", "keep.txt": "stay\n"},
			patch:  "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch\n",
			after:  map[string]string{"keep.txt": "stay\n"},
			output: "Success. Updated the following files:\nD gone.txt\n",
		},
		{
			name:   "several hunks in one file",
			before: map[string]string{"m.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n"},
			patch:  "*** Begin Patch\n*** Update File: m.txt\n@@\n 1\n-2\n+two\n 3\n@@\n 7\n-8\n+eight\n 9\n*** End Patch",
			after:  map[string]string{"m.txt": "1\ntwo\n3\n4\n5\n6\n7\neight\n9\n"},
			output: "Success. Updated the following files:\nM m.txt\n",
		},
		{
			name:   "move to a new folder",
			before: map[string]string{"old/name.txt": "old content\n", "old/other.txt": "x\n"},
			patch:  "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-old content\n+new content\n*** End Patch",
			after: map[string]string{"old": "<dir>", "old/other.txt": "x\n", "renamed": "<dir>", "renamed/dir": "<dir>",
				"renamed/dir/name.txt": "new content\n"},
			output: "Success. Updated the following files:\nM renamed/dir/name.txt\n",
		},
		{
			name:   "pure rename",
			before: map[string]string{"a.txt": "same\n"},
			patch:  "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch",
			after:  map[string]string{"b.txt": "same\n"},
			output: "Success. Updated the following files:\nM b.txt\n",
		},
		{
			name:   "end of file",
			before: map[string]string{"tail.txt": "first\nsecond\nfirst\nsecond\n"},
			patch:  "*** Begin Patch\n*** Update File: tail.txt\n@@\n first\n-second\n+second updated\n*** End of File\n*** End Patch",
			after:  map[string]string{"tail.txt": "first\nsecond\nfirst\nsecond updated\n"},
			output: "M tail.txt",
		},
		{
			name:   "end of file adds a final newline",
			before: map[string]string{"n.txt": "a\nb"},
			patch:  "*** Begin Patch\n*** Update File: n.txt\n@@\n a\n-b\n+c\n*** End of File\n*** End Patch",
			after:  map[string]string{"n.txt": "a\nc\n"},
			output: "M n.txt",
		},
		{
			name:   "fuzzy whitespace",
			before: map[string]string{"w.py": "def f():\n    x = 1   \n\treturn x\n"},
			patch:  "*** Begin Patch\n*** Update File: w.py\n@@ def f():\n-x = 1\n+    x = 2\n return x\n*** End Patch",
			after:  map[string]string{"w.py": "def f():\n    x = 2\n\treturn x\n"},
			output: "M w.py",
		},
		{
			name:   "unicode dashes and quotes",
			before: map[string]string{"u.txt": "a – b — c\n“quoted” ‘single’\u00a0x\nend\n"},
			patch:  "*** Begin Patch\n*** Update File: u.txt\n@@\n-a - b - c\n-\"quoted\" 'single' x\n+ascii now\n end\n*** End Patch",
			after:  map[string]string{"u.txt": "ascii now\nend\n"},
			output: "M u.txt",
		},
		{
			name:   "crlf file keeps crlf",
			before: map[string]string{"c.txt": "one\r\ntwo\r\nthree\r\n"},
			patch:  "*** Begin Patch\r\n*** Update File: c.txt\r\n@@\r\n one\r\n-two\r\n+TWO\r\n+2.5\r\n three\r\n*** End Patch\r\n",
			after:  map[string]string{"c.txt": "one\r\nTWO\r\n2.5\r\nthree\r\n"},
			output: "M c.txt",
		},
		{
			name:   "@@ context headers narrow the place",
			before: map[string]string{"k.py": "class A:\n    def f():\n        pass\nclass B:\n    def f():\n        pass\n"},
			patch:  "*** Begin Patch\n*** Update File: k.py\n@@ class B:\n@@     def f():\n-        pass\n+        return 1\n*** End Patch",
			after:  map[string]string{"k.py": "class A:\n    def f():\n        pass\nclass B:\n    def f():\n        return 1\n"},
			output: "M k.py",
		},
		{
			name:   "heredoc wrapper",
			patch:  "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: h.txt\n+hi\n*** End Patch\nEOF\n",
			after:  map[string]string{"h.txt": "hi\n"},
			output: "A h.txt",
		},
		{
			name:   "add, update and delete together",
			before: map[string]string{"del.txt": "x\n", "mod.txt": "line1\nline2\n"},
			patch:  "*** Begin Patch\n*** Add File: nested/new.txt\n+created\n*** Delete File: del.txt\n*** Update File: mod.txt\n@@\n line1\n-line2\n+changed\n*** End Patch",
			after:  map[string]string{"nested": "<dir>", "nested/new.txt": "created\n", "mod.txt": "line1\nchanged\n"},
			output: "Success. Updated the following files:\nA nested/new.txt\nM mod.txt\nD del.txt\n",
		},
		{
			name:    "missing context",
			before:  map[string]string{"f.txt": "alpha\nbeta\ngamma\n"},
			patch:   "*** Begin Patch\n*** Update File: f.txt\n@@\n alpha\n-BETA\n+b\n*** End Patch",
			output:  "Failed to find expected lines in f.txt:\nalpha\nBETA\nThe first 1 of these lines match at line 1, but line 2 of the file is \"beta\" where the patch expects \"BETA\".\nNo file was changed.",
			wantErr: true,
		},
		{
			name:    "missing @@ context",
			before:  map[string]string{"f.txt": "alpha\n"},
			patch:   "*** Begin Patch\n*** Update File: f.txt\n@@ func nowhere()\n-alpha\n+b\n*** End Patch",
			output:  "Failed to find context 'func nowhere()' in f.txt",
			wantErr: true,
		},
		{
			name:    "update of a missing file",
			patch:   "*** Begin Patch\n*** Update File: none.txt\n@@\n-a\n+b\n*** End Patch",
			output:  "Failed to read file to update none.txt: no such file",
			wantErr: true,
		},
		{
			name:    "delete of a folder",
			before:  map[string]string{"dir/f.txt": "x\n"},
			patch:   "*** Begin Patch\n*** Delete File: dir\n*** End Patch",
			output:  "it is a folder",
			wantErr: true,
		},
		{
			name:    "path outside the roots",
			patch:   "*** Begin Patch\n*** Add File: ../outside/evil.txt\n+x\n*** End Patch",
			output:  "outside the agent's data",
			wantErr: true,
		},
		{
			name:    "absolute path outside the roots",
			patch:   "*** Begin Patch\n*** Add File: /etc/evil.txt\n+x\n*** End Patch",
			output:  "read-only",
			wantErr: true,
		},
		{
			name:    "folder symlink leading out",
			patch:   "*** Begin Patch\n*** Add File: out-dir/evil.txt\n+x\n*** End Patch",
			output:  "outside the agent's data",
			wantErr: true,
		},
		{
			name:    "file symlink leading out",
			patch:   "*** Begin Patch\n*** Update File: out-file\n@@\n-top secret\n+pwned\n*** End Patch",
			output:  "outside the agent's data",
			wantErr: true,
		},
		{
			name:      "delete of a symlink removes the link, not its target",
			before:    map[string]string{"real.txt": "kept\n"},
			patch:     "*** Begin Patch\n*** Delete File: out-file\n*** End Patch",
			after:     map[string]string{"real.txt": "kept\n"},
			goneLinks: []string{"out-file"},
			output:    "D out-file",
		},
		{
			name:    "partly failing patch changes nothing",
			before:  map[string]string{"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "g\n"},
			patch:   "*** Begin Patch\n*** Add File: brand/new/file.txt\n+new\n*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: gone.txt\n*** Update File: b.txt\n@@\n-not there\n+B\n*** End Patch",
			output:  "Failed to find expected lines in b.txt",
			wantErr: true,
		},
		{
			name:    "malformed: no begin",
			patch:   "*** Add File: x\n+x\n*** End Patch",
			output:  "Invalid patch: The first line of the patch must be '*** Begin Patch'",
			wantErr: true,
		},
		{
			name:    "malformed: no end",
			patch:   "*** Begin Patch\n*** Add File: x\n+x",
			output:  "Invalid patch: The last line of the patch must be '*** End Patch'",
			wantErr: true,
		},
		{
			name:    "malformed: bad header",
			patch:   "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch",
			output:  "Invalid patch hunk on line 2: '*** Frobnicate File: x' is not a valid hunk header",
			wantErr: true,
		},
		{
			name:    "malformed: empty update",
			patch:   "*** Begin Patch\n*** Update File: x\n*** End Patch",
			output:  "Invalid patch hunk on line 2: Update file hunk for path 'x' is empty",
			wantErr: true,
		},
		{
			name:    "malformed: bad hunk line",
			patch:   "*** Begin Patch\n*** Update File: x\n@@\nno prefix\n*** End Patch",
			output:  "Invalid patch hunk on line 4: Unexpected line found in update hunk: 'no prefix'",
			wantErr: true,
		},
		{
			name:    "malformed: no operations",
			patch:   "*** Begin Patch\n*** End Patch",
			output:  "No files were modified.",
			wantErr: true,
		},
		{
			name:    "malformed: empty input",
			patch:   "  \n",
			output:  `apply_patch: argument "input" must not be empty`,
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			for p, c := range tt.before {
				writeFile(t, filepath.Join(e.work, p), c)
			}
			before := snapshot(t, e.work)
			outsideBefore := snapshot(t, e.outside)
			res := run(t, NewApplyPatch(e.roots), tt.patch)
			if res.IsError != tt.wantErr {
				t.Fatalf("IsError = %v, want %v; output:\n%s", res.IsError, tt.wantErr, res.Output)
			}
			if !strings.Contains(res.Output, tt.output) {
				t.Fatalf("output:\n%s\nwant it to contain:\n%s", res.Output, tt.output)
			}
			got := snapshot(t, e.work)
			want := before
			if !tt.wantErr {
				want = map[string]string{"out-dir": before["out-dir"], "out-file": before["out-file"]}
				for _, l := range tt.goneLinks {
					delete(want, l)
				}
				for p, c := range tt.after {
					want[p] = c
				}
			}
			if !equalMaps(got, want) {
				t.Fatalf("workdir after = %q, want %q", got, want)
			}
			if after := snapshot(t, e.outside); !equalMaps(after, outsideBefore) {
				t.Fatalf("outside folder changed: %q, want %q", after, outsideBefore)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestApplyPatchPathsAcrossRoots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tool := NewApplyPatch(e.roots)
	abs := filepath.Join(e.agent, "notes", "a.txt")
	res := run(t, tool, "*** Begin Patch\n*** Add File: "+abs+"\n+agent note\n*** Update File: "+abs+"\n*** Move to: moved.txt\n*** End Patch")
	if res.IsError {
		t.Fatalf("absolute path in /agent: %s", res.Output)
	}
	if b, err := os.ReadFile(filepath.Join(e.work, "moved.txt")); err != nil || string(b) != "agent note\n" {
		t.Fatalf("moved.txt = %q, %v; want the note moved from the agent folder to the workdir", b, err)
	}
	if _, err := os.Stat(abs); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("source in the agent folder still there: %v", err)
	}
	res = run(t, tool, "*** Begin Patch\n*** Update File: "+filepath.Join(e.data, "ro.txt")+"\n@@\n-read only\n+x\n*** End Patch")
	if !res.IsError || !strings.Contains(res.Output, "read-only") {
		t.Fatalf("patch to the data folder: %v %s, want a read-only error", res.IsError, res.Output)
	}
}

// TestApplyPatchUndoesAFailedCommit makes the last step of a commit fail
// and checks that every file already written is put back.
func TestApplyPatchUndoesAFailedCommit(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.work, "a.txt"), "a\n")
	writeFile(t, filepath.Join(e.work, "crlf.txt"), "x\r\ny\r\n")
	writeFile(t, filepath.Join(e.work, "gone.txt"), "g\n")
	if err := os.Chmod(filepath.Join(e.work, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e.work)
	for _, failAt := range []string{"rename:crlf.txt", "delete:gone.txt"} {
		testHook = func(step, path string) error {
			if step+":"+path == failAt {
				return errors.New("injected failure")
			}
			return nil
		}
		res := run(t, NewApplyPatch(e.roots), "*** Begin Patch\n*** Add File: new/dir/n.txt\n+n\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: crlf.txt\n@@\n-y\n+Y\n*** Delete File: gone.txt\n*** End Patch")
		testHook = nil
		if !res.IsError || !strings.Contains(res.Output, "injected failure") || !strings.Contains(res.Output, "No file was changed") {
			t.Fatalf("fail at %s: %v %q, want an error saying no file was changed", failAt, res.IsError, res.Output)
		}
		if got := snapshot(t, e.work); !equalMaps(got, before) {
			t.Fatalf("fail at %s: workdir = %q, want it untouched %q", failAt, got, before)
		}
		if info, err := os.Stat(filepath.Join(e.work, "a.txt")); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("fail at %s: a.txt mode = %v, %v; want 0600 restored", failAt, info.Mode(), err)
		}
	}
}

// TestApplyPatchRefusesAFileChangedMeanwhile changes a target between the
// read and the commit.
func TestApplyPatchRefusesAFileChangedMeanwhile(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.work, "race.txt")
	writeFile(t, p, "one\n")
	testHook = func(step, _ string) error {
		if step == "verify" {
			if err := os.WriteFile(p, []byte("someone else\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	defer func() { testHook = nil }()
	res := run(t, NewApplyPatch(e.roots), "*** Begin Patch\n*** Update File: race.txt\n@@\n-one\n+two\n*** End Patch")
	if !res.IsError || !strings.Contains(res.Output, "changed while the patch was being applied") {
		t.Fatalf("got %v %q, want a refusal", res.IsError, res.Output)
	}
	if b, _ := os.ReadFile(p); string(b) != "someone else\n" {
		t.Fatalf("race.txt = %q, want the other writer's content kept", b)
	}
	if left := snapshot(t, e.work); len(left) != 3 { // race.txt and the two links: no temp file left
		t.Fatalf("workdir = %q, want no temporary file left", left)
	}
}

func TestApplyPatchArgs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res, err := NewApplyPatch(e.roots).Run(context.Background(), json.RawMessage(`{"patch": "x"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Output, `unknown argument "patch"`) {
		t.Fatalf("got %q, %v; want an unknown-argument error", res.Output, err)
	}
}

// TestApplyPatchOwnership checks, as root, that a new file takes its
// folder's owner (so the fleet's confined processes can edit it) and a
// replaced file keeps its own.
func TestApplyPatchOwnership(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	e := newEnv(t)
	if err := os.Chown(e.work, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.work, "mine.txt"), "root's\n")
	res := run(t, NewApplyPatch(e.roots), "*** Begin Patch\n*** Add File: sub/new.txt\n+n\n*** Update File: mine.txt\n@@\n-root's\n+still root's\n*** End Patch")
	if res.IsError {
		t.Fatal(res.Output)
	}
	for p, want := range map[string]uint32{"sub": 65534, "sub/new.txt": 65534, "mine.txt": 0} {
		info, err := os.Stat(filepath.Join(e.work, p))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Sys().(*syscall.Stat_t).Uid; got != want {
			t.Errorf("%s owner = %d, want %d", p, got, want)
		}
	}
}
