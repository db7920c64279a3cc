package fleet_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

const setupBase = `name = "builder"
instructions = "Build it."
[x-agentsfleet]
tools = ["read"]
[x-agentsfleet.secrets]
GH_TOKEN = "prod/gh"
NPM = "prod/npm"
`

func TestSetupParsesAndRoundTrips(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte(setupBase + `[x-agentsfleet.setup]
command = "git clone https://github.com/org/repo && make deps"
secrets = ["NPM", "GH_TOKEN", "NPM"]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &fleet.Setup{Command: "git clone https://github.com/org/repo && make deps", Secrets: []string{"GH_TOKEN", "NPM"},
		TimeoutSeconds: fleet.DefaultSetupTimeoutSeconds}
	if !reflect.DeepEqual(d.Setup, want) {
		t.Fatalf("Setup = %+v, want %+v", d.Setup, want)
	}
	if got := d.Setup.Timeout().Seconds(); got != fleet.DefaultSetupTimeoutSeconds {
		t.Errorf("Timeout() = %vs, want %d", got, fleet.DefaultSetupTimeoutSeconds)
	}
	for _, form := range []struct {
		name string
		data []byte
		f    fleet.Format
	}{{"canonical JSON", d.Canonical(), fleet.JSON}, {"TOML", d.TOML(), fleet.TOML}} {
		back, err := fleet.Parse(form.data, form.f)
		if err != nil {
			t.Fatalf("%s: %v\n%s", form.name, err, form.data)
		}
		if !reflect.DeepEqual(back, d) {
			t.Errorf("%s round trip: got %+v, want %+v", form.name, back.Setup, d.Setup)
		}
	}
	c := d.Clone()
	c.Setup.Secrets[0] = "CHANGED"
	if d.Setup.Secrets[0] != "GH_TOKEN" {
		t.Error("Clone shares the setup's secrets with the original")
	}
}

func TestSetupChangesTheHash(t *testing.T) {
	t.Parallel()
	parse := func(setup string) string {
		d, err := fleet.ParseTOML([]byte(setupBase + setup))
		if err != nil {
			t.Fatal(err)
		}
		return d.Hash()
	}
	none := parse("")
	a := parse("[x-agentsfleet.setup]\ncommand = \"make\"\n")
	b := parse("[x-agentsfleet.setup]\ncommand = \"make deps\"\n")
	c := parse("[x-agentsfleet.setup]\ncommand = \"make\"\ntimeout_seconds = 60\n")
	d := parse("[x-agentsfleet.setup]\ncommand = \"make\"\nsecrets = [\"NPM\"]\n")
	same := parse("[x-agentsfleet.setup]\ncommand = \"make\"\ntimeout_seconds = 600\n")
	seen := map[string]string{}
	for name, h := range map[string]string{"none": none, "a": a, "b": b, "c": c, "d": d} {
		if other, ok := seen[h]; ok {
			t.Errorf("Definitions %s and %s have the same hash", name, other)
		}
		seen[h] = name
	}
	if same != a {
		t.Error("the default timeout written out changes the hash")
	}
}

func TestSetupProblemsNameTheField(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, setup, path, want string
	}{
		{"no command", "timeout_seconds = 5\n", "x-agentsfleet.setup.command", "required"},
		{"empty command", "command = \"  \"\n", "x-agentsfleet.setup.command", "empty"},
		{"long command", "command = \"" + strings.Repeat("a", fleet.MaxSetupCommandBytes+1) + "\"\n", "x-agentsfleet.setup.command", "at most"},
		{"command not a string", "command = 3\n", "x-agentsfleet.setup.command", "want a string"},
		{"timeout zero", "command = \"make\"\ntimeout_seconds = 0\n", "x-agentsfleet.setup.timeout_seconds", "1 to 3600"},
		{"timeout too long", "command = \"make\"\ntimeout_seconds = 3601\n", "x-agentsfleet.setup.timeout_seconds", "1 to 3600"},
		{"undeclared secret", "command = \"make\"\nsecrets = [\"GH_TOKEN\", \"STRIPE\"]\n", "x-agentsfleet.setup.secrets[1]", `unknown secret "STRIPE"`},
		{"unknown key", "command = \"make\"\nenv = {}\n", "x-agentsfleet.setup.env", "unknown key"},
		{"secrets not a list", "command = \"make\"\nsecrets = \"NPM\"\n", "x-agentsfleet.setup.secrets", "array of strings"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := fleet.ParseTOML([]byte(setupBase + "[x-agentsfleet.setup]\n" + tt.setup))
			var fe *fleet.Error
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *fleet.Error", err)
			}
			for _, p := range fe.Problems {
				if p.Path == tt.path && strings.Contains(p.Msg, tt.want) {
					return
				}
			}
			t.Errorf("problems = %v, want one at %s saying %q", fe.Problems, tt.path, tt.want)
		})
	}
}

// TestSetupSecretNamesThatWouldReachTheSandbox: a secret named like a
// variable the loader, the SDKs or the sandbox itself reads cannot be a
// setup variable, whatever the Definition declares.
func TestSetupSecretNamesThatWouldReachTheSandbox(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"LD_PRELOAD", "AWS_SECRET_ACCESS_KEY", "SANDBOXD_TOKEN", "AGENTSFLEET_CONFINE_POLICY", "PATH", "home", "ECS_AGENT"} {
		doc := "name = \"builder\"\ninstructions = \"x\"\n[x-agentsfleet.secrets]\n" + name + " = \"prod/x\"\n" +
			"[x-agentsfleet.setup]\ncommand = \"make\"\nsecrets = [\"" + name + "\"]\n"
		_, err := fleet.ParseTOML([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "x-agentsfleet.setup.secrets[0]") {
			t.Errorf("secret %s as a setup variable: err = %v, want a problem at x-agentsfleet.setup.secrets[0]", name, err)
		}
	}
}

func TestSetupNeedsTheExecuteScope(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte(setupBase + "[x-agentsfleet.setup]\ncommand = \"make\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.RequiredScopes(), []string{"tools:execute", "tools:files"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RequiredScopes = %q, want %q", got, want)
	}
	err = d.CheckScopes([]string{"tools:files"})
	var se *fleet.ScopeError
	if !errors.As(err, &se) || len(se.Missing) != 1 || se.Missing[0].Scope != "tools:execute" ||
		!reflect.DeepEqual(se.Missing[0].Tools, []string{fleet.SetupNeed}) {
		t.Fatalf("CheckScopes without tools:execute = %v, want the setup step named as needing it", err)
	}
	if err := d.CheckScopes([]string{"tools:files", "tools:execute"}); err != nil {
		t.Errorf("CheckScopes with both = %v, want nil", err)
	}
}
