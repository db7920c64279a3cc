package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// What leaves the runner is screened for the fleet's secret values before
// it is stored or sent: each step gathers its new text — the tool calls'
// arguments and results as its events keep them, the plan, the answer or
// why the agent failed, a child's task — in a screen, and one scrub call to
// the webtools function (the only reader of values) replaces every value
// by «secret:NAME» before the step's events are built, committed, posted
// in the thread or sent as the callback. A fleet that declares no secrets
// makes no call. Text that cannot be screened (a secret webtools cannot
// read) is withheld: replaced by a note saying so, and the agent goes on.
//
// The conversation (the checkpoint's turns) is not screened: the model
// keeps what its tools gave it (a file it edits, a value it must compare),
// web tools' results come screened from webtools already, and a sandbox
// tool can only give back a value that reached the sandbox from outside.
// The conversation is the runner's alone; what the model makes of it
// leaves through the screened answer, events and posts.
//
// A tool's image (a screenshot) cannot be screened: the screen reads text,
// not pixels, and a secret shown on a page is in the picture. So an image
// leaves the run only to the model and to the checkpoint bucket; events
// name it by its key (images.go), and no thread post or callback carries
// it.

// screenReach is how far past an event's cut a tool's output is screened:
// the longest spelling of a secret value that secret.Forms lists (Secrets
// Manager keeps at most 64 KiB a value, and its JSON \u escapes take 6
// bytes a byte), plus a character, so that a value the cut would split is
// screened whole and left out, never cut into a prefix the screen misses.
const screenReach = 6*(64<<10) + 4

// scrubBatchBytes bounds the text of one scrub call, as JSON: the
// request and its answer (the texts, escaped again) stay under Lambda's
// 6 MB synchronous payloads. A step's text rarely comes near it: a step of
// more is screened in several calls.
const scrubBatchBytes = 2 << 20

// screen is a step's new text, gathered to be screened at once.
type screen struct {
	texts []string
	puts  []func(string)
	// holds put a withheld note in place of each text, when the text could
	// not be screened: short for arguments and names, with the reason for
	// outputs and answers (long).
	holds []func(short, long string)
}

// add gathers *p; the screen writes it back screened.
func (s *screen) add(p *string) {
	if *p == "" {
		return
	}
	s.texts = append(s.texts, *p)
	s.puts = append(s.puts, func(v string) { *p = v })
	s.holds = append(s.holds, func(short, _ string) { *p = short })
}

// addLong is add for a text whose withheld note says why (an error's
// message).
func (s *screen) addLong(p *string) {
	if *p == "" {
		return
	}
	s.texts = append(s.texts, *p)
	s.puts = append(s.puts, func(v string) { *p = v })
	s.holds = append(s.holds, func(_, long string) { *p = long })
}

// addJSON gathers a JSON value, a tool call's arguments, screened as its
// text: a value in it is in its JSON spelling, which the screen knows. A
// replacement that leaves it no JSON (a value that took in JSON's own
// quotes) keeps it as the JSON string of the screened text; withheld, it is
// {"withheld": "…"}.
func (s *screen) addJSON(p *json.RawMessage) {
	text := string(*p)
	if text == "" {
		return
	}
	s.texts = append(s.texts, text)
	s.puts = append(s.puts, func(v string) {
		switch {
		case v == text:
		case json.Valid([]byte(v)):
			*p = json.RawMessage(v)
		default:
			*p, _ = json.Marshal(v)
		}
	})
	s.holds = append(s.holds, func(short, _ string) { *p, _ = json.Marshal(map[string]string{"withheld": short}) })
}

// addCut gathers *p to be kept cut at n bytes, as an event keeps a tool's
// output or an answer, and says in *cut whether it was. The text is
// screened before it is cut, as far past n as a value's spelling reaches,
// and the cut leaves out a value it would split: no prefix of one is kept.
// Without secrets it is the same cut as cutUTF8.
func (s *screen) addCut(p *string, cut *bool, n int) {
	text := *p
	if text == "" {
		return
	}
	sent := cutUTF8(text, n+screenReach)
	s.texts = append(s.texts, sent)
	s.puts = append(s.puts, func(v string) {
		limit := n
		if len(sent) < len(text) && len(v) < len(sent) {
			// Replacements shrank the text that was sent, whose last bytes
			// may hold a value's beginning the screen could not see whole:
			// keep clear of them.
			limit = min(n, max(len(v)-screenReach, 0))
		}
		kept := cutUTF8(v, limit)
		*p, *cut = kept, len(kept) < len(v) || len(sent) < len(text)
	})
	s.holds = append(s.holds, func(_, long string) { *p, *cut = long, false })
}

