// Package config reads a function's settings from its environment, the one way settings
// reach a Lambda function (CDK and the local stack set the same variables).
package config

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/aws/tracing"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/console"
)

// Config holds every function's settings.
type Config struct {
	Table  string        // LONGRUN_TABLE
	Window time.Duration // LONGRUN_IDEMPOTENCY_WINDOW, e.g. "24h"
	Quota  int           // LONGRUN_QUOTA: active operations per tenant; 0 disables
	// PrincipalQuota is LONGRUN_PRINCIPAL_QUOTA: active operations per caller within its
	// tenant; 0 disables. Default admission.DefaultPrincipalQuota.
	PrincipalQuota int
	// StateMachines maps workflow names to state machine ARNs (LONGRUN_STATE_MACHINES, a
	// JSON object); the dispatcher needs it.
	StateMachines map[string]string
	// DeadLetterQueueURL receives poison records (LONGRUN_DEAD_LETTER_QUEUE_URL).
	DeadLetterQueueURL string
	// SealSecret is the Secrets Manager secret (name or ARN) the recorder's and the
	// reconciler's seals are keyed from (LONGRUN_SEAL_SECRET; internal/aws/sealkey).
	SealSecret string
	// CallbackBase is the API's URL under which /v1 lives, for the callback URLs the
	// recorder puts in step requests (LONGRUN_CALLBACK_BASE; "": none).
	CallbackBase string
	// Workers maps each worker to its function's name or ARN (LONGRUN_WORKERS, a JSON
	// object): the recorder refuses a Run or a delivery that names another function.
	Workers map[string]string
	// EventBus is the EventBridge bus the notifier publishes to (LONGRUN_EVENT_BUS).
	EventBus string
	// CognitoClientIDs are the app clients whose ID tokens the API accepts
	// (LONGRUN_COGNITO_CLIENT_IDS, comma-separated); OperatorPrincipals are the IAM role or
	// user ARNs that are operators (LONGRUN_OPERATOR_PRINCIPALS, comma-separated).
	CognitoClientIDs   []string
	OperatorPrincipals []string
	// DemoTypes is LONGRUN_DEMO_TYPES ("true" or "false", default false): whether the demo
	// types (demo.task) are served. The CDK stack sets it to true on dev stages only, the
	// local stack sets it too; Function.Registry is the registry it selects.
	DemoTypes bool
	// TypesFile is the operation types' definitions file (LONGRUN_TYPES_FILE; YAML or JSON,
	// docs/operation-types.md), or several separated by commas; without it the built-in
	// types are served.
	TypesFile string
	// Leases are the reconciler's leases (LONGRUN_LEASE_DISPATCH, _CHECK, _CANCEL,
	// _DEADLINE as durations); every writer stamps due times with them.
	Leases operation.Leases
	// Tracing is LONGRUN_TRACING (off, otlp or file) with OTEL_EXPORTER_OTLP_ENDPOINT or
	// LONGRUN_TRACE_FILE (internal/aws/tracing, docs/observability.md#tracing).
	Tracing tracing.Config
	// Reconcile paces the reconciler's runs (LONGRUN_DISPATCH_RATE, LONGRUN_DESCRIBE_RATE,
	// LONGRUN_RECONCILE_BUDGET, LONGRUN_RECONCILE_CONCURRENCY; reconcile.go).
	Reconcile Reconcile
	// Console is how the operations console the API serves signs in: through the Cognito
	// hosted UI of LONGRUN_CONSOLE_COGNITO_DOMAIN (an https origin) as the app client
	// LONGRUN_CONSOLE_CLIENT_ID, or, with neither set, with a pasted bearer token.
	Console console.Config
}

