package fleet

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// MCPServer is one [[x-agentsfleet.mcp]] entry: an MCP server whose tools
// the fleet's agent may call, as mcp__<Name>__<tool>, where the allowlist
// names them (by full name, or all of the server's by mcp__<Name>__*). It
// has exactly one of URL (a remote, streamable-HTTP server) and Command (a
// stdio server started in the sandbox).
//
// A remote server is reached from the webtools function only, through the
// egress policy, and its URL's host must be on the fleet's network host
// list: Parse checks it, and webtools checks every request again (redirects
// too). Header values may hold «secret:NAME» references to the fleet's
// secrets, filled only there and only toward that host.
//
// A stdio server is one long-lived process per sandbox, started by
// sandboxd under bash's confinement (its policy, uid, Landlock roots,
// seccomp filter, environment and workdir), which speaks MCP on its
// standard input and output. It gets no secret and no header; a Definition
// with one needs ScopeExecute as well as ScopeMCP, since it runs a command.
type MCPServer struct {
	// Name matches MCPServerNamePattern and is unique in the Definition.
	Name string
	// URL is the server's streamable-HTTP endpoint: https, or http for a
	// loopback address (which only the web tools' test escape hatch admits).
	URL string
	// Headers are sent with every request to the server; nil when none.
	// Only a remote server has them.
	Headers map[string]string
	// Command is a stdio server's program and its arguments (argv: no
	// shell; ["/bin/sh", "-c", "…"] gives one), the program looked up in
	// the sandbox's PATH; nil for a remote server.
	Command []string
}

// Stdio reports whether s is a stdio server, started in the sandbox.
func (s MCPServer) Stdio() bool { return len(s.Command) > 0 }

// Limits of [[x-agentsfleet.mcp]].
const (
	// MaxMCPServers is the most MCP servers a Definition may name.
	MaxMCPServers = 16
	// MaxMCPHeaders is the most headers one server entry may carry.
	MaxMCPHeaders = 16
	// MaxMCPURLLen is the longest server URL, in bytes.
	MaxMCPURLLen = 2048
	// MaxMCPToolNameLen is the longest full tool name, mcp__<server>__<tool>:
	// the limit the model providers put on a tool's name.
	MaxMCPToolNameLen = 64
	// MaxMCPCommandArgs is the most strings a stdio server's command holds.
	MaxMCPCommandArgs = 64
	// MaxMCPCommandBytes bounds a stdio server's command, all its strings.
	MaxMCPCommandBytes = 16 << 10
)

// ScopeMCP is the scope an API key needs to apply a Definition that names
// MCP servers or allows their tools.
const ScopeMCP = "tools:mcp"

// MCPPrefix starts the name of every MCP tool.
const MCPPrefix = "mcp__"

// MCPServerNamePattern is what a server's name must match: it is part of
// every tool name, and "__" separates the parts.
var MCPServerNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// mcpToolPart is what the tool part of a full name may hold: the model
// providers' tool-name alphabet.
var mcpToolPart = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// MCPToolName is the name the model sees for tool of server.
func MCPToolName(server, tool string) string { return MCPPrefix + server + "__" + tool }

// SplitMCPToolName splits mcp__<server>__<tool> into its server and tool
// ("*" for the server-wide allowlist entry); ok is false for a name that
// is not of that form.
func SplitMCPToolName(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, MCPPrefix)
	if !found {
		return "", "", false
	}
	server, tool, found = strings.Cut(rest, "__")
	if !found || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// IsMCPToolName reports whether name is of the mcp__<server>__<tool> form.
func IsMCPToolName(name string) bool {
	_, _, ok := SplitMCPToolName(name)
	return ok
}

// MCPServerByName returns the server called name.
func (d *Definition) MCPServerByName(name string) (MCPServer, bool) {
	for _, s := range d.MCP {
		if s.Name == name {
			return s, true
		}
	}
	return MCPServer{}, false
}

// AllowsMCPTool reports whether the allowlist tools admits tool of server:
// by its full name or by mcp__<server>__*.
func AllowsMCPTool(tools []string, server, tool string) bool {
	return slices.Contains(tools, MCPToolName(server, tool)) || slices.Contains(tools, MCPToolName(server, "*"))
}

// AllowsMCPServer reports whether the allowlist tools admits any tool of
// server.
func AllowsMCPServer(tools []string, server string) bool {
	return slices.ContainsFunc(tools, func(t string) bool {
		s, _, ok := SplitMCPToolName(t)
		return ok && s == server
	})
}

