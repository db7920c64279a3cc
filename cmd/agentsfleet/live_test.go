package main

import (
	"encoding/json"
	"strings"
	"testing"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
)

// TestTextViewShowsChildrenApart: a child's calls and results are marked
// with its id, its start and end are one line each, and its streamed text
// is not taken for the run's answer.
func TestTextViewShowsChildrenApart(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	v := newTextView(&out, false)
	ev := func(typ string, data any) *afrun.Event {
		b, _ := json.Marshal(data)
		return &afrun.Event{Type: typ, Data: b}
	}
	const kid = "child_ABC"
	v.note(runner.Note{Calling: &afrun.ToolCall{Name: "spawn_agent", Arguments: json.RawMessage(`{"task":"count"}`)}})
	v.note(runner.Note{Agent: kid, Event: ev(afrun.EventChildStarted, afrun.ChildStarted{ChildID: kid, Task: "count the files"})})
	v.note(runner.Note{Agent: kid, Thinking: true, Text: "child thinking aloud"})
	v.note(runner.Note{Agent: kid, Calling: &afrun.ToolCall{Name: "bash", Arguments: json.RawMessage(`{"command":"ls | wc -l"}`)}})
	v.note(runner.Note{Agent: kid, Event: ev(afrun.EventToolResult, afrun.ToolResult{Name: "bash", Output: "12"})})
	v.note(runner.Note{Event: ev(afrun.EventChildEnded, afrun.ChildEnded{ChildID: kid, Status: "interrupted"})})
	v.note(runner.Note{Thinking: true, Text: "All done."})
	v.note(runner.Note{Event: ev(afrun.EventRunEnded, afrun.RunEnded{Result: afrun.Result{Status: afrun.StatusSucceeded, Answer: "All done."}})})
	got := out.String()
	for _, want := range []string{
		"→ spawn_agent",
		"[child_ABC] started: count the files\n",
		"[child_ABC] → bash {\"command\":\"ls | wc -l\"}\n",
		"[child_ABC]   ✓ bash: 12\n",
		"[child_ABC] interrupted\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the view lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "child thinking aloud") || strings.Count(got, "All done.") != 1 {
		t.Errorf("the child's text showed, or the answer was printed twice:\n%s", got)
	}
}

// TestTextViewShowsImagesByReference: a result with an image shows its
// size and weight on the result's line, for the run's agent and a child's;
// --output json prints the event as it came, its image a reference.
func TestTextViewShowsImagesByReference(t *testing.T) {
	t.Parallel()
	img := &afrun.ImageRef{Ref: "checkpoints/run_1/image-000000000001-0-X.png", MediaType: "image/png", Width: 1280, Height: 800, Bytes: 87_040}
	data, _ := json.Marshal(afrun.ToolResult{CallID: "c1", Name: "screenshot", Output: "1280×800 screenshot of http://app.test/", Image: img})
	var out strings.Builder
	v := newTextView(&out, false)
	v.note(runner.Note{Event: &afrun.Event{Type: afrun.EventToolResult, Data: data}})
	v.note(runner.Note{Agent: "child_ABC", Event: &afrun.Event{Type: afrun.EventToolResult, Data: data}})
	for _, want := range []string{
		"  ✓ screenshot: 1280×800 screenshot of http://app.test/  [image 1280×800, 85 KB]\n",
		"  [child_ABC]   ✓ screenshot: 1280×800 screenshot of http://app.test/  [image 1280×800, 85 KB]\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the view lacks %q:\n%s", want, out.String())
		}
	}
	for _, tt := range []struct {
		bytes int
		want  string
	}{{900, "900 B"}, {1 << 10, "1 KB"}, {1536, "2 KB"}, {3 << 20, "3.0 MB"}} {
		if got := imageNote(&afrun.ImageRef{Width: 1, Height: 2, Bytes: tt.bytes}); got != "  [image 1×2, "+tt.want+"]" {
			t.Errorf("imageNote of %d bytes got %q, want %q", tt.bytes, got, tt.want)
		}
	}
	if imageNote(nil) != "" {
		t.Errorf("imageNote(nil) got %q, want none", imageNote(nil))
	}
	var js strings.Builder
	(&session{json: true, out: &js}).viewer()(afrun.Event{Seq: 7, Type: afrun.EventToolResult, Time: "2026-12-02T04:00:00Z", Data: data})
	want := `{"seq":7,"type":"tool.result","time":"2026-12-02T04:00:00Z","data":{"call_id":"c1","name":"screenshot","output":"1280×800 screenshot of http://app.test/","is_error":false,` +
		`"image":{"ref":"checkpoints/run_1/image-000000000001-0-X.png","media_type":"image/png","width":1280,"height":800,"bytes":87040}}}` + "\n"
	if js.String() != want {
		t.Errorf("--output json printed\n%s\nwant\n%s", js.String(), want)
	}
}
