package grants_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web/grants"
)

func TestMain(m *testing.M) { awstest.Main(m) }

const definition = `name = "acme"
instructions = "Do as asked."
[x-agentsfleet]
tools = ["http_request", "web_fetch", "spawn_agent"]
[x-agentsfleet.network]
hosts = ["api.example.com", "hooks.example.com"]
[x-agentsfleet.secrets]
GH_TOKEN = "acme/github"
DB_PASS = "acme/db"
`

// TestGrantIsThePinnedDefinition: a run's grant is its pinned revision's
// tools, hosts and secrets (not the fleet's current one), a child's is its
// share, and an ended run or child, or an id the table does not hold, has
// none.
func TestGrantIsThePinnedDefinition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "grants")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	st := store.New(db, table)
	def, err := fleet.Parse([]byte(definition), fleet.TOML)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateFleet(ctx, store.NewFleet{Name: "acme", Definition: def.Canonical(), Hash: def.Hash()}); err != nil {
		t.Fatal(err)
	}
	r, _, err := st.CreateRun(ctx, store.NewRun{Fleet: "acme", Revision: 1, Source: store.SourceAPI, Input: []byte("go")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Transition(ctx, r.ID, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	// A later revision lists another host: the run keeps its own.
	later, err := fleet.Parse([]byte(strings.Replace(definition, `"hooks.example.com"`, `"evil.example.com"`, 1)), fleet.TOML)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendRevision(ctx, "acme", later.Canonical(), later.Hash(), store.Origin{}); err != nil {
		t.Fatal(err)
	}

	g := grants.New(st)
	got, err := g.Grant(ctx, r.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Fleet != "acme" || !slices.Equal(got.Hosts, []string{"api.example.com", "hooks.example.com"}) ||
		got.Secrets["GH_TOKEN"] != "acme/github" || got.Secrets["DB_PASS"] != "acme/db" || !slices.Contains(got.Tools, "http_request") {
		t.Fatalf("the run's grant = %+v; want its pinned revision's", got)
	}

	c, _, err := st.StartChild(ctx, store.NewChild{RunID: r.ID, Task: "look", Tools: []string{"web_fetch"},
		Secrets: []string{"GH_TOKEN"}, Hosts: []string{"api.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	share, err := g.Grant(ctx, r.ID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(share.Tools, []string{"web_fetch"}) || !slices.Equal(share.Hosts, []string{"api.example.com"}) ||
		len(share.Secrets) != 1 || share.Secrets["GH_TOKEN"] != "acme/github" {
		t.Fatalf("the child's grant = %+v; want its share", share)
	}

	secrets, err := g.FleetSecrets(ctx, "acme")
	if err != nil || len(secrets) != 2 {
		t.Fatalf("FleetSecrets = %v, %v", secrets, err)
	}

	for name, id := range map[string][2]string{
		"an unknown run":   {"run_01NOSUCHRUN0000000000000", ""},
		"an unknown child": {r.ID, "child_nosuch"},
	} {
		if g, err := g.Grant(ctx, id[0], id[1]); err == nil {
			t.Errorf("%s: grant %+v, want an error", name, g)
		}
	}
	if _, err := st.Transition(ctx, r.ID, store.StatusSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	if g, err := g.Grant(ctx, r.ID, ""); err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Fatalf("an ended run's grant = %+v, %v; want refused", g, err)
	}
}
