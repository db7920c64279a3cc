package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/modeltest"
)

// fake is a local Chat Completions server: it records every request and
// answers with its handler, so the SDK's real HTTP and SSE code runs. A
// conversation OpenAI would refuse (refusal) it answers as OpenAI does,
// 400 invalid_request_error.
type fake struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	path   string
	header http.Header
	body   []byte
}

func newFake(t *testing.T, answer http.HandlerFunc) *fake {
	t.Helper()
	f := &fake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
		f.mu.Unlock()
		if msg, param := refusal(body); msg != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": param, "code": nil}})
			return
		}
		answer(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// refusal is OpenAI's message and param for a Chat Completions body whose
// tool messages do not answer the calls before them, "" for one it takes:
// a tool message must answer a call of the assistant message just before
// it (and the tool messages after it), and each call needs its answer
// before the next message of another role.
func refusal(body []byte) (msg, param string) {
	var req struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "", ""
	}
	for i, m := range req.Messages {
		if msg := contentRefusal(m.Role, m.Content); msg != "" {
			return msg, fmt.Sprintf("messages.[%d].content", i)
		}
	}
	open := map[string]bool{} // calls awaiting their answer
	from := -1                // the assistant message that made them
	for i, m := range req.Messages {
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", fmt.Sprintf("messages.[%d].role", i)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			var ids []string
			for id := range open {
				ids = append(ids, id)
			}
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(ids, ", "), fmt.Sprintf("messages.[%d].role", from)
		}
		for _, c := range m.ToolCalls {
			open[c.ID], from = true, i
		}
	}
	if len(open) > 0 {
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'.", fmt.Sprintf("messages.[%d].role", from)
	}
	return "", ""
}

// imageDataURL is the data URL of an image OpenAI takes.
var imageDataURL = regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]+={0,2})$`)

// contentRefusal is what OpenAI says of a message's content, "" when it
// takes it: a string, or an array of content parts, where a tool (or
// system) message takes text parts only, and an image_url part (a user
// message's) has a url that is an http(s) URL or a base64 data URL of a
// PNG, JPEG, GIF or WebP image.
func contentRefusal(role string, content json.RawMessage) string {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if len(content) == 0 || content[0] != '[' {
		return ""
	}
	if err := json.Unmarshal(content, &parts); err != nil {
		return "Invalid content: " + err.Error()
	}
	for _, p := range parts {
		switch {
		case p.Type == "text":
		case p.Type == "image_url" && role == "user":
			if p.ImageURL == nil {
				return "Missing required parameter: 'image_url'."
			}
			u := p.ImageURL.URL
			if m := imageDataURL.FindStringSubmatch(u); m != nil {
				if _, err := base64.StdEncoding.DecodeString(m[2]); err == nil {
					continue
				}
			} else if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
				continue
			}
			return "Invalid 'image_url.url'. Expected a valid URL or a base64-encoded data URL of an image."
		case p.Type == "image_url":
			return fmt.Sprintf("Image URLs are only allowed for messages with role 'user', but this message with role '%s' contains an image URL.", role)
		default:
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'text' and 'image_url'.", p.Type)
		}
	}
	return ""
}

// The fake refuses what OpenAI refuses, and only that.
func TestFakeRefusal(t *testing.T) {
	t.Parallel()
	call := `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{}"}}]}`
	tests := []struct {
		messages, want string
	}{
		{`{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"call_1","content":"ok"},{"role":"user","content":"and?"}`, ""},
		{`{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_1","content":"ok"}`, "must be a response to a preceeding message with 'tool_calls'"},
		{`{"role":"user","content":"hi"},` + call + `,{"role":"user","content":"and?"}`, "did not have response messages: call_1"},
		{`{"role":"user","content":"hi"},` + call, "must be followed by tool messages"},
		{`{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}`, ""},
		{`{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://app.test/a.png"}}]}`, ""},
		{`{"role":"user","content":[{"type":"image_url","image_url":{"url":"iVBORw0KGgo="}}]}`, "Expected a valid URL"},
		{`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/bmp;base64,Qk0="}}]}`, "Expected a valid URL"},
		{`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,not base64"}}]}`, "Expected a valid URL"},
		{`{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"call_1","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}`, "only allowed for messages with role 'user'"},
		{`{"role":"user","content":[{"type":"image","source":{}}]}`, "Supported values are"},
	}
	for _, tt := range tests {
		if got, _ := refusal([]byte(`{"messages":[` + tt.messages + `]}`)); tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("refusal of %s = %q, want %q", tt.messages, got, tt.want)
		}
	}
}

