package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// takeEnv returns the value of the environment variable name and removes it
// from the environment. It also overwrites the value in the memory that
// /proc/<pid>/environ shows: the kernel reads that file from the block of
// the process's initial stack the environment was passed in, which
// os.Unsetenv leaves untouched (the runtime works on copies). The overwrite
// goes through /proc/self/mem, which a process may always write for itself.
// A failure to overwrite is returned with the value; non-dumpability
// (hardenProcess) remains the main defence.
func takeEnv(name string) (string, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", nil
	}
	if err := os.Unsetenv(name); err != nil {
		return v, fmt.Errorf("unset %s: %w", name, err)
	}
	return v, scrubInitialEnv(name)
}

// scrubInitialEnv overwrites the value of name in the initial environment
// block with 'x' bytes, keeping its length.
func scrubInitialEnv(name string) error {
	start, end, err := envBounds()
	if err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("scrub environment: %w", err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return fmt.Errorf("scrub environment: read: %w", err)
	}
	prefix := []byte(name + "=")
	off := 0
	for _, kv := range bytes.Split(block, []byte{0}) {
		if bytes.HasPrefix(kv, prefix) && len(kv) > len(prefix) {
			fill := bytes.Repeat([]byte{'x'}, len(kv)-len(prefix))
			if _, err := mem.WriteAt(fill, start+int64(off+len(prefix))); err != nil {
				return fmt.Errorf("scrub environment: write: %w", err)
			}
		}
		off += len(kv) + 1
	}
	return nil
}

// envBounds returns env_start and env_end from /proc/self/stat (fields 50
// and 51, counted after the parenthesised command name, which may hold
// spaces).
func envBounds() (int64, int64, error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("scrub environment: %w", err)
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("scrub environment: unexpected /proc/self/stat")
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 51-3+1 {
		return 0, 0, errors.New("scrub environment: /proc/self/stat has no env_start/env_end")
	}
	start, err1 := strconv.ParseInt(fields[50-3], 10, 64)
	end, err2 := strconv.ParseInt(fields[51-3], 10, 64)
	if err1 != nil || err2 != nil || end <= start || end-start > 16<<20 {
		return 0, 0, errors.New("scrub environment: bad env_start/env_end in /proc/self/stat")
	}
	return start, end, nil
}

// passEnv returns NAME=value for each of names (--env) that sandboxd's own
// environment holds, for its commands, and the names it does not hold
// (their commands go without). It refuses the whole list, before anything
// starts, when a name is not a variable name or is one forbiddenEnv names.
// The commands' environment is otherwise confine.BaseEnv: a variable
// passed here replaces the base one of its name (PATH, HOME).
func passEnv(names []string) (env, unset []string, err error) {
	for _, name := range names {
		if why := forbiddenEnv(name); why != "" {
			return nil, nil, fmt.Errorf("--env %s: %s", name, why)
		}
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		} else {
			unset = append(unset, name)
		}
	}
	return env, unset, nil
}

// forbiddenEnv says why --env refuses name, or "" when it may pass. Names
// are compared without case.
func forbiddenEnv(name string) string {
	if !isEnvName(name) {
		return "not a variable name (letters, digits and _, not starting with a digit); name one variable a flag"
	}
	up := strings.ToUpper(name)
	for _, p := range []struct{ prefix, why string }{
		{"AWS_", "AWS variables hold credentials and configuration of the account: commands never see them"},
		{"ECS_", "ECS variables lead to the task's metadata and credentials: commands never see them"},
		{"SANDBOXD_", "sandboxd's own variables (its token) are never passed on"},
		{"AGENTSFLEET_", "agentsfleet's own variables (the confinement policy among them) are never passed on"},
		{"LD_", "the dynamic loader's variables would reach the trampoline, which starts as root"},
	} {
		if strings.HasPrefix(up, p.prefix) {
			return p.why
		}
	}
	for _, word := range []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"} {
		if strings.Contains(up, word) {
			return "the name says it holds a secret (it contains " + word + "): secrets reach a fleet only as «secret:NAME» references, filled outside the sandbox"
		}
	}
	return ""
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
