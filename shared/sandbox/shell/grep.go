package shell

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// grepStderrLimit is how much of the search program's standard error is
// kept, for the message of a bad pattern.
const grepStderrLimit = 4 << 10

// Ripgrep is the path of rg, found on PATH once; empty when there is none.
var Ripgrep = sync.OnceValue(func() string {
	p, err := exec.LookPath("rg")
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
})

// Grep is the grep tool. It runs rg (or grep -rnE) as a confined process
// and stops reading, and kills it, as soon as it has enough lines. Safe for
// concurrent use once set up.
type Grep struct {
	*tool.Def[sandbox.GrepArgs]
	roots   *sandbox.Roots
	policy  *confine.Policy
	timeout time.Duration
	// RG is the rg program to run; empty means grep -rnE. NewGrep sets it
	// to Ripgrep(). Set it before the first Run, if at all.
	RG string
}

var _ tool.Tool = (*Grep)(nil)

// NewGrep returns the grep tool over roots, running its search under policy
// and killing it after timeout (zero means no limit), or after the call's
// own (sandbox.WithToolTimeout).
func NewGrep(roots *sandbox.Roots, policy *confine.Policy, timeout time.Duration) *Grep {
	return &Grep{Def: sandbox.Grep, roots: roots, policy: policy, timeout: timeout, RG: Ripgrep()}
}

// Run searches. No match is a normal result; a bad pattern is an error
// result carrying the search program's message.
func (t *Grep) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	if strings.ContainsRune(args.Pattern+args.Glob, 0) {
		return tool.Errorf("grep: pattern and glob must not contain a NUL character"), nil
	}
	limit := args.MaxResults
	shown := args.Path
	if shown == "" {
		shown = "the workdir"
	}

	// Check the path, then hand the program the real path it points to.
	// What it reads below that path is bounded by confine (Landlock), and
	// it never follows links it meets on the way (no -L / -R).
	target, prefix, res, err := t.target(args.Path, shown)
	if target == "" {
		return res, err
	}

	argv := t.Argv(args, target)
	cmd, err := t.policy.Command(argv[0], argv[1:]...)
	if err != nil {
		return tool.Result{}, fmt.Errorf("grep: %w", err)
	}
	cmd.Dir = t.roots.Workdir()
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return tool.Result{}, fmt.Errorf("grep: pipe: %w", err)
	}
	defer stdoutR.Close()
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutW.Close()
		return tool.Result{}, fmt.Errorf("grep: pipe: %w", err)
	}
	defer stderrR.Close()
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	g, err := confine.StartGroup(cmd)
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		return tool.Result{}, fmt.Errorf("grep: start %s: %w", argv[0], err)
	}
	defer func() {
		g.Kill() // a no-op once the search has ended
		<-g.Done()
	}()
	var stderr bytes.Buffer
	stderrDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(&stderr, io.LimitReader(stderrR, grepStderrLimit))
		_, _ = io.Copy(io.Discard, stderrR)
		close(stderrDone)
	}()

	timeout := sandbox.ToolTimeout(ctx, t.timeout) // the call's, else the tool's own
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errToolTimeout)
		defer cancel()
	}
	stop := context.AfterFunc(ctx, func() {
		g.Kill()
		_ = stdoutR.SetReadDeadline(time.Now())
	})
	defer stop()

	lines, cut, readErr := readResults(stdoutR, prefix, limit)
	if cut || readErr != nil {
		g.Kill() // enough lines: the rest of the search is not wanted
	}
	<-g.Done()
	_ = stderrR.SetReadDeadline(time.Now().Add(drainWait))
	<-stderrDone

	if ctx.Err() != nil {
		note := fmt.Sprintf("[grep stopped before it finished (%v): results may be incomplete]", context.Cause(ctx))
		if context.Cause(ctx) == errToolTimeout {
			note = fmt.Sprintf("[grep stopped after the tool timeout of %s: results may be incomplete; narrow the path or the pattern]", seconds(timeout))
		}
		if len(lines) == 0 {
			return tool.Errorf("grep: %s", strings.Trim(note, "[]")), nil
		}
		return tool.Text(strings.Join(lines, "\n") + "\n" + note), nil
	}
	if readErr != nil && !errors.Is(readErr, os.ErrDeadlineExceeded) {
		return tool.Result{}, fmt.Errorf("grep: read output: %w", readErr)
	}
	if len(lines) == 0 {
		code, _ := exitCode(g.Err())
		if msg := strings.TrimSpace(stderr.String()); code >= 2 && msg != "" {
			return tool.Errorf("grep: %s", msg), nil
		}
		return tool.Text(fmt.Sprintf("No matches for %q in %s.", args.Pattern, shown)), nil
	}
	out := strings.Join(lines, "\n")
	if cut {
		out += fmt.Sprintf("\n[results cut at %d lines: narrow the pattern, the path or the glob, or raise max_results (at most %d)]", limit, sandbox.GrepMaxResults)
	}
	return tool.Text(out), nil
}

