package fleet_test

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// FuzzParse feeds one input to both ParseTOML and ParseJSON. Neither may
// panic; a refusal must be a Definition error; an accepted Definition must
// survive the canonical JSON and TOML round trips unchanged. The seed corpus
// is every fixture here plus testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, name := range []string{
		"../../examples/minimal.toml", "../../examples/reference.toml", "../../examples/slack-helper.toml",
		"../../examples/uptime-checker.toml", "../../examples/release-notes.json",
		"testdata/same.toml", "testdata/same.json", "testdata/tools-split.toml", "testdata/problems.toml", "testdata/declared.toml",
	} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"name":"a","instructions":"b","x-agentsfleet":{"network":{"hosts":["[::1]:80","*.a.b"]}}}`))
	f.Add([]byte("name = \"a\"\ninstructions = '''\n\"\"\"'''\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []fleet.Format{fleet.TOML, fleet.JSON} {
			d, err := fleet.Parse(data, format)
			if err != nil {
				var fe *fleet.Error
				if !errors.Is(err, fault.DefinitionInvalid) || !errors.As(err, &fe) || len(fe.Problems) == 0 {
					t.Fatalf("%v: error %v is not a Definition error with problems", format, err)
				}
				continue
			}
			c := d.Canonical()
			back, err := fleet.ParseJSON(c)
			if err != nil {
				t.Fatalf("%v: ParseJSON(Canonical()) = %v\n%s", format, err, c)
			}
			if !reflect.DeepEqual(back, d) {
				t.Fatalf("%v: canonical round trip changed the Definition:\n%+v\n%+v", format, d, back)
			}
			if !bytes.Equal(back.Canonical(), c) {
				t.Fatalf("%v: Canonical is not stable", format)
			}
			fromTOML, err := fleet.ParseTOML(d.TOML())
			if err != nil {
				t.Fatalf("%v: ParseTOML(TOML()) = %v\n%s", format, err, d.TOML())
			}
			if !reflect.DeepEqual(fromTOML, d) {
				t.Fatalf("%v: TOML round trip changed the Definition:\n%+v\n%+v", format, d, fromTOML)
			}
			for _, h := range d.Hosts {
				if !d.Hosts.Allows(h) && h[0] != '*' {
					t.Fatalf("%v: host list %q does not allow its own entry %q", format, d.Hosts, h)
				}
			}
		}
	})
}
