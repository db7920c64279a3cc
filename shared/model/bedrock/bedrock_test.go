package bedrock_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/bedrock"
	"github.com/agentsfleet/agentsfleet/shared/model/modeltest"
)

// An inference-profile ARN: the SDK must escape its colons and slash into
// one path segment.
const profileARN = "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0"

func user(text string) model.Message {
	return model.Message{Role: model.User, Content: []model.Part{{Text: text}}}
}

func TestConverseStreamsText(t *testing.T) {
	t.Parallel()
	chunks := []string{"Hel", "lo, ", "wor", "ld!"}
	f, m := newFake(t, reply{frames: textAnswer(chunks...)})

	var deltas []string
	resp, err := m.Converse(context.Background(), model.Request{
		Model:    profileARN,
		Messages: []model.Message{user("Say hello.")},
		OnText:   func(d string) { deltas = append(deltas, d) },
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	if !reflect.DeepEqual(deltas, chunks) {
		t.Errorf("OnText got %q, want %q", deltas, chunks)
	}
	want := model.Response{
		Message: model.Message{Role: model.Assistant, Content: []model.Part{{Text: "Hello, world!"}}},
		Stop:    model.StopEndTurn,
		Usage:   model.Usage{InputTokens: 10, OutputTokens: 5},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("Response = %+v, want %+v", resp, want)
	}

	got := f.only()
	if got.modelID != profileARN {
		t.Errorf("model id in the path = %q, want %q", got.modelID, profileARN)
	}
	equalJSON(t, got.body, []byte(`{
		"inferenceConfig": {"maxTokens": 4096},
		"messages": [{"role": "user", "content": [{"text": "Say hello."}]}]
	}`))
}

func TestConverseToolCalls(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, reply{frames: []frame{
		messageStart(),
		textDelta(0, "Reading "), textDelta(0, "both."), blockStop(0),
		toolStart(1, "tooluse_a1", "read"),
		toolDelta(1, `{"pa`), toolDelta(1, `th": "a.t`), toolDelta(1, `xt", "limit": 20}`),
		blockStop(1),
		toolStart(2, "tooluse_b2", "grep"),
		toolDelta(2, `{"pattern":`), toolDelta(2, ` "TODO", "path": "src/"`), toolDelta(2, `}`),
		blockStop(2),
		toolStart(3, "tooluse_c3", "list_agents"), // no input at all
		blockStop(3),
		messageStop("tool_use"),
		metadata(120, 48),
	}})

	var text strings.Builder
	resp, err := m.Converse(context.Background(), model.Request{
		Model:    "anthropic.claude-3-5-haiku-20241022-v1:0",
		Messages: []model.Message{user("Read a.txt, grep TODO.")},
		OnText:   func(d string) { text.WriteString(d) },
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	if got, want := text.String(), "Reading both."; got != want {
		t.Errorf("OnText got %q, want %q", got, want)
	}
	if got, want := resp.Message.Text(), "Reading both."; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
	wantCalls := []model.ToolCall{
		{ID: "tooluse_a1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt","limit":20}`)},
		{ID: "tooluse_b2", Name: "grep", Arguments: json.RawMessage(`{"pattern":"TODO","path":"src/"}`)},
		{ID: "tooluse_c3", Name: "list_agents", Arguments: json.RawMessage(`{}`)},
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != len(wantCalls) {
		t.Fatalf("got %d tool calls, want %d: %+v", len(calls), len(wantCalls), calls)
	}
	for i, c := range calls {
		w := wantCalls[i]
		if c.ID != w.ID || c.Name != w.Name || string(c.Arguments) != string(w.Arguments) {
			t.Errorf("call %d = {%s %s %s}, want {%s %s %s}", i, c.ID, c.Name, c.Arguments, w.ID, w.Name, w.Arguments)
		}
	}
	if len(resp.Message.Content) != 4 || resp.Message.Content[0].Text == "" {
		t.Errorf("content = %+v, want the text, then the three calls", resp.Message.Content)
	}
	if resp.Stop != model.StopToolUse {
		t.Errorf("Stop = %q, want %q", resp.Stop, model.StopToolUse)
	}
	if want := (model.Usage{InputTokens: 120, OutputTokens: 48}); resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}
	f.only()
}

func TestConverseSendsToolCallsAndResults(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, reply{frames: textAnswer("Both read.")})
	readTool := model.Tool{
		Name:        "read",
		Description: "Read a file.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}}}`),
	}
	_, err := m.Converse(context.Background(), model.Request{
		Model: "us.anthropic.claude-sonnet-4-20250514-v1:0",
		Messages: []model.Message{
			user("What is in a.txt and b.txt?"),
			{Role: model.Assistant, Content: []model.Part{
				{Text: "I will read both."},
				{ToolCall: &model.ToolCall{ID: "tooluse_a1", Name: "read", Arguments: json.RawMessage(`{"path": "a.txt", "limit": 20}`)}},
				{ToolCall: &model.ToolCall{ID: "tooluse_b2", Name: "read"}}, // no arguments: {}
			}},
			{Role: model.User, Content: []model.Part{
				{ToolResult: &model.ToolResult{CallID: "tooluse_a1", Name: "read", Output: "hello from a"}},
				{ToolResult: &model.ToolResult{CallID: "tooluse_b2", Name: "read", Output: "path is required", IsError: true}},
			}},
			{Role: model.Assistant, Content: []model.Part{
				{Text: ""}, // left out: Bedrock refuses blank text
				{ToolCall: &model.ToolCall{ID: "tooluse_c3", Name: "read", Arguments: json.RawMessage(`{"path":"b.txt"}`)}},
			}},
			{Role: model.User, Content: []model.Part{
				{ToolResult: &model.ToolResult{CallID: "tooluse_c3", Name: "read", Output: "hello from b"}},
			}},
		},
		Tools: []model.Tool{readTool},
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	equalJSON(t, f.only().body, readFile(t, "second_turn.json"))
}

// Blank text would make Bedrock refuse this call and every later one of
// the conversation.
func TestConverseFillsBlanks(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, reply{frames: textAnswer("Done.")})
	_, err := m.Converse(context.Background(), model.Request{
		Model: "m",
		Messages: []model.Message{
			user("Run it."),
			{Role: model.Assistant, Content: []model.Part{{Text: "\n "}, {ToolCall: &model.ToolCall{ID: "t1", Name: "bash", Arguments: json.RawMessage(`{"command":"true"}`)}}}},
			{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "t1", Name: "bash", Output: ""}}}},
			{Role: model.Assistant, Content: []model.Part{{Text: " "}}},
			user("And?"),
		},
		// Bedrock wants the tools declared while the conversation holds
		// tool calls.
		Tools: []model.Tool{{Name: "bash", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}},
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	equalJSON(t, f.only().body, []byte(`{
		"inferenceConfig": {"maxTokens": 4096},
		"messages": [
			{"role": "user", "content": [{"text": "Run it."}]},
			{"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "bash", "input": {"command": "true"}}}]},
			{"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "(no output)"}]}}]},
			{"role": "assistant", "content": [{"text": "(empty)"}]},
			{"role": "user", "content": [{"text": "And?"}]}
		],
		"toolConfig": {"tools": [{"toolSpec": {"name": "bash", "inputSchema": {"json": {"type": "object", "properties": {"command": {"type": "string"}}}}}}]}
	}`))
}

// A tool result's status goes to the models Bedrock takes it from (Claude 3
// and 4, Nova, by id, profile id or ARN); the others refuse it, and get a
// failed result marked in its text instead.
func TestToolResultStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model  string
		status bool
	}{
		{"anthropic.claude-3-haiku-20240307-v1:0", true},
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", true},
		{"global.anthropic.claude-haiku-4-5-20251001-v1:0", true},
		{profileARN, true},
		{"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-sonnet-20240620-v1:0", true},
		{"amazon.nova-pro-v1:0", true},
		{"us.amazon.nova-lite-v1:0", true},
		{"meta.llama3-1-70b-instruct-v1:0", false},
		{"us.meta.llama4-maverick-17b-instruct-v1:0", false},
		{"mistral.mistral-large-2407-v1:0", false},
		{"cohere.command-r-plus-v1:0", false},
		{"us.writer.palmyra-x5-v1:0", false},
		{"openai.gpt-oss-120b-1:0", false},
		{"arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/a1b2c3d4e5f6", false}, // says nothing of its model
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t, reply{frames: textAnswer("Read it.")})
			_, err := m.Converse(context.Background(), model.Request{
				Model: tt.model,
				Messages: []model.Message{
					user("Read a.txt and b.txt."),
					{Role: model.Assistant, Content: []model.Part{
						{ToolCall: &model.ToolCall{ID: "tooluse_a1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)}},
						{ToolCall: &model.ToolCall{ID: "tooluse_b2", Name: "read", Arguments: json.RawMessage(`{"path":"b.txt"}`)}},
					}},
					{Role: model.User, Content: []model.Part{
						{ToolResult: &model.ToolResult{CallID: "tooluse_a1", Name: "read", Output: "hello"}},
						{ToolResult: &model.ToolResult{CallID: "tooluse_b2", Name: "read", Output: "no such file", IsError: true}},
					}},
				},
				Tools: []model.Tool{{Name: "read", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
			})
			if err != nil {
				t.Fatalf("Converse: %v", err)
			}
			var body struct {
				Messages []struct {
					Content []struct {
						ToolResult *struct {
							Status  string `json:"status"`
							Content []struct {
								Text string `json:"text"`
							} `json:"content"`
						} `json:"toolResult"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(f.only().body, &body); err != nil {
				t.Fatal(err)
			}
			ok, failed := body.Messages[2].Content[0].ToolResult, body.Messages[2].Content[1].ToolResult
			wantOK, wantFailed, wantText := "", "", "Error: no such file"
			if tt.status {
				wantOK, wantFailed, wantText = "success", "error", "no such file"
			}
			if ok.Status != wantOK || failed.Status != wantFailed || failed.Content[0].Text != wantText || ok.Content[0].Text != "hello" {
				t.Errorf("results = %+v and %+v, want status %q and %q, the failed one's text %q", ok, failed, wantOK, wantFailed, wantText)
			}
		})
	}
}

func TestConverseSendsSystemAndTools(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, reply{frames: textAnswer("Deploying.")})
	_, err := m.Converse(context.Background(), model.Request{
		Model:     "amazon.nova-pro-v1:0",
		System:    "You are the deploy fleet.\nBe brief.",
		Messages:  []model.Message{user("Deploy it.")},
		MaxTokens: 1000,
		Tools: []model.Tool{
			{
				Name:        "bash",
				Description: "Run a shell command in the sandbox.",
				Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"The command."},` +
					`"timeout_seconds":{"type":"number","minimum":1,"maximum":600.5,"default":120}},"required":["command"],"additionalProperties":false}`),
			},
			{
				Name:        "update_plan",
				Description: "Replace the plan.",
				Schema: json.RawMessage(`{"type":"object","properties":{"explanation":{"type":"string"},"plan":{"type":"array","items":{"type":"object",` +
					`"properties":{"step":{"type":"string"},"status":{"enum":["pending","in_progress","completed"]}},"required":["step","status"]}}},"required":["plan"]}`),
			},
			{Name: "list_agents", Schema: json.RawMessage(`{"type":"object","properties":{}}`)},
			{Name: "noop", Description: "A tool whose Schema was left empty."},
		},
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	equalJSON(t, f.only().body, readFile(t, "system_tools.json"))
}

func TestConverseStopReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason string
		want   model.StopReason
	}{
		{"end_turn", model.StopEndTurn},
		{"stop_sequence", model.StopEndTurn},
		{"tool_use", model.StopToolUse},
		{"max_tokens", model.StopMaxTokens},
		{"guardrail_intervened", model.StopOther},
		{"content_filtered", model.StopOther},
		{"model_context_window_exceeded", model.StopOther},
		{"a_reason_from_the_future", model.StopOther},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			t.Parallel()
			_, m := newFake(t, reply{frames: []frame{messageStart(), textDelta(0, "x"), blockStop(0), messageStop(tt.reason), metadata(1, 1)}})
			resp, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi")}})
			if err != nil {
				t.Fatalf("Converse: %v", err)
			}
			if resp.Stop != tt.want {
				t.Errorf("stopReason %s: Stop = %q, want %q", tt.reason, resp.Stop, tt.want)
			}
		})
	}
}