// checkMCPAllowed returns why the allowlist entry name (of the mcp__ form
// or starting with mcp__) cannot stand, "" when it can.
func checkMCPAllowed(name string, servers []MCPServer) string {
	server, tool, ok := SplitMCPToolName(name)
	if !ok {
		return fmt.Sprintf("%q is not an MCP tool name: write mcp__<server>__<tool>, or mcp__<server>__* for all of a server's tools", clip(name))
	}
	if !slices.ContainsFunc(servers, func(s MCPServer) bool { return s.Name == server }) {
		names := make([]string, len(servers))
		for i, s := range servers {
			names[i] = s.Name
		}
		if len(names) == 0 {
			return fmt.Sprintf("tool %q names the MCP server %q, but the Definition declares none ([[%s.mcp]] name and url)", clip(name), clip(server), runtimeKey)
		}
		return fmt.Sprintf("tool %q names the MCP server %q, which the Definition does not declare; its MCP servers are %s", clip(name), clip(server), strings.Join(names, ", "))
	}
	if tool == "*" {
		return ""
	}
	if !mcpToolPart.MatchString(tool) || len(name) > MaxMCPToolNameLen {
		return fmt.Sprintf("tool %q: an MCP tool's name is at most %d characters in all, of letters, digits, _ and -", clip(name), MaxMCPToolNameLen)
	}
	return ""
}

