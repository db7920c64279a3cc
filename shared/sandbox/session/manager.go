package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Defaults of Options, Codex's where Codex has one; the number of
// sessions kept is sandbox.MaxSessions, which exec_command's description
// states.
const (
	DefaultProtectedSessions = 8
	DefaultBufferBytes       = 1 << 20
	DefaultMaxLifetime       = time.Hour
)

// Options tune a Manager. Zero values take the defaults.
type Options struct {
	// MaxSessions is how many sessions are kept (64). Starting one more
	// prunes one: the least recently used exited session, else the least
	// recently used live one, never one of the ProtectedSessions most
	// recently used (8). A pruned session's process group is killed.
	MaxSessions       int
	ProtectedSessions int
	// BufferBytes caps the output a session keeps between calls (1 MiB);
	// beyond it the middle is dropped and a marker says how much.
	BufferBytes int
	// MaxLifetime kills a session's group after this long (1 hour), the
	// wall-clock limit every confined process has; negative means none.
	MaxLifetime time.Duration
	// Shell is the shell used when the call names none: "" means
	// /bin/bash if present, else /bin/sh.
	Shell string
	// ToolTimeout is the fleet's tool timeout: an exec_command or
	// write_stdin call answers within it, yield_time_ms notwithstanding,
	// and its session's process goes on. A call's own
	// (sandbox.WithToolTimeout) wins over it. Zero means none beyond
	// sandbox.MaxYield.
	ToolTimeout time.Duration
}

// Manager owns the exec_command sessions of one sandbox. It is safe for
// concurrent use; Close kills every session.
type Manager struct {
	policy *confine.Policy
	roots  *sandbox.Roots
	opts   Options

	mu       sync.Mutex
	sessions map[int]*session
	gone     map[int]string // why a recent id is no longer live
	goneIDs  []int          // gone's keys, oldest first
	closed   bool
}

// NewManager returns a Manager starting processes confined by policy, with
// working folders checked against roots.
func NewManager(policy *confine.Policy, roots *sandbox.Roots, opts Options) *Manager {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = sandbox.MaxSessions
	}
	if opts.ProtectedSessions <= 0 {
		opts.ProtectedSessions = DefaultProtectedSessions
	}
	if opts.ProtectedSessions >= opts.MaxSessions {
		opts.ProtectedSessions = opts.MaxSessions - 1
	}
	if opts.BufferBytes <= 0 {
		opts.BufferBytes = DefaultBufferBytes
	}
	if opts.MaxLifetime == 0 {
		opts.MaxLifetime = DefaultMaxLifetime
	}
	if opts.Shell == "" {
		opts.Shell = "/bin/sh"
		if isExecutable("/bin/bash") {
			opts.Shell = "/bin/bash"
		}
	}
	return &Manager{policy: policy, roots: roots, opts: opts, sessions: map[int]*session{}, gone: map[int]string{}}
}

// ExecCommand returns the exec_command tool.
func (m *Manager) ExecCommand() tool.Tool { return &execCommand{Def: sandbox.ExecCommand, m: m} }

// WriteStdin returns the write_stdin tool.
func (m *Manager) WriteStdin() tool.Tool { return &writeStdin{Def: sandbox.WriteStdin, m: m} }

// within bounds d, a wait of the call made with ctx, by the call's tool
// timeout (sandbox.ToolTimeout, Options.ToolTimeout when the call has
// none of its own).
func (m *Manager) within(ctx context.Context, d time.Duration) time.Duration {
	if limit := sandbox.ToolTimeout(ctx, m.opts.ToolTimeout); limit > 0 {
		return min(d, limit)
	}
	return d
}

// errClosed is a call after Close.
var errClosed = errors.New("session manager closed: sandboxd is shutting down")

// Close kills every session's process group, releases their descriptors
// and waits (up to 5 s) for their processes to be reaped. Later calls of
// the tools fail with an error. Calling it again does nothing.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	all := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
		s.removed = true
	}
	m.sessions = map[int]*session{}
	m.mu.Unlock()
	for _, s := range all {
		s.kill()
		s.closeFiles()
	}
	return reap(all)
}

// reap waits up to 5 s for the processes of sessions just killed to be
// reaped, and names the first one that was not.
func reap(killed []*session) error {
	deadline := time.After(5 * time.Second)
	for _, s := range killed {
		select {
		case <-s.done:
		case <-deadline:
			return fmt.Errorf("close sessions: session %d's process did not end", s.id)
		}
	}
	return nil
}

// launch starts a session; it is not visible to write_stdin until keep.
func (m *Manager) launch(sp spec) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	id := m.newID()
	s, err := start(m.policy, sp, id, m.opts.BufferBytes, max(m.opts.MaxLifetime, 0))
	if err != nil {
		return nil, err
	}
	s.lastUsed = time.Now()
	m.sessions[id] = s
	return s, nil
}

// newID returns an unused id, random like Codex's (1000–99999) so that an
// id from an older conversation is unlikely to name a new session.
func (m *Manager) newID() int {
	for {
		id := 1000 + rand.IntN(99000)
		if _, used := m.sessions[id]; used {
			continue
		}
		if _, used := m.gone[id]; used {
			continue
		}
		return id
	}
}

