package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
)

// textView is the live view of `agentsfleet run` for people: a spinner
// while the model works (on a terminal), the model's text as it streams,
// each tool call and a short result as it happens, the plan as it changes,
// and the answer. Child agents' calls and results show marked with the
// child's id, their starts and ends on a line each; their streamed text is
// not shown (their answers reach the agent that started them). Safe for
// concurrent use.
type textView struct {
	mu       sync.Mutex
	out      io.Writer
	tty      bool
	spinning bool
	stop     chan struct{}
	streamed strings.Builder // the text of the current model call
}

func newTextView(out io.Writer, tty bool) *textView { return &textView{out: out, tty: tty} }

func (v *textView) started(fleet, model, workdir string) {
	fmt.Fprintf(v.out, "fleet %s · model: %s · workdir %s\n\n", fleet, model, workdir)
}

func (v *textView) finished() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.spin(false)
}

func (v *textView) note(n runner.Note) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n.Agent != "" || (n.Event != nil && (n.Event.Type == afrun.EventChildStarted || n.Event.Type == afrun.EventChildEnded)) {
		v.childNote(n)
		return
	}
	switch {
	case n.Thinking && n.Text == "":
		v.streamed.Reset()
		v.spin(true)
	case n.Text != "":
		v.spin(false)
		v.streamed.WriteString(n.Text)
		fmt.Fprint(v.out, n.Text)
	case n.Calling != nil:
		v.spin(false)
		v.endText()
		fmt.Fprintf(v.out, "→ %s %s\n", n.Calling.Name, clipLine(string(n.Calling.Arguments), 100))
	case n.Event != nil:
		v.spin(false)
		v.event(n.Event)
	default: // the model call ended
		v.spin(false)
	}
}

// childNote shows a child agent's call, result, start or end.
func (v *textView) childNote(n runner.Note) {
	who := "[" + n.Agent + "]"
	if n.Event != nil {
		var about struct {
			ChildID string `json:"child_id"`
		}
		if json.Unmarshal(n.Event.Data, &about); about.ChildID != "" && n.Event.Type != afrun.EventToolResult {
			who = "[" + about.ChildID + "]"
		}
	}
	switch {
	case n.Calling != nil:
		v.spin(false)
		v.endText()
		fmt.Fprintf(v.out, "  %s → %s %s\n", who, n.Calling.Name, clipLine(string(n.Calling.Arguments), 90))
	case n.Event != nil && n.Event.Type == afrun.EventToolResult:
		v.spin(false)
		v.endText()
		var r afrun.ToolResult
		json.Unmarshal(n.Event.Data, &r)
		mark := "✓"
		if r.IsError {
			mark = "✗"
		}
		fmt.Fprintf(v.out, "  %s   %s %s: %s%s\n", who, mark, r.Name, clipLine(firstLine(r.Output), 90), imageNote(r.Image))
	case n.Event != nil && n.Event.Type == afrun.EventChildStarted:
		v.spin(false)
		v.endText()
		var c afrun.ChildStarted
		json.Unmarshal(n.Event.Data, &c)
		fmt.Fprintf(v.out, "  %s started: %s\n", who, clipLine(firstLine(c.Task), 90))
	case n.Event != nil && n.Event.Type == afrun.EventChildEnded:
		v.spin(false)
		v.endText()
		var c afrun.ChildEnded
		json.Unmarshal(n.Event.Data, &c)
		fmt.Fprintf(v.out, "  %s %s\n", who, c.Status)
	}
}

// endText ends the line of streamed text, if one is open.
func (v *textView) endText() {
	if s := v.streamed.String(); s != "" && !strings.HasSuffix(s, "\n") {
		fmt.Fprintln(v.out)
	}
	v.streamed.Reset()
}

