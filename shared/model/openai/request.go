package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// errorPrefix marks a failed tool's output: Chat Completions' tool message
// has no error flag, so the model learns it from the text.
const errorPrefix = "Error: "

// params translates req into a streamed Chat Completions request.
func (m *Model) params(req model.Request) (sdk.ChatCompletionNewParams, error) {
	msgs, err := messages(req.System, req.Messages)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	tools, err := tools(req.Tools)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	p := sdk.ChatCompletionNewParams{
		Model:         req.Model,
		Messages:      msgs,
		Tools:         tools,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	if m.completionTokens {
		p.MaxCompletionTokens = param.NewOpt(maxTokens)
	} else {
		p.MaxTokens = param.NewOpt(maxTokens)
	}
	return p, nil
}

// messages translates the conversation: the system prompt first, then each
// message in order. A user message's tool results become "tool" messages,
// placed before its text so that they follow the assistant's tool calls
// directly, as the API requires.
func messages(system string, conv []model.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	if system != "" {
		out = append(out, sdk.SystemMessage(system))
	}
	for i, msg := range conv {
		switch msg.Role {
		case model.User:
			var texts []string
			var images []sdk.ChatCompletionContentPartUnionParam
			results := 0
			for _, p := range msg.Content {
				switch {
				case p.ToolResult != nil:
					content := p.ToolResult.Output
					if p.ToolResult.IsError {
						content = errorPrefix + content
					}
					if img := p.ToolResult.Image; img != nil {
						if err := img.Check(); err != nil {
							return nil, fmt.Errorf("message %d: tool result %s: %w", i, p.ToolResult.CallID, err)
						}
						content += fmt.Sprintf("\n[The image this call made (%d×%d, %s) follows in the next user message.]", img.Width, img.Height, img.MediaType)
						images = append(images, sdk.TextContentPart(fmt.Sprintf("The screenshot from tool call %s:", p.ToolResult.CallID)),
							sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: dataURL(img)}))
					}
					out = append(out, sdk.ToolMessage(content, p.ToolResult.CallID))
					results++
				case p.ToolCall != nil:
					return nil, fmt.Errorf("message %d: a user message cannot hold a tool call", i)
				case p.Text != "":
					texts = append(texts, p.Text)
				}
			}
			// A tool message has text only, and the tool messages must
			// follow the assistant's tool calls directly: the images go in
			// a user message after all of them.
			if len(images) > 0 {
				out = append(out, sdk.UserMessage(images))
			}
			if len(texts) > 0 || results == 0 {
				out = append(out, userMessage(texts))
			}
		case model.Assistant:
			a, err := assistantMessage(msg)
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: a})
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	return out, nil
}

// dataURL is img as the data URL an image_url part takes.
func dataURL(img *model.Image) string {
	return "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}

// userMessage is one text as a string, several as text parts.
func userMessage(texts []string) sdk.ChatCompletionMessageParamUnion {
	if len(texts) <= 1 {
		s := ""
		if len(texts) == 1 {
			s = texts[0]
		}
		return sdk.UserMessage(s)
	}
	parts := make([]sdk.ChatCompletionContentPartUnionParam, len(texts))
	for i, t := range texts {
		parts[i] = sdk.TextContentPart(t)
	}
	return sdk.UserMessage(parts)
}

func assistantMessage(msg model.Message) (*sdk.ChatCompletionAssistantMessageParam, error) {
	a := &sdk.ChatCompletionAssistantMessageParam{}
	var texts []string
	for _, p := range msg.Content {
		switch {
		case p.ToolCall != nil:
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: p.ToolCall.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      p.ToolCall.Name,
						Arguments: argumentsText(p.ToolCall.Arguments),
					},
				},
			})
		case p.ToolResult != nil:
			return nil, fmt.Errorf("an assistant message cannot hold a tool result")
		case p.Text != "":
			texts = append(texts, p.Text)
		}
	}
	switch {
	case len(texts) == 1:
		a.Content.OfString = param.NewOpt(texts[0])
	case len(texts) > 1:
		for _, t := range texts {
			a.Content.OfArrayOfContentParts = append(a.Content.OfArrayOfContentParts,
				sdk.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion{
					OfText: &sdk.ChatCompletionContentPartTextParam{Text: t},
				})
		}
	case len(a.ToolCalls) == 0:
		// Neither text nor calls: the API still wants a content.
		a.Content.OfString = param.NewOpt("")
	}
	return a, nil
}

// argumentsText is the arguments string the API wants back for a call:
// the JSON object as text, or, when the model wrote something that was
// not an object (kept as a JSON string by the stream, see arguments), that
// text as it was.
func argumentsText(args json.RawMessage) string {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		return "{}"
	}
	if args[0] == '"' {
		var s string
		if json.Unmarshal(args, &s) == nil {
			return s
		}
	}
	return string(args)
}

// tools translates the tools offered. A tool without a schema takes an
// empty object.
func tools(ts []model.Tool) ([]sdk.ChatCompletionToolUnionParam, error) {
	var out []sdk.ChatCompletionToolUnionParam
	for _, t := range ts {
		schema := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(bytes.TrimSpace(t.Schema)) > 0 {
			// Raw values keep each property's own key order on the wire.
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(t.Schema, &raw); err != nil {
				return nil, fmt.Errorf("tool %s: schema is not a JSON object: %w", t.Name, err)
			}
			schema = make(shared.FunctionParameters, len(raw))
			for k, v := range raw {
				schema[k] = v
			}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		out = append(out, sdk.ChatCompletionFunctionTool(fn))
	}
	return out, nil
}
