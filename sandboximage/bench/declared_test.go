package bench_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// BenchmarkDeclaredTool: a declared tool through sandboxd (HTTP, confined,
// its arguments on stdin and in the environment) against bash running the
// same command through the same sandboxd. Target ≤ 1.1×.
func BenchmarkDeclaredTool(b *testing.B) {
	dir := sandboxtest.Base(b)
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "one.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	a := newAPI(b, dir)
	const command = "wc -c < one.txt"
	bashArgs, _ := json.Marshal(map[string]string{"command": command})
	declaredArgs, _ := json.Marshal(wire.DeclaredArgs{Name: "count", Command: command,
		Arguments: json.RawMessage(`{"path":"one.txt","lines":false,"note":"the same command as bash's"}`)})
	if res := a.call(b, "bash", string(bashArgs)); res.Output != "6\n[exit code 0]" {
		b.Fatalf("bash = %q", res.Output)
	}
	if res := a.call(b, wire.DeclaredTool, string(declaredArgs)); res.Output != "6\n[exit code 0]" {
		b.Fatalf("declared = %q", res.Output)
	}
	// 5 ms apart, as BenchmarkBashTrue, for the warm trampoline.
	p := alternateAll(100, 5*time.Millisecond,
		func() { a.call(b, wire.DeclaredTool, string(declaredArgs)) },
		func() { a.call(b, "bash", string(bashArgs)) })
	declaredP50, bashP50 := p[0], p[1]
	sandboxtest.Report(b, "sandboxd/declared-tool", []sandboxtest.Figure{
		{Name: "declared_p50", Value: millis(declaredP50), Unit: "ms"},
		{Name: "bash_p50", Value: millis(bashP50), Unit: "ms"},
		{Name: "ratio", Value: float64(declaredP50) / float64(bashP50), Unit: "×"},
	}, sandboxtest.Target{Name: "ratio", Max: 1.1})
}
