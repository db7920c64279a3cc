package web_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// The sample invocation payload in events/ round-trips through Request.
func TestRequestRoundTrip(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../events/webtools/http_request.json")
	if err != nil {
		t.Fatal(err)
	}
	var req wire.Request
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Fatal(err)
	}
	if req.Tool != wire.ToolHTTPRequest || req.RunID == "" || req.Fleet != "acme-triage" ||
		req.Secrets["GITHUB_TOKEN"] != "agentsfleet/acme-triage/github-token" || len(req.Hosts) != 2 {
		t.Fatalf("decoded %+v", req)
	}
	back, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal(raw, &a)
	json.Unmarshal(back, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("round trip changed the payload:\n got %s\nwant %s", back, raw)
	}
	out, _ := json.Marshal(tool.Result{Output: "x"})
	if string(out) != `{"output":"x","is_error":false}` {
		t.Fatalf("Result marshals as %s", out)
	}
}

func TestCallUnknownToolAndBadHostList(t *testing.T) {
	t.Parallel()
	svc, err := web.NewService(web.Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Call(t.Context(), wire.Request{Tool: "bash"})
	if err != nil || !res.IsError || res.Output != `unknown web tool "bash": the web tools are webfetch, websearch, web_fetch, http_request, pushover` {
		t.Fatalf("Call(bash) = %+v, %v", res, err)
	}
	if _, err := svc.Call(t.Context(), wire.Request{Tool: wire.ToolWebFetchTLS, Hosts: []string{"*.com"}}); err == nil {
		t.Fatal("a host list entry *.com was accepted")
	}
}

func TestToolsDescribeThemselves(t *testing.T) {
	t.Parallel()
	svc, err := web.NewService(web.Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	for _, wt := range svc.Tools() {
		if len(wt.Description()) < 100 {
			t.Errorf("%s: description %q is too short to guide a model", wt.Name(), wt.Description())
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(wt.Schema(), &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: schema is not a JSON object schema: %v", wt.Name(), err)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", wt.Name(), r)
			}
		}
	}
}