// FromEnv reads Config, applying the contract's defaults.
func FromEnv() (Config, error) {
	c := Config{Table: os.Getenv("LONGRUN_TABLE"), Window: admission.DefaultWindow, Quota: admission.DefaultQuota,
		PrincipalQuota: admission.DefaultPrincipalQuota}
	if c.Table == "" {
		return c, fmt.Errorf("config: LONGRUN_TABLE is required")
	}
	if v := os.Getenv("LONGRUN_IDEMPOTENCY_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("config: LONGRUN_IDEMPOTENCY_WINDOW=%q is not a positive duration", v)
		}
		c.Window = d
	}
	for name, q := range map[string]*int{"LONGRUN_QUOTA": &c.Quota, "LONGRUN_PRINCIPAL_QUOTA": &c.PrincipalQuota} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return c, fmt.Errorf("config: %s=%q is not a non-negative integer", name, v)
			}
			*q = n
		}
	}
	if v := os.Getenv("LONGRUN_STATE_MACHINES"); v != "" {
		if err := json.Unmarshal([]byte(v), &c.StateMachines); err != nil {
			return c, fmt.Errorf("config: LONGRUN_STATE_MACHINES is not a JSON object of names to ARNs: %w", err)
		}
	}
	c.DeadLetterQueueURL = os.Getenv("LONGRUN_DEAD_LETTER_QUEUE_URL")
	c.CognitoClientIDs = List(os.Getenv("LONGRUN_COGNITO_CLIENT_IDS"))
	c.OperatorPrincipals = List(os.Getenv("LONGRUN_OPERATOR_PRINCIPALS"))
	c.EventBus = os.Getenv("LONGRUN_EVENT_BUS")
	c.SealSecret = os.Getenv("LONGRUN_SEAL_SECRET")
	c.CallbackBase = os.Getenv("LONGRUN_CALLBACK_BASE")
	cons, err := console.Config{CognitoDomain: os.Getenv("LONGRUN_CONSOLE_COGNITO_DOMAIN"),
		ClientID: os.Getenv("LONGRUN_CONSOLE_CLIENT_ID")}.Validate()
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	c.Console = cons
	if v := os.Getenv("LONGRUN_WORKERS"); v != "" {
		if err := json.Unmarshal([]byte(v), &c.Workers); err != nil {
			return c, fmt.Errorf("config: LONGRUN_WORKERS is not a JSON object of workers to functions: %w", err)
		}
	}
	if v := os.Getenv("LONGRUN_DEMO_TYPES"); v != "" {
		demo, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("config: LONGRUN_DEMO_TYPES=%q is neither true nor false", v)
		}
		c.DemoTypes = demo
	}
	c.TypesFile = os.Getenv("LONGRUN_TYPES_FILE")
	c.Leases = operation.DefaultLeases()
	for name, d := range map[string]*time.Duration{
		"LONGRUN_LEASE_DISPATCH": &c.Leases.Dispatch, "LONGRUN_LEASE_CHECK": &c.Leases.Check,
		"LONGRUN_LEASE_CANCEL": &c.Leases.Cancel, "LONGRUN_LEASE_DEADLINE": &c.Leases.Deadline,
	} {
		if v := os.Getenv(name); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil || parsed <= 0 {
				return c, fmt.Errorf("config: %s=%q is not a positive duration", name, v)
			}
			*d = parsed
		}
	}
	tc, err := tracing.FromEnv(os.Getenv)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	c.Tracing = tc
	if c.Reconcile, err = reconcileFromEnv(); err != nil {
		return c, err
	}
	return c, nil
}

// List splits a comma-separated setting, dropping blanks: the one way a list setting is read,
// from the environment here and from CDK context in infra/stack.
func List(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Require fails unless every named setting is present, so a function misconfigured at
// deploy time fails at start, not on its first event.
func (c Config) Require(names ...string) error {
	for _, n := range names {
		switch {
		case n == "LONGRUN_STATE_MACHINES" && len(c.StateMachines) == 0,
			n == "LONGRUN_DEAD_LETTER_QUEUE_URL" && c.DeadLetterQueueURL == "",
			n == "LONGRUN_EVENT_BUS" && c.EventBus == "",
			n == "LONGRUN_SEAL_SECRET" && c.SealSecret == "",
			n == "LONGRUN_WORKERS" && len(c.Workers) == 0:
			return fmt.Errorf("config: %s is required", n)
		}
	}
	return nil
}

// AWS loads the SDK configuration the standard way (region, credentials and endpoint
// overrides such as AWS_ENDPOINT_URL come from the environment).
func AWS(ctx context.Context) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("config: load AWS configuration: %w", err)
	}
	return cfg, nil
}

// Logger is the logger every function uses: JSON lines with Powertools' field names
// (internal/aws/lambdalog, docs/observability.md), as service (POWERTOOLS_SERVICE_NAME
// overrides it).
func Logger(service string) *slog.Logger {
	return slog.New(lambdalog.New(os.Stderr, lambdalog.ServiceName(service), slog.LevelInfo))
}