// model returns a Model pointed at the fake, with key as its API key.
func (f *fake) model(t *testing.T, key string) *Model {
	t.Helper()
	m, err := New(Config{BaseURL: f.srv.URL + "/v1", APIKey: key, HTTPClient: f.srv.Client()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// count is how many requests the fake got.
func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// only returns the one request the fake got.
func (f *fake) only(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(f.reqs))
	}
	return f.reqs[0]
}

// sseFile answers with testdata/name, an event at a time, flushing each.
func sseFile(t *testing.T, name string) http.HandlerFunc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return sse(strings.SplitAfter(string(b), "\n\n")...)
}

// sse answers with the given raw events.
func sse(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

// chunk is one data event of a choice delta.
func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, f)
}

func user(text string) model.Message {
	return model.Message{Role: model.User, Content: []model.Part{{Text: text}}}
}

func TestConverseText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture   string
		wantUsage model.Usage
	}{
		{"text_openai.sse", model.Usage{InputTokens: 12, OutputTokens: 3}},                // usage in a last chunk without choices
		{"text_vllm_continuous_usage.sse", model.Usage{InputTokens: 12, OutputTokens: 3}}, // usage on every chunk
		{"text_no_usage.sse", model.Usage{}},                                              // a server that never reports it
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, sseFile(t, tt.fixture))
			var deltas []string
			resp, err := f.model(t, "").Converse(context.Background(), model.Request{
				Model:    "m",
				Messages: []model.Message{user("Say hello.")},
				OnText:   func(d string) { deltas = append(deltas, d) },
			})
			if err != nil {
				t.Fatalf("Converse: %v", err)
			}
			if want := []string{"Hel", "lo, ", "world."}; !reflect.DeepEqual(deltas, want) {
				t.Errorf("OnText got %q, want %q", deltas, want)
			}
			want := model.Message{Role: model.Assistant, Content: []model.Part{{Text: "Hello, world."}}}
			if !reflect.DeepEqual(resp.Message, want) {
				t.Errorf("message got %+v, want %+v", resp.Message, want)
			}
			if resp.Stop != model.StopEndTurn {
				t.Errorf("stop got %q, want %q", resp.Stop, model.StopEndTurn)
			}
			if resp.Usage != tt.wantUsage {
				t.Errorf("usage got %+v, want %+v", resp.Usage, tt.wantUsage)
			}
			if got := f.only(t).path; got != "/v1/chat/completions" {
				t.Errorf("path got %q, want /v1/chat/completions", got)
			}
		})
	}
}

func TestConverseToolCalls(t *testing.T) {
	t.Parallel()
	want := model.Message{Role: model.Assistant, Content: []model.Part{
		{Text: "Reading both."},
		{ToolCall: &model.ToolCall{ID: "call_read1", Name: "read", Arguments: json.RawMessage(`{"path": "a.txt"}`)}},
		{ToolCall: &model.ToolCall{ID: "call_list2", Name: "list", Arguments: json.RawMessage(`{"dir": "src"}`)}},
	}}
	tests := []struct {
		fixture string
		// Ollama sends each call whole, without an index, and finishes
		// with "stop".
		compact bool
	}{
		{"tools_openai.sse", false},
		{"tools_ollama.sse", true},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, sseFile(t, tt.fixture))
			resp, err := f.model(t, "").Converse(context.Background(), model.Request{
				Model:    "m",
				Messages: []model.Message{user("Look at a.txt and src.")},
			})
			if err != nil {
				t.Fatalf("Converse: %v", err)
			}
			w := want
			if tt.compact {
				w.Content = []model.Part{
					want.Content[0],
					{ToolCall: &model.ToolCall{ID: "call_read1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)}},
					{ToolCall: &model.ToolCall{ID: "call_list2", Name: "list", Arguments: json.RawMessage(`{"dir":"src"}`)}},
				}
			}
			if !reflect.DeepEqual(resp.Message, w) {
				t.Errorf("message got %s, want %s", mustJSON(t, resp.Message), mustJSON(t, w))
			}
			if resp.Stop != model.StopToolUse {
				t.Errorf("stop got %q, want %q", resp.Stop, model.StopToolUse)
			}
			if want := (model.Usage{InputTokens: 80, OutputTokens: 41}); resp.Usage != want {
				t.Errorf("usage got %+v, want %+v", resp.Usage, want)
			}
		})
	}
}

func TestConverseArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args string
		want       string
	}{
		{"empty becomes an object", "", `{}`},
		{"blank becomes an object", "  ", `{}`},
		{"cut-off JSON is kept as text", `{"path": "a.t`, `"{\"path\": \"a.t"`},
		{"an array is kept as text", `[1]`, `"[1]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args, _ := json.Marshal(tt.args)
			f := newFake(t, sse(
				chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"list_agents","arguments":`+string(args)+`}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				"data: [DONE]\n\n",
			))
			resp, err := f.model(t, "").Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("go")}})
			if err != nil {
				t.Fatalf("Converse: %v", err)
			}
			calls := resp.Message.ToolCalls()
			if len(calls) != 1 {
				t.Fatalf("got %d calls, want 1", len(calls))
			}
			if got := string(calls[0].Arguments); got != tt.want {
				t.Errorf("arguments got %s, want %s", got, tt.want)
			}
			if !json.Valid(calls[0].Arguments) {
				t.Errorf("arguments %s are not valid JSON", calls[0].Arguments)
			}
			// What goes back to the server next turn is what the model wrote.
			wantBack := tt.args
			if strings.TrimSpace(tt.args) == "" {
				wantBack = "{}"
			}
			if got := argumentsText(calls[0].Arguments); got != wantBack {
				t.Errorf("arguments sent back got %q, want %q", got, wantBack)
			}
		})
	}
}

func TestConverseStopReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		finish string
		call   bool
		want   model.StopReason
	}{
		{"stop", false, model.StopEndTurn},
		{"length", false, model.StopMaxTokens},
		{"tool_calls", true, model.StopToolUse},
		{"stop", true, model.StopToolUse}, // calls finished with "stop" are still calls
		{"length", true, model.StopMaxTokens},
		{"content_filter", false, model.StopOther},
		{"abort", false, model.StopOther},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s call=%v", tt.finish, tt.call), func(t *testing.T) {
			t.Parallel()
			delta := `{"content":"x"}`
			if tt.call {
				delta = `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":"{}"}}]}`
			}
			f := newFake(t, sse(chunk(delta, ""), chunk(`{}`, tt.finish), "data: [DONE]\n\n"))
			resp, err := f.model(t, "").Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("go")}})
			if err != nil {
				t.Fatalf("Converse: %v", err)
			}
			if resp.Stop != tt.want {
				t.Errorf("stop got %q, want %q", resp.Stop, tt.want)
			}
		})
	}
}

