package fleet

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// The wire shape of a Definition, written once: the canonical JSON form
// follows these types, field by field and in this order. Parse reads the
// same shape (decode.go), plus the [tools] builtin form it folds in.
type (
	wireDefinition struct {
		Name         string      `json:"name"`
		Instructions string      `json:"instructions"`
		Model        string      `json:"model,omitempty"`
		Workdir      string      `json:"workdir,omitempty"`
		ToolsTable   *wireTools  `json:"tools,omitempty"`
		Runtime      wireRuntime `json:"x-agentsfleet"`
	}
	wireRuntime struct {
		Tools    []string       `json:"tools,omitempty"`
		Network  wireNetwork    `json:"network,omitzero"`
		Secrets  map[string]any `json:"secrets,omitempty"`
		Limits   wireLimits     `json:"limits,omitzero"`
		Sandbox  wireSandbox    `json:"sandbox,omitzero"`
		Slack    wireSlack      `json:"slack,omitzero"`
		Setup    *wireSetup     `json:"setup,omitempty"`
		MCP      []wireMCP      `json:"mcp,omitempty"`
		Approval *wireApproval  `json:"approval,omitempty"`
	}
	// wireSlack holds only what differs from the defaults, so that a
	// Definition that says nothing of Slack keeps its canonical bytes.
	wireSlack struct {
		OnReply      ReplyMode `json:"on_reply,omitempty"`
		MergeSeconds *int      `json:"merge_seconds,omitempty"`
		AllowStart   []string  `json:"allow_start,omitempty"`
		AllowStop    []string  `json:"allow_stop,omitempty"`
		AllowApply   []string  `json:"allow_apply,omitempty"`
		AllowApprove []string  `json:"allow_approve,omitempty"`
	}
	wireNetwork struct {
		Hosts []string `json:"hosts,omitempty"`
	}
	wireLimits struct {
		ToolTimeoutSeconds int        `json:"tool_timeout_seconds,omitempty"`
		Budget             wireBudget `json:"budget,omitzero"`
	}
	wireBudget struct {
		Tokens    int64 `json:"tokens,omitempty"`
		ToolCalls int   `json:"tool_calls,omitempty"`
	}
	wireSandbox struct {
		Size SandboxSize `json:"size,omitempty"`
	}
)

// wireSecret is a secret that says approve = true, in the canonical form;
// any other is its id alone.
type wireSecret struct {
	ID      string `json:"id"`
	Approve bool   `json:"approve"`
}

func (d *Definition) secretsWire() map[string]any {
	if len(d.Secrets) == 0 {
		return nil
	}
	out := make(map[string]any, len(d.Secrets))
	for name, id := range d.Secrets {
		if slices.Contains(d.ApproveSecrets, name) {
			out[name] = wireSecret{ID: id, Approve: true}
		} else {
			out[name] = id
		}
	}
	return out
}

func (d *Definition) wire() wireDefinition {
	return wireDefinition{
		Name:         d.Name,
		Instructions: d.Instructions,
		Model:        d.Model,
		Workdir:      d.Workdir,
		ToolsTable:   d.toolsWire(),
		Runtime: wireRuntime{
			Tools:   d.Tools,
			Network: wireNetwork{Hosts: d.Hosts},
			Secrets: d.secretsWire(),
			Limits: wireLimits{
				ToolTimeoutSeconds: d.Limits.ToolTimeoutSeconds,
				Budget:             wireBudget{Tokens: d.Limits.Budget.Tokens, ToolCalls: d.Limits.Budget.ToolCalls},
			},
			Sandbox:  wireSandbox{Size: d.Sandbox.Size},
			Slack:    d.slackWire(),
			Setup:    d.Setup.wire(),
			MCP:      d.mcpWire(),
			Approval: d.Approval.wire(),
		},
	}
}

