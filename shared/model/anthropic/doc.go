// Package anthropic is the model.Model for Anthropic's Messages API
// (POST /v1/messages, streamed as server-sent events), through the official
// Go SDK, github.com/anthropics/anthropic-sdk-go/v2.
//
// A Model translates the provider-neutral conversation: the system prompt
// goes in the request's system field, tool calls become tool_use blocks of
// assistant messages, and tool results become tool_result blocks (with
// tool_use_id and is_error) of user messages, the results of one turn in
// one user message. A tool result's image (a screenshot) follows its text
// in the tool_result's content as an image block with a base64 source. It
// streams the answer, passing each text delta to
// Request.OnText, and reports usage with the prompt-cache tokens counted as
// input.
//
// Settings come from the SDK's own environment variables, read by
// ConfigFromEnv: ANTHROPIC_API_KEY (required) and ANTHROPIC_BASE_URL, which
// points the Model at another server speaking the same API (a proxy, or a
// local fake in tests). The SDK's environment defaults are off, so no
// credential or URL comes from anywhere else: not ANTHROPIC_AUTH_TOKEN, nor
// a profile on disk, nor workload federation.
//
// The SDK's own retries are off: every failure is a *model.Error saying
// whether a retry may succeed, for model.WithRetry to act on.
package anthropic
