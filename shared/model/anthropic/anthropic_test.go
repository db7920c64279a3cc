package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/modeltest"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.request.json fixtures from what the SDK sends")

const testKey = "sk-ant-test-key"

// fake is a local stand-in for the Messages API: it records each request
// and answers with respond, unless the API would refuse the request
// (refusal): then it answers as the API does, 400 invalid_request_error.
type fake struct {
	respond func(w http.ResponseWriter, r *http.Request)

	calls atomic.Int32
	mu    sync.Mutex
	reqs  []recorded
}

type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.Header.Clone(), body})
	f.mu.Unlock()
	if msg := refusal(body); msg != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, errorBody("invalid_request_error", msg))
		return
	}
	f.respond(w, r)
}

// refusal is the message of the API's 400 for a Messages request body, ""
// for one it takes: a text block, in the system prompt, a message or a
// tool result, must not be empty or only whitespace (the API's words).
func refusal(body []byte) string {
	type block struct {
		Type    string          `json:"type"`
		Text    *string         `json:"text"`
		Content json.RawMessage `json:"content"`
		Source  *imageSource    `json:"source"`
	}
	var req struct {
		System   []block `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	var bad func(where string, blocks []block) string
	bad = func(where string, blocks []block) string {
		for _, b := range blocks {
			if b.Type == "tool_result" && len(b.Content) > 0 && b.Content[0] == '[' {
				var inner []block
				json.Unmarshal(b.Content, &inner)
				for _, c := range inner {
					switch c.Type {
					case "text", "image", "document", "search_result":
					default:
						return fmt.Sprintf("%s: tool_result content: Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'image', 'search_result', 'document'", where, c.Type)
					}
				}
				if msg := bad(where, inner); msg != "" {
					return msg
				}
			}
			if b.Type == "image" {
				if msg := b.Source.refusal(); msg != "" {
					return where + ": image.source: " + msg
				}
			}
			switch {
			case b.Type != "text" || b.Text == nil:
			case *b.Text == "":
				return where + ": text content blocks must be non-empty"
			case strings.TrimSpace(*b.Text) == "":
				return where + ": text content blocks must contain non-whitespace text"
			}
		}
		return ""
	}
	if msg := bad("system", req.System); msg != "" {
		return msg
	}
	for _, m := range req.Messages {
		var blocks []block
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a string
		}
		if msg := bad("messages", blocks); msg != "" {
			return msg
		}
	}
	return ""
}

// imageSource is an image block's source as the Messages API documents
// it: {type: "base64", media_type, data}, or a URL or file source.
type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// refusal is what the API says of src, "" when it takes it: base64 data
// of one of the four media types, no more than 5 MB, that is an image of
// that type.
func (src *imageSource) refusal() string {
	if src == nil {
		return "Field required"
	}
	if src.Type != "base64" {
		return fmt.Sprintf("type %q: this fake takes base64 sources only", src.Type)
	}
	switch src.MediaType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
	default:
		return "media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
	}
	data, err := base64.StdEncoding.DecodeString(src.Data)
	switch {
	case err != nil || len(data) == 0:
		return "data: The image data is not valid base64"
	case len(src.Data) > 5<<20:
		return "image exceeds 5 MB maximum"
	case http.DetectContentType(data) != src.MediaType:
		return "Image does not match the provided media type " + src.MediaType
	}
	return ""
}

func (f *fake) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("the fake got no request")
	}
	return f.reqs[len(f.reqs)-1]
}

// newFake starts a fake answering with respond and a Model pointed at it.
func newFake(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) (*fake, *Model) {
	t.Helper()
	f := &fake{respond: respond}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	m, err := New(Config{BaseURL: srv.URL, APIKey: testKey, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

// sse answers with the events of a testdata/*.sse file, flushing after each
// one so that they reach the client as separate chunks.
func sse(t *testing.T, name string) func(w http.ResponseWriter, r *http.Request) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return sseText(string(data))
}

func sseText(stream string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("request-id", "req_test")
		w.WriteHeader(http.StatusOK)
		for _, ev := range strings.SplitAfter(stream, "\n\n") {
			if strings.TrimSpace(ev) == "" {
				continue
			}
			_, _ = io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}
}

// textStream is a whole answer of text, stopping for stop.
func textStream(text, stop string) string {
	return fmt.Sprintf(`event: message_start
data: {"type":"message_start","message":{"id":"msg_x","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":4}}

event: message_stop
data: {"type":"message_stop"}

`, text, stop)
}

func userText(s string) model.Message {
	return model.Message{Role: model.User, Content: []model.Part{{Text: s}}}
}

func TestConverseStreamsText(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, sse(t, "text.sse"))

	var deltas []string
	resp, err := m.Converse(context.Background(), model.Request{
		Model:    "claude-sonnet-4-5",
		Messages: []model.Message{userText("Say hello.")},
		OnText:   func(d string) { deltas = append(deltas, d) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Hel", "lo, ", "world."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("OnText got %q, want %q", deltas, want)
	}
	if got, want := resp.Message.Text(), "Hello, world."; got != want {
		t.Errorf("text got %q, want %q", got, want)
	}
	if got := resp.Message.Role; got != model.Assistant {
		t.Errorf("role got %q, want assistant", got)
	}
	if got := resp.Message.ToolCalls(); len(got) != 0 {
		t.Errorf("tool calls got %v, want none", got)
	}
	if got, want := resp.Stop, model.StopEndTurn; got != want {
		t.Errorf("stop got %q, want %q", got, want)
	}
	// 25 input + 5 written to the prompt cache + 100 read from it.
	if got, want := resp.Usage, (model.Usage{InputTokens: 130, OutputTokens: 12}); got != want {
		t.Errorf("usage got %+v, want %+v", got, want)
	}

	req := f.last(t)
	if req.method != http.MethodPost || req.path != "/v1/messages" {
		t.Errorf("request got %s %s, want POST /v1/messages", req.method, req.path)
	}
	// The SDK sends the API key as a bearer token, not as x-api-key.
	if got, want := req.header.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization got %q, want %q", got, want)
	}
	if req.header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	if got := f.calls.Load(); got != 1 {
		t.Errorf("requests got %d, want 1", got)
	}
}

func TestConverseToolCalls(t *testing.T) {
	t.Parallel()
	_, m := newFake(t, sse(t, "tool_calls.sse"))

	var deltas []string
	resp, err := m.Converse(context.Background(), model.Request{
		Model:    "claude-sonnet-4-5",
		Messages: []model.Message{userText("Which module is this?")},
		OnText:   func(d string) { deltas = append(deltas, d) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Let me look."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("OnText got %q, want %q", deltas, want)
	}
	want := model.Message{Role: model.Assistant, Content: []model.Part{
		{Text: "Let me look."},
		{ToolCall: &model.ToolCall{ID: "toolu_01A", Name: "read", Arguments: json.RawMessage(`{"path": "go.mod"}`)}},
		{ToolCall: &model.ToolCall{ID: "toolu_01B", Name: "grep", Arguments: json.RawMessage(`{"pattern": "func main", "glob": "*.go"}`)}},
		{ToolCall: &model.ToolCall{ID: "toolu_01C", Name: "list_agents", Arguments: json.RawMessage(`{}`)}},
	}}
	if !reflect.DeepEqual(resp.Message, want) {
		got, _ := json.Marshal(resp.Message)
		exp, _ := json.Marshal(want)
		t.Errorf("message got\n%s\nwant\n%s", got, exp)
	}
	if got, want := resp.Stop, model.StopToolUse; got != want {
		t.Errorf("stop got %q, want %q", got, want)
	}
	if got, want := resp.Usage, (model.Usage{InputTokens: 410, OutputTokens: 87}); got != want {
		t.Errorf("usage got %+v, want %+v", got, want)
	}
}

// TestRequestJSON checks the whole JSON body the SDK sent against
// testdata/<name>.request.json.
func TestRequestJSON(t *testing.T) {
	t.Parallel()
	readTool := model.Tool{
		Name:        "read",
		Description: "Read a file of the workspace.",
		Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Path under the workspace"},` +
			`"range":{"$ref":"#/$defs/range"}},"required":["path"],"additionalProperties":false,` +
			`"$defs":{"range":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2}}}`),
	}
	listTool := model.Tool{Name: "list_agents", Description: "List the run's child agents.", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}
	assistant := model.Message{Role: model.Assistant, Content: []model.Part{
		{Text: "Let me look."},
		{ToolCall: &model.ToolCall{ID: "toolu_01A", Name: "read", Arguments: json.RawMessage(`{"path":"go.mod"}`)}},
		{ToolCall: &model.ToolCall{ID: "toolu_01C", Name: "list_agents"}},
	}}
	tests := []struct {
		name string
		req  model.Request
	}{{
		name: "first_turn",
		req: model.Request{
			Model:    "claude-sonnet-4-5",
			Messages: []model.Message{userText("What module is this?")},
		},
	}, {
		name: "system_and_tools",
		req: model.Request{
			Model:     "claude-sonnet-4-5",
			System:    "You are the ops fleet.\nAnswer briefly.",
			Messages:  []model.Message{userText("What module is this?")},
			Tools:     []model.Tool{readTool, listTool},
			MaxTokens: 1024,
		},
	}, {
		// The runner appends one user message a tool result; they go as one.
		name: "second_turn",
		req: model.Request{
			Model:  "claude-sonnet-4-5",
			System: "You are the ops fleet.",
			Messages: []model.Message{
				userText("What module is this?"),
				assistant,
				{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "toolu_01A", Name: "read", Output: "module example.com/x\n\ngo 1.26\n"}}}},
				{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "toolu_01C", Name: "list_agents", Output: "sandbox unreachable", IsError: true}}}},
			},
			Tools:     []model.Tool{readTool, listTool},
			MaxTokens: 2048,
		},
	}, {
		// Text before the results moves after them; an empty output sends
		// no content; empty text parts and empty messages are dropped.
		name: "results_with_text",
		req: model.Request{
			Model: "claude-sonnet-4-5",
			Messages: []model.Message{
				userText("What module is this?"),
				{Role: model.Assistant, Content: []model.Part{{Text: ""}}},
				assistant,
				{Role: model.User, Content: []model.Part{
					{Text: "Also check the README."},
					{ToolResult: &model.ToolResult{CallID: "toolu_01A", Name: "read", Output: ""}},
					{Text: ""},
					{ToolResult: &model.ToolResult{CallID: "toolu_01C", Name: "list_agents", Output: "[]"}},
				}},
			},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t, sseText(textStream("ok", "end_turn")))
			if _, err := m.Converse(context.Background(), tt.req); err != nil {
				t.Fatal(err)
			}
			got := f.last(t).body
			path := filepath.Join("testdata", tt.name+".request.json")
			if *update {
				var buf bytes.Buffer
				if err := json.Indent(&buf, got, "", "  "); err != nil {
					t.Fatal(err)
				}
				buf.WriteByte('\n')
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var gotV, wantV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatalf("request body is not JSON: %v\n%s", err, got)
			}
			if err := json.Unmarshal(want, &wantV); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotV, wantV) {
				t.Errorf("request body got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// The API refuses a text block of whitespace alone ("messages: text content
// blocks must contain non-whitespace text"), such as the "\n\n" a model
// may write before its tool calls; one in the conversation would fail every
// later call of it. Such text is left out, as empty text is.
func TestWhitespaceTextIsLeftOut(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, sseText(textStream("ok", "end_turn")))
	_, err := m.Converse(context.Background(), model.Request{
		Model:  "claude-sonnet-4-5",
		System: "You are the ops fleet.",
		Messages: []model.Message{
			userText("What module is this?"),
			{Role: model.Assistant, Content: []model.Part{
				{Text: "\n\n"},
				{ToolCall: &model.ToolCall{ID: "toolu_01A", Name: "read", Arguments: json.RawMessage(`{"path":"go.mod"}`)}},
			}},
			{Role: model.User, Content: []model.Part{
				{ToolResult: &model.ToolResult{CallID: "toolu_01A", Name: "read", Output: " \n"}},
				{Text: "\t"},
			}},
			{Role: model.Assistant, Content: []model.Part{{Text: "  "}}},
			userText("And?"),
		},
		Tools: []model.Tool{{Name: "read", Schema: json.RawMessage(`{"type":"object"}`)}},
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	if msg := refusal(f.last(t).body); msg != "" {
		t.Fatalf("sent %s, which the API refuses: %s", f.last(t).body, msg)
	}
}

func TestStopReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stop string
		want model.StopReason
	}{
		{"end_turn", model.StopEndTurn},
		{"stop_sequence", model.StopEndTurn},
		{"tool_use", model.StopToolUse},
		{"max_tokens", model.StopMaxTokens},
		{"refusal", model.StopOther},
		{"pause_turn", model.StopOther},
		{"model_context_window_exceeded", model.StopOther},
	}
	for _, tt := range tests {
		t.Run(tt.stop, func(t *testing.T) {
			t.Parallel()
			_, m := newFake(t, sseText(textStream("partial", tt.stop)))
			resp, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{userText("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Stop != tt.want {
				t.Errorf("stop %s got %q, want %q", tt.stop, resp.Stop, tt.want)
			}
		})
	}
}

// A tool call cut off at max_tokens has arguments that are not JSON; it is
// left out, and the stop reason says the answer was cut.
func TestCutOffToolCallIsDropped(t *testing.T) {
	t.Parallel()
	stream := `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Writing it."}}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"write","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a.txt\", \"content\": \"lo"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":64}}

event: message_stop
data: {"type":"message_stop"}

`
	var deltas []string
	_, m := newFake(t, sseText(stream))
	resp, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{userText("hi")}, OnText: func(d string) { deltas = append(deltas, d) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.ToolCalls(); len(got) != 0 {
		t.Errorf("tool calls got %v, want none", got)
	}
	if got, want := resp.Message.Text(), "Writing it."; got != want {
		t.Errorf("text got %q, want %q", got, want)
	}
	if want := []string{"Writing it."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("OnText got %q, want %q", deltas, want)
	}
	if resp.Stop != model.StopMaxTokens {
		t.Errorf("stop got %q, want max_tokens", resp.Stop)
	}
}

func errorBody(typ, msg string) string {
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_011"}`, typ, msg)
}

func TestErrors(t *testing.T) {
	t.Parallel()
	reply := func(status int, header map[string]string, body string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			for k, v := range header {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	tests := []struct {
		name       string
		respond    func(w http.ResponseWriter, r *http.Request)
		status     int
		retryable  bool
		retryAfter time.Duration
		message    string // in Error()
	}{{
		name:       "429 with retry-after",
		respond:    reply(429, map[string]string{"Retry-After": "7"}, errorBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")),
		status:     429,
		retryable:  true,
		retryAfter: 7 * time.Second,
		message:    "rate_limit_error: Number of request tokens has exceeded your per-minute rate limit",
	}, {
		name:       "429 with retry-after-ms",
		respond:    reply(429, map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, errorBody("rate_limit_error", "slow down")),
		status:     429,
		retryable:  true,
		retryAfter: 1500 * time.Millisecond,
		message:    "slow down",
	}, {
		name:      "429 spend limit",
		respond:   reply(429, nil, `{"type":"error","error":{"type":"rate_limit_error","message":"Your organization has reached its spend limit.","details":{"error_code":"enforced_spend_limit_reached"}}}`),
		status:    429,
		retryable: false,
		message:   "reached its spend limit",
	}, {
		name:      "500",
		respond:   reply(500, nil, errorBody("api_error", "Internal server error")),
		status:    500,
		retryable: true,
		message:   "api_error: Internal server error",
	}, {
		name:      "529 overloaded",
		respond:   reply(529, nil, errorBody("overloaded_error", "Overloaded")),
		status:    529,
		retryable: true,
		message:   "anthropic model: 529: overloaded_error: Overloaded",
	}, {
		name: "502 from a proxy",
		respond: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>Bad Gateway</html>", http.StatusBadGateway)
		},
		status:    502,
		retryable: true,
		message:   "<html>Bad Gateway</html>",
	}, {
		name:      "503 the API says not to retry",
		respond:   reply(503, map[string]string{"X-Should-Retry": "false"}, errorBody("api_error", "Service unavailable")),
		status:    503,
		retryable: false,
		message:   "Service unavailable",
	}, {
		name:      "400",
		respond:   reply(400, nil, errorBody("invalid_request_error", "messages.1.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01C")),
		status:    400,
		retryable: false,
		message:   "anthropic model: 400: invalid_request_error: messages.1.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01C",
	}, {
		name:      "401",
		respond:   reply(401, nil, errorBody("authentication_error", "invalid x-api-key")),
		status:    401,
		retryable: false,
		message:   "authentication_error: invalid x-api-key",
	}, {
		// The statuses of the API's errors page, each with its type.
		name:      "402 billing",
		respond:   reply(402, nil, errorBody("billing_error", "Your credit balance is too low to access the Anthropic API.")),
		status:    402,
		retryable: false,
		message:   "billing_error: Your credit balance is too low",
	}, {
		name:      "403 permission",
		respond:   reply(403, nil, errorBody("permission_error", "Your API key does not have permission to use the specified resource.")),
		status:    403,
		retryable: false,
		message:   "permission_error: Your API key does not have permission",
	}, {
		name:      "404 model",
		respond:   reply(404, nil, errorBody("not_found_error", "model: claude-nope")),
		status:    404,
		retryable: false,
		message:   "not_found_error: model: claude-nope",
	}, {
		// Returned by Cloudflare before the API sees the request: no JSON.
		name: "413 from Cloudflare",
		respond: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			io.WriteString(w, "<html><head><title>413 Request Entity Too Large</title></head><body><center>cloudflare</center></body></html>")
		},
		status:    413,
		retryable: false,
		message:   "413 Request Entity Too Large",
	}, {
		name:      "504 timeout",
		respond:   reply(504, nil, errorBody("timeout_error", "Request timed out")),
		status:    504,
		retryable: true,
		message:   "timeout_error: Request timed out",
	}, {
		name:      "overloaded mid-stream",
		respond:   sse(t, "overloaded.sse"),
		status:    0,
		retryable: true,
		message:   "anthropic model: overloaded_error: Overloaded",
	}, {
		name:      "stream cut off",
		respond:   sseText(strings.Split(textStream("Hel", "end_turn"), "event: message_delta")[0]),
		retryable: true,
		message:   "stream ended before the answer was complete",
	}, {
		name: "connection lost mid-stream",
		respond: func(w http.ResponseWriter, r *http.Request) {
			sseText(strings.Split(textStream("Hel", "end_turn"), "event: content_block_stop")[0])(w, r)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		},
		retryable: true,
		message:   "anthropic model: stream broke off: unexpected EOF",
	}, {
		name:      "garbled event mid-stream",
		respond:   sseText(strings.Replace(textStream("Hel", "end_turn"), `{"type":"content_block_stop","index":0}`, `{"type":"content_block_stop",`, 1)),
		retryable: true,
		message:   "anthropic model: stream broke off: unexpected end of JSON input",
	}, {
		name: "connection reset",
		respond: func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		},
		retryable: true,
		message:   "EOF",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t, tt.respond)
			_, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{userText("hi")}})
			t.Logf("error: %v", err)
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error got %T %v, want a *model.Error", err, err)
			}
			if me.Provider != "anthropic" {
				t.Errorf("provider got %q, want anthropic", me.Provider)
			}
			if me.Status != tt.status {
				t.Errorf("status got %d, want %d", me.Status, tt.status)
			}
			if me.Retryable != tt.retryable || model.IsRetryable(err) != tt.retryable {
				t.Errorf("retryable got %v, want %v (%v)", me.Retryable, tt.retryable, err)
			}
			if me.RetryAfter != tt.retryAfter {
				t.Errorf("retry after got %v, want %v", me.RetryAfter, tt.retryAfter)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error got %q, want it to contain %q", err, tt.message)
			}
			if me.Err == nil {
				t.Error("no underlying error")
			}
			// The SDK's own retries are off: model.WithRetry does them.
			if got := f.calls.Load(); got != 1 {
				t.Errorf("requests got %d, want 1", got)
			}
		})
	}
}

