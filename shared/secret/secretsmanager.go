package secret

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsManagerAPI is the part of the AWS Secrets Manager client that
// SecretsManager uses; *secretsmanager.Client satisfies it.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ SecretsManagerAPI = (*secretsmanager.Client)(nil)

// SecretsManager is a Source over AWS Secrets Manager: an id is a secret
// name or ARN, and the value is the current version's SecretString. Binary
// secrets are refused. It caches nothing (a Set caches per invocation) and
// is safe for concurrent use.
type SecretsManager struct {
	Client SecretsManagerAPI
}

var _ Source = SecretsManager{}

// SecretValue reads the secret id. Errors name the id, never the value.
func (sm SecretsManager) SecretValue(ctx context.Context, id string) (string, error) {
	out, err := sm.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &id})
	if err != nil {
		return "", fmt.Errorf("get secret value %s: %w", id, err)
	}
	if out.SecretString == nil {
		return "", errors.New("secret " + id + " holds binary data; only text secrets can be used")
	}
	return *out.SecretString, nil
}