func TestConverseErrors(t *testing.T) {
	t.Parallel()
	text := []frame{messageStart(), textDelta(0, "Partial ")}
	partial := func(exc frame) []frame { return []frame{messageStart(), textDelta(0, "Partial "), exc} }
	tests := []struct {
		name       string
		reply      reply
		status     int
		retryable  bool
		retryAfter time.Duration
		message    string // in Error()
	}{
		{
			name: "429 throttling with Retry-After",
			reply: reply{status: 429, errType: "ThrottlingException", header: map[string]string{"Retry-After": "7"},
				body: `{"message":"Too many requests, please wait before trying again."}`},
			status: 429, retryable: true, retryAfter: 7 * time.Second,
			message: "bedrock model: 429: Too many requests, please wait before trying again.",
		},
		{
			name: "429 throttling with retry-after-ms",
			reply: reply{status: 429, errType: "ThrottlingException", header: map[string]string{"retry-after-ms": "1500"},
				body: `{"message":"Too many tokens, please wait before trying again."}`},
			status: 429, retryable: true, retryAfter: 1500 * time.Millisecond,
			message: "Too many tokens",
		},
		{
			name:   "429 model not ready",
			reply:  reply{status: 429, errType: "ModelNotReadyException", body: `{"message":"Model is not ready for inference. Wait and try your request again."}`},
			status: 429, retryable: true, message: "Model is not ready for inference",
		},
		{
			name:   "408 model timeout",
			reply:  reply{status: 408, errType: "ModelTimeoutException", body: `{"message":"Model has timed out in processing the request."}`},
			status: 408, retryable: true, message: "Model has timed out",
		},
		{
			name:   "500 internal server error",
			reply:  reply{status: 500, errType: "InternalServerException", body: `{"message":"The server encountered an error processing your request."}`},
			status: 500, retryable: true, message: "bedrock model: 500: The server encountered an error processing your request.",
		},
		{
			name:   "503 service unavailable",
			reply:  reply{status: 503, errType: "ServiceUnavailableException", body: `{"message":"Bedrock is unable to process your request."}`},
			status: 503, retryable: true, message: "Bedrock is unable to process your request.",
		},
		{
			name:   "502 from a proxy, not JSON",
			reply:  reply{status: 502, body: "<html><body>Bad Gateway</body></html>"},
			status: 502, retryable: true, message: "bedrock model: 502: Bad Gateway",
		},
		{
			name:   "500 with an empty body",
			reply:  reply{status: 500},
			status: 500, retryable: true, message: "bedrock model: 500: Internal Server Error",
		},
		{
			name:   "424 model error from a 503",
			reply:  reply{status: 424, errType: "ModelErrorException", body: `{"message":"The model is overloaded.","originalStatusCode":503}`},
			status: 424, retryable: true, message: "The model is overloaded.",
		},
		{
			name: "400 validation",
			reply: reply{status: 400, errType: "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
				body: `{"message":"messages.1.content.0.toolResult.toolUseId: tool_use ids were found without tool_result blocks"}`},
			status: 400, message: "bedrock model: 400: messages.1.content.0.toolResult.toolUseId: tool_use ids were found without tool_result blocks",
		},
		{
			name: "403 access denied",
			reply: reply{status: 403, errType: "AccessDeniedException",
				body: `{"message":"You don't have access to the model with the specified model ID."}`},
			status: 403, message: "You don't have access to the model with the specified model ID.",
		},
		{
			name:   "404 resource not found",
			reply:  reply{status: 404, errType: "ResourceNotFoundException", body: `{"message":"Model not found."}`},
			status: 404, message: "bedrock model: 404: Model not found.",
		},
		{
			name:   "400 service quota, type in the body",
			reply:  reply{status: 400, body: `{"__type":"ServiceQuotaExceededException","message":"Your request exceeds the service quota."}`},
			status: 400, message: "Your request exceeds the service quota.",
		},
		{
			name:      "throttlingException in the stream",
			reply:     reply{frames: partial(exception("throttlingException", `{"message":"Too many tokens, please wait before trying again."}`))},
			retryable: true, message: "bedrock model: Too many tokens, please wait before trying again.",
		},
		{
			name:      "internalServerException in the stream",
			reply:     reply{frames: partial(exception("internalServerException", `{"message":"The system encountered an unexpected error during processing."}`))},
			retryable: true, message: "unexpected error during processing",
		},
		{
			name:      "serviceUnavailableException in the stream",
			reply:     reply{frames: partial(exception("serviceUnavailableException", `{"message":"Service unavailable."}`))},
			retryable: true, message: "Service unavailable.",
		},
		{
			name: "modelStreamErrorException in the stream",
			reply: reply{frames: partial(exception("modelStreamErrorException",
				`{"message":"An error occurred while streaming the response. Retry your request.","originalStatusCode":500,"originalMessage":"boom"}`))},
			retryable: true, message: "An error occurred while streaming the response.",
		},
		{
			name:    "validationException in the stream",
			reply:   reply{frames: partial(exception("validationException", `{"message":"Input is too long for requested model."}`))},
			message: "bedrock model: Input is too long for requested model.",
		},
		{
			name:      "stream ends before messageStop",
			reply:     reply{frames: text},
			retryable: true, message: "ended before messageStop",
		},
		{
			name:      "stream cut in the middle of a frame",
			reply:     reply{frames: text, tail: cut(textDelta(0, "more text"), 20)},
			retryable: true, message: "ended before messageStop",
		},
		{
			name: "tool arguments that are not JSON",
			reply: reply{frames: []frame{messageStart(), toolStart(0, "tooluse_x", "read"), toolDelta(0, `{"path": "a.t`),
				blockStop(0), messageStop("tool_use"), metadata(1, 1)}},
			retryable: true, message: "tool call tooluse_x (read): arguments are not a JSON object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t, tt.reply)
			_, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi")}})
			me := modelError(t, err)
			if me.Provider != bedrock.Provider || me.Status != tt.status || me.Retryable != tt.retryable || me.RetryAfter != tt.retryAfter {
				t.Errorf("got {Provider %q Status %d Retryable %v RetryAfter %v}, want {%q %d %v %v}",
					me.Provider, me.Status, me.Retryable, me.RetryAfter, bedrock.Provider, tt.status, tt.retryable, tt.retryAfter)
			}
			if model.IsRetryable(err) != tt.retryable {
				t.Errorf("IsRetryable = %v, want %v", model.IsRetryable(err), tt.retryable)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("Error() = %q, want it to contain %q", err.Error(), tt.message)
			}
			f.only()
		})
	}
}

