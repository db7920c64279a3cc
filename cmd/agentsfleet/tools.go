package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/toolbox"
)

// toolJSON is one tool as `agentsfleet tools --output json` prints it.
type toolJSON struct {
	Name     string         `json:"name"`
	RunsIn   fleet.Location `json:"runs_in"`
	Scope    string         `json:"scope"`
	Builtin  bool           `json:"builtin"`
	Declared bool           `json:"declared"`
	// MCPServer names the Definition's MCP server of an entry that stands
	// for all of its tools (Name is mcp__<server>__*): they are known only
	// once a run lists them.
	MCPServer   string          `json:"mcp_server,omitempty"`
	Available   bool            `json:"available"`
	Summary     string          `json:"summary"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// tools lists every tool agentsfleet knows: where it runs, the scope a key
// needs to allow it, whether this deployment can run it, and what the model
// is told (description and argument schema). With --output json it prints a
// JSON array of toolJSON; names given after the flags narrow the list. The
// display tools are available when this machine has a Chromium for the
// local sandboxes (findBrowser), as `agentsfleet run` and `dev` find it.
// With -f DEF, the tools DEF declares ([[tools.declared]]) are listed among
// them, marked declared, and each MCP server it names as one entry
// mcp__<server>__* (its tools are known only once a run starts it and
// lists them), with where it runs and its scope.
func tools(args []string, out io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	output := fs.String("output", "text", "text or json")
	file := fs.String("f", "", "a Definition whose declared tools to list too")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *output != "text" && *output != "json" {
		return fmt.Errorf("%w: --output is text or json, not %q", errUsage, *output)
	}
	all, declared, servers, err := toolEntries(*file)
	if err != nil {
		return err
	}
	if names := fs.Args(); len(names) > 0 {
		var picked []toolbox.Entry
		var pickedServers []toolJSON
		for _, name := range names {
			if k := slices.IndexFunc(servers, func(s toolJSON) bool { return s.Name == name }); k >= 0 {
				pickedServers = append(pickedServers, servers[k])
				continue
			}
			i := slices.IndexFunc(all, func(e toolbox.Entry) bool { return e.Name == name })
			if i < 0 {
				known := make([]string, len(all))
				for k, e := range all {
					known[k] = e.Name
				}
				return fmt.Errorf("%w: unknown tool %q; the tools are %s", errUsage, name, strings.Join(known, ", "))
			}
			picked = append(picked, all[i])
		}
		all, servers = picked, pickedServers
	}
	chromium, err := findBrowser(getenv, exec.LookPath)
	if err != nil {
		return err
	}
	available := append(chromium.available(), declared...)
	list := make([]toolJSON, len(all))
	for i, e := range all {
		list[i] = toolJSON{
			Name: e.Name, RunsIn: e.RunsIn, Scope: e.Scope, Builtin: e.Builtin, Declared: slices.Contains(declared, e.Name),
			Available: slices.Contains(available, e.Name), Summary: e.Summary,
			Description: e.Spec.Description(), Schema: e.Spec.Schema(),
		}
	}
	list = append(list, servers...)
	if *output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	for i, t := range list {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "%s — runs in the %s, scope %s", t.Name, t.RunsIn, t.Scope)
		if t.Builtin {
			fmt.Fprint(out, ", built-in")
		}
		if t.Declared {
			fmt.Fprintf(out, ", declared in %s", *file)
		}
		if t.MCPServer != "" {
			fmt.Fprintf(out, ", MCP server %s in %s\n  %s\n", t.MCPServer, *file, t.Summary)
			continue
		}
		switch {
		case !t.Available && t.RunsIn == fleet.InDisplay:
			fmt.Fprintf(out, ", not available here: %s", chromium.Why)
		case !t.Available:
			fmt.Fprint(out, ", not available in this deployment")
		}
		fmt.Fprintf(out, "\n  %s\n\n", t.Summary)
		for _, line := range strings.Split(strings.TrimRight(t.Description, "\n"), "\n") {
			fmt.Fprintln(out, strings.TrimRight("    "+line, " "))
		}
		fmt.Fprintf(out, "\n  schema: %s\n", t.Schema)
	}
	return nil
}

// toolEntries returns the catalog and, when file names a Definition, the
// tools it declares, all sorted by name, with the declared ones' names,
// and an entry for each of its MCP servers.
func toolEntries(file string) ([]toolbox.Entry, []string, []toolJSON, error) {
	all := toolbox.All()
	if file == "" {
		return all, nil, nil, nil
	}
	def, err := readDefinition(file)
	if err != nil {
		return nil, nil, nil, err
	}
	var names []string
	for _, t := range def.DeclaredTools {
		spec, err := t.Spec()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		all = append(all, toolbox.Entry{Info: spec.Info(), Spec: spec})
		names = append(names, t.Name)
	}
	slices.SortFunc(all, func(a, b toolbox.Entry) int { return strings.Compare(a.Name, b.Name) })
	var servers []toolJSON
	for _, s := range def.MCP {
		e := toolJSON{Name: fleet.MCPToolName(s.Name, "*"), MCPServer: s.Name, Scope: fleet.ScopeMCP, Available: true}
		if s.Stdio() {
			e.RunsIn, e.Scope = fleet.InSandbox, fleet.ScopeMCP+" and "+fleet.ScopeExecute
			e.Summary = "The tools of the stdio MCP server " + s.Name + ", started confined in the sandbox as " + strings.Join(s.Command, " ") + "; known once a run starts it and lists them."
		} else {
			e.RunsIn = fleet.InWebtools
			e.Summary = "The tools of the remote MCP server " + s.Name + " at " + s.URL + "; known once a run lists them."
		}
		servers = append(servers, e)
	}
	return all, names, servers, nil
}
