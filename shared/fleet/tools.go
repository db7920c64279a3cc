package fleet

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/toolbox"
)

// Location says which part of agentsfleet executes a tool; each tool's
// contract says (tool.About.RunsIn).
type Location = tool.Location

// The places a tool can run.
const (
	// InSandbox: sandboxd, inside the run's Fargate sandbox.
	InSandbox = tool.InSandbox
	// InWebtools: the webtools λ, the egress side with the credential firewall.
	InWebtools = tool.InWebtools
	// InRunner: the runner λ itself (control tools).
	InRunner = tool.InRunner
	// InDisplay: the sandbox's headless browser, present only where the
	// image carries one. See AvailableTools.
	InDisplay = tool.InDisplay
)

// The scopes an API key needs to apply a Definition that allows a tool;
// each tool's contract names its own (tool.About.Scope). A key that applies
// a Definition must carry the scope of every tool in it; see RequiredScopes
// and CheckScopes. No scope implies another.
const (
	// ScopeFiles: read, glob, list — reading the agent's files.
	ScopeFiles = tool.ScopeFiles
	// ScopeSearch: grep, webfetch, websearch — searching files and the public web.
	ScopeSearch = tool.ScopeSearch
	// ScopeWrite: apply_patch — changing files in the writable roots, without
	// running anything.
	ScopeWrite = tool.ScopeWrite
	// ScopeExecute: bash, exec_command, write_stdin — running processes, the
	// strongest sandbox scope.
	ScopeExecute = tool.ScopeExecute
	// ScopeNetwork: http_request, web_fetch, pushover — requests to the
	// fleet's network host list, with secrets filled in.
	ScopeNetwork = tool.ScopeNetwork
	// ScopeControl: update_plan, message — talking to the thread that started the run.
	ScopeControl = tool.ScopeControl
	// ScopeSchedule: the schedule tools and cron_run — starting later runs.
	ScopeSchedule = tool.ScopeSchedule
	// ScopeAgents: the six child-agent tools — more agents on the run's budget.
	ScopeAgents = tool.ScopeAgents
	// ScopeBrowser: browser_open, screenshot — driving a headless browser.
	ScopeBrowser = tool.ScopeBrowser
)

// ToolInfo describes one tool agentsfleet knows: its name, whether it is
// one of the seven built-in tools, where it runs, its scope and a summary
// for people, as its contract gives them.
type ToolInfo = tool.Info

// Tools returns every tool agentsfleet knows, sorted by name: the catalog
// (shared/toolbox), made from the tools' contracts. The caller owns the
// returned slice.
func Tools() []ToolInfo {
	all := toolbox.All()
	out := make([]ToolInfo, len(all))
	for i, e := range all {
		out[i] = e.Info
	}
	return out
}

// ToolNames returns the names of every known tool, sorted.
func ToolNames() []string { return toolbox.Names() }

// LookupTool returns the tool called name. Names are case-sensitive.
func LookupTool(name string) (ToolInfo, bool) {
	e, ok := toolbox.Lookup(name)
	return e.Info, ok
}

// Scopes returns every tool scope, sorted: those of the catalog's tools,
// and ScopeMCP.
func Scopes() []string {
	out := []string{ScopeMCP}
	for _, t := range Tools() {
		out = append(out, t.Scope)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// AvailableTools returns the names of the tools a deployment can run,
// sorted: every known tool, less the display tools (browser_open,
// screenshot) when display is false. A runner whose sandbox image has no
// browser passes false and hands the result to Definition.CheckAvailable.
func AvailableTools(display bool) []string {
	var names []string
	for _, t := range Tools() {
		if t.RunsIn == InDisplay && !display {
			continue
		}
		names = append(names, t.Name)
	}
	return names
}

// RequiredScopes returns the scopes an API key needs to apply d: the scope of
// every tool d allows (ScopeExecute for a declared tool), and tools:execute
// for a setup step, sorted and without repeats. It is empty for a
// Definition that allows no tool and has no setup step.
func (d *Definition) RequiredScopes() []string {
	seen := map[string]bool{}
	var out []string
	for _, scope := range d.toolScopes() {
		if seen[scope] {
			continue
		}
		seen[scope] = true
		out = append(out, scope)
	}
	if needs := d.mcpScopeNeeds(); len(needs) > 0 {
		out = append(out, ScopeMCP)
	}
	if needs := d.stdioScopeNeeds(); len(needs) > 0 && !seen[ScopeExecute] {
		out = append(out, ScopeExecute)
	}
	sort.Strings(out)
	out = slices.Compact(out)
	return d.addSetupScope(out)
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
	for name, scope := range d.toolScopes() {
		if !have[scope] {
			byScope[scope] = append(byScope[scope], name)
		}
	}
	if d.Setup != nil && !have[setupScope] {
		byScope[setupScope] = append(byScope[setupScope], SetupNeed)
	}
	if needs := d.mcpScopeNeeds(); len(needs) > 0 && !have[ScopeMCP] {
		byScope[ScopeMCP] = needs
	}
	if needs := d.stdioScopeNeeds(); len(needs) > 0 && !have[ScopeExecute] {
		byScope[ScopeExecute] = append(byScope[ScopeExecute], needs...)
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
		if !have[name] && !IsMCPToolName(name) {
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
	for _, known := range toolbox.Names() {
		d := editDistance(folded, known)
		switch {
		case d < bestD:
			best, bestD, ties = known, d, 1
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
