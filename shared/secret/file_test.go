package secret_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/secret"
)

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, text string
		want       secret.Map
		wantErr    bool
	}{
		{"env", "# local secrets\nGH_TOKEN=ghp_1\nexport DB='p=ss word'\n\nEMPTY=\n", secret.Map{"GH_TOKEN": "ghp_1", "DB": "p=ss word", "EMPTY": ""}, false},
		{"json", `{"GH_TOKEN": "ghp_2", "X": "y"}`, secret.Map{"GH_TOKEN": "ghp_2", "X": "y"}, false},
		{"bad line", "GH_TOKEN ghp_3\n", nil, true},
		{"bad json", `{"GH_TOKEN": 3}`, nil, true},
	}
	for _, tt := range tests {
		p := filepath.Join(dir, tt.name)
		if err := os.WriteFile(p, []byte(tt.text), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := secret.ReadFile(p)
		if tt.wantErr {
			if err == nil {
				t.Errorf("%s: ReadFile = %v, want an error", tt.name, got)
			} else if strings.Contains(err.Error(), "ghp_") {
				t.Errorf("%s: error %q shows a value", tt.name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: ReadFile = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}
