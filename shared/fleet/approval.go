package fleet

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Approval is the fleet's approval table ([x-agentsfleet.approval]): the
// tool calls a person approves before they run. A Definition without one
// has a nil *Approval.
type Approval struct {
	// Tools are the tools whose calls wait for a person: names the
	// Definition allows (built-in, declared, or mcp__<server>__<tool>,
	// mcp__<server>__* for all of a server's), sorted without repeats.
	Tools []string
	// Methods and Hosts narrow the http_request calls that wait: a call
	// waits when its method is one of Methods (upper case; none: any) and
	// its host is on Hosts (a host list; none: any). Only for http_request.
	Methods []string
	Hosts   HostList
	// ExpireHours is how long an approval nobody answers waits before it
	// expires: 1 to MaxApprovalExpireHours, DefaultApprovalExpireHours.
	ExpireHours int
}

// The approval table's bounds.
const (
	DefaultApprovalExpireHours = 24
	MaxApprovalExpireHours     = 30 * 24
)

// Expiry returns ExpireHours as a duration.
func (a *Approval) Expiry() time.Duration { return time.Duration(a.ExpireHours) * time.Hour }

// Needs reports whether a call of the tool name waits for a person. For
// http_request, method and host are the call's (host without port);
// other tools ignore them.
func (a *Approval) Needs(name, method, host string) bool {
	if a == nil {
		return false
	}
	listed := slices.Contains(a.Tools, name)
	if !listed {
		if server, _, ok := SplitMCPToolName(name); ok {
			listed = slices.Contains(a.Tools, MCPToolName(server, "*"))
		}
	}
	if !listed {
		return false
	}
	if name != "http_request" {
		return true
	}
	if len(a.Methods) > 0 && !slices.Contains(a.Methods, strings.ToUpper(method)) {
		return false
	}
	return len(a.Hosts) == 0 || a.Hosts.Allows(host)
}

// approvalMethods are the methods Methods may name.
var approvalMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// approvalDecoder gathers [x-agentsfleet.approval] as it is read.
type approvalDecoder struct {
	at                keyPath
	set               bool
	tools, methods    []listEntry
	hosts             []listEntry
	methodsAt, hostAt keyPath
	expire            intSetting
}

// field is the decoder of the table.
func (a *approvalDecoder) field(d *decoder, integer func(*intSetting) field) field {
	return func(at keyPath, v any) {
		a.at, a.set = at, true
		d.table(at, v, map[string]field{
			"tools": func(at keyPath, v any) { a.tools = d.list(at, v) },
			"methods": func(at keyPath, v any) {
				a.methodsAt, a.methods = at, d.list(at, v)
			},
			"hosts": func(at keyPath, v any) {
				a.hostAt, a.hosts = at, d.list(at, v)
			},
			"expire_hours": integer(&a.expire),
		})
	}
}

// approval checks what was gathered against the tools def allows.
func (a *approvalDecoder) approval(d *decoder, def *Definition) *Approval {
	if !a.set || d.mistyped[a.at.String()] {
		return nil
	}
	out := &Approval{}
	allowed := def.AllowedTools()
	for _, e := range a.tools {
		if !approvable(e.s, allowed) {
			d.probs.add(e.at, "%q is not a tool this Definition allows; approval applies to its tools (%s)", clip(e.s), strings.Join(allowed, ", "))
			continue
		}
		out.Tools = append(out.Tools, e.s)
	}
	if len(a.tools) == 0 && !d.mistyped[a.at.key("tools").String()] {
		d.probs.add(a.at.key("tools"), "required: the tools whose calls wait for a person, such as [\"http_request\", \"apply_patch\"]")
	}
	slices.Sort(out.Tools)
	out.Tools = slices.Compact(out.Tools)
	if (len(a.methods) > 0 || len(a.hosts) > 0) && !slices.Contains(out.Tools, "http_request") && len(a.tools) > 0 {
		d.probs.add(a.at, "methods and hosts narrow the http_request calls that wait; list http_request in tools, or leave them out")
	}
	for _, e := range a.methods {
		m := strings.ToUpper(e.s)
		if !slices.Contains(approvalMethods, m) {
			d.probs.add(e.at, "%q is not an HTTP method http_request sends (%s)", clip(e.s), strings.Join(approvalMethods, ", "))
			continue
		}
		out.Methods = append(out.Methods, m)
	}
	slices.Sort(out.Methods)
	out.Methods = slices.Compact(out.Methods)
	raw := make([]string, len(a.hosts))
	for i, h := range a.hosts {
		raw[i] = h.s
	}
	out.Hosts = normalizeHosts(raw, a.hostAt, &d.probs)
	out.ExpireHours = int(d.bounded(a.expire, 1, MaxApprovalExpireHours, DefaultApprovalExpireHours, "hours"))
	return out
}

// approvable reports whether name is a tool of allowed, or an MCP pattern
// or tool the allowlist admits.
func approvable(name string, allowed []string) bool {
	if slices.Contains(allowed, name) {
		return true
	}
	server, tool, ok := SplitMCPToolName(name)
	return ok && (AllowsMCPTool(allowed, server, tool) || (tool == "*" && AllowsMCPServer(allowed, server)))
}

// wireApproval is [x-agentsfleet.approval] in the canonical form.
type wireApproval struct {
	Tools       []string `json:"tools"`
	Methods     []string `json:"methods,omitempty"`
	Hosts       []string `json:"hosts,omitempty"`
	ExpireHours int      `json:"expire_hours,omitempty"`
}

func (a *Approval) wire() *wireApproval {
	if a == nil {
		return nil
	}
	return &wireApproval{Tools: a.Tools, Methods: a.Methods, Hosts: a.Hosts, ExpireHours: a.ExpireHours}
}

// writeTOML writes the table in TOML.
func (a *Approval) writeTOML(b *bytes.Buffer) {
	if a == nil {
		return
	}
	fmt.Fprintf(b, "\n[%s.approval]\n", runtimeKey)
	writeTOMLList(b, "tools", a.Tools)
	if len(a.Methods) > 0 {
		writeTOMLList(b, "methods", a.Methods)
	}
	if len(a.Hosts) > 0 {
		writeTOMLList(b, "hosts", a.Hosts)
	}
	if a.ExpireHours != 0 {
		fmt.Fprintf(b, "expire_hours = %d\n", a.ExpireHours)
	}
}

// clone returns a deep copy of a.
func (a *Approval) clone() *Approval {
	if a == nil {
		return nil
	}
	c := *a
	c.Tools, c.Methods, c.Hosts = slices.Clone(a.Tools), slices.Clone(a.Methods), slices.Clone(a.Hosts)
	return &c
}