func TestContextDone(t *testing.T) {
	t.Parallel()
	// hang waits for the client to go away, after sending first, if set.
	hang := func(first string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			if first != "" {
				sseText(first)(w, r)
			}
			<-r.Context().Done()
		}
	}
	started := strings.Split(textStream("Hel", "end_turn"), "event: content_block_stop")[0]
	tests := []struct {
		name    string
		respond func(w http.ResponseWriter, r *http.Request)
		ctx     func() (context.Context, context.CancelFunc)
		cancel  bool // cancel from OnText, mid-stream
		want    error
	}{{
		name:    "cancelled before",
		respond: hang(""),
		ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		},
		want: context.Canceled,
	}, {
		name:    "cancelled mid-stream",
		respond: hang(started),
		ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
		cancel:  true,
		want:    context.Canceled,
	}, {
		name:    "deadline while waiting",
		respond: hang(""),
		ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		},
		want: context.DeadlineExceeded,
	}, {
		name:    "deadline mid-stream",
		respond: hang(started),
		ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		},
		want: context.DeadlineExceeded,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, m := newFake(t, tt.respond)
			ctx, cancel := tt.ctx()
			defer cancel()
			req := model.Request{Model: "m", Messages: []model.Message{userText("hi")}}
			if tt.cancel {
				req.OnText = func(string) { cancel() }
			}
			_, err := m.Converse(ctx, req)
			t.Logf("error: %v", err)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error got %v, want %v", err, tt.want)
			}
			if model.IsRetryable(err) {
				t.Errorf("error %v is retryable, want not", err)
			}
			if me := (*model.Error)(nil); errors.As(err, &me) {
				t.Errorf("error got a *model.Error %v, want ctx's error", me)
			}
		})
	}
}

