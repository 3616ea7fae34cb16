package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Authenticator adds the caller's credentials to a request. The client calls it on every
// attempt, after every other header is set and just before the request is sent, so a
// signature covers the whole request and is fresh on each retry.
type Authenticator interface {
	// Authenticate adds credentials to req. body is exactly the body req carries (nil for
	// none); now is the client's clock (ClientOptions.Clock), the time to sign with.
	Authenticate(ctx context.Context, req *http.Request, body []byte, now time.Time) error
}

// AuthenticatorFunc adapts a function to an Authenticator.
type AuthenticatorFunc func(ctx context.Context, req *http.Request, body []byte, now time.Time) error

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(ctx context.Context, req *http.Request, body []byte, now time.Time) error {
	return f(ctx, req, body, now)
}

// BearerToken authenticates with `Authorization: Bearer <token>`: a Lambda or Cognito
// authorizer's token, or on the local stack one of its configured tokens
// (`alice-dev-token`).
func BearerToken(token string) Authenticator {
	return AuthenticatorFunc(func(_ context.Context, req *http.Request, _ []byte, _ time.Time) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}

// SigV4 signs every request with AWS Signature Version 4 for an IAM-authorized API Gateway
// stage (service execute-api), with cfg's credentials (cached, as aws.Config's usually are)
// and region. The signature covers the method, the path (the stage included), the query,
// every header the client sets and the SHA-256 of the exact body sent. API Gateway takes the
// caller's scope from the signing identity; every session of an assumed role is one caller.
//
//	cfg, err := config.LoadDefaultConfig(ctx) // github.com/aws/aws-sdk-go-v2/config
//	c, err := client.New("https://abc123.execute-api.eu-west-1.amazonaws.com/prod",
//		&client.ClientOptions{Auth: client.SigV4(cfg)})
func SigV4(cfg aws.Config) Authenticator {
	creds := cfg.Credentials
	if creds != nil {
		if _, cached := creds.(*aws.CredentialsCache); !cached {
			creds = aws.NewCredentialsCache(creds)
		}
	}
	return &sigV4{creds: creds, region: cfg.Region, signer: v4.NewSigner()}
}

type sigV4 struct {
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
}

// executeAPI is API Gateway's service name in a signature's credential scope.
const executeAPI = "execute-api"

func (s *sigV4) Authenticate(ctx context.Context, req *http.Request, body []byte, now time.Time) error {
	if s.creds == nil {
		return errors.New("longrun: SigV4: the aws.Config has no credentials")
	}
	if s.region == "" {
		return errors.New("longrun: SigV4: the aws.Config has no region")
	}
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("longrun: SigV4: retrieving credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	return s.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), executeAPI, s.region, now.UTC())
}
