//go:build linux

package client_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// TestCallDeclared: a declared tool's call reaches sandboxd's declared tool
// over HTTP and answers as server.Call does; arguments that are not an
// object are refused before anything is sent.
func TestCallDeclared(t *testing.T) {
	t.Parallel()
	sd := newSandboxd(t)
	c := newClient(t, client.Config{URL: sd.url})
	args := wire.DeclaredArgs{Name: "greet", Command: `echo "hello $AGENTSFLEET_ARG_WHO"; cat; exit 2`, Arguments: json.RawMessage(`{"who": "world"}`)}
	got, err := c.CallDeclared(context.Background(), args, "key-1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(args)
	if want := sd.direct(t, wire.DeclaredTool, string(body)); !reflect.DeepEqual(got, want) || got.Output != "hello world\n{\"who\":\"world\"}\n[exit code 2]" || !got.IsError {
		t.Fatalf("CallDeclared = %+v, want %+v", got, want)
	}
	before := sd.requests.Load()
	args.Arguments = json.RawMessage(`["world"]`)
	_, err = c.CallDeclared(context.Background(), args, "")
	wantError(t, err, client.ErrBadRequest, 0, "the arguments of declared tool greet must be a JSON object")
	if sd.requests.Load() != before {
		t.Fatal("arguments that are not an object were sent")
	}
}