// A request the API would refuse fails before it is sent, and not for a
// retry.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  model.Request
		want string
	}{{
		name: "no model",
		req:  model.Request{Messages: []model.Message{userText("hi")}},
		want: "no model id",
	}, {
		name: "tool result from the assistant",
		req: model.Request{Model: "m", Messages: []model.Message{userText("hi"),
			{Role: model.Assistant, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "x", Output: "y"}}}}}},
		want: "tool result in an assistant message",
	}, {
		name: "unknown role",
		req:  model.Request{Model: "m", Messages: []model.Message{{Role: "tool", Content: []model.Part{{Text: "x"}}}}},
		want: `unknown role "tool"`,
	}, {
		name: "arguments not JSON",
		req: model.Request{Model: "m", Messages: []model.Message{userText("hi"),
			{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "t1", Name: "read", Arguments: json.RawMessage(`{"path":`)}}}}}},
		want: "tool call t1: arguments are not valid JSON",
	}, {
		name: "schema not an object",
		req:  model.Request{Model: "m", Messages: []model.Message{userText("hi")}, Tools: []model.Tool{{Name: "read", Schema: json.RawMessage(`["path"]`)}}},
		want: "tool read: schema is not a JSON object",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t, sseText(textStream("ok", "end_turn")))
			_, err := m.Converse(context.Background(), tt.req)
			var me *model.Error
			if !errors.As(err, &me) || me.Retryable {
				t.Fatalf("error got %v, want a *model.Error not retryable", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error got %q, want it to contain %q", err, tt.want)
			}
			if got := f.calls.Load(); got != 0 {
				t.Errorf("requests got %d, want 0", got)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9999", "ANTHROPIC_API_KEY": "k", "ANTHROPIC_AUTH_TOKEN": "ignored"}
	got := ConfigFromEnv(func(k string) string { return env[k] })
	if want := (Config{BaseURL: "http://127.0.0.1:9999", APIKey: "k"}); got != want {
		t.Errorf("ConfigFromEnv got %+v, want %+v", got, want)
	}

	tests := []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"key only", Config{APIKey: "k"}, ""},
		{"key and base URL", Config{APIKey: "k", BaseURL: "https://proxy.example/anthropic"}, ""},
		{"no key", Config{BaseURL: "http://127.0.0.1:9999"}, "ANTHROPIC_API_KEY"},
		{"base URL without scheme", Config{APIKey: "k", BaseURL: "127.0.0.1:9999"}, "ANTHROPIC_BASE_URL"},
		{"base URL not http", Config{APIKey: "k", BaseURL: "ftp://example.com"}, "ANTHROPIC_BASE_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := New(tt.cfg)
			switch {
			case tt.want == "" && (err != nil || m == nil):
				t.Errorf("New got %v, want a Model", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("New got error %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// The base URL's path is kept: a proxy mounted under a prefix works.
func TestBaseURLWithPath(t *testing.T) {
	t.Parallel()
	f := &fake{respond: sseText(textStream("ok", "end_turn"))}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	m, err := New(Config{BaseURL: srv.URL + "/anthropic", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{userText("hi")}}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.last(t).path, "/anthropic/v1/messages"; got != want {
		t.Errorf("path got %q, want %q", got, want)
	}
}

// Under model.WithRetry, a 529 is retried after the wait the API asked for,
// and the next attempt's answer comes back.
func TestWithRetry(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, nil)
	f.respond = func(w http.ResponseWriter, r *http.Request) {
		if f.calls.Load() == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(529)
			_, _ = io.WriteString(w, errorBody("overloaded_error", "Overloaded"))
			return
		}
		sseText(textStream("ok", "end_turn"))(w, r)
	}
	var waits []time.Duration
	retrying := model.WithRetry(m, model.RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}})
	resp, err := retrying.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{userText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Message.Text(), "ok"; got != want {
		t.Errorf("text got %q, want %q", got, want)
	}
	if want := []time.Duration{2 * time.Second}; !reflect.DeepEqual(waits, want) {
		t.Errorf("waits got %v, want %v", waits, want)
	}
	if got := f.calls.Load(); got != 2 {
		t.Errorf("requests got %d, want 2", got)
	}
}

// A screenshot goes in its tool_result as the Messages API documents it:
// the content an array of a text block and {type: "image", source: {type:
// "base64", media_type: "image/png", data}}.
func TestConverseSendsImages(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, sseText(textStream("A login page.", "end_turn")))
	pic := modeltest.PNG(64, 40)
	_, err := m.Converse(context.Background(), model.Request{
		Model: "claude-sonnet-4-5",
		Messages: []model.Message{
			userText("What does the page show?"),
			{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "toolu_01", Name: "screenshot", Arguments: json.RawMessage(`{}`)}}}},
			{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "toolu_01", Name: "screenshot", Output: "64×40 screenshot of http://app.test/",
				Image: &model.Image{MediaType: model.ImagePNG, Data: pic, Width: 64, Height: 40, Bytes: len(pic)}}}}},
		},
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(f.last(t).body, &body); err != nil || len(body.Messages) != 3 {
		t.Fatalf("sent %s: want 3 messages", f.last(t).body)
	}
	var got, want any
	json.Unmarshal(body.Messages[2], &got)
	json.Unmarshal([]byte(`{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "is_error": false, "content": [
		{"type": "text", "text": "64×40 screenshot of http://app.test/"},
		{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "`+base64.StdEncoding.EncodeToString(pic)+`"}}
	]}]}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tool result message got %s, want %v", body.Messages[2], want)
	}
}

// The fake refuses the image blocks the API refuses, so that the test
// above would fail on a malformed one.
func TestFakeRefusesBadImageBlocks(t *testing.T) {
	t.Parallel()
	pic := base64.StdEncoding.EncodeToString(modeltest.PNG(2, 2))
	tests := []struct {
		content string
		ok      bool
	}{
		{`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + pic + `"}}]`, true},
		{`[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"` + pic + `"}}]`, false},
		{`[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"` + pic + `"}}]`, false},
		{`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}]`, false},
		{`[{"type":"image"}]`, false},
		{`[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pic + `"}}]`, false},
	}
	for i, tt := range tests {
		body := `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + tt.content + `}]}]}`
		if got := refusal([]byte(body)); (got == "") != tt.ok {
			t.Errorf("content %d: refusal = %q, want ok = %v", i, got, tt.ok)
		}
	}
}

// An image the API would refuse fails before it is sent.
func TestBadImages(t *testing.T) {
	t.Parallel()
	for _, img := range []model.Image{{MediaType: model.ImagePNG, Ref: "k.png"}, {MediaType: "image/bmp", Data: []byte("BM")}} {
		f, m := newFake(t, sseText(textStream("ok", "end_turn")))
		_, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{userText("hi"),
			{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "t1", Name: "screenshot"}}}},
			{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "t1", Image: &img}}}}}})
		var me *model.Error
		if !errors.As(err, &me) || me.Retryable || !strings.Contains(err.Error(), "tool result t1: image") {
			t.Errorf("image %+v: error got %v, want a *model.Error not retryable about tool result t1's image", img, err)
		}
		if got := f.calls.Load(); got != 0 {
			t.Errorf("requests got %d, want 0", got)
		}
	}
}
