package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	longrunclient "github.com/longrun-dev/longrun/client"
	"github.com/longrun-dev/longrun/internal/local/devstack"
)

// target is what the suite runs against: the local stack it starts itself (the default,
// and CI), or a deployed stack — LocalStack or a real stage — named by the environment:
//
//	LONGRUN_E2E_API_URL          the API's base URL, stage included
//	LONGRUN_E2E_TABLE            the table's name
//	LONGRUN_E2E_STATE_MACHINES   {"demo-task": "arn…", "export-orders": "arn…"}
//	LONGRUN_E2E_FUNCTION_PREFIX  e.g. "longrun-dev-" (function names are prefix + name)
//	LONGRUN_E2E_AUTH             "sigv4" (IAM) or "bearer" (tokens, the default)
//
// AWS clients take their endpoint and credentials from the usual variables
// (AWS_ENDPOINT_URL, AWS_REGION, …). Tests that need the local stack's controls (pausing
// consumers, the PutEvents tap, several tenants) run only locally; localstack/test.sh
// selects the others.
type target struct {
	APIURL             string
	Table              string
	StateMachines      map[string]string
	DeadLetterQueueURL string
	EventsQueueURL     string
	DynamoDB           *dynamodb.Client
	StepFunctions      *sfn.Client
	SQS                *sqs.Client
	Lambda             *lambda.Client
	functionPrefix     string
	sigv4              *aws.Config
	local              *devstack.Stack
}

func localTarget(s *devstack.Stack) *target {
	return &target{APIURL: s.APIURL, Table: s.Table, StateMachines: s.StateMachines, DeadLetterQueueURL: s.DeadLetterQueueURL,
		EventsQueueURL: s.EventsQueueURL, DynamoDB: s.DynamoDB, StepFunctions: s.StepFunctions, SQS: s.SQS, Lambda: s.Lambda, local: s}
}

func externalTarget(ctx context.Context) (*target, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	t := &target{APIURL: os.Getenv("LONGRUN_E2E_API_URL"), Table: os.Getenv("LONGRUN_E2E_TABLE"),
		functionPrefix: os.Getenv("LONGRUN_E2E_FUNCTION_PREFIX"), EventsQueueURL: os.Getenv("LONGRUN_E2E_EVENTS_QUEUE_URL"),
		DynamoDB: dynamodb.NewFromConfig(cfg), StepFunctions: sfn.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg), Lambda: lambda.NewFromConfig(cfg)}
	if err := json.Unmarshal([]byte(os.Getenv("LONGRUN_E2E_STATE_MACHINES")), &t.StateMachines); err != nil {
		return nil, fmt.Errorf("LONGRUN_E2E_STATE_MACHINES: %w", err)
	}
	if os.Getenv("LONGRUN_E2E_AUTH") == "sigv4" {
		t.sigv4 = &cfg
	}
	return t, nil
}

// function is a function's deployed name.
func (t *target) function(name string) string { return t.functionPrefix + name }

func (t *target) mustBeLocal() *devstack.Stack {
	if t.local == nil {
		panic("this test needs the local stack's controls; it cannot run against LONGRUN_E2E_API_URL")
	}
	return t.local
}

func (t *target) Pause(names ...string)  { t.mustBeLocal().Pause(names...) }
func (t *target) Resume(names ...string) { t.mustBeLocal().Resume(names...) }
func (t *target) Published() [][]byte    { return t.mustBeLocal().Published() }

// authorize signs req with SigV4 for API Gateway's IAM authorization, or sets the bearer
// token of the local authorizer: the public client's authenticators, applied to a request
// the suite builds itself.
func (t *target) authorize(req *http.Request, token string) error {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	auth := longrunclient.BearerToken(token)
	if t.sigv4 != nil {
		auth = longrunclient.SigV4(*t.sigv4)
	} else if token == "" {
		return fmt.Errorf("e2e: no token and no AWS credentials")
	}
	return auth.Authenticate(req.Context(), req, body, time.Now())
}
