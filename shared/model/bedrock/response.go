package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// assembler builds the Response from the stream's events. Content blocks
// are kept by their contentBlockIndex: Bedrock opens a tool-use block with
// contentBlockStart but a text block with its first delta.
type assembler struct {
	blocks  map[int32]*block
	stopped bool
	stop    model.StopReason
	usage   model.Usage
}

type block struct {
	text  strings.Builder
	tool  *model.ToolCall // set by contentBlockStart with toolUse
	input strings.Builder // the tool call's argument pieces
}

func (a *assembler) block(index *int32) *block {
	if a.blocks == nil {
		a.blocks = map[int32]*block{}
	}
	i := aws.ToInt32(index)
	b := a.blocks[i]
	if b == nil {
		b = &block{}
		a.blocks[i] = b
	}
	return b
}

// add takes in one event, passing text deltas to onText. Reasoning,
// citations and other block kinds are not part of model.Message and are
// dropped.
func (a *assembler) add(ev types.ConverseStreamOutput, onText func(string)) error {
	switch ev := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if tu, ok := ev.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			b := a.block(ev.Value.ContentBlockIndex)
			b.tool = &model.ToolCall{ID: aws.ToString(tu.Value.ToolUseId), Name: aws.ToString(tu.Value.Name)}
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := ev.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			if d.Value == "" {
				return nil
			}
			a.block(ev.Value.ContentBlockIndex).text.WriteString(d.Value)
			if onText != nil {
				onText(d.Value)
			}
		case *types.ContentBlockDeltaMemberToolUse:
			b := a.block(ev.Value.ContentBlockIndex)
			if b.tool == nil {
				return malformed(fmt.Sprintf("tool input for content block %d, which no toolUse opened", aws.ToInt32(ev.Value.ContentBlockIndex)))
			}
			b.input.WriteString(aws.ToString(d.Value.Input))
		}
	case *types.ConverseStreamOutputMemberMessageStop:
		a.stopped = true
		a.stop = stopReason(ev.Value.StopReason)
	case *types.ConverseStreamOutputMemberMetadata:
		if u := ev.Value.Usage; u != nil {
			a.usage = model.Usage{
				InputTokens:  int64(aws.ToInt32(u.InputTokens)),
				OutputTokens: int64(aws.ToInt32(u.OutputTokens)),
			}
		}
	}
	return nil
}

// response is the assembled answer, once the stream has ended cleanly. A
// stream that ended before messageStop was cut off (the SDK reads a frame
// cut short as the end of the stream) and is a retryable error.
func (a *assembler) response() (model.Response, error) {
	if !a.stopped {
		return model.Response{}, &model.Error{Provider: Provider, Message: "the answer stream ended before messageStop", Retryable: true}
	}
	msg := model.Message{Role: model.Assistant}
	indexes := make([]int32, 0, len(a.blocks))
	for i := range a.blocks {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		b := a.blocks[i]
		if b.tool != nil {
			args, err := arguments(b.input.String())
			if err != nil {
				return model.Response{}, malformed(fmt.Sprintf("tool call %s (%s): %v", b.tool.ID, b.tool.Name, err))
			}
			call := *b.tool
			call.Arguments = args
			msg.Content = append(msg.Content, model.Part{ToolCall: &call})
		}
		if b.text.Len() > 0 {
			msg.Content = append(msg.Content, model.Part{Text: b.text.String()})
		}
	}
	return model.Response{Message: msg, Stop: a.stop, Usage: a.usage}, nil
}

// arguments is a tool call's joined input: one JSON object, {} when the
// model sent none.
func arguments(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %.200q", s)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	return buf.Bytes(), nil
}

// malformed is an answer that does not hold together. A new attempt
// samples the model afresh, so it may well get past it.
func malformed(msg string) *model.Error {
	return &model.Error{Provider: Provider, Message: "malformed answer: " + msg, Retryable: true}
}

func stopReason(r types.StopReason) model.StopReason {
	switch r {
	case types.StopReasonEndTurn, types.StopReasonStopSequence:
		return model.StopEndTurn
	case types.StopReasonToolUse:
		return model.StopToolUse
	case types.StopReasonMaxTokens:
		return model.StopMaxTokens
	default:
		// guardrail_intervened, content_filtered, malformed_model_output,
		// malformed_tool_use, model_context_window_exceeded and any newer
		// reason.
		return model.StopOther
	}
}
