package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
)

func TestMain(m *testing.M) { awstest.Main(m) }

func TestFromEnv(t *testing.T) {
	t.Parallel()
	noAWS := func(context.Context) (aws.Config, error) { return aws.Config{}, errors.New("no AWS here") }
	withAWS := func(context.Context) (aws.Config, error) { return aws.Config{Region: "eu-west-1"}, nil }
	for _, tc := range []struct {
		env      map[string]string
		def      string
		aws      func(context.Context) (aws.Config, error)
		provider string
		model    string
		wantErr  string
	}{
		{env: nil, def: provider.Scripted, aws: noAWS, provider: "scripted", model: "scripted"},
		{env: map[string]string{"AGENTSFLEET_MODEL_PROVIDER": "OpenAI", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "AGENTSFLEET_MODEL": "qwen3"}, def: provider.Scripted, aws: noAWS, provider: "openai", model: "qwen3"},
		{env: nil, def: provider.Bedrock, aws: withAWS, provider: "bedrock"},
		{env: nil, def: provider.Bedrock, aws: noAWS, wantErr: "no AWS here"},
		{env: map[string]string{"AGENTSFLEET_MODEL_PROVIDER": "anthropic"}, def: provider.Bedrock, aws: noAWS, wantErr: "ANTHROPIC_API_KEY"},
		{env: map[string]string{"AGENTSFLEET_MODEL_PROVIDER": "gemini"}, def: provider.Bedrock, aws: noAWS, wantErr: `AGENTSFLEET_MODEL_PROVIDER="gemini": the providers are bedrock, anthropic, openai and scripted`},
		{env: map[string]string{"AGENTSFLEET_MODEL_PROVIDER": "scripted", "AGENTSFLEET_MODEL_SCRIPT": "/nonexistent.toml"}, def: provider.Bedrock, aws: noAWS, wantErr: "nonexistent.toml"},
	} {
		getenv := func(k string) string { return tc.env[k] }
		c, err := provider.FromEnv(context.Background(), getenv, tc.def, tc.aws)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("FromEnv(%v) = %v, want an error with %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || c.Provider != tc.provider || c.DefaultModel != tc.model || c.Model == nil || c.About == "" {
			t.Errorf("FromEnv(%v) = %+v, %v; want provider %s, model %q", tc.env, c, err, tc.provider, tc.model)
		}
	}
}

// TestKeyFromSecretOnFirstCall: with AGENTSFLEET_MODEL_KEYS_ARN and no
// key in the environment, the key is read from Secrets Manager (moto) on
// the first model call, not when the model is built, and once.
func TestKeyFromSecretOnFirstCall(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	sm := secretsmanager.NewFromConfig(cfg)
	put := func(value string) string {
		out, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
			Name: aws.String(awstest.UniqueName(t, "keys")), SecretString: aws.String(value)})
		if err != nil {
			t.Fatal(err)
		}
		return *out.ARN
	}
	var gotKey atomic.Value
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(server.Close)
	var loads atomic.Int32
	awsConfig := func(context.Context) (aws.Config, error) { loads.Add(1); return cfg, nil }
	chosen := func(env map[string]string) (provider.Chosen, error) {
		env["AGENTSFLEET_MODEL_PROVIDER"], env["OPENAI_BASE_URL"], env["AGENTSFLEET_MODEL"] = "openai", server.URL+"/v1", "m"
		return provider.FromEnv(context.Background(), func(k string) string { return env[k] }, provider.Bedrock, awsConfig)
	}
	ask := model.Request{Model: "m", Messages: []model.Message{{Role: model.User, Content: []model.Part{{Text: "hello"}}}}}

	c, err := chosen(map[string]string{provider.EnvKeysSecret: put(`{"OPENAI_API_KEY": "sk-from-secret", "ANTHROPIC_API_KEY": "other"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if n := loads.Load(); n != 0 {
		t.Fatalf("FromEnv loaded the AWS configuration %d times; the secret is for the first call", n)
	}
	for range 2 {
		if _, err := c.Model.Converse(context.Background(), ask); err != nil {
			t.Fatal(err)
		}
	}
	if got := gotKey.Load(); got != "Bearer sk-from-secret" {
		t.Errorf("the server got Authorization %q, want the secret's OPENAI_API_KEY", got)
	}
	if n := loads.Load(); n != 1 {
		t.Errorf("the secret was read %d times for two calls, want once", n)
	}

	// A key in the environment wins, and no secret is read.
	loads.Store(0)
	c, err = chosen(map[string]string{provider.EnvKeysSecret: "arn:never-read", "OPENAI_API_KEY": "sk-env"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Model.Converse(context.Background(), ask); err != nil || gotKey.Load() != "Bearer sk-env" || loads.Load() != 0 {
		t.Errorf("with OPENAI_API_KEY set: err %v, Authorization %q, %d secret reads; want the environment's key and none", err, gotKey.Load(), loads.Load())
	}

	// Bad secrets fail the call, saying what is wrong and never a value.
	for _, tc := range []struct{ value, want string }{
		{`{"ANTHROPIC_API_KEY": "sk-secret-value"}`, "has no OPENAI_API_KEY"},
		{`sk-not-json`, "not a JSON object"},
	} {
		c, err := chosen(map[string]string{provider.EnvKeysSecret: put(tc.value)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Model.Converse(context.Background(), ask)
		var me *model.Error
		if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "sk-") {
			t.Errorf("secret %s: Converse = %v, want a model error saying %q without the value", tc.value, err, tc.want)
		}
	}
	// A bad base URL is still refused when the function starts.
	_, err = provider.FromEnv(context.Background(), func(k string) string {
		return map[string]string{"AGENTSFLEET_MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": "ftp://x", provider.EnvKeysSecret: "arn"}[k]
	}, provider.Bedrock, awsConfig)
	if err == nil || !strings.Contains(err.Error(), "ftp://x") {
		t.Errorf("a bad base URL with the keys' secret: FromEnv = %v, want it refused at once", err)
	}
}
