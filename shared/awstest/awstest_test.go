package awstest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
)

func TestMain(m *testing.M) { awstest.Main(m) }

func TestEmulatorAnswersOverTheWire(t *testing.T) {
	t.Parallel()
	sm := secretsmanager.NewFromConfig(awstest.Config(t))
	name := awstest.UniqueName(t, "secret")
	value := "hunter2"
	ctx := context.Background()
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: &name, SecretString: &value}); err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &name})
	if err != nil {
		t.Fatalf("GetSecretValue: %v", err)
	}
	if got := *out.SecretString; got != value {
		t.Fatalf("secret = %q, want %q", got, value)
	}
}

func TestUniqueNamesDiffer(t *testing.T) {
	t.Parallel()
	a, b := awstest.UniqueName(t, "x"), awstest.UniqueName(t, "x")
	if a == b {
		t.Fatalf("UniqueName returned %q twice", a)
	}
}
