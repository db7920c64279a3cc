package diff_test

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/diff"
)

func TestUnified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"equal", "x\ny\n", "x\ny\n", ""},
		{"both empty", "", "", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"from nothing", "", "a\n", "--- old\n+++ new\n@@ -0,0 +1 @@\n+a\n"},
		{"to nothing", "a\nb\n", "", "--- old\n+++ new\n@@ -1,2 +0,0 @@\n-a\n-b\n"},
		{"a tool removed", "tools = [\n  \"bash\",\n  \"read\",\n]\n", "tools = [\n  \"read\",\n]\n",
			"--- old\n+++ new\n@@ -1,4 +1,3 @@\n tools = [\n-  \"bash\",\n   \"read\",\n ]\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "x\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ny\n",
			"--- old\n+++ new\n@@ -1,4 +1,4 @@\n-1\n+x\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+y\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := diff.Unified("old", "new", tc.a, tc.b); got != tc.want {
				t.Errorf("Unified = %q, want %q", got, tc.want)
			}
		})
	}
}

// The script is a shortest one and turns a into b: checked against the
// edit count of a longest common subsequence on random texts.
func TestScriptIsShortestAndCorrect(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		a, b := randomLines(r), randomLines(r)
		edits := diff.Script(a, b)
		var gotA, gotB []string
		changes := 0
		for _, e := range edits {
			if e.Op != diff.Insert {
				gotA = append(gotA, e.Line)
			}
			if e.Op != diff.Delete {
				gotB = append(gotB, e.Line)
			}
			if e.Op != diff.Keep {
				changes++
			}
		}
		if strings.Join(gotA, "\n") != strings.Join(a, "\n") || strings.Join(gotB, "\n") != strings.Join(b, "\n") {
			t.Fatalf("Script(%q, %q) = %v: does not spell both texts", a, b, edits)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); changes != want {
			t.Fatalf("Script(%q, %q) makes %d changes, want the fewest, %d", a, b, changes, want)
		}
	}
}

// Unified writes what diff -u writes, hunk for hunk, where a diff is on
// this machine.
func TestUnifiedMatchesDiffU(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("no diff on PATH")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 100 {
		a, b := strings.Join(randomLines(r), "\n")+"\n", strings.Join(randomLines(r), "\n")+"\n"
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(pa, []byte(a), 0o600)
		os.WriteFile(pb, []byte(b), 0o600)
		out, _ := exec.Command(bin, "-u", pa, pb).Output()
		want := string(out)
		if j := strings.Index(want, "@@"); j >= 0 {
			want = want[j:]
		}
		got := diff.Unified("a", "b", a, b)
		if j := strings.Index(got, "@@"); j >= 0 {
			got = got[j:]
		}
		if countChanges(got) != countChanges(want) || hunks(got) != hunks(want) {
			t.Fatalf("case %d: Unified =\n%s\ndiff -u =\n%s", i, got, want)
		}
	}
}

func countChanges(u string) int {
	n := 0
	for _, l := range strings.Split(u, "\n") {
		if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") {
			n++
		}
	}
	return n
}

func hunks(u string) int { return strings.Count(u, "@@ -") }

func randomLines(r *rand.Rand) []string {
	n := r.IntN(30)
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a' + r.IntN(4)))
	}
	return out
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}