// A stream that takes a while must survive smithy-go closing the request
// body as soon as the headers arrive (see bodyGuard): without the guard,
// some of these streams die with "use of closed network connection".
func TestConverseLongStreams(t *testing.T) {
	t.Parallel()
	const calls = 40
	replies := make([]reply, calls)
	for i := range replies {
		replies[i] = reply{frames: textAnswer("one ", "two ", "three"), gap: 2 * time.Millisecond}
	}
	_, m := newFake(t, replies...)
	for i := range calls {
		resp, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("count")}})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := resp.Message.Text(); got != "one two three" {
			t.Fatalf("call %d: text = %q, want %q", i, got, "one two three")
		}
	}
}

func TestConverseConnectionRefused(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	url := f.srv.URL
	f.srv.Close()
	m := bedrock.New(testConfig(), bedrock.WithBaseEndpoint(url))
	_, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{user("hi")}})
	me := modelError(t, err)
	if !me.Retryable || me.Status != 0 {
		t.Errorf("got {Status %d Retryable %v}, want {0 true}: %v", me.Status, me.Retryable, err)
	}
}

func TestConverseContextDone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply reply
		ctx   func(t *testing.T) (context.Context, func()) // the func, when set, is the OnText
		want  error
		sent  int // requests the fake gets
	}{
		{
			name:  "cancelled mid-stream",
			reply: reply{frames: []frame{messageStart(), textDelta(0, "Hel")}, hold: true},
			ctx: func(t *testing.T) (context.Context, func()) {
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel)
				return ctx, cancel
			},
			want: context.Canceled, sent: 1,
		},
		{
			name:  "cancelled before the call",
			reply: reply{frames: textAnswer("never sent")},
			ctx: func(t *testing.T) (context.Context, func()) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, nil
			},
			want: context.Canceled, sent: 0,
		},
		{
			name:  "deadline before the response",
			reply: reply{stall: true},
			ctx: func(t *testing.T) (context.Context, func()) {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				t.Cleanup(cancel)
				return ctx, nil
			},
			want: context.DeadlineExceeded, sent: 1,
		},
		{
			name:  "deadline mid-stream",
			reply: reply{frames: []frame{messageStart()}, hold: true},
			ctx: func(t *testing.T) (context.Context, func()) {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				t.Cleanup(cancel)
				return ctx, nil
			},
			want: context.DeadlineExceeded, sent: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t, tt.reply)
			ctx, onText := tt.ctx(t)
			req := model.Request{Model: "m", Messages: []model.Message{user("hi")}}
			if onText != nil {
				req.OnText = func(string) { onText() }
			}
			start := time.Now()
			_, err := m.Converse(ctx, req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if model.IsRetryable(err) {
				t.Errorf("IsRetryable(%v) = true, want false", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Converse took %v to notice ctx", d)
			}
			if got := len(f.requests()); got != tt.sent {
				t.Errorf("fake got %d requests, want %d", got, tt.sent)
			}
		})
	}
}

