package store_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The LocalStack init hook creates the table from a JSON file; this test
// keeps that file equal to CreateTableInput (run with -update to rewrite).
func TestLocalstackTableJSONMatchesSchema(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(store.CreateTableInput("agentsfleet"))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(dropNulls(v), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	path := filepath.Join("..", "..", "localstack", "init", "ready.d", "table.json")
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hook, err := os.ReadFile(filepath.Join(filepath.Dir(path), "10-agentsfleet-table.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if ttl := "AttributeName=" + store.AttrTTL; !bytes.Contains(hook, []byte(ttl)) {
		t.Errorf("the LocalStack hook does not enable TTL on %s", store.AttrTTL)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from store.CreateTableInput; run go test ./shared/store -run LocalstackTable -update\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// dropNulls removes null and empty values ("", [], {}), which the AWS CLI
// refuses.
func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e = dropNulls(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for _, e := range x {
			if e = dropNulls(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if x == "" {
			return nil
		}
	}
	return v
}
