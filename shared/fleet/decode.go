package fleet

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The document's keys. The wire shape is written once more, as Go types, in
// canonical.go; keep the two in step.
const (
	runtimeKey = "x-agentsfleet"
)

// decoder turns a generic tree (from TOML or JSON) into a Definition,
// recording every problem with the key path it concerns. It checks keys
// exactly (case-sensitive) and refuses unknown ones.
type decoder struct {
	format Format
	probs  problems
	// mistyped holds the paths whose value had the wrong type, so that a
	// later check of the value does not report the same key again.
	mistyped map[string]bool
}

// typeProblem records that the value at at is not what the key takes.
func (d *decoder) typeProblem(at keyPath, format string, args ...any) {
	d.probs.add(at, format, args...)
	if d.mistyped == nil {
		d.mistyped = map[string]bool{}
	}
	d.mistyped[at.String()] = true
}

// field decodes the value of one known key. at is the key's path.
type field func(at keyPath, v any)

// intSetting is an integer key that may be absent.
type intSetting struct {
	v   int64
	set bool
	at  keyPath
}

// listEntry is a string from a list, with its path.
type listEntry struct {
	s  string
	at keyPath
}

// definition decodes and checks root, the document's top-level table.
func (d *decoder) definition(root map[string]any) *Definition {
	def := &Definition{}
	var (
		workdirSet, sizeSet               bool
		size                              string
		tools, hosts                      []listEntry
		hostsAt                           keyPath
		timeout, tokens, calls            intSetting
		onReply                           string
		onReplySet                        bool
		merge                             intSetting
		allowStart, allowStop, allowApply []listEntry
		allowApprove                      []listEntry
		approveAt                         keyPath
		approveSet                        bool
		declared                          []declaredEntry
		startAt, stopAt, applyAt          keyPath
		startSet, stopSet, applySet       bool
		setup                             setupDecoder
		approval                          approvalDecoder
	)
	str := func(dst *string, set *bool) field {
		return func(at keyPath, v any) {
			if s, ok := d.str(at, v); ok {
				*dst = s
				if set != nil {
					*set = true
				}
			}
		}
	}
	integer := func(dst *intSetting) field {
		return func(at keyPath, v any) {
			if n, ok := d.integer(at, v); ok {
				*dst = intSetting{n, true, at}
			}
		}
	}
	toolList := func(at keyPath, v any) { tools = append(tools, d.list(at, v)...) }

	d.table(nil, root, map[string]field{
		"name":         str(&def.Name, nil),
		"instructions": str(&def.Instructions, nil),
		"model":        str(&def.Model, nil),
		"workdir":      str(&def.Workdir, &workdirSet),
		"tools": func(at keyPath, v any) {
			d.table(at, v, map[string]field{"builtin": toolList,
				"declared": func(at keyPath, v any) { declared = d.declaredList(at, v) }})
		},
		runtimeKey: func(at keyPath, v any) {
			d.table(at, v, map[string]field{
				"tools": toolList,
				"network": func(at keyPath, v any) {
					d.table(at, v, map[string]field{"hosts": func(at keyPath, v any) {
						hostsAt = at
						hosts = d.list(at, v)
					}})
				},
				"secrets":  func(at keyPath, v any) { def.Secrets, def.ApproveSecrets = d.secrets(at, v) },
				"setup":    setup.field(d, integer),
				"approval": approval.field(d, integer),
				"mcp":      func(at keyPath, v any) { def.MCP = d.mcp(at, v) },
				"limits": func(at keyPath, v any) {
					d.table(at, v, map[string]field{
						"tool_timeout_seconds": integer(&timeout),
						"budget": func(at keyPath, v any) {
							d.table(at, v, map[string]field{
								"tokens":     integer(&tokens),
								"tool_calls": integer(&calls),
							})
						},
					})
				},
				"sandbox": func(at keyPath, v any) {
					d.table(at, v, map[string]field{"size": str(&size, &sizeSet)})
				},
				"slack": func(at keyPath, v any) {
					d.table(at, v, map[string]field{
						"on_reply":      str(&onReply, &onReplySet),
						"merge_seconds": integer(&merge),
						"allow_start": func(at keyPath, v any) {
							allowStart, startAt, startSet = d.list(at, v), at, true
						},
						"allow_stop": func(at keyPath, v any) {
							allowStop, stopAt, stopSet = d.list(at, v), at, true
						},
						"allow_apply": func(at keyPath, v any) {
							allowApply, applyAt, applySet = d.list(at, v), at, true
						},
						"allow_approve": func(at keyPath, v any) {
							allowApprove, approveAt, approveSet = d.list(at, v), at, true
						},
					})
				},
			})
		},
	})

	// Checks of the values, and defaults for what is absent.
	if msg := checkName(def.Name); msg != "" && !d.mistyped["name"] {
		d.probs.add(keyPath{"name"}, "%s", msg)
	}
	if msg := checkInstructions(def.Instructions); msg != "" && !d.mistyped["instructions"] {
		d.probs.add(keyPath{"instructions"}, "%s", msg)
	}
	if def.Model != "" {
		if msg := checkModel(def.Model); msg != "" {
			d.probs.add(keyPath{"model"}, "%s", msg)
		}
	}
	if !workdirSet {
		def.Workdir = DefaultWorkdir
	} else if msg := checkWorkdir(def.Workdir); msg != "" {
		d.probs.add(keyPath{"workdir"}, "%s", msg)
	}
	def.DeclaredTools = d.declared(declared)
	def.Tools = d.tools(tools, def.DeclaredTools, def.MCP)
	if len(hosts) > MaxHosts {
		d.probs.add(hostsAt, "%d hosts; at most %d are allowed", len(hosts), MaxHosts)
	} else {
		raw := make([]string, len(hosts))
		for i, h := range hosts {
			raw[i] = h.s
		}
		def.Hosts = normalizeHosts(raw, hostsAt, &d.probs)
	}
	def.Limits.ToolTimeoutSeconds = int(d.bounded(timeout,
		MinToolTimeoutSeconds, MaxToolTimeoutSeconds, DefaultToolTimeoutSeconds, "seconds"))
	def.Limits.Budget.Tokens = d.bounded(tokens, 1, MaxBudgetTokens, DefaultBudgetTokens, "tokens")
	def.Limits.Budget.ToolCalls = int(d.bounded(calls, 1, MaxBudgetToolCalls, DefaultBudgetToolCalls, "tool calls"))
	def.Slack.OnReply = ReplyQueue
	if onReplySet {
		if m := ReplyMode(onReply); m == ReplyQueue || m == ReplyInterrupt {
			def.Slack.OnReply = m
		} else {
			d.probs.add(runtimePath("slack", "on_reply"), "%q is not a reply mode; want queue (a reply waits for the run's next turn) or interrupt (it stops the run and starts one that goes on with it)", clip(onReply))
		}
	}
	def.Slack.MergeSeconds = int(d.bounded(merge, 0, MaxMergeSeconds, DefaultMergeSeconds, "seconds"))
	if startSet && !d.mistyped[startAt.String()] {
		def.SlackAccess.AllowStart = d.slackIDs(startAt, allowStart)
	}
	if stopSet && !d.mistyped[stopAt.String()] {
		def.SlackAccess.AllowStop = d.slackIDs(stopAt, allowStop)
	}
	if applySet && !d.mistyped[applyAt.String()] {
		def.SlackAccess.AllowApply = d.slackIDs(applyAt, allowApply)
	}
	if approveSet && !d.mistyped[approveAt.String()] {
		def.SlackAccess.AllowApprove = d.slackIDs(approveAt, allowApprove)
	}
	def.Setup = setup.setup(d, def.Secrets)
	d.checkMCP(def)
	d.checkApproveSecrets(def)
	def.Approval = approval.approval(d, def)
	def.Sandbox.Size = DefaultSandboxSize
	if sizeSet {
		if msg := checkSize(size); msg != "" {
			d.probs.add(runtimePath("sandbox", "size"), "%s", msg)
		} else {
			def.Sandbox.Size = SandboxSize(size)
		}
	}
	return def
}