func TestConverseRefusesBadRequests(t *testing.T) {
	t.Parallel()
	hi := []model.Message{user("hi")}
	call := func(args string) []model.Message {
		return []model.Message{user("hi"), {Role: model.Assistant, Content: []model.Part{
			{ToolCall: &model.ToolCall{ID: "t1", Name: "read", Arguments: json.RawMessage(args)}},
		}}}
	}
	tests := []struct {
		name    string
		req     model.Request
		message string
	}{
		{"no model id", model.Request{Messages: hi}, "no model id"},
		{"unknown role", model.Request{Model: "m", Messages: []model.Message{{Role: "tool", Content: []model.Part{{Text: "x"}}}}}, `message 0: unknown role "tool"`},
		{"arguments not JSON", model.Request{Model: "m", Messages: call(`{"path":`)}, "message 1: tool call t1: arguments: not valid JSON"},
		{"arguments an array", model.Request{Model: "m", Messages: call(`["a.txt"]`)}, "tool call t1: arguments: not a JSON object"},
		{"arguments two values", model.Request{Model: "m", Messages: call(`{} {}`)}, "tool call t1: arguments: not one JSON value"},
		{"schema not an object", model.Request{Model: "m", Messages: hi, Tools: []model.Tool{{Name: "read", Schema: json.RawMessage(`"object"`)}}}, "tool read: schema: not a JSON object"},
		{"schema with an empty key", model.Request{Model: "m", Messages: hi, Tools: []model.Tool{{Name: "read", Schema: json.RawMessage(`{"type":"object","properties":{"":{}}}`)}}}, "tool read: schema: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t)
			_, err := m.Converse(context.Background(), tt.req)
			me := modelError(t, err)
			if me.Retryable {
				t.Errorf("Retryable = true, want false")
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("Error() = %q, want it to contain %q", err.Error(), tt.message)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("fake got %d requests, want none", n)
			}
		})
	}
}

