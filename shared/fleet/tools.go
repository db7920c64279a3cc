package fleet

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// Location says which part of agentsfleet executes a tool.
type Location string

// The places a tool can run.
const (
	// InSandbox: sandboxd, inside the run's Fargate sandbox.
	InSandbox Location = "sandbox"
	// InWebtools: the webtools λ, the egress side with the credential firewall.
	InWebtools Location = "webtools"
	// InRunner: the runner λ itself (control tools).
	InRunner Location = "runner"
	// InDisplay: the sandbox's headless browser, present only where the
	// image carries one. See AvailableTools.
	InDisplay Location = "display"
)

// The scopes an API key needs to apply a Definition that allows a tool.
// A key that applies a Definition must carry the scope of every tool in it;
// see RequiredScopes and CheckScopes. No scope implies another.
const (
	// ScopeFiles: read, glob, list — reading the agent's files.
	ScopeFiles = "tools:files"
	// ScopeSearch: grep, webfetch, websearch — searching files and the public web.
	ScopeSearch = "tools:search"
	// ScopeWrite: apply_patch — changing files in the writable roots, without
	// running anything.
	ScopeWrite = "tools:write"
	// ScopeExecute: bash, exec_command, write_stdin — running processes, the
	// strongest sandbox scope.
	ScopeExecute = "tools:execute"
	// ScopeNetwork: http_request, web_fetch, pushover — requests to the
	// fleet's network host list, with secrets filled in.
	ScopeNetwork = "tools:network"
	// ScopeControl: update_plan, message — talking to the thread that started the run.
	ScopeControl = "tools:control"
	// ScopeSchedule: the schedule tools and cron_run — starting later runs.
	ScopeSchedule = "tools:schedule"
	// ScopeAgents: the six child-agent tools — more agents on the run's budget.
	ScopeAgents = "tools:agents"
	// ScopeBrowser: browser_open, screenshot — driving a headless browser.
	ScopeBrowser = "tools:browser"
)

// ToolInfo describes one tool agentsfleet knows.
type ToolInfo struct {
	// Name is the tool name a Definition lists and the model calls.
	Name string
	// Builtin is true for the seven tools of the built-in tools page
	// (read, grep, glob, list, bash, webfetch, websearch).
	Builtin bool
	// RunsIn is where the tool executes.
	RunsIn Location
	// Scope is the API-key scope needed to allow the tool in a Definition.
	Scope string
	// Summary is a one-line description for people (not the model prompt).
	Summary string
}

// catalog is the single list of tools. Keep it sorted by name.
var catalog = []ToolInfo{
	{"apply_patch", false, InSandbox, ScopeWrite, "Applies a *** Begin Patch patch to the writable roots, all or nothing"},
	{"bash", true, InSandbox, ScopeExecute, "Runs a shell command as a confined process"},
	{"browser_open", false, InDisplay, ScopeBrowser, "Opens a page in the sandbox's headless browser"},
	{"cron_run", false, InRunner, ScopeSchedule, "Starts a run of one of the fleet's schedules now"},
	{"delegate_agent", false, InRunner, ScopeAgents, "Starts a child agent on a task and waits for its answer"},
	{"exec_command", false, InSandbox, ScopeExecute, "Starts a process the fleet drives across calls"},
	{"glob", true, InSandbox, ScopeFiles, "Finds files by path pattern"},
	{"grep", true, InSandbox, ScopeSearch, "Searches file contents with a regular expression"},
	{"http_request", false, InWebtools, ScopeNetwork, "Sends an HTTP request to a host on the network host list, filling secret references"},
	{"inspect_agent", false, InRunner, ScopeAgents, "Reports a child agent's status and progress"},
	{"interrupt_agent", false, InRunner, ScopeAgents, "Stops a working child agent"},
	{"list", true, InSandbox, ScopeFiles, "Lists a directory"},
	{"list_agents", false, InRunner, ScopeAgents, "Lists the run's child agents and their statuses"},
	{"message", false, InRunner, ScopeControl, "Posts one progress line to the Slack thread that started the run"},
	{"pushover", false, InWebtools, ScopeNetwork, "Sends a Pushover notification"},
	{"read", true, InSandbox, ScopeFiles, "Reads a text file as numbered lines"},
	{"schedule_create", false, InRunner, ScopeSchedule, "Creates a schedule for a later run of this fleet"},
	{"schedule_delete", false, InRunner, ScopeSchedule, "Deletes a schedule the fleet created"},
	{"schedule_list", false, InRunner, ScopeSchedule, "Lists the fleet's schedules"},
	{"schedule_update", false, InRunner, ScopeSchedule, "Changes a schedule the fleet created"},
	{"screenshot", false, InDisplay, ScopeBrowser, "Captures the headless browser's page as an image"},
	{"spawn_agent", false, InRunner, ScopeAgents, "Starts a child agent on a task and returns its child_id at once"},
	{"update_plan", false, InRunner, ScopeControl, "Records the plan's steps, shown in the thread"},
	{"wait_agent", false, InRunner, ScopeAgents, "Waits for a child agent to finish and returns its answer"},
	{"web_fetch", false, InWebtools, ScopeNetwork, "Fetches an HTTPS page from a host on the network host list"},
	{"webfetch", true, InWebtools, ScopeSearch, "Fetches a public web page as text"},
	{"websearch", true, InWebtools, ScopeSearch, "Searches the web"},
	{"write_stdin", false, InSandbox, ScopeExecute, "Sends input to a process exec_command started"},
}

// catalogIndex maps a tool name to its position in catalog.
var catalogIndex = func() map[string]int {
	m := make(map[string]int, len(catalog))
	for i, t := range catalog {
		m[t.Name] = i
	}
	return m
}()

