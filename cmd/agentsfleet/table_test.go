package main

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestTableKey: `agentsfleet table key` writes a working API key straight
// into the table (a deployment's first key), with every scope unless
// --scopes narrows it; bad input is refused saying why. Not parallel: the
// command reads the AWS settings from the process environment.
func TestTableKey(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	ctx := context.Background()
	name := awstest.UniqueName(t, "tablekey")
	var out strings.Builder
	if err := run(ctx, []string{"table", "create", "--name", name}, &out, &out); err != nil {
		t.Fatal(err)
	}
	st := store.New(dynamodb.NewFromConfig(awstest.Config(t)), name)
	afk := regexp.MustCompile(`(?m)^afk_\S+$`)
	for _, tc := range []struct {
		args   []string
		scopes []string
		fleets []string
	}{
		{[]string{"admin"}, scope.Names(), nil},
		{[]string{"--scopes", "runs:read, runs:write", "ci"}, []string{"runs:read", "runs:write"}, nil},
		{[]string{"--fleets", "ops,dev", "team"}, scope.Names(), []string{"dev", "ops"}},
	} {
		out.Reset()
		if err := run(ctx, append([]string{"table", "key", "--name", name}, tc.args...), &out, &out); err != nil {
			t.Fatalf("table key %v: %v", tc.args, err)
		}
		key := afk.FindString(out.String())
		k, err := st.Authenticate(ctx, key)
		if err != nil {
			t.Fatalf("the key printed by table key %v does not authenticate: %v\n%s", tc.args, err, out.String())
		}
		want := slices.Sorted(slices.Values(tc.scopes))
		if !slices.Equal(k.Scopes, want) {
			t.Errorf("table key %v: scopes %v, want %v", tc.args, k.Scopes, want)
		}
		if !slices.Equal(k.Fleets, tc.fleets) {
			t.Errorf("table key %v: fleets %v, want %v", tc.args, k.Fleets, tc.fleets)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "key", "--name", name}, "takes the key's name"},
		{[]string{"table", "key", "--name", name, "--scopes", "runs:fly", "x"}, `"runs:fly"`},
		{[]string{"table", "key", "--name", name, "--fleets", "", "x"}, "--fleets is empty"},
		{[]string{"table", "drop"}, "create or key"},
	} {
		err := run(ctx, tc.args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v = %v, want an error saying %q", tc.args, err, tc.want)
		}
		if strings.Contains(tc.want, "name") && !errors.Is(err, errUsage) {
			t.Errorf("%v: %v is not a usage error (exit 2)", tc.args, err)
		}
	}
}