// The SDK must not retry on its own, whatever the aws.Config asks; the
// runner's model.WithRetry does, waiting what Bedrock said.
func TestRetriesAreTheCallers(t *testing.T) {
	t.Parallel()
	throttled := func(header map[string]string) reply {
		return reply{status: 429, errType: "ThrottlingException", header: header, body: `{"message":"Too many requests, please wait before trying again."}`}
	}
	f := startFake(t,
		throttled(map[string]string{"Retry-After": "2"}),
		throttled(map[string]string{"retry-after-ms": "250"}),
		reply{frames: textAnswer("Done.")},
	)
	cfg := testConfig()
	cfg.RetryMaxAttempts = 5
	cfg.RetryMode = aws.RetryModeStandard
	m := bedrock.New(cfg, bedrock.WithBaseEndpoint(f.srv.URL))
	req := model.Request{Model: "m", Messages: []model.Message{user("hi")}}

	_, err := m.Converse(context.Background(), req)
	if me := modelError(t, err); !me.Retryable || me.RetryAfter != 2*time.Second {
		t.Fatalf("first call: got {Retryable %v RetryAfter %v}, want {true 2s}: %v", me.Retryable, me.RetryAfter, err)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("the SDK sent %d requests for one call, want 1", n)
	}

	var waits []time.Duration
	retrying := model.WithRetry(m, model.RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}})
	resp, err := retrying.Converse(context.Background(), req)
	if err != nil {
		t.Fatalf("WithRetry: %v", err)
	}
	if resp.Message.Text() != "Done." {
		t.Errorf("text = %q, want %q", resp.Message.Text(), "Done.")
	}
	if want := []time.Duration{250 * time.Millisecond}; !reflect.DeepEqual(waits, want) {
		t.Errorf("WithRetry waited %v, want %v", waits, want)
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("fake got %d requests, want 3", n)
	}
}

