// Package openai provides a model.Model over the OpenAI Chat Completions API
// (POST /chat/completions, streamed), through the official SDK
// github.com/openai/openai-go/v3. It speaks only the part of the API that
// OpenAI-compatible servers share, so it works against OpenAI itself and
// against vLLM, llama.cpp's server, Ollama, LM Studio, OpenRouter and the
// like: messages of roles system, user, assistant and tool; tools as
// "function" tools; answers streamed as server-sent events with
// stream_options.include_usage.
//
// A tool message holds text only, so a tool result's image (a screenshot)
// goes in a user message of its own, right after the tool messages that
// answer the assistant's calls: a text naming the call, then an image_url
// part whose url is the image's data URL. The tool message says that the
// image follows. A server whose model takes no images refuses the request.
//
// OPENAI_BASE_URL points it at another server (for example
// http://localhost:11434/v1 for Ollama) and OPENAI_API_KEY is the bearer
// key; a local server without a key needs none, and then no Authorization
// header is sent. ConfigFromEnv reads those two and nothing else: unlike
// the SDK's NewClient, New does not pick up OPENAI_ORG_ID, OPENAI_PROJECT_ID
// or OPENAI_CUSTOM_HEADERS from the process environment, so nothing meant
// for OpenAI leaks to another server.
//
// The SDK's own retries are off: callers wrap the model in model.WithRetry,
// and every failure is a *model.Error saying whether a retry may succeed.
package openai
