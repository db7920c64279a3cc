package deployment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAllowed(t *testing.T) {
	t.Parallel()
	var stmts []statement
	json.Unmarshal([]byte(`[
		{"Effect":"Allow","Action":["dynamodb:GetItem","dynamodb:Query"],"Resource":["arn:aws:dynamodb:us-east-1:1:table/T","arn:aws:dynamodb:us-east-1:1:table/T/index/*"]},
		{"Effect":"Allow","Action":"ecs:RunTask","Resource":"arn:aws:ecs:us-east-1:1:task-definition/sb:*","Condition":{"ArnEquals":{"ecs:cluster":"arn:aws:ecs:us-east-1:1:cluster/c"}}},
		{"Effect":"Allow","Action":"secretsmanager:*","Resource":"*"},
		{"Effect":"Deny","Action":"secretsmanager:*","Resource":"arn:aws:secretsmanager:us-east-1:1:secret:slack-??????"},
		{"Effect":"Deny","Action":"dynamodb:*","Resource":["arn:aws:dynamodb:us-east-1:1:table/T","arn:aws:dynamodb:us-east-1:1:table/T/index/*"],
		 "Condition":{"ForAnyValue:StringLike":{"dynamodb:LeadingKeys":["POOL#*"]}}},
		{"Effect":"Allow","Action":"dynamodb:DeleteItem","Resource":"arn:aws:dynamodb:us-east-1:1:table/T"},
		{"Effect":"Deny","Action":"dynamodb:DeleteItem","Resource":"arn:aws:dynamodb:us-east-1:1:table/T","Condition":{"NumericLessThan":{"x":"1"}}},
		{"Effect":"Allow","Action":"dynamodb:PutItem","Resource":"arn:aws:dynamodb:us-east-1:1:table/U","Condition":{"NumericLessThan":{"x":"1"}}}
	]`), &stmts)
	pool := func(action, pk string) Call {
		return Call{Action: action, Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}, Context: map[string]string{"dynamodb:LeadingKeys": pk}}
	}
	for _, c := range []struct {
		call Call
		want bool
	}{
		{Call{Action: "dynamodb:GetItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}}, true},
		// A Deny whose operator the harness does not know applies; such an
		// Allow does not.
		{Call{Action: "dynamodb:DeleteItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}}, false},
		{Call{Action: "dynamodb:PutItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/U"}}, false},
		{pool("dynamodb:Query", "POOL#small"), false},
		{pool("dynamodb:Query", "FLEET#a"), true},
		{pool("dynamodb:Query", "XPOOL#small"), true},
		{Call{Action: "dynamodb:Query", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}}, true},
		{Call{Action: "dynamodb:Query", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T/index/gsi1"}}, true},
		{Call{Action: "dynamodb:PutItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}}, false},
		{Call{Action: "dynamodb:GetItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/Other"}}, false},
		{Call{Action: "ecs:RunTask", Resource: []string{"arn:aws:ecs:us-east-1:1:task-definition/sb:3"},
			Context: map[string]string{"ecs:cluster": "arn:aws:ecs:us-east-1:1:cluster/c"}}, true},
		{Call{Action: "ecs:RunTask", Resource: []string{"arn:aws:ecs:us-east-1:1:task-definition/sb:3"},
			Context: map[string]string{"ecs:cluster": "arn:aws:ecs:us-east-1:1:cluster/other"}}, false},
		{Call{Action: "ecs:RunTask", Resource: []string{"arn:aws:ecs:us-east-1:1:task-definition/sb:3"}}, false},
		{Call{Action: "secretsmanager:GetSecretValue", Resource: []string{"arn:aws:secretsmanager:us-east-1:1:secret:fleet-AbCdEf"}}, true},
		{Call{Action: "secretsmanager:GetSecretValue", Resource: []string{"arn:aws:secretsmanager:us-east-1:1:secret:slack-AbCdEf"}}, false},
	} {
		if got, why := Allowed(stmts, c.call); got != c.want {
			t.Errorf("Allowed(%v) = %v (%s), want %v", c.call, got, why, c.want)
		}
	}
}

func TestRouteMatch(t *testing.T) {
	t.Parallel()
	v1 := route{key: "ANY /v1/{proxy+}", method: "ANY", segments: []string{"v1", "{proxy+}"}}
	events := route{key: "POST /slack/events", method: "POST", segments: []string{"slack", "events"}}
	for _, c := range []struct {
		rt           route
		method, path string
		want         bool
		proxy        string
	}{
		{v1, "GET", "/v1/runs/r1/events", true, "runs/r1/events"},
		{v1, "PUT", "/v1/fleets/a", true, "fleets/a"},
		{v1, "GET", "/v1", false, ""},
		{v1, "GET", "/v2/runs", false, ""},
		{events, "POST", "/slack/events", true, ""},
		{events, "GET", "/slack/events", false, ""},
		{events, "POST", "/slack/events/x", false, ""},
	} {
		params, ok := c.rt.match(c.method, c.path)
		if ok != c.want || (ok && params["proxy"] != c.proxy) {
			t.Errorf("%s matches %s %s = %v %v, want %v %q", c.rt.key, c.method, c.path, ok, params, c.want, c.proxy)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	vs := &values{region: "us-east-1", account: "1", refs: map[string]string{"Table": "T"}, attrs: map[string]string{"Table.Arn": "arn:t"}}
	var v any
	json.Unmarshal([]byte(`{"a":{"Fn::Join":["",["x-",{"Ref":"Table"},"-",{"Fn::GetAtt":["Table","Arn"]}]]},
		"b":{"Fn::Sub":"${AWS::Region}:${Table}:${Table.Arn}:${!Literal}"},
		"c":{"Fn::Select":[1,{"Fn::Split":[",","p,q,r"]}]}}`), &v)
	got, err := vs.resolve(v)
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	for k, want := range map[string]string{"a": "x-T-arn:t", "b": "us-east-1:T:arn:t:${Literal}", "c": "q"} {
		if m[k] != want {
			t.Errorf("%s = %v, want %q", k, m[k], want)
		}
	}
	if _, err := vs.resolve(map[string]any{"Ref": "Missing"}); err == nil {
		t.Error("a Ref to a resource the harness never made resolved")
	}
}

// TestStageConfig: an image built from a stage runs what that stage has,
// after what it inherits from its base stage: the sandbox image's default
// build (the last stage) has no --browser, its browser target has one,
// both with the base's ENTRYPOINT and ENV; a HEALTHCHECK's CMD is none.
func TestStageConfig(t *testing.T) {
	t.Parallel()
	real, err := os.ReadFile(filepath.Join("..", "..", "sandboximage", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	const synthetic = `ARG V=1
FROM golang:${V} AS build
CMD ["build"]
FROM debian AS base
ENV A=1 B="two words"
ENV C 3
HEALTHCHECK --interval=1s \
  CMD ["/bin/health"]
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/sandboxd"]
CMD ["serve", "--listen", ":8080"]
FROM base AS inherits
RUN true
FROM base AS own
# a comment
ENV A=4
CMD ["serve", \
     "--browser", "/usr/bin/chromium"]
FROM base AS entry
ENTRYPOINT ["/usr/local/bin/sandboxd"]
`
	for _, c := range []struct {
		dockerfile, target string
		entry, cmd, env    string
	}{
		{string(real), "", "/usr/bin/tini -- /usr/local/bin/sandboxd", "", "HOME=/agent"},
		{string(real), "browser", "/usr/bin/tini -- /usr/local/bin/sandboxd", "--browser /usr/bin/chromium", "HOME=/agent"},
		{string(real), "sandbox", "/usr/bin/tini -- /usr/local/bin/sandboxd", "", "HOME=/agent"},
		{synthetic, "inherits", "/usr/bin/tini -- /usr/local/bin/sandboxd", "serve --listen :8080", "A=1 B=two words C=3"},
		{synthetic, "own", "/usr/bin/tini -- /usr/local/bin/sandboxd", "serve --browser /usr/bin/chromium", "A=1 B=two words C=3 A=4"},
		{synthetic, "", "/usr/local/bin/sandboxd", "", "A=1 B=two words C=3"},
		{synthetic, "build", "", "build", ""},
	} {
		got, err := stageConfig(c.dockerfile, c.target)
		if err != nil {
			t.Errorf("stage %q: %v", c.target, err)
			continue
		}
		entry, cmd, env := strings.Join(got.entrypoint, " "), strings.Join(got.cmd, " "), strings.Join(got.env, " ")
		if entry != c.entry || env != c.env {
			t.Errorf("stage %q: ENTRYPOINT %q, ENV %q; want %q, %q", c.target, entry, env, c.entry, c.env)
		}
		if c.dockerfile == string(real) {
			// The real image's CMD is sandboxd serve; only the browser has --browser.
			if !strings.HasPrefix(cmd, "serve ") || strings.Contains(cmd, "--browser") != (c.target == "browser") {
				t.Errorf("stage %q: CMD %q, want serve, with --browser in the browser stage alone", c.target, cmd)
			}
		} else if cmd != c.cmd {
			t.Errorf("stage %q: CMD %q, want %q", c.target, cmd, c.cmd)
		}
	}
	if _, err := stageConfig(synthetic, "missing"); err == nil {
		t.Error("an unknown target gave a config")
	}
	if _, err := stageConfig("FROM x\nCMD serve --listen :1\n", ""); err == nil {
		t.Error("a shell-form CMD gave a config")
	}
}

// TestSandboxOf: RunTask's taskDefinition (ARN, family:revision or
// family) finds its own task definition, never a family that merely
// begins the same.
func TestSandboxOf(t *testing.T) {
	t.Parallel()
	const prefix = "arn:aws:ecs:us-east-1:1:task-definition/"
	plain := &sandboxContainer{id: "Plain", family: "Agentsfleet-sandbox", taskDef: prefix + "Agentsfleet-sandbox:1"}
	browsing := &sandboxContainer{id: "Browser", family: "Agentsfleet-sandbox-browser", taskDef: prefix + "Agentsfleet-sandbox-browser:1"}
	d := &Deployment{sandboxes: map[string]*sandboxContainer{plain.taskDef: plain, browsing.taskDef: browsing}}
	for td, want := range map[string]*sandboxContainer{
		prefix + "Agentsfleet-sandbox:1": plain, "Agentsfleet-sandbox:1": plain, "Agentsfleet-sandbox": plain,
		prefix + "Agentsfleet-sandbox-browser:1": browsing, "Agentsfleet-sandbox-browser:1": browsing, "Agentsfleet-sandbox-browser": browsing,
		"Agentsfleet-sandbox:2": nil, "Agentsfleet": nil, "": nil,
	} {
		if got := d.sandboxOf(td); got != want {
			t.Errorf("sandboxOf(%q) = %v, want %v", td, got, want)
		}
	}
}