// AWS_ENDPOINT_URL_BEDROCK_RUNTIME needs no code: config.LoadDefaultConfig
// reads it and the client honours it. Not parallel: it sets the
// environment.
func TestEndpointFromEnvironment(t *testing.T) {
	isolate := func(t *testing.T) {
		dir := t.TempDir()
		for k, v := range map[string]string{
			"AWS_REGION":                          "us-west-2",
			"AWS_ACCESS_KEY_ID":                   "AKIDTEST",
			"AWS_SECRET_ACCESS_KEY":               "test-secret",
			"AWS_SESSION_TOKEN":                   "",
			"AWS_PROFILE":                         "",
			"AWS_CONFIG_FILE":                     filepath.Join(dir, "config"),
			"AWS_SHARED_CREDENTIALS_FILE":         filepath.Join(dir, "credentials"),
			"AWS_ENDPOINT_URL":                    "",
			"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "",
			"AWS_BEARER_TOKEN_BEDROCK":            "",
			"AWS_CA_BUNDLE":                       "",
		} {
			t.Setenv(k, v)
		}
	}
	load := func(t *testing.T, opts ...func(*config.LoadOptions) error) aws.Config {
		cfg, err := config.LoadDefaultConfig(context.Background(), opts...)
		if err != nil {
			t.Fatalf("LoadDefaultConfig: %v", err)
		}
		return cfg
	}
	req := model.Request{Model: "m", Messages: []model.Message{user("hi")}}

	t.Run("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", func(t *testing.T) {
		isolate(t)
		f := startFake(t, reply{frames: textAnswer("Hi.")})
		t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", f.srv.URL)
		if _, err := bedrock.New(load(t)).Converse(context.Background(), req); err != nil {
			t.Fatalf("Converse: %v", err)
		}
		f.only()
	})
	t.Run("WithBaseEndpoint wins", func(t *testing.T) {
		isolate(t)
		env := startFake(t)
		f := startFake(t, reply{frames: textAnswer("Hi.")})
		t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", env.srv.URL)
		if _, err := bedrock.New(load(t), bedrock.WithBaseEndpoint(f.srv.URL)).Converse(context.Background(), req); err != nil {
			t.Fatalf("Converse: %v", err)
		}
		f.only()
		if n := len(env.requests()); n != 0 {
			t.Errorf("the environment's endpoint got %d requests, want 0", n)
		}
	})
	t.Run("AWS_BEARER_TOKEN_BEDROCK", func(t *testing.T) {
		isolate(t)
		// The SDK sends a bearer token over HTTPS only.
		f := startTLSFake(t, reply{frames: textAnswer("Hi.")})
		t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", f.srv.URL)
		t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-test")
		cfg := load(t, config.WithHTTPClient(f.srv.Client()))
		if _, err := bedrock.New(cfg).Converse(context.Background(), req); err != nil {
			t.Fatalf("Converse: %v", err)
		}
		if got, want := f.only().header.Get("Authorization"), "Bearer bedrock-api-key-test"; got != want {
			t.Errorf("Authorization = %q, want %q", got, want)
		}
	})
}

