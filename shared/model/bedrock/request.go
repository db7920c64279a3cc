package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// converseInput translates req into the SDK's input. A request that cannot
// be sent (no model id, a role Bedrock does not know, arguments or a schema
// that are not a JSON object) is a *model.Error that no retry gets past.
func converseInput(req model.Request) (*bedrockruntime.ConverseStreamInput, error) {
	if req.Model == "" {
		return nil, requestError("no model id")
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	in := &bedrockruntime.ConverseStreamInput{
		ModelId:         aws.String(req.Model),
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(int32(min(maxTokens, math.MaxInt32)))},
	}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
	}
	status := toolResultStatus(req.Model)
	for i, msg := range req.Messages {
		m, err := message(msg, status)
		if err != nil {
			return nil, requestError(fmt.Sprintf("message %d: %v", i, err))
		}
		in.Messages = append(in.Messages, m)
	}
	if len(req.Tools) > 0 {
		tc := &types.ToolConfiguration{}
		for _, t := range req.Tools {
			schema := t.Schema
			if len(bytes.TrimSpace(schema)) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			doc, err := jsonObject(schema)
			if err != nil {
				return nil, requestError(fmt.Sprintf("tool %s: schema: %v", t.Name, err))
			}
			spec := types.ToolSpecification{
				Name:        aws.String(t.Name),
				InputSchema: &types.ToolInputSchemaMemberJson{Value: doc},
			}
			if t.Description != "" {
				spec.Description = aws.String(t.Description)
			}
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		}
		in.ToolConfig = tc
	}
	return in, nil
}

// Bedrock refuses blank text, in a message or a tool result, and a message
// with no content; a conversation holding one would fail on every later
// call. So blank text parts are left out, and these stand in where nothing
// would be left.
const (
	emptyMessage = "(empty)"
	emptyOutput  = "(no output)"
)

// errorPrefix marks a failed tool's output for a model that takes no
// status: the model learns it from the text.
const errorPrefix = "Error: "

// toolResultStatus reports whether a tool result sent to modelID may carry
// its status. Bedrock's ToolResultBlock reference says the field "is only
// supported by Amazon Nova and Anthropic Claude 3 and 4 models", and other
// models refuse it. A model id, inference profile id or its ARN names the
// family (anthropic.claude-…, us.amazon.nova-…, …/inference-profile/
// global.anthropic.claude-…); an application inference profile's or a
// provisioned model's ARN does not, and gets no status, which every model
// takes.
func toolResultStatus(modelID string) bool {
	id := strings.ToLower(modelID)
	switch {
	case strings.Contains(id, "amazon.nova"):
		return true
	case strings.Contains(id, "anthropic.claude"):
		// Claude 2 and Instant predate tool use and the status.
		return !strings.Contains(id, "claude-v2") && !strings.Contains(id, "claude-instant")
	}
	return false
}

// message translates one turn. With status, a tool result carries its
// status (success or error); without, a failed one's output starts with
// errorPrefix instead.
func message(msg model.Message, status bool) (types.Message, error) {
	var out types.Message
	switch msg.Role {
	case model.User:
		out.Role = types.ConversationRoleUser
	case model.Assistant:
		out.Role = types.ConversationRoleAssistant
	default:
		return out, fmt.Errorf("unknown role %q", msg.Role)
	}
	for _, p := range msg.Content {
		switch {
		case p.ToolCall != nil:
			args := p.ToolCall.Arguments
			if len(bytes.TrimSpace(args)) == 0 {
				args = json.RawMessage(`{}`)
			}
			doc, err := jsonObject(args)
			if err != nil {
				return out, fmt.Errorf("tool call %s: arguments: %v", p.ToolCall.ID, err)
			}
			out.Content = append(out.Content, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
				ToolUseId: aws.String(p.ToolCall.ID),
				Name:      aws.String(p.ToolCall.Name),
				Input:     doc,
			}})
		case p.ToolResult != nil:
			output := p.ToolResult.Output
			if strings.TrimSpace(output) == "" {
				output = emptyOutput
			}
			var st types.ToolResultStatus // none: not sent
			switch {
			case status && p.ToolResult.IsError:
				st = types.ToolResultStatusError
			case status:
				st = types.ToolResultStatusSuccess
			case p.ToolResult.IsError:
				output = errorPrefix + output
			}
			content := []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: output}}
			if img := p.ToolResult.Image; img != nil {
				block, err := imageBlock(img)
				if err != nil {
					return out, fmt.Errorf("tool result %s: %v", p.ToolResult.CallID, err)
				}
				content = append(content, block)
			}
			out.Content = append(out.Content, &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
				ToolUseId: aws.String(p.ToolResult.CallID),
				Content:   content,
				Status:    st,
			}})
		case strings.TrimSpace(p.Text) != "":
			out.Content = append(out.Content, &types.ContentBlockMemberText{Value: p.Text})
		}
	}
	if len(out.Content) == 0 {
		out.Content = []types.ContentBlock{&types.ContentBlockMemberText{Value: emptyMessage}}
	}
	return out, nil
}

// imageBlock is img as a tool result's image block: its format and its
// bytes, which the SDK sends base64-encoded.
func imageBlock(img *model.Image) (types.ToolResultContentBlock, error) {
	// Check refuses one over Bedrock's 3.75 MB before it is sent, rather
	// than Bedrock on every later call of the conversation.
	if err := img.Check(); err != nil {
		return nil, err
	}
	return &types.ToolResultContentBlockMemberImage{Value: types.ImageBlock{
		Format: types.ImageFormat(img.Format()),
		Source: &types.ImageSourceMemberBytes{Value: img.Data},
	}}, nil
}

// jsonObject decodes raw, which must be one JSON object, into a document
// the SDK serializes faithfully. The SDK's document encoder writes Go values
// by reflection: a json.RawMessage would go out as an array of bytes and a
// json.Number as a string, so numbers become smithy document.Numbers (their
// literal kept). Object keys go out sorted, whatever their order in raw.
func jsonObject(raw json.RawMessage) (document.Interface, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not one JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	doc := document.NewLazyDocument(numbers(v))
	// The SDK drops the encoder's error and writes nothing in the value's
	// place (an empty object key does that), which Bedrock would refuse as
	// a body that is not JSON; encode once here to say what is wrong.
	if _, err := doc.MarshalSmithyDocument(); err != nil {
		return nil, err
	}
	return doc, nil
}

// numbers replaces every json.Number in v with a document.Number.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		return smithydocument.Number(v)
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	}
	return v
}

func requestError(msg string) *model.Error {
	return &model.Error{Provider: Provider, Message: "request: " + msg}
}
