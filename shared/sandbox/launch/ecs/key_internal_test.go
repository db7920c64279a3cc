//go:build linux

package ecs

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/token"
)

// TestKeyFromSecret: with EnvTokenKeyARN, the key is the secret's value,
// read on first use and not before; a secret too short to be a key is
// refused without its value in the error.
func TestKeyFromSecret(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	sm := secretsmanager.NewFromConfig(cfg)
	ctx := context.Background()
	mk := func(value string) string {
		out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(awstest.UniqueName(t, "key")), SecretString: aws.String(value)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	value := strings.Repeat("0123456789abcdef", 4)
	arn := mk(value)
	get := func(arn string) func(string) string {
		return func(k string) string { return map[string]string{EnvTokenKeyARN: arn}[k] }
	}
	key, err := keyFromEnv(get(arn), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := token.NewKey(value)
	k, err := key(ctx)
	if err != nil {
		t.Fatalf("the key of %s: %v", arn, err)
	}
	const nonce = "00112233445566778899aabbccddeeff"
	got, _ := k.Token(nonce)
	if w, _ := want.Token(nonce); got != w {
		t.Errorf("the key read from the secret makes %q, want the secret's %q", got, w)
	}
	short := "short-secret-value"
	key, err = keyFromEnv(get(mk(short)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := key(ctx); err == nil || strings.Contains(err.Error(), short) || !strings.Contains(err.Error(), EnvTokenKeyARN) {
		t.Errorf("the key of a short secret: %v; want an error naming the setting, without the value", err)
	}
}