func modelError(t *testing.T, err error) *model.Error {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("err = %v (%T), want a *model.Error", err, err)
	}
	return me
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// equalJSON compares two JSON texts as values: key order and spacing do
// not count, everything else does.
func equalJSON(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("sent body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		gi, _ := json.MarshalIndent(g, "", "  ")
		wi, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("sent body:\n%s\nwant:\n%s", gi, wi)
	}
}

// A screenshot goes in its tool result as Converse documents it: after the
// text, {"image": {"format": "png", "source": {"bytes": <base64>}}}.
func TestConverseSendsImages(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, reply{frames: textAnswer("A login page.")})
	pic := modeltest.PNG(64, 40)
	_, err := m.Converse(context.Background(), model.Request{
		Model: "us.anthropic.claude-sonnet-4-20250514-v1:0",
		Messages: []model.Message{
			user("What does the page show?"),
			{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "t1", Name: "screenshot", Arguments: json.RawMessage(`{}`)}}}},
			{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "t1", Name: "screenshot", Output: "64×40 screenshot of http://app.test/",
				Image: &model.Image{MediaType: model.ImagePNG, Data: pic, Width: 64, Height: 40, Ref: "checkpoints/r/img.png", Bytes: len(pic)}}}}},
		},
		Tools: []model.Tool{{Name: "screenshot"}},
	})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	equalJSON(t, f.only().body, []byte(`{
		"inferenceConfig": {"maxTokens": 4096},
		"messages": [
			{"role": "user", "content": [{"text": "What does the page show?"}]},
			{"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "screenshot", "input": {}}}]},
			{"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "status": "success", "content": [
				{"text": "64×40 screenshot of http://app.test/"},
				{"image": {"format": "png", "source": {"bytes": "`+base64.StdEncoding.EncodeToString(pic)+`"}}}
			]}}]}
		],
		"toolConfig": {"tools": [{"toolSpec": {"name": "screenshot", "inputSchema": {"json": {"type": "object"}}}}]}
	}`))
}

