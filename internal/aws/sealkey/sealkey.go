// Package sealkey gives longrun's functions the key of their seals (internal/core/seal):
// the Secrets Manager secret the stack creates (construct: one per stage, a random string
// that no person sees), read once when a function starts.
package sealkey

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/longrun-dev/longrun/internal/core/seal"
)

// MinSecretBytes is the shortest secret taken: the construct generates 64 characters.
const MinSecretBytes = 32

// Derive is the Sealer keyed from secret. The key is an HMAC of the secret under a fixed
// label, so that the secret's own characters (whatever alphabet the stack drew them from)
// never key a MAC directly, and a secret shared with other uses would give another key.
func Derive(secret string) (*seal.Sealer, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("sealkey: the secret is %d bytes, shorter than %d", len(secret), MinSecretBytes)
	}
	m := hmac.New(sha256.New, []byte("longrun seal key v1"))
	m.Write([]byte(secret))
	return seal.New(m.Sum(nil))
}

// Load reads secret id (a name or an ARN) from Secrets Manager and derives the Sealer.
// Nothing of the secret reaches an error or a log.
func Load(ctx context.Context, cfg aws.Config, id string) (*seal.Sealer, error) {
	if id == "" {
		return nil, errors.New("sealkey: no secret named")
	}
	out, err := secretsmanager.NewFromConfig(cfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return nil, fmt.Errorf("sealkey: read the seal secret: %w", err)
	}
	return Derive(aws.ToString(out.SecretString))
}