func (v *textView) event(ev *afrun.Event) {
	switch ev.Type {
	case afrun.EventToolResult:
		var r afrun.ToolResult
		json.Unmarshal(ev.Data, &r)
		mark := "✓"
		if r.IsError {
			mark = "✗"
		}
		lines := strings.Count(strings.TrimRight(r.Output, "\n"), "\n") + 1
		summary := clipLine(firstLine(r.Output), 100)
		if lines > 1 {
			summary += fmt.Sprintf("  (%d lines)", lines)
		}
		fmt.Fprintf(v.out, "  %s %s: %s%s\n", mark, r.Name, summary, imageNote(r.Image))
	case afrun.EventSetupEnded:
		var s afrun.SetupEnded
		json.Unmarshal(ev.Data, &s)
		fmt.Fprintln(v.out, setupLine(s))
	case afrun.EventPlanUpdated:
		var p afrun.PlanUpdated
		json.Unmarshal(ev.Data, &p)
		fmt.Fprintln(v.out, "plan:")
		for _, s := range p.Plan {
			box := map[string]string{"completed": "[x]", "in_progress": "[~]"}[s.Status]
			if box == "" {
				box = "[ ]"
			}
			fmt.Fprintf(v.out, "  %s %s\n", box, s.Step)
		}
	case afrun.EventRunEnded:
		var e afrun.RunEnded
		json.Unmarshal(ev.Data, &e)
		streamed := strings.TrimSpace(v.streamed.String())
		v.endText()
		switch {
		case e.Error != nil:
			fmt.Fprintf(v.out, "\nrun %s: %s: %s\n", e.Status, e.Error.Code, e.Error.Message)
		case e.Status != "succeeded":
			fmt.Fprintf(v.out, "\nrun %s\n", e.Status)
		case streamed != strings.TrimSpace(e.Answer):
			// Not streamed (or not all of it): show it whole.
			fmt.Fprintf(v.out, "\n%s\n", e.Answer)
		}
		fmt.Fprintf(v.out, "\n%s · %d tool calls · %d tokens in, %d out%s\n", e.Status, e.Usage.ToolCalls, e.Usage.InputTokens, e.Usage.OutputTokens, costLine(e.Cost))
	}
}

// spin starts or stops the spinner; it only spins on a terminal.
func (v *textView) spin(on bool) {
	if !v.tty || on == v.spinning {
		return
	}
	v.spinning = on
	if !on {
		close(v.stop)
		fmt.Fprint(v.out, "\r\033[K")
		return
	}
	v.stop = make(chan struct{})
	stop := v.stop
	go func() {
		frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-t.C:
				v.mu.Lock()
				if v.spinning && v.stop == stop {
					fmt.Fprintf(v.out, "\r%s thinking…", frames[i%len(frames)])
				}
				v.mu.Unlock()
			}
		}
	}()
}

// imageNote is how a result's image shows: its size and weight, never
// its pixels (the event names it by its key in the checkpoint bucket,
// which --output json prints); "" for none.
func imageNote(img *afrun.ImageRef) string {
	if img == nil {
		return ""
	}
	var weight string
	switch b := img.Bytes; {
	case b < 1<<10:
		weight = fmt.Sprintf("%d B", b)
	case b < 1<<20:
		weight = fmt.Sprintf("%d KB", (b+1<<9)>>10)
	default:
		weight = fmt.Sprintf("%.1f MB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("  [image %d×%d, %s]", img.Width, img.Height, weight)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// clipLine cuts s to n characters on one line.
func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// isTerminal reports whether w is a terminal (getTermios is the system's
// request for a terminal's settings: terminal_linux.go, terminal_other.go).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), getTermios)
	return err == nil
}

// costLine is " · about $X" for the run's cost, with the model it could
// not price; "" without a cost.
func costLine(c *afrun.Cost) string {
	if c == nil {
		return ""
	}
	line := fmt.Sprintf(" · about $%.4f", c.USD)
	if c.UnpricedModel != "" {
		line += fmt.Sprintf(" (compute only: no price for %s in AGENTSFLEET_MODEL_PRICES)", c.UnpricedModel)
	}
	return line
}
