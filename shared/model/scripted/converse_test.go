package scripted_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/modeltest"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
)

// threeTurns calls list, then read, then answers.
const threeTurns = `
[[turn]]
text = "one"
[[turn.tool_call]]
name = "list"
arguments = { path = "." }

[[turn]]
[[turn.tool_call]]
name = "read"
arguments = { path = "README.md" }
[[turn.tool_call]]
name = "read"
arguments = { path = "go.mod" }

[[turn]]
text = "three: {{last_output}}"
`

func mustParse(t *testing.T, src, name string) *scripted.Model {
	t.Helper()
	m, err := scripted.Parse([]byte(src), name)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

func user(text string) model.Message {
	return model.Message{Role: model.User, Content: []model.Part{{Text: text}}}
}

func results(rs ...model.ToolResult) model.Message {
	m := model.Message{Role: model.User}
	for i := range rs {
		m.Content = append(m.Content, model.Part{ToolResult: &rs[i]})
	}
	return m
}

// step asks m for the next answer of conv and appends it, with a result for
// each tool call made by answer, to conv.
func step(t *testing.T, m model.Model, conv []model.Message, answer func(model.ToolCall) model.ToolResult) (model.Response, []model.Message) {
	t.Helper()
	resp, err := m.Converse(context.Background(), model.Request{Messages: conv})
	if err != nil {
		t.Fatalf("Converse after %d messages: %v", len(conv), err)
	}
	conv = append(conv, resp.Message)
	var rs []model.ToolResult
	for _, c := range resp.Message.ToolCalls() {
		rs = append(rs, answer(c))
	}
	if len(rs) > 0 {
		conv = append(conv, results(rs...))
	}
	return resp, conv
}

// echo answers a call with its name and arguments.
func echo(c model.ToolCall) model.ToolResult {
	return model.ToolResult{CallID: c.ID, Name: c.Name, Output: c.Name + " " + string(c.Arguments)}
}

func TestReplayInOrder(t *testing.T) {
	t.Parallel()
	m := mustParse(t, threeTurns, "three.toml")
	conv := []model.Message{user("hi")}

	resp, conv := step(t, m, conv, echo)
	if got, want := resp.Message.Text(), "one"; got != want {
		t.Errorf("turn 1 text = %q, want %q", got, want)
	}
	if resp.Message.Role != model.Assistant {
		t.Errorf("turn 1 role = %q, want assistant", resp.Message.Role)
	}
	if resp.Stop != model.StopToolUse {
		t.Errorf("turn 1 stop = %q, want %q", resp.Stop, model.StopToolUse)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 1 || calls[0].ID != "call_1_1" || calls[0].Name != "list" || string(calls[0].Arguments) != `{"path":"."}` {
		t.Errorf("turn 1 calls = %+v, want one list call_1_1 {\"path\":\".\"}", calls)
	}

	resp, conv = step(t, m, conv, echo)
	calls = resp.Message.ToolCalls()
	var ids []string
	for _, c := range calls {
		ids = append(ids, c.ID+" "+string(c.Arguments))
	}
	if got, want := strings.Join(ids, ", "), `call_2_1 {"path":"README.md"}, call_2_2 {"path":"go.mod"}`; got != want {
		t.Errorf("turn 2 calls = %s, want %s", got, want)
	}
	if len(resp.Message.Content) != 2 {
		t.Errorf("turn 2 has %d parts, want 2 (no text part)", len(resp.Message.Content))
	}

	resp, _ = step(t, m, conv, echo)
	if got, want := resp.Message.Text(), `three: read {"path":"go.mod"}`; got != want {
		t.Errorf("turn 3 text = %q, want %q", got, want)
	}
	if resp.Stop != model.StopEndTurn {
		t.Errorf("turn 3 stop = %q, want %q", resp.Stop, model.StopEndTurn)
	}
	if len(resp.Message.ToolCalls()) != 0 {
		t.Errorf("turn 3 calls = %v, want none", resp.Message.ToolCalls())
	}
}

func TestReplayInterleavedConversations(t *testing.T) {
	t.Parallel()
	m := mustParse(t, threeTurns, "three.toml")
	a := []model.Message{user("a")}
	b := []model.Message{user("b")}
	var ra, rb model.Response

	ra, a = step(t, m, a, echo)
	rb, b = step(t, m, b, echo)
	if ra.Message.Text() != "one" || rb.Message.Text() != "one" {
		t.Errorf("first answers = %q, %q; want both %q", ra.Message.Text(), rb.Message.Text(), "one")
	}
	// a goes on twice while b waits; b then gets its own second turn.
	ra, a = step(t, m, a, echo)
	ra, _ = step(t, m, a, echo)
	if !strings.HasPrefix(ra.Message.Text(), "three") {
		t.Errorf("a's third answer = %q, want turn 3", ra.Message.Text())
	}
	rb, _ = step(t, m, b, echo)
	if got := rb.Message.ToolCalls(); len(got) != 2 || got[0].ID != "call_2_1" {
		t.Errorf("b's second answer calls = %+v, want turn 2's two reads", got)
	}
}

func TestReplayResumedConversation(t *testing.T) {
	t.Parallel()
	// A conversation that reached turn 3 elsewhere, given to a Model that
	// has never seen it.
	conv := []model.Message{
		user("resume me"),
		{Role: model.Assistant, Content: []model.Part{{Text: "one"}, {ToolCall: &model.ToolCall{ID: "call_1_1", Name: "list", Arguments: json.RawMessage(`{"path":"."}`)}}}},
		results(model.ToolResult{CallID: "call_1_1", Name: "list", Output: "a/\nb"}),
		{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "call_2_1", Name: "read", Arguments: json.RawMessage(`{}`)}}}},
		results(model.ToolResult{CallID: "call_2_1", Name: "read", Output: "1\thello"}),
	}
	for i, m := range []*scripted.Model{mustParse(t, threeTurns, "three.toml"), mustParse(t, threeTurns, "three.toml")} {
		for range 2 { // the same request again answers the same
			resp, err := m.Converse(context.Background(), model.Request{Messages: conv})
			if err != nil {
				t.Fatalf("model %d: Converse: %v", i, err)
			}
			if got, want := resp.Message.Text(), "three: 1\thello"; got != want {
				t.Errorf("model %d: text = %q, want %q", i, got, want)
			}
		}
	}
	// From the middle: only the first exchange.
	resp, err := mustParse(t, threeTurns, "three.toml").Converse(context.Background(), model.Request{Messages: conv[:3]})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.ToolCalls(); len(got) != 2 || got[1].ID != "call_2_2" {
		t.Errorf("calls from the middle = %+v, want turn 2's", got)
	}
}