// tools checks each listed name and returns the known ones, sorted and
// without repeats (a tool listed twice, in one list or in both, is held
// once), or nil if there are none. The name of a declared tool is allowed
// by its declaration, and held there alone; an MCP server's tool name is
// checked against the servers.
func (d *decoder) tools(entries []listEntry, declared []DeclaredTool, servers []MCPServer) []string {
	var out []string
	for _, e := range entries {
		if slices.ContainsFunc(declared, func(t DeclaredTool) bool { return t.Name == e.s }) {
			continue // Allowed by its declaration.
		}
		if strings.HasPrefix(e.s, MCPPrefix) {
			if msg := checkMCPAllowed(e.s, servers); msg != "" {
				d.probs.add(e.at, "%s", msg)
				continue
			}
		} else if _, ok := LookupTool(e.s); !ok {
			if d.probs.full() {
				d.probs.more++
			} else {
				d.probs.add(e.at, "%s", unknownToolMessage(e.s))
			}
			continue
		}
		out = append(out, e.s)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// bounded returns s's value if it lies in [lo, hi], def if s is absent, and
// records a problem (returning def) otherwise.
func (d *decoder) bounded(s intSetting, lo, hi, def int64, unit string) int64 {
	if !s.set {
		return def
	}
	if s.v < lo || s.v > hi {
		d.probs.add(s.at, "%d is out of range; want %d to %d %s (default %d)", s.v, lo, hi, unit, def)
		return def
	}
	return s.v
}

// secrets decodes the secrets table, checking names and values: each a
// string, the secret's id, or a table {id, approve} (approve = true: a
// person approves the secret's first use in a run for each host).
func (d *decoder) secrets(at keyPath, v any) (ids map[string]string, approve []string) {
	m, ok := d.boundedTable(at, v, MaxSecrets, "secrets")
	if !ok {
		return nil, nil
	}
	out := map[string]string{}
	for _, k := range sortedKeys(m) {
		kat := at.key(k)
		if m[k] == nil {
			continue // JSON null: absent.
		}
		if msg := checkSecretName(k); msg != "" {
			d.probs.add(kat, "%s", msg)
			continue
		}
		id, asks, ok := d.secret(kat, m[k])
		if !ok {
			continue
		}
		if msg := checkSecretValue(id); msg != "" {
			d.probs.add(kat, "%s", msg)
			continue
		}
		out[k] = id
		if asks {
			approve = append(approve, k)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, approve
}

// secret decodes one entry of the secrets table: the id as a string, or
// {id = "…", approve = true|false}.
func (d *decoder) secret(at keyPath, v any) (id string, approve, ok bool) {
	if _, isTable := v.(map[string]any); !isTable {
		if _, isString := v.(string); !isString {
			d.typeProblem(at, "want a string (the secret's Secrets Manager name or ARN) or a table {id, approve}, got %s", d.typeName(v))
			return "", false, false
		}
		id, ok = d.str(at, v)
		return id, false, ok
	}
	var hasID bool
	d.table(at, v, map[string]field{
		"id": func(at keyPath, v any) { id, hasID = d.str(at, v) },
		"approve": func(at keyPath, v any) {
			b, isBool := v.(bool)
			if !isBool {
				d.typeProblem(at, "want true or false, got %s", d.typeName(v))
			}
			approve = b
		},
	})
	if !hasID {
		if _, given := v.(map[string]any)["id"]; !given {
			d.probs.add(at.key("id"), "required: the secret's Secrets Manager name or ARN")
		}
		return "", false, false
	}
	return id, approve, true
}

// table decodes v as a table whose keys are those of fields, in sorted key
// order. An unknown key is a problem naming it; a JSON null is absent.
func (d *decoder) table(at keyPath, v any, fields map[string]field) {
	m, ok := d.asTable(at, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		kat := at.key(k)
		f, known := fields[k]
		if !known {
			d.probs.add(kat, "%s", unknownKeyMessage(k, at, fields))
			continue
		}
		if m[k] == nil {
			continue
		}
		f(kat, m[k])
	}
}

func (d *decoder) asTable(at keyPath, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.typeProblem(at, "want %s, got %s", d.typeName(map[string]any{}), d.typeName(v))
	}
	return m, ok
}

func (d *decoder) str(at keyPath, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.typeProblem(at, "want a string, got %s", d.typeName(v))
	}
	return s, ok
}

func (d *decoder) integer(at keyPath, v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err == nil {
			return i, true
		}
		if f, ferr := strconv.ParseFloat(string(n), 64); ferr == nil && f == math.Trunc(f) && !strings.ContainsAny(string(n), ".eE") {
			d.typeProblem(at, "%s is out of range", n)
			return 0, false
		}
		d.typeProblem(at, "want a whole number, got %s", n)
		return 0, false
	}
	d.typeProblem(at, "want a whole number, got %s", d.typeName(v))
	return 0, false
}

// slackIDs checks an access list: Slack user ids (U…, W…) and user group
// ids (S…), at least one and at most MaxSlackAccess; it returns them
// sorted, without repeats.
func (d *decoder) slackIDs(at keyPath, entries []listEntry) []string {
	if len(entries) == 0 {
		d.probs.add(at, "an empty list lets nobody in; list Slack user ids (U…) or user group ids (S…), or leave the key out to let everyone in")
		return nil
	}
	if len(entries) > MaxSlackAccess {
		d.probs.add(at, "%d ids; at most %d are allowed (name a user group instead)", len(entries), MaxSlackAccess)
		return nil
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if !slackIDPattern(e.s) {
			d.probs.add(e.at, "%q is not a Slack user id (U… or W…) or user group id (S…): use the id, not the name (a member's profile, or a group's page, shows it)", clip(e.s))
			continue
		}
		out = append(out, e.s)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// slackIDPattern reports whether s looks like a Slack user or user group
// id: U, W or S, then 2 to 20 upper-case letters and digits.
func slackIDPattern(s string) bool {
	if len(s) < 3 || len(s) > 21 || !strings.ContainsRune("UWS", rune(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// boundedTable is v as a table of at most max entries (noun names them in
// the error), or false with the problem recorded.
func (d *decoder) boundedTable(at keyPath, v any, max int, noun string) (map[string]any, bool) {
	m, ok := d.asTable(at, v)
	if !ok {
		return nil, false
	}
	if len(m) > max {
		d.probs.add(at, "%d %s; at most %d are allowed", len(m), noun, max)
		return nil, false
	}
	return m, true
}

// boundedArray is v as an array of at most max elements: want says what
// the array must be, noun names its elements in the error.
func (d *decoder) boundedArray(at keyPath, v any, want string, max int, noun string) ([]any, bool) {
	a, ok := v.([]any)
	if !ok {
		d.typeProblem(at, "want %s, got %s", want, d.typeName(v))
		return nil, false
	}
	if len(a) > max {
		d.probs.add(at, "%d %s; at most %d are allowed", len(a), noun, max)
		return nil, false
	}
	return a, true
}

// list decodes v as an array of strings.
func (d *decoder) list(at keyPath, v any) []listEntry {
	a, ok := v.([]any)
	if !ok {
		d.typeProblem(at, "want an array of strings, got %s", d.typeName(v))
		return nil
	}
	out := make([]listEntry, 0, len(a))
	for i, e := range a {
		eat := at.index(i)
		if s, ok := d.str(eat, e); ok {
			out = append(out, listEntry{s, eat})
		}
	}
	return out
}

// typeName names v's type in the words of the document's format.
func (d *decoder) typeName(v any) string {
	switch n := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case json.Number:
		if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return "a number"
		}
		return "the number " + string(n)
	case []any:
		return "an array"
	case map[string]any:
		if d.format == JSON {
			return "an object"
		}
		return "a table"
	}
	return "a date or time"
}

// homes says where each key of the schema lives, to point a misplaced key
// to its place; and a few names people reach for, to the key they mean.
var homes = map[string]string{
	"name":                 "name",
	"instructions":         "instructions",
	"model":                "model",
	"workdir":              "workdir",
	"builtin":              "tools.builtin",
	"declared":             "tools.declared",
	"network":              runtimeKey + ".network",
	"hosts":                runtimeKey + ".network.hosts",
	"secrets":              runtimeKey + ".secrets",
	"limits":               runtimeKey + ".limits",
	"tool_timeout_seconds": runtimeKey + ".limits.tool_timeout_seconds",
	"budget":               runtimeKey + ".limits.budget",
	"tokens":               runtimeKey + ".limits.budget.tokens",
	"tool_calls":           runtimeKey + ".limits.budget.tool_calls",
	"sandbox":              runtimeKey + ".sandbox",
	"size":                 runtimeKey + ".sandbox.size",
	"setup":                runtimeKey + ".setup",
	"approval":             runtimeKey + ".approval",
	"approvals":            runtimeKey + ".approval",
	"mcp":                  runtimeKey + ".mcp",
	"mcp_servers":          runtimeKey + ".mcp",
	// Names people reach for.
	"max_tokens":        runtimeKey + ".limits.budget.tokens",
	"max_tool_calls":    runtimeKey + ".limits.budget.tool_calls",
	"timeout":           runtimeKey + ".limits.tool_timeout_seconds",
	"tool_timeout":      runtimeKey + ".limits.tool_timeout_seconds",
	"allowed_hosts":     runtimeKey + ".network.hosts",
	"network_hosts":     runtimeKey + ".network.hosts",
	"allowed_tools":     runtimeKey + ".tools",
	"cpu":               runtimeKey + ".sandbox.size",
	"memory":            runtimeKey + ".sandbox.size",
	"system_prompt":     "instructions",
	"prompt":            "instructions",
	"x_agentsfleet":     runtimeKey,
	"agentsfleet":       runtimeKey,
	"x-agentsfleet":     runtimeKey,
	"working_directory": "workdir",
}

// unknownKeyMessage names the unknown key k found in the table at, and
// where it more likely belongs.
func unknownKeyMessage(k string, at keyPath, fields map[string]field) string {
	fold := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	if k == "config" && len(at) == 0 {
		return "unknown key \"config\"; the Definition is the document itself: write its keys at the top level, without a \"config\" wrapper"
	}
	for known := range fields {
		if fold(known) == fold(k) {
			return fmt.Sprintf("unknown key %q; did you mean %q?", clip(k), known)
		}
	}
	if home, ok := homes[fold(k)]; ok && home != at.key(k).String() {
		if !strings.Contains(home, ".") {
			return fmt.Sprintf("unknown key %q here; did you mean the top-level key %q?", clip(k), home)
		}
		return fmt.Sprintf("unknown key %q here; did you mean %s?", clip(k), home)
	}
	keys := make([]string, 0, len(fields))
	for known := range fields {
		keys = append(keys, known)
	}
	sort.Strings(keys)
	where := "at the top level"
	if len(at) > 0 {
		where = "in " + at.String()
	}
	return fmt.Sprintf("unknown key %q; the keys %s are %s", clip(k), where, strings.Join(keys, ", "))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
