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
	Name        string          `json:"name"`
	RunsIn      fleet.Location  `json:"runs_in"`
	Scope       string          `json:"scope"`
	Builtin     bool            `json:"builtin"`
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
func tools(args []string, out io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	output := fs.String("output", "text", "text or json")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *output != "text" && *output != "json" {
		return fmt.Errorf("%w: --output is text or json, not %q", errUsage, *output)
	}
	all := toolbox.All()
	if names := fs.Args(); len(names) > 0 {
		var picked []toolbox.Entry
		for _, name := range names {
			e, ok := toolbox.Lookup(name)
			if !ok {
				return fmt.Errorf("%w: unknown tool %q; the tools are %s", errUsage, name, strings.Join(fleet.ToolNames(), ", "))
			}
			picked = append(picked, e)
		}
		all = picked
	}
	chromium, err := findBrowser(getenv, exec.LookPath)
	if err != nil {
		return err
	}
	available := chromium.available()
	list := make([]toolJSON, len(all))
	for i, e := range all {
		list[i] = toolJSON{
			Name: e.Name, RunsIn: e.RunsIn, Scope: e.Scope, Builtin: e.Builtin,
			Available: slices.Contains(available, e.Name), Summary: e.Summary,
			Description: e.Spec.Description(), Schema: e.Spec.Schema(),
		}
	}
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
