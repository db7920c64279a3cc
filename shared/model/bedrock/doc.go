// Package bedrock is the model.Model over Amazon Bedrock's ConverseStream
// API (bedrock-runtime, POST /model/{modelId}/converse-stream), through
// github.com/aws/aws-sdk-go-v2/service/bedrockruntime. It is agentsfleet's
// default provider on AWS.
//
// A Request becomes one ConverseStream call: the system prompt as a system
// text block, the conversation as user and assistant messages of text,
// toolUse and toolResult blocks, the tools as toolConfig.tools[].toolSpec
// with their JSON schemas, and MaxTokens (DefaultMaxTokens when 0) as
// inferenceConfig.
// Request.Model is the model id, inference profile id or ARN, sent in the
// URL path. Bedrock refuses blank text anywhere, which would fail every
// later call of the conversation too, so blank text parts are left out and
// an empty tool output or message goes as "(no output)" or "(empty)". The
// answer streams back as events: text deltas go to Request.OnText as they
// arrive, tool-call arguments are joined from their pieces (none is {}),
// and the stop reason and token usage close the Response. Reasoning and
// citation blocks are dropped.
//
// A tool result's status ("success" or "error") goes only to the models
// that take it: Bedrock's ToolResultBlock reference says it "is only
// supported by Amazon Nova and Anthropic Claude 3 and 4 models", and the
// others refuse it. The model id says which (anthropic.claude-…,
// amazon.nova-…, in a profile id or ARN too); for any other model, and an
// id that does not say (an application inference profile's ARN), no status
// is sent and a failed tool's output starts with "Error: ".
//
// A tool result's image (a screenshot) follows its text in the
// toolResult's content as {"image": {"format": "png", "source": {"bytes":
// …}}}; one over Bedrock's 3.75 MB is refused before it is sent.
//
// Bedrock's own rule a caller should know: while the conversation holds
// tool calls or results, the request must declare tools (Bedrock answers a
// ValidationException otherwise).
//
// The SDK's own retries are off: every failure is a *model.Error, Retryable
// for throttling, overload, server errors, model timeouts and broken
// streams, so that model.WithRetry decides. A cancelled or expired ctx
// comes back as ctx's error, wrapped.
//
// # Configuration
//
// New takes an aws.Config, usually from config.LoadDefaultConfig, which
// supplies region and credentials the usual way (AWS_REGION, the Lambda
// role, AWS_PROFILE, …). The endpoint can be pointed elsewhere without
// code: an aws.Config from config.LoadDefaultConfig carries the
// environment, and the client takes AWS_ENDPOINT_URL_BEDROCK_RUNTIME from
// it (or the global AWS_ENDPOINT_URL when that is unset), unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true. An aws.Config built by hand
// has no such sources. WithBaseEndpoint sets an endpoint in code and wins
// over both. The SDK also reads AWS_BEARER_TOKEN_BEDROCK, whatever the
// config: when set, requests carry that Bedrock API key instead of a SigV4
// signature, and only over HTTPS.
//
// A Model is safe for concurrent use.
package bedrock