// target checks the model's path and returns what to pass the search
// program: a path relative to the workdir (cmd.Dir) when it is under it, the
// real absolute path otherwise. prefix is what to strip from the start of
// each output line ("./" for the workdir itself).
func (t *Grep) target(p, shown string) (target, prefix string, res tool.Result, err error) {
	if p == "" {
		p = t.roots.Workdir()
	}
	rv, err := t.roots.Resolve(p, false)
	if errors.Is(err, sandbox.ErrOutside) {
		return "", "", tool.Errorf("grep: %v", err), nil
	}
	if err != nil {
		return "", "", tool.Result{}, fmt.Errorf("grep: %w", err)
	}
	defer rv.Close()
	if _, err := rv.FS.Stat(rv.Rel); err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", "", tool.Errorf("grep: %s does not exist", shown), nil
		case errors.Is(err, fs.ErrPermission):
			return "", "", tool.Errorf("grep: permission denied: %s", shown), nil
		}
		return "", "", tool.Errorf("grep: %s cannot be searched: %v", shown, errors.Unwrap(err)), nil
	}
	real := rv.Real()
	for _, rt := range t.roots.All() {
		if rt.Name != "workdir" {
			continue
		}
		if real == rt.Path {
			return ".", "./", tool.Result{}, nil
		}
		if rel, ok := strings.CutPrefix(real, strings.TrimSuffix(rt.Path, "/")+"/"); ok {
			return "./" + rel, "./", tool.Result{}, nil
		}
	}
	return real, "", tool.Result{}, nil
}

// Argv is the search command line for args over target, a path relative to
// the working directory or absolute. "--" ends the options, so a pattern
// starting with "-" is a pattern. The benchmarks run it unconfined, to tell
// what confinement costs from what the search itself asks of rg.
func (t *Grep) Argv(args sandbox.GrepArgs, target string) []string {
	if t.RG != "" {
		argv := []string{t.RG, "--no-config", "--line-number", "--with-filename", "--no-heading",
			"--color", "never", "--no-messages", "--hidden", "--glob", "!.git"}
		if args.IgnoreCase {
			argv = append(argv, "--ignore-case")
		}
		if args.Glob != "" {
			argv = append(argv, "--glob", args.Glob)
		}
		return append(argv, "--", args.Pattern, target)
	}
	argv := []string{"grep", "-rnHEIs", "--color=never", "--exclude-dir=.git"}
	if args.IgnoreCase {
		argv = append(argv, "-i")
	}
	if args.Glob != "" {
		argv = append(argv, "--include="+args.Glob)
	}
	return append(argv, "--", args.Pattern, target)
}

// readResults reads up to limit output lines, each without prefix and cut
// at sandbox.GrepMaxColumns characters; cut reports that a further line came.
// Memory is bounded whatever the length of the lines.
func readResults(r io.Reader, prefix string, limit int) (lines []string, cut bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if len(lines) == limit {
				return lines, true, nil
			}
			line = appendColumns(line, bytes.TrimSuffix(chunk, []byte("\n")))
		}
		switch {
		case err == nil:
			lines = append(lines, finishLine(line, prefix))
			line = line[:0]
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				lines = append(lines, finishLine(line, prefix))
			}
			return lines, false, nil
		default:
			return lines, false, err
		}
	}
}

// appendColumns appends chunk to line while line holds fewer than
// sandbox.GrepMaxColumns characters (plus room for a prefix to strip).
func appendColumns(line, chunk []byte) []byte {
	room := sandbox.GrepMaxColumns + 2 - utf8.RuneCount(line)
	if room <= 0 {
		return line
	}
	i := 0
	for n := 0; n < room && i < len(chunk); n++ {
		_, size := utf8.DecodeRune(chunk[i:])
		i += size
	}
	return append(line, chunk[:i]...)
}

func finishLine(line []byte, prefix string) string {
	s := strings.TrimPrefix(string(line), prefix)
	if utf8.RuneCountInString(s) <= sandbox.GrepMaxColumns {
		return s
	}
	n := 0
	for i := range s {
		if n == sandbox.GrepMaxColumns {
			return s[:i]
		}
		n++
	}
	return s
}
