// Package apiclient is a small client of longrun's HTTP API, for the CLI and the
// end-to-end tests: it authenticates with a bearer token (the local stack) or SigV4 (API
// Gateway's IAM authorization) and returns responses as they came.
package apiclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Client calls one API.
type Client struct {
	BaseURL string      // e.g. http://127.0.0.1:8080 or https://…/prod (no trailing slash)
	Token   string      // bearer token, when AWS is nil
	AWS     *aws.Config // SigV4 credentials and region, for IAM-authorized APIs
	HTTP    *http.Client
}

// Response is a response as received.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends one request. path starts with /v1.
func (c *Client) Do(ctx context.Context, method, path string, header http.Header, body []byte) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if len(body) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := Authorize(req, body, c.Token, c.AWS); err != nil {
		return nil, err
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// Authorize signs req with SigV4 for API Gateway ("execute-api") when cfg is set, or sets
// the bearer token otherwise.
func Authorize(req *http.Request, body []byte, token string, cfg *aws.Config) error {
	if cfg == nil {
		if token == "" {
			return fmt.Errorf("apiclient: no token and no AWS credentials")
		}
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
	sum := sha256.Sum256(body)
	creds, err := cfg.Credentials.Retrieve(req.Context())
	if err != nil {
		return fmt.Errorf("apiclient: AWS credentials: %w", err)
	}
	return v4.NewSigner().SignHTTP(req.Context(), creds, req, hex.EncodeToString(sum[:]), "execute-api", cfg.Region, time.Now())
}
