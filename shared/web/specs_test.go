package web_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	catalog "github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/tool/tooltest"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/descriptions from the rendered descriptions")

func TestSpecsConform(t *testing.T) {
	t.Parallel()
	for _, spec := range web.Specs() {
		t.Run(spec.Name(), func(t *testing.T) {
			t.Parallel()
			tooltest.Conform(t, spec)
		})
	}
}

// The web tools are exactly the catalog's tools that run in the webtools λ.
func TestSpecsAreTheCatalogsWebTools(t *testing.T) {
	t.Parallel()
	var want []string
	for _, info := range catalog.Tools() {
		if info.RunsIn == catalog.InWebtools {
			want = append(want, info.Name)
		}
	}
	slices.Sort(want)
	svc, err := web.NewService(web.Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if got := tool.Names(web.Specs()); !slices.Equal(got, want) {
		t.Errorf("Specs() names %v, want the catalog's webtools tools %v", got, want)
	}
	if got := tool.Names(svc.Tools()); !slices.Equal(got, want) {
		t.Errorf("Service.Tools() names %v, want the catalog's webtools tools %v", got, want)
	}
}

// The tool names of the wire payload (Request.Tool) are the contracts'
// names, in the order of Specs.
func TestToolNamesAreTheContracts(t *testing.T) {
	t.Parallel()
	want := []string{wire.ToolWebFetch, wire.ToolWebSearch, wire.ToolWebFetchTLS, wire.ToolHTTPRequest, wire.ToolPushover}
	var got []string
	for _, spec := range web.Specs() {
		got = append(got, spec.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Specs() names %q, want %q", got, want)
	}
}

// A caller that reads Specs() tells the model what a Service runs.
func TestSpecsAreTheServicesTools(t *testing.T) {
	t.Parallel()
	svc, err := web.NewService(web.Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	specs, tools := web.Specs(), svc.Tools()
	if len(specs) != len(tools) {
		t.Fatalf("%d specs, %d tools", len(specs), len(tools))
	}
	for i, spec := range specs {
		got := tools[i]
		if got.Name() != spec.Name() {
			t.Errorf("tool %d is %s, spec %d is %s: want the same order", i, got.Name(), i, spec.Name())
			continue
		}
		if got.Description() != spec.Description() {
			t.Errorf("%s: the tool's description differs from its spec's", spec.Name())
		}
		if !bytes.Equal(got.Schema(), spec.Schema()) {
			t.Errorf("%s: schema %s, spec's %s", spec.Name(), got.Schema(), spec.Schema())
		}
	}
}

// Each description, its figures filled in from the code's constants, reads
// exactly as testdata/descriptions/NAME.txt: a change to a limit that
// changes what the model is told shows here. Run with -update to accept one.
func TestDescriptionsGolden(t *testing.T) {
	t.Parallel()
	for _, spec := range web.Specs() {
		path := filepath.Join("testdata", "descriptions", spec.Name()+".txt")
		if *update {
			if err := os.WriteFile(path, []byte(spec.Description()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.Description(); got != string(want) {
			t.Errorf("%s: description\n%s\nwant (%s)\n%s", spec.Name(), got, path, want)
		}
	}
}

// A tool run without Service.Call has no host list and no secrets: every
// request to a listed host is refused before anything is dialed or read.
func TestToolsOutsideCallReachNoListedHost(t *testing.T) {
	t.Parallel()
	values := &countingSource{src: secret.Map{}}
	svc, err := web.NewService(web.Config{Logger: quietLog(), Resolver: names, Secrets: values, PushoverURL: "https://pushover.example.com/1/messages.json"})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tool.Tool{}
	for _, tl := range svc.Tools() {
		byName[tl.Name()] = tl
	}
	for name, tt := range map[string]struct{ args, want string }{
		wire.ToolWebFetchTLS: {`{"url":"https://api.example.com/"}`, "web_fetch https://api.example.com/: refused: host api.example.com is not in the fleet's network host list"},
		wire.ToolHTTPRequest: {`{"url":"https://api.example.com/?t=«secret:TOKEN»"}`, "http_request GET https://api.example.com/?t=«secret:TOKEN»: refused: host api.example.com is not in the fleet's network host list. Nothing was sent and no secret was read: secret references are filled only for hosts on the fleet's network host list"},
		wire.ToolPushover:    {`{"message":"x"}`, "pushover: refused: host pushover.example.com is not in the fleet's network host list. Add pushover.example.com to the fleet's network host list to send notifications. Nothing was sent"},
	} {
		res, err := byName[name].Run(t.Context(), json.RawMessage(tt.args))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantText(t, res, tt.want)
	}
	if n := values.count(); n != 0 {
		t.Errorf("read %d secrets, want 0", n)
	}
}
