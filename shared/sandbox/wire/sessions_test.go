package wire_test

import (
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

func TestCheckAgent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		id   string
		want string // "" for a good id
	}{
		{"child_01JXABCDEFGHJKMNPQRSTVWXYZ", ""},
		{"a", ""},
		{"A-z_0-9", ""},
		{strings.Repeat("x", wire.MaxAgent), ""},
		{"", "empty"},
		{strings.Repeat("x", wire.MaxAgent+1), "101 bytes, more than 100"},
		{"child 1", `byte 5 is ' '`},
		{"child/../1", `byte 5 is '/'`},
		{"child\n1", `byte 5 is '\n'`},
		{"child\x001", `byte 5 is '\x00'`},
		{"chïld", "byte 2"},
		{"child.1", `'.'`},
		{"child,other", `','`},
	} {
		err := wire.CheckAgent(tt.id)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckAgent(%q) = %v, want nil", tt.id, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckAgent(%q) = %v, want an error containing %q", tt.id, err, tt.want)
		}
	}
}
