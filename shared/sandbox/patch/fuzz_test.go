package patch

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that what it accepts is well
// formed, and that rendering an accepted patch and parsing it again gives
// the same operations. Seeds are in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add("*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Parse(in)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("Parse error %T %v, want *ParseError", err, err)
			}
			return
		}
		lines := strings.Count(in, "\n") + 1
		for _, op := range p.Ops {
			if op.Path == "" || op.Line < 1 || op.Line > lines {
				t.Fatalf("op %+v: empty path or line out of 1..%d", op, lines)
			}
			if op.Kind == Update && len(op.Chunks) == 0 && op.MoveTo == "" {
				t.Fatalf("update without chunks or move: %+v", op)
			}
			for _, c := range op.Chunks {
				if len(c.Lines) == 0 {
					t.Fatalf("empty chunk in %+v", op)
				}
			}
		}
		again, err := Parse(p.String())
		if err != nil {
			t.Fatalf("Parse(String()) = %v for\n%q", err, p.String())
		}
		if !sameOps(p, again) {
			t.Fatalf("round trip changed the patch:\n%+v\n%+v", p, again)
		}
	})
}

// sameOps compares two patches without their line numbers.
func sameOps(a, b *Patch) bool {
	strip := func(p *Patch) []Op {
		out := make([]Op, len(p.Ops))
		for i, op := range p.Ops {
			op.Line = 0
			chunks := make([]Chunk, len(op.Chunks))
			for j, c := range op.Chunks {
				c.Line = 0
				chunks[j] = c
			}
			if len(chunks) == 0 {
				chunks = nil
			}
			op.Chunks = chunks
			out[i] = op
		}
		return out
	}
	return reflect.DeepEqual(strip(a), strip(b))
}