// mcp decodes the [[x-agentsfleet.mcp]] array of tables. Header values are
// checked against secrets, the fleet's declared secrets, and URLs against
// hosts, once both are decoded (checkMCP).
func (d *decoder) mcp(at keyPath, v any) []MCPServer {
	a, ok := d.boundedArray(at, v, "an array of tables ([["+runtimeKey+".mcp]])", MaxMCPServers, "MCP servers")
	if !ok {
		return nil
	}
	var out []MCPServer
	for i, e := range a {
		eat := at.index(i)
		var s MCPServer
		var nameSet, urlSet, commandSet bool
		d.table(eat, e, map[string]field{
			"name":    func(at keyPath, v any) { s.Name, nameSet = d.str(at, v) },
			"url":     func(at keyPath, v any) { s.URL, urlSet = d.str(at, v) },
			"command": func(at keyPath, v any) { s.Command, commandSet = d.mcpCommand(at, v), true },
			"headers": func(at keyPath, v any) { s.Headers = d.mcpHeaders(at, v) },
		})
		if _, isTable := e.(map[string]any); !isTable {
			continue
		}
		switch {
		case !nameSet:
			if !d.mistyped[eat.key("name").String()] {
				d.probs.add(eat, "an MCP server needs a name (%s)", MCPServerNamePattern)
			}
		case !MCPServerNamePattern.MatchString(s.Name) || strings.Contains(s.Name, "__"):
			d.probs.add(eat.key("name"), "%q is not an MCP server name: 1 to 32 lowercase letters, digits, _ and -, starting with a letter or digit, without \"__\" (it is part of every tool name, mcp__<server>__<tool>)", clip(s.Name))
		case slices.ContainsFunc(out, func(o MCPServer) bool { return o.Name == s.Name }):
			d.probs.add(eat.key("name"), "MCP server %q is declared twice", s.Name)
		}
		switch {
		case urlSet && commandSet:
			d.probs.add(eat, "an MCP server has either url (a remote server) or command (a stdio server in the sandbox), not both")
		case !urlSet && !commandSet && !d.mistyped[eat.key("url").String()] && !d.mistyped[eat.key("command").String()]:
			d.probs.add(eat, "an MCP server needs url, its streamable-HTTP endpoint (https://…), or command, the program of a stdio server to start in the sandbox ([\"program\", \"arg\", …])")
		case commandSet && s.Headers != nil:
			d.probs.add(eat.key("headers"), "a stdio MCP server (command) takes no headers: they are sent to a remote server only, and no secret reaches a process in the sandbox")
		}
		if urlSet {
			if msg := checkMCPURL(s.URL); msg != "" {
				d.probs.add(eat.key("url"), "%s", msg)
			}
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil
	}
	return out
}

// mcpCommand decodes a stdio server's command: a non-empty array of
// strings, its program first. A string is refused, naming the array form,
// so that no shell quoting is ever guessed.
func (d *decoder) mcpCommand(at keyPath, v any) []string {
	if s, ok := v.(string); ok {
		d.probs.add(at, "a stdio MCP server's command is an array of strings, its program and each argument (command = [\"node\", \"server.js\"]), not one string; for a shell line write [\"/bin/sh\", \"-c\", %q]", clip(s))
		return nil
	}
	a, ok := d.boundedArray(at, v, "an array of strings", MaxMCPCommandArgs, "command strings")
	if !ok {
		return nil
	}
	out := make([]string, 0, len(a))
	total := 0
	for i, e := range a {
		s, ok := d.str(at.index(i), e)
		if !ok {
			return nil
		}
		if strings.ContainsRune(s, 0) {
			d.probs.add(at.index(i), "a command string must not contain a NUL character")
			return nil
		}
		total += len(s)
		out = append(out, s)
	}
	switch {
	case len(out) == 0:
		d.probs.add(at, "the command is empty: give the server's program, then its arguments")
		return nil
	case strings.TrimSpace(out[0]) == "":
		d.probs.add(at.index(0), "the command's program is blank")
		return nil
	case total > MaxMCPCommandBytes:
		d.probs.add(at, "the command is %d bytes; at most %d are allowed", total, MaxMCPCommandBytes)
		return nil
	}
	return out
}

// mcpHeaders decodes a server's headers table.
func (d *decoder) mcpHeaders(at keyPath, v any) map[string]string {
	m, ok := d.boundedTable(at, v, MaxMCPHeaders, "headers")
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, k := range sortedKeys(m) {
		kat := at.key(k)
		s, ok := d.str(kat, m[k])
		if !ok {
			continue
		}
		if msg := checkMCPHeader(k, s); msg != "" {
			d.probs.add(kat, "%s", msg)
			continue
		}
		out[k] = s
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// mcpReservedHeaders are set by the HTTP client or by the MCP transport
// itself (the session id, the protocol version).
var mcpReservedHeaders = []string{"host", "content-length", "content-type", "accept", "connection", "transfer-encoding",
	"upgrade", "te", "trailer", "keep-alive", "proxy-connection", "mcp-session-id", "mcp-protocol-version", "last-event-id"}

func checkMCPHeader(name, value string) string {
	if name == "" || strings.ContainsFunc(name, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	}) {
		return fmt.Sprintf("%q is not a valid header name", clip(name))
	}
	if slices.Contains(mcpReservedHeaders, strings.ToLower(name)) {
		return fmt.Sprintf("header %s is set by agentsfleet and cannot be given", clip(name))
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Sprintf("the value of header %s holds a line break or NUL", clip(name))
	}
	return ""
}

// checkMCPURL checks a server URL's form; its host is checked against the
// host list by checkMCP.
func checkMCPURL(raw string) string {
	if len(raw) > MaxMCPURLLen {
		return fmt.Sprintf("the URL is %d bytes; at most %d are allowed", len(raw), MaxMCPURLLen)
	}
	if strings.Contains(raw, refOpen) {
		return "a secret reference cannot be part of an MCP server's URL: put it in a header (headers = { Authorization = \"Bearer «secret:NAME»\" })"
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return fmt.Sprintf("%q is not an absolute https URL", clip(raw))
	}
	if u.User != nil {
		return "the URL cannot carry user information (user:password@); put credentials in a header"
	}
	if u.Fragment != "" {
		return "the URL cannot have a fragment (#…)"
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopbackHost(u.Hostname()) {
			return fmt.Sprintf("%q is http: an MCP server is reached over https (http only for a loopback address, in tests)", clip(raw))
		}
	default:
		return fmt.Sprintf("scheme %q is not allowed: an MCP server's url is https", clip(u.Scheme))
	}
	return ""
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkMCP checks what joins the servers to the rest of the Definition:
// each URL's host is on the network host list, each header's references
// name secrets the Definition declares. It runs once the whole document is
// decoded.
func (d *decoder) checkMCP(def *Definition) {
	for i, s := range def.MCP {
		at := runtimePath("mcp").index(i)
		if u, err := url.Parse(s.URL); err == nil && s.URL != "" && checkMCPURL(s.URL) == "" && !def.Hosts.Allows(u.Hostname()) {
			d.probs.add(at.key("url"), "the host %s is not on the fleet's network host list (%s.network.hosts): add it there, since MCP traffic follows the same list", u.Hostname(), runtimeKey)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			if msg := checkRefs(s.Headers[k], def.Secrets); msg != "" {
				d.probs.add(at.key("headers").key(k), "%s", msg)
			}
		}
	}
}

// checkApproveSecrets refuses a secret that says approve = true where no
// call is there to wait on: the setup step's variables and MCP servers'
// headers are filled before the agent's first turn, for a command or a
// server the Definition's author chose.
func (d *decoder) checkApproveSecrets(def *Definition) {
	for _, name := range def.ApproveSecrets {
		if def.Setup != nil && slices.Contains(def.Setup.Secrets, name) {
			d.probs.add(runtimePath("setup", "secrets"), "the secret %s says approve = true, but the setup step gets its secrets before any call a person could approve; give the setup step a secret without approve", name)
		}
		for i, s := range def.MCP {
			for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
				if strings.Contains(s.Headers[k], refOpen+name+"»") {
					d.probs.add(runtimePath("mcp").index(i).key("headers").key(k), "the secret %s says approve = true, but an MCP server's headers are filled when the run connects to it, before any call a person could approve; use a secret without approve", name)
				}
			}
		}
	}
}

// refOpen starts a «secret:NAME» reference (package secret's form; that
// package is not linked here, since it brings the Secrets Manager client).
const refOpen = "«secret:"

var refPattern = regexp.MustCompile(`^«secret:([A-Za-z0-9_.\-]+)»`)

// checkRefs returns why the references in text cannot be filled, "" when
// each is well-formed and names one of secrets.
func checkRefs(text string, secrets map[string]string) string {
	for rest := text; ; {
		i := strings.Index(rest, refOpen)
		if i < 0 {
			return ""
		}
		rest = rest[i:]
		m := refPattern.FindStringSubmatch(rest)
		if m == nil {
			return fmt.Sprintf("a malformed secret reference near %q: write «secret:NAME»", clip(rest))
		}
		if _, ok := secrets[m[1]]; !ok {
			return fmt.Sprintf("«secret:%s» names a secret the Definition does not declare in %s.secrets", m[1], runtimeKey)
		}
		rest = rest[len(m[0]):]
	}
}

// cloneMCP is a deep copy of servers.
func cloneMCP(servers []MCPServer) []MCPServer {
	if servers == nil {
		return nil
	}
	out := make([]MCPServer, len(servers))
	for i, s := range servers {
		out[i] = s
		out[i].Command = slices.Clone(s.Command)
		if s.Headers != nil {
			out[i].Headers = make(map[string]string, len(s.Headers))
			for k, v := range s.Headers {
				out[i].Headers[k] = v
			}
		}
	}
	return out
}

// wireMCP is one server in the canonical form.
type wireMCP struct {
	Name    string            `json:"name"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Command []string          `json:"command,omitempty"`
}

func (d *Definition) mcpWire() []wireMCP {
	if len(d.MCP) == 0 {
		return nil
	}
	out := make([]wireMCP, len(d.MCP))
	for i, s := range d.MCP {
		out[i] = wireMCP(s)
	}
	return out
}

// writeMCPTOML writes the servers as [[x-agentsfleet.mcp]] tables.
func (d *Definition) writeMCPTOML(b interface{ WriteString(string) (int, error) }) {
	for _, s := range d.MCP {
		b.WriteString(fmt.Sprintf("\n[[%s.mcp]]\nname = %s\n", runtimeKey, tomlString(s.Name)))
		if s.Stdio() {
			parts := make([]string, len(s.Command))
			for i, c := range s.Command {
				parts[i] = tomlString(c)
			}
			b.WriteString("command = [" + strings.Join(parts, ", ") + "]\n")
		} else {
			b.WriteString("url = " + tomlString(s.URL) + "\n")
		}
		if len(s.Headers) > 0 {
			b.WriteString(fmt.Sprintf("[%s.mcp.headers]\n", runtimeKey))
			for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
				b.WriteString(fmt.Sprintf("%s = %s\n", keySegment(k), tomlString(s.Headers[k])))
			}
		}
	}
}

// stdioScopeNeeds lists what in d needs ScopeExecute for its stdio MCP
// servers: each one, since it runs a command in the sandbox.
func (d *Definition) stdioScopeNeeds() []string {
	var out []string
	for _, s := range d.MCP {
		if s.Stdio() {
			out = append(out, "stdio MCP server "+s.Name)
		}
	}
	return out
}

// mcpScopeNeeds lists what in d needs ScopeMCP: the allowlist's MCP
// entries, or, when it has none, each declared server.
func (d *Definition) mcpScopeNeeds() []string {
	var out []string
	for _, t := range d.Tools {
		if IsMCPToolName(t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		for _, s := range d.MCP {
			out = append(out, "MCP server "+s.Name)
		}
	}
	return out
}
