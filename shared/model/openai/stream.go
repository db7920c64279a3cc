package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// errNoAnswer is a stream that ended without a single choice.
var errNoAnswer = errors.New("the stream ended without an answer")

// accumulator assembles streamed chunks into one answer. Servers differ in
// what they send, and it copes with each: usage in a last chunk with no
// choices, in the chunk that finishes, on every chunk, or not at all; a
// call's id and name once or on every delta; calls without an index (all
// at 0, told apart by their ids); arguments in pieces or whole.
type accumulator struct {
	text    strings.Builder
	refusal bool
	calls   []*call
	byIndex map[int64]*call
	finish  string
	choices bool
	usage   model.Usage
}

type call struct {
	id, name string
	args     strings.Builder
}

func (a *accumulator) add(chunk sdk.ChatCompletionChunk, onText func(string)) {
	if chunk.JSON.Usage.Valid() {
		a.usage = model.Usage{
			InputTokens:  chunk.Usage.PromptTokens,
			OutputTokens: chunk.Usage.CompletionTokens,
		}
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // only one answer is asked for
		}
		a.choices = true
		d := ch.Delta
		if d.Content != "" {
			a.text.WriteString(d.Content)
			if onText != nil {
				onText(d.Content)
			}
		}
		if d.Refusal != "" {
			a.refusal = true
			a.text.WriteString(d.Refusal)
			if onText != nil {
				onText(d.Refusal)
			}
		}
		for _, tc := range d.ToolCalls {
			a.addCall(tc)
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
}

func (a *accumulator) addCall(tc sdk.ChatCompletionChunkChoiceDeltaToolCall) {
	if a.byIndex == nil {
		a.byIndex = map[int64]*call{}
	}
	c := a.byIndex[tc.Index]
	if c == nil || (tc.ID != "" && c.id != "" && tc.ID != c.id) {
		c = &call{}
		a.calls = append(a.calls, c)
		a.byIndex[tc.Index] = c
	}
	if tc.ID != "" {
		c.id = tc.ID
	}
	if c.name == "" {
		c.name = tc.Function.Name
	}
	args := tc.Function.Arguments
	if raw := tc.Function.JSON.Arguments.Raw(); !tc.Function.JSON.Arguments.Valid() && strings.HasPrefix(raw, "{") {
		args = raw // a server that sent the arguments as an object, not a string
	}
	c.args.WriteString(args)
}

// response is the assembled answer, or errNoAnswer.
func (a *accumulator) response() (model.Response, error) {
	if !a.choices {
		return model.Response{}, errNoAnswer
	}
	msg := model.Message{Role: model.Assistant}
	if a.text.Len() > 0 {
		msg.Content = append(msg.Content, model.Part{Text: a.text.String()})
	}
	for i, c := range a.calls {
		id := c.id
		if id == "" {
			id = "call_" + strconv.Itoa(i) // some servers leave it out; the result must echo one
		}
		msg.Content = append(msg.Content, model.Part{ToolCall: &model.ToolCall{
			ID:        id,
			Name:      c.name,
			Arguments: arguments(c.args.String()),
		}})
	}
	return model.Response{Message: msg, Stop: a.stop(), Usage: a.usage}, nil
}

// stop maps finish_reason. Many servers, and OpenAI itself at times, finish
// a turn that asks for tool calls with "stop" (or with nothing at all), so
// calls present mean StopToolUse whatever it said, unless the answer was
// cut or filtered.
func (a *accumulator) stop() model.StopReason {
	switch a.finish {
	case "length":
		return model.StopMaxTokens
	case "content_filter":
		return model.StopOther
	case "tool_calls", "function_call":
		return model.StopToolUse
	case "stop", "":
		if len(a.calls) > 0 {
			return model.StopToolUse
		}
		if a.refusal {
			return model.StopOther
		}
		return model.StopEndTurn
	default:
		return model.StopOther
	}
}

// arguments is a call's arguments as one JSON object: empty becomes {}. A
// model can write arguments that are not an object (broken or cut-off
// JSON); those are kept as a JSON string of what it wrote, so the tool
// fails to decode them and says so to the model, and argumentsText sends
// the same text back on the next turn.
func arguments(s string) json.RawMessage {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	if b[0] == '{' && json.Valid(b) {
		return json.RawMessage(b)
	}
	q, _ := json.Marshal(s)
	return json.RawMessage(q)
}
