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
