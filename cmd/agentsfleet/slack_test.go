package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/api/apitest"
)

func TestSlackRoute(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	if _, err := e.cli("apply", "-f", e.file(t, "ops.toml", apitest.OpsTOML)); err != nil {
		t.Fatal(err)
	}
	// Through main's dispatch, as a person types it.
	var out bytes.Buffer
	err := run(context.Background(), []string{"slack", "route", "C0123ABCD", "ops", "--api", e.srv.URL, "--key", e.admin}, &out, io.Discard)
	if err != nil || !strings.Contains(out.String(), "Slack channel C0123ABCD routed to fleet ops") {
		t.Fatalf("slack route = %q, %v", out.String(), err)
	}
	slackCLI := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := remoteEnv{out: &out, getenv: func(string) string { return "" }, devKey: e.dir + "/api-key"}.slack(context.Background(), args)
		return out.String(), err
	}
	got, err := slackCLI("route", "--output", "json", "--api", e.srv.URL, "--key", e.admin, "C0123ABCD", "ops")
	var route struct{ Channel, Fleet string }
	if err != nil || json.Unmarshal([]byte(got), &route) != nil || route.Channel != "C0123ABCD" || route.Fleet != "ops" {
		t.Fatalf("slack route --output json = %q, %v", got, err)
	}
	for _, tt := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{nil, true, "subcommand: route"},
		{[]string{"list"}, true, `no subcommand "list"`},
		{[]string{"route", "C0123ABCD"}, true, "needs FLEET"},
		{[]string{"route", "C0123ABCD", "ops", "extra"}, true, "takes 2 argument(s)"},
		{[]string{"route", "C0123ABCD", "ghost", "--api", e.srv.URL, "--key", e.admin}, false, "no fleet ghost"},
		{[]string{"route", "#general", "ops", "--api", e.srv.URL, "--key", e.admin}, false, "channel's id"},
		{[]string{"route", "C0123ABCD", "ops", "--api", e.srv.URL, "--key", "afk_wrong"}, false, "refused the key from --key"},
	} {
		_, err := slackCLI(tt.args...)
		if err == nil || errors.Is(err, errUsage) != tt.usage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("slack %q = %v, want an error (usage %v) saying %q", tt.args, err, tt.usage, tt.want)
		}
	}
}