// Tools returns every tool agentsfleet knows, sorted by name. The caller
// owns the returned slice.
func Tools() []ToolInfo {
	return slices.Clone(catalog)
}

// ToolNames returns the names of every known tool, sorted.
func ToolNames() []string {
	names := make([]string, len(catalog))
	for i, t := range catalog {
		names[i] = t.Name
	}
	return names
}

// LookupTool returns the tool called name. Names are case-sensitive.
func LookupTool(name string) (ToolInfo, bool) {
	i, ok := catalogIndex[name]
	if !ok {
		return ToolInfo{}, false
	}
	return catalog[i], true
}

// Scopes returns every tool scope, sorted.
func Scopes() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range catalog {
		if !seen[t.Scope] {
			seen[t.Scope] = true
			out = append(out, t.Scope)
		}
	}
	sort.Strings(out)
	return out
}

// AvailableTools returns the names of the tools a deployment can run,
// sorted: every known tool, less the display tools (browser_open,
// screenshot) when display is false. A runner whose sandbox image has no
// browser passes false and hands the result to Definition.CheckAvailable.
func AvailableTools(display bool) []string {
	var names []string
	for _, t := range catalog {
		if t.RunsIn == InDisplay && !display {
			continue
		}
		names = append(names, t.Name)
	}
	return names
}

// RequiredScopes returns the scopes an API key needs to apply d: the scope of
// every tool d allows, sorted and without repeats. It is empty for a
// Definition that allows no tool.
func (d *Definition) RequiredScopes() []string {
	seen := map[string]bool{}
	var out []string
	for _, name := range d.Tools {
		t, ok := LookupTool(name)
		if !ok || seen[t.Scope] {
			continue
		}
		seen[t.Scope] = true
		out = append(out, t.Scope)
	}
	sort.Strings(out)
	return out
}

// ScopeError reports the scopes an API key lacks to apply a Definition. It
// carries no product code: the API maps it to 403 Forbidden.
type ScopeError struct {
	// Missing lists each missing scope, sorted by scope.
	Missing []MissingScope
}

// MissingScope is one scope a key lacks and the tools that need it.
type MissingScope struct {
	Scope string
	Tools []string // sorted
}

func (e *ScopeError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		noun := "tool"
		if len(m.Tools) > 1 {
			noun = "tools"
		}
		parts[i] = fmt.Sprintf("scope %q, needed by %s %s", m.Scope, noun, quoteList(m.Tools))
	}
	return "the API key lacks " + strings.Join(parts, "; and ")
}

// Unwrap returns fault.ScopeMissing, so the API maps the error to 403.
func (e *ScopeError) Unwrap() error { return fault.ScopeMissing }

// CheckScopes reports whether a key carrying the granted scopes may apply d.
// It returns nil when every tool's scope is granted, else a *ScopeError
// naming each missing scope and the tools that need it. Scopes match
// exactly; a caller with wildcard or admin keys expands them first.
func (d *Definition) CheckScopes(granted []string) error {
	have := map[string]bool{}
	for _, s := range granted {
		have[s] = true
	}
	byScope := map[string][]string{}
	for _, name := range d.Tools {
		t, ok := LookupTool(name)
		if !ok {
			continue // Parse refuses unknown tools; nothing to grant here.
		}
		if !have[t.Scope] {
			byScope[t.Scope] = append(byScope[t.Scope], name)
		}
	}
	if len(byScope) == 0 {
		return nil
	}
	e := &ScopeError{}
	for s, tools := range byScope {
		sort.Strings(tools)
		e.Missing = append(e.Missing, MissingScope{Scope: s, Tools: tools})
	}
	sort.Slice(e.Missing, func(i, j int) bool { return e.Missing[i].Scope < e.Missing[j].Scope })
	return e
}

// CheckAvailable reports whether this deployment can run every tool d
// allows. available is the deployment's list of tool names (AvailableTools
// gives the usual one). It returns nil, or an *Error wrapping
// fault.DefinitionInvalid with one problem per missing tool, such as
//
//	tool "browser_open" is not available in this deployment; available: apply_patch, bash, …
//
// The runner refuses the run on such an error; it never drops the tool.
func (d *Definition) CheckAvailable(available []string) error {
	have := map[string]bool{}
	for _, name := range available {
		have[name] = true
	}
	list := slices.Clone(available)
	sort.Strings(list)
	list = slices.Compact(list)
	var probs problems
	for _, name := range d.Tools {
		if !have[name] {
			probs.add(runtimePath("tools"), "tool %q is not available in this deployment; available: %s",
				name, strings.Join(list, ", "))
		}
	}
	return probs.err(nil)
}

// unknownToolMessage says that name is not a tool, suggests the nearest
// known name when one is close, and lists the valid names.
func unknownToolMessage(name string) string {
	msg := fmt.Sprintf("unknown tool %q", clip(name))
	if name == "" {
		msg = "empty tool name"
	}
	if s := nearestTool(name); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg + "; valid tools: " + strings.Join(ToolNames(), ", ")
}

// nearestTool returns the single known tool name closest to name, or "" if
// none is close (edit distance at most 2 after folding case and dashes).
func nearestTool(name string) string {
	if name == "" {
		return ""
	}
	folded := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	best, bestD, ties := "", 3, 0
	for _, t := range catalog {
		d := editDistance(folded, t.Name)
		switch {
		case d < bestD:
			best, bestD, ties = t.Name, d, 1
		case d == bestD:
			ties++
		}
	}
	if ties != 1 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30 // Not a misspelling; spare the quadratic work.
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// quoteList formats names as "a", "b" and "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