func TestConverseSecondTurnRequest(t *testing.T) {
	t.Parallel()
	f := newFake(t, sseFile(t, "text_openai.sse"))
	_, err := f.model(t, "").Converse(context.Background(), model.Request{
		Model:     "gpt-4.1-mini",
		System:    "You are terse.",
		MaxTokens: 1000,
		Tools: []model.Tool{
			{Name: "read", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Path in the workdir."}},"required":["path"],"additionalProperties":false}`)},
			{Name: "list", Description: "List a directory.", Schema: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"}}}`)},
		},
		Messages: []model.Message{
			user("Look at a.txt and src."),
			{Role: model.Assistant, Content: []model.Part{
				{Text: "Reading both."},
				{ToolCall: &model.ToolCall{ID: "call_read1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)}},
				{ToolCall: &model.ToolCall{ID: "call_list2", Name: "list", Arguments: json.RawMessage(`{"dir":"src"}`)}},
			}},
			{Role: model.User, Content: []model.Part{
				{ToolResult: &model.ToolResult{CallID: "call_read1", Name: "read", Output: "hello"}},
				{ToolResult: &model.ToolResult{CallID: "call_list2", Name: "list", Output: "no such directory: src", IsError: true}},
				{Text: "Be quick."},
			}},
		},
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "second_turn_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := f.only(t).body
	if !jsonEqual(t, got, want) {
		t.Errorf("request body got\n%s\nwant\n%s", got, want)
	}
}

func TestConverseRequestDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		key      string
		wantAuth string
	}{
		{"no key sends no Authorization", "", ""},
		{"a key is a bearer token", "sk-test", "Bearer sk-test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, sseFile(t, "text_no_usage.sse"))
			_, err := f.model(t, tt.key).Converse(context.Background(), model.Request{
				Model:    "local-model",
				Messages: []model.Message{user("hi")},
				Tools:    []model.Tool{{Name: "list_agents", Description: "List child agents."}},
			})
			if err != nil {
				t.Fatalf("Converse: %v", err)
			}
			req := f.only(t)
			if got := req.header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization got %q, want %q", got, tt.wantAuth)
			}
			if got := req.header.Get("X-Stainless-Retry-Count"); got != "0" {
				t.Errorf("X-Stainless-Retry-Count got %q, want 0", got)
			}
			want := `{
				"model": "local-model",
				"max_tokens": 4096,
				"stream": true,
				"stream_options": {"include_usage": true},
				"messages": [{"role": "user", "content": "hi"}],
				"tools": [{"type": "function", "function": {"name": "list_agents", "description": "List child agents.",
					"parameters": {"type": "object", "properties": {}}}}]
			}`
			if !jsonEqual(t, req.body, []byte(want)) {
				t.Errorf("request body got\n%s\nwant\n%s", req.body, want)
			}
		})
	}
}

// TestConverseOpenAIMaxCompletionTokens points the Model at OpenAI's host
// name, dialled to the fake, to see it send max_completion_tokens there.
func TestConverseOpenAIMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	f := newFake(t, sseFile(t, "text_openai.sse"))
	addr := f.srv.Listener.Addr().String()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	m, err := New(Config{BaseURL: "http://api.openai.com/v1", APIKey: "sk-test", HTTPClient: client})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := m.Converse(context.Background(), model.Request{Model: "gpt-5", Messages: []model.Message{user("hi")}, MaxTokens: 64}); err != nil {
		t.Fatalf("Converse: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(f.only(t).body, &body); err != nil {
		t.Fatal(err)
	}
	if got := body["max_completion_tokens"]; got != float64(64) {
		t.Errorf("max_completion_tokens got %v, want 64", got)
	}
	if got, ok := body["max_tokens"]; ok {
		t.Errorf("max_tokens got %v, want it absent", got)
	}
}

func TestConverseErrors(t *testing.T) {
	t.Parallel()
	httpDate := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name           string
		status         int
		header         map[string]string
		body           string
		wantRetryable  bool
		wantRetryAfter time.Duration // 0: none; -1: about 90 s
		wantInError    string
	}{
		{
			name:   "429 with Retry-After",
			status: 429, header: map[string]string{"Retry-After": "7"},
			body:          `{"error":{"message":"Rate limit reached for gpt-4.1-mini on tokens per min (TPM).","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			wantRetryable: true, wantRetryAfter: 7 * time.Second,
			wantInError: "openai model: 429: Rate limit reached for gpt-4.1-mini",
		},
		{
			name:   "429 with retry-after-ms",
			status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"},
			body:          `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`,
			wantRetryable: true, wantRetryAfter: 1500 * time.Millisecond,
			wantInError: "slow down",
		},
		{
			name:   "429 with an HTTP date",
			status: 429, header: map[string]string{"Retry-After": httpDate},
			body:          `{"error":{"message":"slow down"}}`,
			wantRetryable: true, wantRetryAfter: -1,
			wantInError: "slow down",
		},
		{
			name:        "429 for a spent quota",
			status:      429,
			body:        `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			wantInError: "You exceeded your current quota",
		},
		{
			name:          "500",
			status:        500,
			body:          `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			wantRetryable: true,
			wantInError:   "openai model: 500: The server had an error",
		},
		{
			name:          "503 in plain text",
			status:        503,
			body:          "upstream connect error or disconnect/reset before headers",
			wantRetryable: true,
			wantInError:   "503: upstream connect error",
		},
		{
			name:          "529 overloaded",
			status:        529,
			body:          `{"error":{"message":"Overloaded","type":"overloaded_error"}}`,
			wantRetryable: true,
			wantInError:   "529: Overloaded",
		},
		{
			name:          "408",
			status:        408,
			wantRetryable: true,
			wantInError:   "408: Request Timeout",
		},
		{
			name:        "400 with OpenAI's body",
			status:      400,
			body:        `{"error":{"message":"Invalid schema for function 'read': In context=(), 'required' is required to be supplied.","type":"invalid_request_error","param":"tools[0].function.parameters","code":"invalid_function_parameters"}}`,
			wantInError: "openai model: 400: Invalid schema for function 'read'",
		},
		{
			name:        "401 with a wrong key",
			status:      401,
			body:        `{"error":{"message":"Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			wantInError: "401: Incorrect API key provided",
		},
		{
			name:        "403 from an unsupported region",
			status:      403,
			body:        `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`,
			wantInError: "403: Country, region, or territory not supported",
		},
		{
			name:        "400 for a conversation too long",
			status:      400,
			body:        `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			wantInError: "400: This model's maximum context length is 128000 tokens.",
		},
		{
			name:        "404 from Ollama",
			status:      404,
			body:        `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`,
			wantInError: `404: model "llama9" not found, try pulling it first`,
		},
		{
			name:        "400 with an error string",
			status:      400,
			body:        `{"error":"Unexpected endpoint or method. (POST /v1/chat/completions)"}`,
			wantInError: "400: Unexpected endpoint or method.",
		},
		{
			name:        "400 from an older vLLM",
			status:      400,
			body:        `{"object":"error","message":"This model's maximum context length is 8192 tokens.","type":"BadRequestError","param":null,"code":400}`,
			wantInError: "400: This model's maximum context length is 8192 tokens.",
		},
		{
			name:        "422 with a detail",
			status:      422,
			body:        `{"detail":"messages: field required"}`,
			wantInError: "422: messages: field required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				if strings.HasPrefix(tt.body, "{") {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			_, err := f.model(t, "").Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi")}})
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error got %v (%T), want a *model.Error", err, err)
			}
			if me.Provider != "openai" || me.Status != tt.status {
				t.Errorf("provider, status got %q, %d, want openai, %d", me.Provider, me.Status, tt.status)
			}
			if me.Retryable != tt.wantRetryable {
				t.Errorf("retryable got %v, want %v", me.Retryable, tt.wantRetryable)
			}
			switch {
			case tt.wantRetryAfter < 0:
				if me.RetryAfter < 80*time.Second || me.RetryAfter > 91*time.Second {
					t.Errorf("retry after got %v, want about 90s", me.RetryAfter)
				}
			case me.RetryAfter != tt.wantRetryAfter:
				t.Errorf("retry after got %v, want %v", me.RetryAfter, tt.wantRetryAfter)
			}
			if !strings.Contains(err.Error(), tt.wantInError) {
				t.Errorf("error got %q, want it to contain %q", err, tt.wantInError)
			}
			if got := f.count(); got != 1 {
				t.Errorf("got %d requests, want 1 (the SDK must not retry)", got)
			}
		})
	}
}

func TestConverseStreamError(t *testing.T) {
	t.Parallel()
	f := newFake(t, sseFile(t, "stream_error.sse"))
	_, err := f.model(t, "").Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi")}})
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error got %v (%T), want a *model.Error", err, err)
	}
	if !me.Retryable {
		t.Errorf("retryable got false, want true for a 502 in the stream")
	}
	if want := "openai model: Provider returned error: overloaded"; err.Error() != want {
		t.Errorf("error got %q, want %q", err, want)
	}
}

func TestConverseTransportErrors(t *testing.T) {
	t.Parallel()
	t.Run("connection cut mid-stream", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			first := chunk(`{"content":"Hel"}`, "")
			fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(first), first)
			buf.Flush()
		})
		_, err := f.model(t, "").Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi")}})
		if !model.IsRetryable(err) {
			t.Errorf("error got %v, want a retryable one", err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		m, err := New(Config{BaseURL: url + "/v1"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi")}})
		if !model.IsRetryable(err) {
			t.Errorf("error got %v, want a retryable one", err)
		}
	})
	t.Run("not a stream", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
		})
		_, err := f.model(t, "").Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi")}})
		var me *model.Error
		if !errors.As(err, &me) || me.Retryable || !errors.Is(err, errNoAnswer) {
			t.Errorf("error got %v, want a non-retryable errNoAnswer", err)
		}
	})
}

func TestConverseCancelled(t *testing.T) {
	t.Parallel()
	t.Run("before the call", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, sseFile(t, "text_openai.sse"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := f.model(t, "").Converse(ctx, model.Request{Model: "m", Messages: []model.Message{user("hi")}})
		if !errors.Is(err, context.Canceled) || model.IsRetryable(err) {
			t.Errorf("error got %v, want context.Canceled, not retryable", err)
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			sse(chunk(`{"content":"Hel"}`, ""))(w, r)
			<-r.Context().Done() // hold the stream open until the client goes
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := f.model(t, "").Converse(ctx, model.Request{
			Model:    "m",
			Messages: []model.Message{user("hi")},
			OnText:   func(string) { cancel() },
		})
		if !errors.Is(err, context.Canceled) || model.IsRetryable(err) {
			t.Errorf("error got %v, want context.Canceled, not retryable", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := f.model(t, "").Converse(ctx, model.Request{Model: "m", Messages: []model.Message{user("hi")}})
		if !errors.Is(err, context.DeadlineExceeded) || model.IsRetryable(err) {
			t.Errorf("error got %v, want context.DeadlineExceeded, not retryable", err)
		}
	})
}

func TestConverseBadConversation(t *testing.T) {
	t.Parallel()
	f := newFake(t, sseFile(t, "text_openai.sse"))
	_, err := f.model(t, "").Converse(context.Background(), model.Request{
		Model:    "m",
		Messages: []model.Message{{Role: "system", Content: []model.Part{{Text: "x"}}}},
	})
	var me *model.Error
	if !errors.As(err, &me) || me.Retryable || !strings.Contains(err.Error(), `unknown role "system"`) {
		t.Errorf("error got %v, want a non-retryable unknown-role error", err)
	}
	if n := f.count(); n != 0 {
		t.Errorf("got %d requests, want none", n)
	}
}

// TestNewIgnoresProcessEnvironment checks that only Config reaches the
// wire: the SDK's NewClient would add OPENAI_* variables of the process.
// It sets the environment, so it does not run in parallel.
func TestNewIgnoresProcessEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	f := newFake(t, sseFile(t, "text_no_usage.sse"))
	if _, err := f.model(t, "").Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi")}}); err != nil {
		t.Fatalf("Converse: %v", err)
	}
	h := f.only(t).header
	for _, k := range []string{"Authorization", "OpenAI-Organization", "X-Leak"} {
		if v := h.Get(k); v != "" {
			t.Errorf("header %s got %q, want none", k, v)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"defaults", nil, Config{BaseURL: DefaultBaseURL}},
		{"a local server", map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, Config{BaseURL: "http://localhost:11434/v1"}},
		{"a key", map[string]string{"OPENAI_API_KEY": "sk-x\n"}, Config{BaseURL: DefaultBaseURL, APIKey: "sk-x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ConfigFromEnv(func(k string) string { return tt.env[k] })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base    string
		wantErr bool
	}{
		{"", false},
		{"http://127.0.0.1:8080/v1", false},
		{"https://openrouter.ai/api/v1", false},
		{"localhost:8080/v1", true},
		{"/v1", true},
		{"ftp://example.com/v1", true},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			t.Parallel()
			_, err := New(Config{BaseURL: tt.base})
			if (err != nil) != tt.wantErr {
				t.Errorf("New(%q) error got %v, want error %v", tt.base, err, tt.wantErr)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// A tool message is text: a screenshot's result says the image follows,
// and once every call of the assistant message has its tool message, one
// user message carries each image as a data URL after a text naming its
// call.
func TestConverseSendsImages(t *testing.T) {
	t.Parallel()
	f := newFake(t, sseFile(t, "text_openai.sse"))
	pic := modeltest.PNG(64, 40)
	_, err := f.model(t, "").Converse(context.Background(), model.Request{
		Model: "gpt-4.1-mini",
		Tools: []model.Tool{{Name: "screenshot"}, {Name: "read"}},
		Messages: []model.Message{
			user("What does the page show?"),
			{Role: model.Assistant, Content: []model.Part{
				{ToolCall: &model.ToolCall{ID: "call_shot", Name: "screenshot", Arguments: json.RawMessage(`{}`)}},
				{ToolCall: &model.ToolCall{ID: "call_read", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)}},
			}},
			{Role: model.User, Content: []model.Part{
				{ToolResult: &model.ToolResult{CallID: "call_shot", Name: "screenshot", Output: "64×40 screenshot of http://app.test/",
					Image: &model.Image{MediaType: model.ImagePNG, Data: pic, Width: 64, Height: 40, Bytes: len(pic)}}},
				{ToolResult: &model.ToolResult{CallID: "call_read", Name: "read", Output: "hello"}},
			}},
		},
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(f.only(t).body, &body); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"role": "user", "content": "What does the page show?"}`,
		string(body.Messages[1]), // the assistant's calls, as TestConverseSecondTurnRequest checks them
		`{"role": "tool", "tool_call_id": "call_shot", "content": "64×40 screenshot of http://app.test/\n[The image this call made (64×40, image/png) follows in the next user message.]"}`,
		`{"role": "tool", "tool_call_id": "call_read", "content": "hello"}`,
		`{"role": "user", "content": [{"type": "text", "text": "The screenshot from tool call call_shot:"},
			{"type": "image_url", "image_url": {"url": "data:image/png;base64,` + base64.StdEncoding.EncodeToString(pic) + `"}}]}`,
	}
	if len(body.Messages) != len(want) {
		t.Fatalf("sent %d messages, want %d:\n%s", len(body.Messages), len(want), f.only(t).body)
	}
	for i := range want {
		if !jsonEqual(t, body.Messages[i], []byte(want[i])) {
			t.Errorf("message %d got\n%s\nwant\n%s", i, body.Messages[i], want[i])
		}
	}
}

// An image the server would refuse fails before it is sent.
func TestConverseBadImages(t *testing.T) {
	t.Parallel()
	for _, img := range []model.Image{{MediaType: model.ImagePNG, Ref: "k.png"}, {MediaType: "image/bmp", Data: []byte("BM")}} {
		f := newFake(t, sseFile(t, "text_openai.sse"))
		_, err := f.model(t, "").Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi"),
			{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "t1", Name: "screenshot"}}}},
			{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "t1", Image: &img}}}}}})
		var me *model.Error
		if !errors.As(err, &me) || me.Retryable || !strings.Contains(err.Error(), "tool result t1: image") {
			t.Errorf("image %+v: error got %v, want a *model.Error not retryable about tool result t1's image", img, err)
		}
		if n := f.count(); n != 0 {
			t.Errorf("requests got %d, want 0", n)
		}
	}
}