// keep makes s visible to write_stdin and prunes a session if there are
// now more than MaxSessions.
func (m *Manager) keep(s *session) {
	var pruned *session
	m.mu.Lock()
	if s.removed {
		m.mu.Unlock()
		return
	}
	s.visible = true
	s.lastUsed = time.Now()
	if m.visibleCount() > m.opts.MaxSessions {
		if pruned = m.pruneCandidate(); pruned != nil {
			m.removeLocked(pruned, fmt.Sprintf("it was closed, and its process group killed, to make room: at most %d sessions are kept", m.opts.MaxSessions))
		}
	}
	m.mu.Unlock()
	if pruned != nil {
		pruned.kill()
		pruned.closeFiles()
	}
}

func (m *Manager) visibleCount() int {
	n := 0
	for _, s := range m.sessions {
		if s.visible {
			n++
		}
	}
	return n
}

// pruneCandidate applies Codex's rule: never one of the most recently used
// ProtectedSessions; the least recently used exited session, else the least
// recently used one.
func (m *Manager) pruneCandidate() *session {
	var live []*session
	for _, s := range m.sessions {
		if s.visible {
			live = append(live, s)
		}
	}
	slices.SortFunc(live, func(a, b *session) int { return a.lastUsed.Compare(b.lastUsed) }) // oldest first
	if len(live) <= m.opts.ProtectedSessions {
		return nil
	}
	candidates := live[:len(live)-m.opts.ProtectedSessions]
	for _, s := range candidates {
		if s.hasExited() {
			return s
		}
	}
	return candidates[0]
}

// finish forgets s after its exit was reported, releasing its descriptors.
func (m *Manager) finish(s *session) {
	m.mu.Lock()
	m.removeLocked(s, fmt.Sprintf("its process exited with code %d and that was reported", s.code))
	m.mu.Unlock()
	s.closeFiles()
}

func (m *Manager) removeLocked(s *session, why string) {
	if s.removed {
		return
	}
	s.removed = true
	delete(m.sessions, s.id)
	if s.visible {
		m.gone[s.id] = why
		m.goneIDs = append(m.goneIDs, s.id)
		if len(m.goneIDs) > 256 {
			delete(m.gone, m.goneIDs[0])
			m.goneIDs = m.goneIDs[1:]
		}
	}
}

// lookup returns the visible session id and marks it used, or explains
// why there is none.
func (m *Manager) lookup(id int) (*session, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[id]; ok && s.visible && !s.removed {
		s.lastUsed = time.Now()
		return s, ""
	}
	msg := fmt.Sprintf("Unknown session ID %d", id)
	if why, ok := m.gone[id]; ok {
		msg += " (" + why + ")"
	}
	return nil, msg + ". " + m.liveListLocked()
}

// liveListLocked lists the visible sessions, most recently used first.
func (m *Manager) liveListLocked() string {
	var live []*session
	for _, s := range m.sessions {
		if s.visible {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		return "There are no live sessions."
	}
	slices.SortFunc(live, func(a, b *session) int { return b.lastUsed.Compare(a.lastUsed) })
	parts := make([]string, len(live))
	for i, s := range live {
		state := "running"
		if s.hasExited() {
			state = fmt.Sprintf("exited with code %d, not yet reported", s.code)
		}
		cmd := s.command
		if len(cmd) > 60 {
			cmd = cmd[:57] + "..."
		}
		parts[i] = fmt.Sprintf("%d (%s: %s)", s.id, state, strings.Join(strings.Fields(cmd), " "))
	}
	return "Live sessions: " + strings.Join(parts, ", ") + "."
}

// shellPath finds the shell to run: an absolute path, or a name looked up
// in the confined PATH.
func (m *Manager) shellPath(name string) (string, bool) {
	if name == "" {
		name = m.opts.Shell
	}
	if filepath.IsAbs(name) {
		return name, isExecutable(name)
	}
	if strings.Contains(name, "/") {
		return "", false
	}
	for _, kv := range confine.BaseEnv() {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(path) {
				if p := filepath.Join(dir, name); isExecutable(p) {
					return p, true
				}
			}
		}
	}
	return "", false
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

// workdir resolves the working folder of a command: the workdir by
// default; else a folder inside the roots (relative to the workdir).
func (m *Manager) workdir(p string) (string, error) {
	if p == "" {
		return m.roots.Workdir(), nil
	}
	rv, err := m.roots.Resolve(p, false)
	if err != nil {
		return "", err
	}
	defer rv.Close()
	info, err := rv.FS.Stat(rv.Rel)
	if err != nil {
		return "", fmt.Errorf("%s: %w", rv.Abs, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is not a folder", rv.Abs)
	}
	return rv.Real(), nil
}

// env is what a session adds to the confined environment: no pager and no
// colour, and a terminal type that says whether there is a terminal.
func env(tty bool) []string {
	term := "TERM=dumb"
	if tty {
		term = "TERM=xterm-256color"
	}
	return []string{term, "PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat", "NO_COLOR=1"}
}

func (m *Manager) liveList() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.liveListLocked()
}