// An image Bedrock would refuse on this call and every later one is
// refused before it is sent, saying why.
func TestConverseRefusesBadImages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		img     model.Image
		message string
	}{
		{"no data", model.Image{MediaType: model.ImagePNG, Ref: "checkpoints/r/a.png"}, "image checkpoints/r/a.png has no data"},
		{"a bitmap", model.Image{MediaType: "image/bmp", Data: []byte("BM")}, `image has media type "image/bmp"`},
		{"over 3.75 MB", model.Image{MediaType: model.ImagePNG, Data: make([]byte, 3_750_001)}, "image is 3750001 bytes; a model takes at most 3750000"},
		{"over 8000 pixels high", model.Image{MediaType: model.ImagePNG, Data: []byte("\x89PNG"), Width: 1280, Height: 8001}, "image is 1280×8001 pixels; a model takes at most 8000 a side"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t)
			_, err := m.Converse(context.Background(), model.Request{Model: "m", Messages: []model.Message{
				user("Look."),
				{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "t1", Name: "screenshot"}}}},
				{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "t1", Name: "screenshot", Image: &tt.img}}}},
			}, Tools: []model.Tool{{Name: "screenshot"}}})
			modelError(t, err)
			if want := "message 2: tool result t1: " + tt.message; !strings.Contains(err.Error(), want) {
				t.Errorf("Error() = %q, want it to contain %q", err.Error(), want)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("fake got %d requests, want none", n)
			}
		})
	}
}

// The fake refuses the image blocks Bedrock refuses, so that the tests
// above would fail on a malformed one.
func TestFakeRefusesBadImageBlocks(t *testing.T) {
	t.Parallel()
	pic := base64.StdEncoding.EncodeToString(modeltest.PNG(2, 2))
	tests := []struct {
		block string
		ok    bool
	}{
		{`{"image":{"format":"png","source":{"bytes":"` + pic + `"}}}`, true},
		{`{"image":{"format":"image/png","source":{"bytes":"` + pic + `"}}}`, false},
		{`{"image":{"format":"jpeg","source":{"bytes":"` + pic + `"}}}`, false},
		{`{"image":{"format":"png","source":{"bytes":"not base64!"}}}`, false},
		{`{"image":{"format":"png","source":{"s3Location":{"uri":"s3://b/k"}}}}`, false},
		{`{"image":{"format":"png","source":{"bytes":"` + base64.StdEncoding.EncodeToString(make([]byte, 3_750_001)) + `"}}}`, false},
		{`{"text":"a","image":{"format":"png","source":{"bytes":"` + pic + `"}}}`, false},
	}
	for i, tt := range tests {
		body := `{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[` + tt.block + `]}}]}],"toolConfig":{"tools":[]}}`
		if got := refusal("m", []byte(body)); (got == "") != tt.ok {
			t.Errorf("block %d: refusal = %q, want ok = %v", i, got, tt.ok)
		}
	}
}
