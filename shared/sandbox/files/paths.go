package files

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

// resolve checks p (the model's path, "" meaning the workdir) against the
// roots for reading. A path outside them is an error result; only a broken
// environment (a root that cannot be opened) is a Go error.
func resolve(roots *sandbox.Roots, tool, p string) (*sandbox.Resolved, sandbox.Result, error) {
	if p == "" {
		p = roots.Workdir()
	}
	rv, err := roots.Resolve(p, false)
	if errors.Is(err, sandbox.ErrOutside) {
		return nil, sandbox.Errorf("%s: %v", tool, err), nil
	}
	if err != nil {
		return nil, sandbox.Result{}, fmt.Errorf("%s: %w", tool, err)
	}
	return rv, sandbox.Result{}, nil
}

// display is how the tools show a real path: relative to the workdir when it
// is the workdir or below it ("." for the workdir itself), absolute
// otherwise. grep in package shell follows the same rule.
func display(roots *sandbox.Roots, real string) string {
	for _, rt := range roots.All() {
		if rt.Name != "workdir" {
			continue
		}
		if real == rt.Path {
			return "."
		}
		if rel, ok := strings.CutPrefix(real, strings.TrimSuffix(rt.Path, "/")+"/"); ok {
			return rel
		}
	}
	return filepath.Clean(real)
}

// errPathEscapes is the text of os.Root's error for a path that leads
// outside the root; the os package does not export it.
const errPathEscapes = "path escapes from parent"

// fsResult turns an error from an access through os.Root into a result the
// model can act on. ok is false when the error means a broken environment,
// which the caller returns as a Go error.
func fsResult(tool, shown string, err error) (res sandbox.Result, ok bool) {
	var errno syscall.Errno
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sandbox.Errorf("%s: %s does not exist", tool, shown), true
	case errors.Is(err, fs.ErrPermission):
		return sandbox.Errorf("%s: permission denied: %s", tool, shown), true
	case errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == errPathEscapes:
		return sandbox.Errorf("%s: %s points %v", tool, shown, sandbox.ErrOutside), true
	case errors.As(err, &errno):
		switch errno {
		case syscall.ENOTDIR:
			return sandbox.Errorf("%s: %s: a part of the path is not a directory", tool, shown), true
		case syscall.ELOOP:
			return sandbox.Errorf("%s: %s: too many levels of symbolic links", tool, shown), true
		case syscall.ENAMETOOLONG:
			return sandbox.Errorf("%s: %s: the name is too long", tool, shown), true
		case syscall.ENXIO, syscall.ENODEV:
			return sandbox.Errorf("%s: %s is not a regular file", tool, shown), true
		}
	}
	return sandbox.Result{}, false
}

// errToolTimeout is the cause of a context ended by the tool timeout, as
// opposed to the caller's cancellation.
var errToolTimeout = errors.New("the tool timeout passed")

// seconds writes a timeout the way the fleet sets it: "120 seconds".
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		if n := int(d / time.Second); n != 1 {
			return fmt.Sprintf("%d seconds", n)
		}
		return "1 second"
	}
	return d.String()
}
