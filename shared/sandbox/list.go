package sandbox

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed list.txt
var listText string

// ListMaxEntries is how many entries list shows, from the built-in tools
// page.
const ListMaxEntries = limit.ListEntries

// ListArgs are list's arguments.
type ListArgs struct {
	Path string `json:"path,omitempty"`
}

// List is list's contract: lists a directory.
var List = tool.DefineIn[ListArgs](&contracts, tool.About{
	Name:        "list",
	RunsIn:      tool.InSandbox,
	Scope:       tool.ScopeFiles,
	Builtin:     true,
	Summary:     "Lists a directory",
	Description: listText,
	Values:      map[string]any{"MaxEntries": ListMaxEntries},
})
