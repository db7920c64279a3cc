package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// chatRequest is the part of a Chat Completions request the fake reads.
type chatRequest struct {
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
}

// text is a message's content as text, whether a string or parts.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// turn is the model's answer to one request: tool calls or a final text.
type turn struct {
	calls []call
	text  string
}

type call struct {
	name string
	args any
}

// conversation is a script: given the conversation so far (every
// message's text, the latest tool results last), the next turn.
type conversation struct {
	// marker is text that identifies the conversation among all requests.
	marker string
	next   func(step int, results []string) turn
}

// modelFake is an OpenAI-compatible Chat Completions server that answers
// each conversation, found by its marker, with its script, streamed as the
// real API streams. It notes what it could not answer.
type modelFake struct {
	*httptest.Server
	convs []conversation

	mu       sync.Mutex
	requests int
	problems []string
	calls    int
	seen     []chatRequest // every request answered, in order
}

// received is every request the fake answered whose messages hold
// marker, in order.
func (f *modelFake) received(marker string) []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []chatRequest
	for _, r := range f.seen {
		for _, m := range r.Messages {
			if strings.Contains(text(m.Content), marker) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

func newModelFake(t testing.TB, convs ...conversation) *modelFake {
	f := &modelFake{convs: convs}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *modelFake) problem(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = append(f.problems, fmt.Sprintf(format, a...))
}

func (f *modelFake) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		f.problem("unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		f.problem("a request that is not JSON: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var all strings.Builder
	step := 0
	var results []string
	for _, m := range req.Messages {
		t := text(m.Content)
		all.WriteString(t + "\n")
		switch m.Role {
		case "assistant":
			step++
			results = nil // the results of this step's calls follow it
		case "tool":
			results = append(results, t)
		}
	}
	var conv *conversation
	for i := range f.convs {
		if strings.Contains(all.String(), f.convs[i].marker) {
			conv = &f.convs[i]
			break
		}
	}
	if conv == nil {
		f.problem("a conversation no script knows:\n%.600s", all.String())
		http.Error(w, "no script for this conversation", http.StatusBadRequest)
		return
	}
	next := conv.next(step, results)
	f.mu.Lock()
	f.requests++
	n := f.requests
	f.seen = append(f.seen, req)
	f.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta any, finish string) {
		fin := any(nil)
		if finish != "" {
			fin = finish
		}
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1, "model": "e2e-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if len(next.calls) == 0 {
		chunk(map[string]any{"role": "assistant", "content": next.text}, "")
		chunk(map[string]any{}, "stop")
	} else {
		var tcs []any
		for i, c := range next.calls {
			args, _ := json.Marshal(c.args)
			f.mu.Lock()
			f.calls++
			id := fmt.Sprintf("call_%d", f.calls)
			f.mu.Unlock()
			tcs = append(tcs, map[string]any{"index": i, "id": id, "type": "function",
				"function": map[string]any{"name": c.name, "arguments": string(args)}})
		}
		chunk(map[string]any{"role": "assistant", "tool_calls": tcs}, "")
		chunk(map[string]any{}, "tool_calls")
	}
	usage, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1, "model": "e2e-model",
		"choices": []any{}, "usage": map[string]int{"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", usage)
}

// firstMatch is the first group of re in any of results, or "".
func firstMatch(re *regexp.Regexp, results []string) string {
	for _, r := range results {
		if m := re.FindStringSubmatch(r); m != nil {
			return m[1]
		}
	}
	return ""
}