// slackWire is the Slack table as the canonical form keeps it: the
// settings (Slack.wire) and the access lists where they are set.
func (d *Definition) slackWire() wireSlack {
	w := d.Slack.wire()
	w.AllowStart, w.AllowStop, w.AllowApply = d.SlackAccess.AllowStart, d.SlackAccess.AllowStop, d.SlackAccess.AllowApply
	w.AllowApprove = d.SlackAccess.AllowApprove
	return w
}

// empty reports whether w says nothing: the table is left out.
func (w wireSlack) empty() bool {
	return w.OnReply == "" && w.MergeSeconds == nil && w.AllowStart == nil && w.AllowStop == nil && w.AllowApply == nil && w.AllowApprove == nil
}

// wire is s as the canonical form keeps it: nothing for the defaults, and
// nothing for the zero Slack of a Definition built in Go (no mode yet).
func (s Slack) wire() wireSlack {
	var w wireSlack
	if s.OnReply == "" {
		return w
	}
	if s.OnReply != ReplyQueue {
		w.OnReply = s.OnReply
	}
	if s.MergeSeconds != DefaultMergeSeconds {
		m := s.MergeSeconds
		w.MergeSeconds = &m
	}
	return w
}

// Canonical returns d as canonical JSON, the form a revision is stored in:
// compact, keys in a fixed order (secrets sorted by name), no HTML
// escaping, no trailing newline. Equal Definitions give equal bytes, and
// for a Definition from Parse, ParseJSON(d.Canonical()) gives d back.
// Zero values (empty model, zero limits, …) are left out, so that parsing
// fills their defaults.
func (d *Definition) Canonical() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d.wire()); err != nil {
		// Strings, ints, slices and maps of strings always encode.
		panic(fmt.Sprintf("fleet: encode Definition: %v", err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Hash returns the lowercase hex SHA-256 of d.Canonical(). Two Definitions
// have the same hash exactly when they mean the same thing, however they
// were written (TOML or JSON, key order, tool-list form, host spelling), so
// an apply whose hash equals the current revision's changes nothing.
func (d *Definition) Hash() string {
	sum := sha256.Sum256(d.Canonical())
	return hex.EncodeToString(sum[:])
}

// MarshalJSON returns d.Canonical(), so a Definition inside another JSON
// value is written in canonical form.
func (d *Definition) MarshalJSON() ([]byte, error) {
	return d.Canonical(), nil
}

// UnmarshalJSON parses data with ParseJSON, so a Definition inside another
// JSON value is checked and normalised as it is read. On error d is unchanged.
func (d *Definition) UnmarshalJSON(data []byte) error {
	n, err := ParseJSON(data)
	if err != nil {
		return err
	}
	*d = *n
	return nil
}

// Normalize returns the Definition Parse would give for d: defaults filled
// in, tools and hosts normalised, sorted and without repeats. It is for
// Definitions built in Go; the error is an *Error whose problems carry
// paths but no lines.
func (d *Definition) Normalize() (*Definition, error) {
	return parse(d.Canonical(), JSON, false)
}

// TOML returns d as a TOML document in a fixed layout, one list entry a
// line, for people to read and for reviewable diffs between revisions.
// ParseTOML(d.TOML()) gives d back for a Definition from Parse.
func (d *Definition) TOML() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "name = %s\n", tomlString(d.Name))
	if d.Model != "" {
		fmt.Fprintf(&b, "model = %s\n", tomlString(d.Model))
	}
	if d.Workdir != "" {
		fmt.Fprintf(&b, "workdir = %s\n", tomlString(d.Workdir))
	}
	fmt.Fprintf(&b, "instructions = %s\n", tomlMultiline(d.Instructions))
	d.declaredTOML(&b)
	fmt.Fprintf(&b, "\n[%s]\n", runtimeKey)
	writeTOMLList(&b, "tools", d.Tools)
	if len(d.Hosts) > 0 {
		fmt.Fprintf(&b, "\n[%s.network]\n", runtimeKey)
		writeTOMLList(&b, "hosts", d.Hosts)
	}
	if len(d.Secrets) > 0 {
		fmt.Fprintf(&b, "\n[%s.secrets]\n", runtimeKey)
		names := make([]string, 0, len(d.Secrets))
		for k := range d.Secrets {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if slices.Contains(d.ApproveSecrets, k) {
				fmt.Fprintf(&b, "%s = { id = %s, approve = true }\n", keySegment(k), tomlString(d.Secrets[k]))
				continue
			}
			fmt.Fprintf(&b, "%s = %s\n", keySegment(k), tomlString(d.Secrets[k]))
		}
	}
	if d.Limits.ToolTimeoutSeconds != 0 {
		fmt.Fprintf(&b, "\n[%s.limits]\ntool_timeout_seconds = %d\n", runtimeKey, d.Limits.ToolTimeoutSeconds)
	}
	if bud := d.Limits.Budget; bud != (Budget{}) {
		fmt.Fprintf(&b, "\n[%s.limits.budget]\n", runtimeKey)
		if bud.Tokens != 0 {
			fmt.Fprintf(&b, "tokens = %d\n", bud.Tokens)
		}
		if bud.ToolCalls != 0 {
			fmt.Fprintf(&b, "tool_calls = %d\n", bud.ToolCalls)
		}
	}
	if d.Sandbox.Size != "" {
		fmt.Fprintf(&b, "\n[%s.sandbox]\nsize = %s\n", runtimeKey, tomlString(string(d.Sandbox.Size)))
	}
	d.Setup.writeTOML(&b)
	if w := d.slackWire(); !w.empty() {
		fmt.Fprintf(&b, "\n[%s.slack]\n", runtimeKey)
		if w.OnReply != "" {
			fmt.Fprintf(&b, "on_reply = %s\n", tomlString(string(w.OnReply)))
		}
		if w.MergeSeconds != nil {
			fmt.Fprintf(&b, "merge_seconds = %d\n", *w.MergeSeconds)
		}
		if w.AllowStart != nil {
			writeTOMLList(&b, "allow_start", w.AllowStart)
		}
		if w.AllowStop != nil {
			writeTOMLList(&b, "allow_stop", w.AllowStop)
		}
		if w.AllowApply != nil {
			writeTOMLList(&b, "allow_apply", w.AllowApply)
		}
		if w.AllowApprove != nil {
			writeTOMLList(&b, "allow_approve", w.AllowApprove)
		}
	}
	d.Approval.writeTOML(&b)
	d.writeMCPTOML(&b)
	return b.Bytes()
}

func writeTOMLList(b *bytes.Buffer, key string, items []string) {
	if len(items) == 0 {
		fmt.Fprintf(b, "%s = []\n", key)
		return
	}
	fmt.Fprintf(b, "%s = [\n", key)
	for _, s := range items {
		fmt.Fprintf(b, "  %s,\n", tomlString(s))
	}
	b.WriteString("]\n")
}

// tomlString returns s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		default:
			writeTOMLRune(&b, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlMultiline returns s as a TOML multi-line basic string. The newline
// after the opening quotes is not part of the value; a quote is escaped
// where it could join others to close the string early.
func tomlMultiline(s string) string {
	var b strings.Builder
	b.WriteString("\"\"\"\n")
	for i, r := range s {
		switch {
		case r == '"' && (i+1 == len(s) || s[i+1] == '"'):
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n' || r == '"':
			b.WriteRune(r)
		default:
			writeTOMLRune(&b, r)
		}
	}
	b.WriteString(`"""`)
	return b.String()
}

// writeTOMLRune writes r, escaping the control characters TOML strings
// may not hold raw (tab is allowed) and the replacement for invalid UTF-8.
func writeTOMLRune(b *strings.Builder, r rune) {
	switch {
	case r == '\t':
		b.WriteRune(r)
	case r == '\r':
		b.WriteString(`\r`)
	case r < 0x20 || r == 0x7f:
		b.WriteString(`\u` + fmt.Sprintf("%04X", r))
	case r == utf8.RuneError:
		b.WriteString(`\uFFFD`)
	default:
		b.WriteRune(r)
	}
}
