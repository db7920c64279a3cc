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
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// resolve checks p (the model's path, "" meaning the workdir) against the
// roots for reading. A path outside them is an error result; only a broken
// environment (a root that cannot be opened) is a Go error.
func resolve(roots *sandbox.Roots, name, p string) (*sandbox.Resolved, tool.Result, error) {
	if p == "" {
		p = roots.Workdir()
	}
	rv, err := roots.Resolve(p, false)
	if errors.Is(err, sandbox.ErrOutside) {
		return nil, tool.Errorf("%s: %v", name, err), nil
	}
	if err != nil {
		return nil, tool.Result{}, fmt.Errorf("%s: %w", name, err)
	}
	return rv, tool.Result{}, nil
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
func fsResult(name, shown string, err error) (res tool.Result, ok bool) {
	var errno syscall.Errno
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tool.Errorf("%s: %s does not exist", name, shown), true
	case errors.Is(err, fs.ErrPermission):
		return tool.Errorf("%s: permission denied: %s", name, shown), true
	case errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == errPathEscapes:
		return tool.Errorf("%s: %s points %v", name, shown, sandbox.ErrOutside), true
	case errors.As(err, &errno):
		switch errno {
		case syscall.ENOTDIR:
			return tool.Errorf("%s: %s: a part of the path is not a directory", name, shown), true
		case syscall.ELOOP:
			return tool.Errorf("%s: %s: too many levels of symbolic links", name, shown), true
		case syscall.ENAMETOOLONG:
			return tool.Errorf("%s: %s: the name is too long", name, shown), true
		case syscall.ENXIO, syscall.ENODEV:
			return tool.Errorf("%s: %s is not a regular file", name, shown), true
		}
	}
	return tool.Result{}, false
}

// errToolTimeout is the cause of a context ended by the name timeout, as
// opposed to the caller's cancellation.
var errToolTimeout = errors.New("the name timeout passed")

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
