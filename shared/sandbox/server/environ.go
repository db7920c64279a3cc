package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
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
// starts, when a name is not a variable name or is one wire.ForbiddenEnv names.
// The commands' environment is otherwise confine.BaseEnv: a variable
// passed here replaces the base one of its name (PATH, HOME).
func passEnv(names []string) (env, unset []string, err error) {
	for _, name := range names {
		if why := wire.ForbiddenEnv(name); why != "" {
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
