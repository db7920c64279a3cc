package patch

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

//go:embed apply_patch.txt
var applyPatchDescription string

// ApplyPatchParams are apply_patch's arguments: Codex's JSON form of the
// tool, whose one argument holds the patch.
type ApplyPatchParams struct {
	Input string `json:"input" description:"The entire contents of the apply_patch command: *** Begin Patch … *** End Patch."`
}

// ApplyPatch is the apply_patch tool. It is safe for concurrent use:
// patches are applied one at a time.
type ApplyPatch struct {
	roots *sandbox.Roots
	mu    sync.Mutex
}

var _ sandbox.Tool = (*ApplyPatch)(nil)

// NewApplyPatch returns the apply_patch tool (an *ApplyPatch) writing below
// roots' writable folders.
func NewApplyPatch(roots *sandbox.Roots) sandbox.Tool {
	return &ApplyPatch{roots: roots}
}

// Name is "apply_patch".
func (*ApplyPatch) Name() string { return "apply_patch" }

// Description is the model-facing description.
func (*ApplyPatch) Description() string { return applyPatchDescription }

// Run parses and applies the patch. A patch that does not parse or apply is
// an error result (Codex's wording: "Invalid patch: …", "Failed to find
// expected lines in …"); success is "Success. Updated the following
// files:" and one "A path", "M path" or "D path" line per file.
func (t *ApplyPatch) Run(_ context.Context, args json.RawMessage) (sandbox.Result, error) {
	var p ApplyPatchParams
	if res, ok := sandbox.DecodeArgs(t.Name(), args, &p); !ok {
		return res, nil
	}
	if strings.TrimSpace(p.Input) == "" {
		return sandbox.Errorf(`apply_patch: "input" is required: a patch from "*** Begin Patch" to "*** End Patch"`), nil
	}
	parsed, err := Parse(p.Input)
	if err != nil {
		return sandbox.Errorf("%v", err), nil
	}
	t.mu.Lock()
	changes, err := Apply(t.roots, parsed)
	t.mu.Unlock()
	if err != nil {
		var perr *Error
		if !errors.As(err, &perr) {
			return sandbox.Result{}, err
		}
		msg := perr.Error()
		if !strings.Contains(msg, "No file was changed") && !strings.Contains(msg, "may be left changed") {
			msg += "\nNo file was changed."
		}
		return sandbox.Errorf("%s", msg), nil
	}
	var b strings.Builder
	b.WriteString("Success. Updated the following files:\n")
	for _, c := range changes {
		b.WriteByte(c.Kind)
		b.WriteByte(' ')
		b.WriteString(c.Path)
		b.WriteByte('\n')
	}
	return sandbox.Text(b.String()), nil
}
