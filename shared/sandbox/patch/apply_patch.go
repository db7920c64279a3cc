package patch

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// ApplyPatch is the apply_patch tool. It is safe for concurrent use:
// patches are applied one at a time.
type ApplyPatch struct {
	*tool.Def[sandbox.ApplyPatchArgs]
	roots *sandbox.Roots
	mu    sync.Mutex
}

var _ tool.Tool = (*ApplyPatch)(nil)

// NewApplyPatch returns the apply_patch tool (an *ApplyPatch) writing below
// roots' writable folders.
func NewApplyPatch(roots *sandbox.Roots) tool.Tool {
	return &ApplyPatch{Def: sandbox.ApplyPatch, roots: roots}
}

// Run parses and applies the patch. A patch that does not parse or apply is
// an error result (Codex's wording: "Invalid patch: …", "Failed to find
// expected lines in …"); success is "Success. Updated the following
// files:" and one "A path", "M path" or "D path" line per file.
func (t *ApplyPatch) Run(_ context.Context, args json.RawMessage) (tool.Result, error) {
	p, res, ok := t.Decode(args)
	if !ok {
		return res, nil
	}
	parsed, err := Parse(p.Input)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	t.mu.Lock()
	changes, err := Apply(t.roots, parsed)
	t.mu.Unlock()
	if err != nil {
		var perr *Error
		if !errors.As(err, &perr) {
			return tool.Result{}, err
		}
		msg := perr.Error()
		if !strings.Contains(msg, "No file was changed") && !strings.Contains(msg, "may be left changed") {
			msg += "\nNo file was changed."
		}
		return tool.Errorf("%s", msg), nil
	}
	var b strings.Builder
	b.WriteString("Success. Updated the following files:\n")
	for _, c := range changes {
		b.WriteByte(c.Kind)
		b.WriteByte(' ')
		b.WriteString(c.Path)
		b.WriteByte('\n')
	}
	return tool.Text(b.String()), nil
}