// withheldShort is what a text that could not be screened is replaced by
// where the reason would not fit (a tool's arguments, a plan's step, a
// child's task).
const withheldShort = "(withheld: it could not be screened for the fleet's secret values)"

// screen replaces the values of the fleet's secrets in s's texts, in one
// scrub call (more only for a step of more than scrubBatchBytes). A fleet
// without secrets needs none, and s's texts are put back as they are (an
// addCut cut); so does an agent ending before its Definition could be read
// (the text is then the runner's own, saying why, and names no value).
//
// When the webtools function cannot screen them (a secret it cannot read,
// the function failing), every text is withheld: replaced by a note that
// says so (with the reason, in outputs and answers), and the agent goes on,
// as a web tool's result is withheld in that case. Nothing unscreened is
// kept or sent.
func (x *execution) screen(ctx context.Context, s *screen) {
	out := s.texts
	if len(s.texts) > 0 && x.def != nil && len(x.def.Secrets) > 0 {
		var err error
		if out, err = x.scrubAll(ctx, s.texts); err != nil {
			x.r.log.Error("a step's text was withheld: it could not be screened for the fleet's secret values",
				"run_id", x.run.ID, "child_id", x.agent.id(), "step", x.step+1, "error", err)
			long := fmt.Sprintf("(withheld: this could not be screened for the fleet's secret values, so agentsfleet keeps and sends none of it: %v. The webtools function must be able to read every secret the Definition names.)", err)
			for _, hold := range s.holds {
				hold(withheldShort, long)
			}
			return
		}
	}
	for i, put := range s.puts {
		put(out[i])
	}
}

// scrubAll screens texts through the webtools function, in batches of
// scrubBatchBytes, and returns them screened, in order.
func (x *execution) scrubAll(ctx context.Context, texts []string) ([]string, error) {
	out := make([]string, 0, len(texts))
	for start := 0; start < len(texts); {
		end, size := start, 0
		for end < len(texts) && (end == start || size+jsonLen(texts[end]) <= scrubBatchBytes) {
			size += jsonLen(texts[end])
			end++
		}
		got, err := x.scrubBatch(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		start = end
	}
	return out, nil
}

// scrubBatch is one scrub call for texts (wire.ScrubBatchRequest).
func (x *execution) scrubBatch(ctx context.Context, texts []string) ([]string, error) {
	req := wire.ScrubBatchRequest(x.run.Fleet, x.def.Secrets, texts)
	req.RunID = x.run.ID
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	answer, err := x.r.cfg.Invoker.Call(ctx, invoke.Webtools, payload)
	if err != nil {
		return nil, fmt.Errorf("the web tools failed: %w", err)
	}
	var res tool.Result
	if err := json.Unmarshal(answer, &res); err != nil {
		return nil, errors.New("the web tools answered something that is not a tool result")
	}
	if res.IsError {
		return nil, errors.New(res.Output)
	}
	var out []string
	if err := json.Unmarshal([]byte(res.Output), &out); err != nil || len(out) != len(texts) {
		return nil, fmt.Errorf("the web tools answered %d texts for %d", len(out), len(texts))
	}
	return out, nil
}

// jsonLen is about how long text is as a JSON string: its bytes, and
// those JSON escapes (a quote, a backslash, a control character) or
// replaces (HTML's <, >, &) longer.
func jsonLen(text string) int {
	n := len(text) + 2
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '"' || c == '\\':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		}
	}
	return n
}

// screenEnd screens how the agent ends before anything keeps or tells it
// (run.ended, the thread, the callback): its answer, cut at
// run.MaxEventAnswer, and why it failed.
func (x *execution) screenEnd(ctx context.Context, ended *run.RunEnded) *run.RunEnded {
	var sc screen
	sc.addCut(&ended.Answer, &ended.AnswerTruncated, run.MaxEventAnswer)
	if ended.Error != nil {
		e := *ended.Error
		ended.Error = &e
		sc.addLong(&e.Message)
	}
	x.screen(ctx, &sc)
	return ended
}