func TestReplayConcurrent(t *testing.T) {
	t.Parallel()
	m := mustParse(t, threeTurns, "three.toml")
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			conv := []model.Message{user(fmt.Sprint(i))}
			for turn := 1; turn <= 3; turn++ {
				resp, err := m.Converse(context.Background(), model.Request{Messages: conv})
				if err != nil {
					errs <- err
					return
				}
				conv = append(conv, resp.Message)
				var rs []model.ToolResult
				for _, c := range resp.Message.ToolCalls() {
					if want := fmt.Sprintf("call_%d_", turn); !strings.HasPrefix(c.ID, want) {
						errs <- fmt.Errorf("conversation %d, turn %d: call id %s, want %s…", i, turn, c.ID, want)
					}
					rs = append(rs, model.ToolResult{CallID: c.ID, Name: c.Name, Output: fmt.Sprintf("%d/%d", i, turn)})
				}
				if len(rs) > 0 {
					conv = append(conv, results(rs...))
				}
				if turn == 3 {
					if got, want := resp.Message.Text(), fmt.Sprintf("three: %d/2", i); got != want {
						errs <- fmt.Errorf("conversation %d: last text %q, want %q", i, got, want)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEndOfScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src     string
		replies int
		want    string
	}{
		{threeTurns, 3, "scripted model: script three.toml has no turn 4: it has 3 turns"},
		{"[[turn]]\ntext = \"only\"\n", 1, "scripted model: script three.toml has no turn 2: it has 1 turn"},
	}
	for _, tt := range tests {
		m := mustParse(t, tt.src, "three.toml")
		conv := []model.Message{user("hi")}
		for range tt.replies {
			_, conv = step(t, m, conv, echo)
		}
		// A user message after the last answer (a thread that goes on).
		conv = append(conv, user("and then?"))
		resp, err := m.Converse(context.Background(), model.Request{Messages: conv})
		var me *model.Error
		if !errors.As(err, &me) {
			t.Fatalf("Converse past the end = %+v, %v; want a *model.Error", resp, err)
		}
		if me.Provider != "scripted" || me.Retryable || model.IsRetryable(err) {
			t.Errorf("error = %+v, want Provider scripted, not Retryable", me)
		}
		if err.Error() != tt.want {
			t.Errorf("Error() = %q, want %q", err.Error(), tt.want)
		}
	}
}

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	const src = `
[[turn]]
text = "first"
[[turn.tool_call]]
name = "list"
[[turn.tool_call]]
name = "bash"

[[turn]]
text = '''in={{input}} last={{last_output}} err={{ last_error }} list={{output "list"}} brace={{"{{"}}x}}'''
[[turn.tool_call]]
name = "bash"
arguments = { command = "echo {{input}}", nested = { list = ["{{output \"list\"}}", 3, true] }, n = 1.5 }
[[turn.tool_call]]
name = "write"
arguments = '{"text": "{{last_error}}", "big": 12345678901234567890}'
`
	m := mustParse(t, src, "p.toml")
	input := "say \"hi\"\nplease"
	conv := []model.Message{
		user(input),
		{Role: model.Assistant, Content: []model.Part{
			{Text: "first"},
			{ToolCall: &model.ToolCall{ID: "call_1_1", Name: "list", Arguments: json.RawMessage(`{}`)}},
			{ToolCall: &model.ToolCall{ID: "call_1_2", Name: "bash", Arguments: json.RawMessage(`{}`)}},
		}},
		// The result's Name is left out for list: the name comes from the call.
		results(
			model.ToolResult{CallID: "call_1_1", Output: "a/\nb.txt"},
			model.ToolResult{CallID: "call_1_2", Name: "bash", Output: "boom\n[exit code 1]", IsError: true},
		),
	}
	var streamed strings.Builder
	resp, err := m.Converse(context.Background(), model.Request{Messages: conv, OnText: func(d string) { streamed.WriteString(d) }})
	if err != nil {
		t.Fatal(err)
	}
	wantText := "in=" + input + " last=boom\n[exit code 1] err=boom\n[exit code 1] list=a/\nb.txt brace={{x}}"
	if got := resp.Message.Text(); got != wantText {
		t.Errorf("text = %q, want %q", got, wantText)
	}
	if streamed.String() != wantText {
		t.Errorf("streamed = %q, want %q", streamed.String(), wantText)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 2 {
		t.Fatalf("calls = %+v, want 2", calls)
	}
	wantArgs := []string{
		`{"command":"echo say \"hi\"\nplease","n":1.5,"nested":{"list":["a/\nb.txt",3,true]}}`,
		`{"big":12345678901234567890,"text":"boom\n[exit code 1]"}`,
	}
	for i, want := range wantArgs {
		if got := string(calls[i].Arguments); got != want {
			t.Errorf("call %d arguments = %s, want %s", i+1, got, want)
		}
		if !json.Valid(calls[i].Arguments) {
			t.Errorf("call %d arguments are not valid JSON: %s", i+1, calls[i].Arguments)
		}
	}
}

func TestPlaceholdersLatestResults(t *testing.T) {
	t.Parallel()
	const src = `
[[turn]]
[[turn.tool_call]]
name = "bash"
[[turn]]
[[turn.tool_call]]
name = "bash"
[[turn]]
text = "last={{last_output}} err=[{{last_error}}] bash={{output \"bash\"}}"
`
	m := mustParse(t, src, "p.toml")
	conv := []model.Message{user("hi")}
	// The first bash fails, the second works: {{last_error}} is only about
	// the latest results.
	failFirst := 0
	answer := func(c model.ToolCall) model.ToolResult {
		failFirst++
		return model.ToolResult{CallID: c.ID, Name: c.Name, Output: fmt.Sprint("run ", failFirst), IsError: failFirst == 1}
	}
	_, conv = step(t, m, conv, answer)
	_, conv = step(t, m, conv, answer)
	resp, _ := step(t, m, conv, answer)
	if got, want := resp.Message.Text(), "last=run 2 err=[] bash=run 2"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

func TestAlternatives(t *testing.T) {
	t.Parallel()
	const src = `
[[turn]]
[[turn.tool_call]]
name = "list"

[[turn]]
text = "default"
[[turn.alternative]]
when_last_error = true
text = "failed: {{last_error}}"
stop = "other"
[[turn.alternative]]
when_output_contains = "README.md"
when_last_error = false
[[turn.alternative.tool_call]]
name = "read"
arguments = { path = "README.md" }
[[turn.alternative]]
when_output_contains = "README"
text = "a README of another kind"

[[turn]]
text = "after: {{last_output}}"
`
	m := mustParse(t, src, "alt.toml")
	tests := []struct {
		name     string
		result   model.ToolResult
		wantText string
		wantCall string
		wantStop model.StopReason
	}{
		{"an error", model.ToolResult{Output: "README.md: not allowed", IsError: true}, "failed: README.md: not allowed", "", model.StopOther},
		{"both conditions", model.ToolResult{Output: "README.md\ngo.mod"}, "", "read", model.StopToolUse},
		{"the first that holds", model.ToolResult{Output: "README.txt"}, "a README of another kind", "", model.StopEndTurn},
		{"none holds", model.ToolResult{Output: "go.mod"}, "default", "", model.StopEndTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, conv := step(t, m, []model.Message{user("x")}, func(c model.ToolCall) model.ToolResult {
				r := tt.result
				r.CallID, r.Name = c.ID, c.Name
				return r
			})
			resp, conv = step(t, m, conv, echo)
			if got := resp.Message.Text(); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
			var names []string
			for _, c := range resp.Message.ToolCalls() {
				names = append(names, c.Name)
			}
			if got := strings.Join(names, ","); got != tt.wantCall {
				t.Errorf("calls = %q, want %q", got, tt.wantCall)
			}
			if resp.Stop != tt.wantStop {
				t.Errorf("stop = %q, want %q", resp.Stop, tt.wantStop)
			}
			// Whichever answered, the next call gets turn 3.
			resp, _ = step(t, m, conv, echo)
			if !strings.HasPrefix(resp.Message.Text(), "after: ") {
				t.Errorf("next text = %q, want turn 3's", resp.Message.Text())
			}
		})
	}
}

func TestStopMaxTokens(t *testing.T) {
	t.Parallel()
	m := mustParse(t, "[[turn]]\ntext = \"cut sho\"\nstop = \"max_tokens\"\n", "s.toml")
	resp, err := m.Converse(context.Background(), model.Request{Messages: []model.Message{user("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Stop != model.StopMaxTokens {
		t.Errorf("stop = %q, want %q", resp.Stop, model.StopMaxTokens)
	}
}

func TestEmptyRenderedAnswer(t *testing.T) {
	t.Parallel()
	m := mustParse(t, "[[turn]]\n[[turn.tool_call]]\nname = \"bash\"\n[[turn]]\ntext = \"{{last_error}}\"\n", "s.toml")
	_, conv := step(t, m, []model.Message{user("x")}, echo) // bash works: no error to show
	_, err := m.Converse(context.Background(), model.Request{Messages: conv})
	var me *model.Error
	if !errors.As(err, &me) || me.Retryable || !strings.Contains(me.Message, "turn 2: the answer is empty") {
		t.Errorf("Converse = %v, want a not Retryable *model.Error saying turn 2's answer is empty", err)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	m := mustParse(t, "[[turn]]\ntext = \"12345\"\n[[turn.tool_call]]\nname = \"ab\"\narguments = { k = \"v\" }\n", "u.toml")
	req := model.Request{
		System: strings.Repeat("s", 10),
		Messages: []model.Message{
			user(strings.Repeat("u", 7)),
			{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "ignored", Name: "ignored", Output: "ooo"}}}},
		},
		Tools: []model.Tool{{Name: "read", Description: "dd", Schema: json.RawMessage(`{}`)}},
	}
	resp, err := m.Converse(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// input: 10 + 7 + 3 + 4 + 2 + 2 = 28 bytes → 7 tokens;
	// output: "12345" + "ab" + `{"k":"v"}` = 5 + 2 + 9 = 16 bytes → 4 tokens.
	if want := (model.Usage{InputTokens: 7, OutputTokens: 4}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	// One more byte rounds up.
	req.System += "s"
	resp, err = m.Converse(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Usage.InputTokens; got != 8 {
		t.Errorf("input tokens for 29 bytes = %d, want 8", got)
	}
}

func TestUsageCountsEarlierToolCalls(t *testing.T) {
	t.Parallel()
	m := mustParse(t, "[[turn]]\ntext = \"a\"\n[[turn]]\ntext = \"b\"\n", "u.toml")
	req := model.Request{Messages: []model.Message{
		user("u"),
		{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "x", Name: "list", Arguments: json.RawMessage(`{"path":"."}`)}}}},
	}}
	resp, err := m.Converse(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// 1 + 4 + 12 = 17 bytes → 5 tokens; "b" → 1 token.
	if want := (model.Usage{InputTokens: 5, OutputTokens: 1}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestOnTextChunks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text       string
		wantChunks int
	}{
		{"The scripted model streams its answer in a few chunks, as a provider would, split between words.", 4},
		{"  leading space, then\nlines\tand tabs that\n\nsplit  anywhere white   ", 4},
		{"one", 1},
		{"two words", 2},
		{"ünïcödé wörds stäy whöle: 日本語 テキスト も 大丈夫", 3},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			src := fmt.Sprintf("[[turn]]\ntext = %q\n", tt.text)
			m := mustParse(t, src, "c.toml")
			var got []string
			resp, err := m.Converse(context.Background(), model.Request{
				Messages: []model.Message{user("x")},
				OnText:   func(d string) { got = append(got, d) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "") != tt.text || resp.Message.Text() != tt.text {
				t.Errorf("chunks %q join to %q; want %q", got, strings.Join(got, ""), tt.text)
			}
			if len(got) != tt.wantChunks {
				t.Errorf("%d chunks %q, want %d", len(got), got, tt.wantChunks)
			}
			for i, c := range got[:len(got)-1] {
				if last := c[len(c)-1]; !strings.ContainsRune(" \t\n", rune(last)) {
					t.Errorf("chunk %d %q does not end at a word boundary", i, c)
				}
			}
		})
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	m := mustParse(t, threeTurns, "three.toml")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Converse(ctx, model.Request{Messages: []model.Message{user("x")}})
	if !errors.Is(err, context.Canceled) || model.IsRetryable(err) {
		t.Errorf("Converse(cancelled) = %v, want context.Canceled, not retryable", err)
	}
}

func TestJSONScriptReplaysLikeTOML(t *testing.T) {
	t.Parallel()
	const jsonSrc = `{"turn": [
  {"text": "one", "tool_call": [{"name": "list", "arguments": {"path": "."}}]},
  {"tool_call": [{"name": "read", "arguments": "{\"path\": \"README.md\"}"},
                 {"name": "read", "arguments": {"path": "go.mod"}}]},
  {"text": "three: {{last_output}}"}
]}`
	tm := mustParse(t, threeTurns, "three.toml")
	jm := mustParse(t, jsonSrc, "three.json")
	tc := []model.Message{user("hi")}
	jc := []model.Message{user("hi")}
	for turn := 1; turn <= 3; turn++ {
		var tr, jr model.Response
		tr, tc = step(t, tm, tc, echo)
		jr, jc = step(t, jm, jc, echo)
		tj, _ := json.Marshal(tr)
		jj, _ := json.Marshal(jr)
		if string(tj) != string(jj) {
			t.Errorf("turn %d: TOML answers %s, JSON answers %s", turn, tj, jj)
		}
	}
}

func TestSessionIDPlaceholder(t *testing.T) {
	t.Parallel()
	m, err := scripted.Parse([]byte(`
[[turn]]
[[turn.tool_call]]
name = "exec_command"
arguments = { cmd = "cat" }
[[turn]]
[[turn.tool_call]]
name = "write_stdin"
arguments = { session_id = "{{session_id}}", chars = "hi\n" }
`), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Converse(context.Background(), model.Request{Messages: []model.Message{
		{Role: model.User, Content: []model.Part{{Text: "go"}}},
		{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "call_1_1", Name: "exec_command", Arguments: json.RawMessage(`{}`)}}}},
		{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "call_1_1", Name: "exec_command",
			Output: "Chunk ID: 1\nWall time: 0.3 seconds\nProcess running with session ID 48213\nOriginal token count: 0\nOutput:\n"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Message.ToolCalls()[0].Arguments); got != `{"chars":"hi\n","session_id":"48213"}` {
		t.Errorf("arguments = %s", got)
	}
}

// A script sees the image of the latest tool results through
// {{last_image}}: which picture, down to its SHA-256; its tokens count in
// the usage, and an image without data is refused as a provider refuses
// it.
func TestImages(t *testing.T) {
	t.Parallel()
	m := mustParse(t, `
[[turn]]
[[turn.tool_call]]
name = "screenshot"

[[turn]]
text = "saw {{last_image}}"
`, "images.toml")
	pic := modeltest.PNG(150, 100)
	shot := model.ToolResult{CallID: "call_1_1", Name: "screenshot", Output: "a page",
		Image: &model.Image{MediaType: model.ImagePNG, Data: pic, Width: 150, Height: 100, Bytes: len(pic)}}
	calls := model.Message{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "call_1_1", Name: "screenshot"}}}}
	plain := shot
	plain.Image = nil

	resp, err := m.Converse(context.Background(), model.Request{Messages: []model.Message{user("look"), calls, results(shot)}})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	want := fmt.Sprintf("saw 150×100 image/png, %d bytes, sha256 %x", len(pic), sha256.Sum256(pic))
	if got := resp.Message.Text(); got != want {
		t.Errorf("text got %q, want %q", got, want)
	}
	without, err := m.Converse(context.Background(), model.Request{Messages: []model.Message{user("look"), calls, results(plain)}})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	if got := without.Message.Text(); got != "saw " {
		t.Errorf("text without an image got %q, want %q", got, "saw ")
	}
	// 150×100/750 = 20 tokens more than the same conversation without it.
	if got := resp.Usage.InputTokens - without.Usage.InputTokens; got != 20 {
		t.Errorf("input tokens of the image got %d, want 20", got)
	}

	shot.Image = &model.Image{MediaType: model.ImagePNG, Width: 150, Height: 100, Ref: "checkpoints/r/i.png"}
	_, err = m.Converse(context.Background(), model.Request{Messages: []model.Message{user("look"), calls, results(shot)}})
	var me *model.Error
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "image checkpoints/r/i.png has no data") {
		t.Errorf("an image without data: error got %v, want one saying it has no data", err)
	}
}
