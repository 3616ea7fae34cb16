package config

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/tracing"
)

func TestFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "")
	if _, err := FromEnv(); err == nil {
		t.Fatal("a missing table must be an error")
	}
	t.Setenv("LONGRUN_TABLE", "t")
	c, err := FromEnv()
	if err != nil || c.Window != 24*time.Hour || c.Quota != 1000 || c.PrincipalQuota != 500 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	t.Setenv("LONGRUN_IDEMPOTENCY_WINDOW", "2h")
	t.Setenv("LONGRUN_QUOTA", "0")
	if c, err := FromEnv(); err != nil || c.Window != 2*time.Hour || c.Quota != 0 {
		t.Fatalf("overrides: %+v %v", c, err)
	}
	for k, v := range map[string]string{"LONGRUN_IDEMPOTENCY_WINDOW": "-1h", "LONGRUN_QUOTA": "many"} {
		t.Setenv(k, v)
		if _, err := FromEnv(); err == nil {
			t.Fatalf("%s=%s accepted", k, v)
		}
		t.Setenv(k, "")
	}
}

func TestListsFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "t")
	t.Setenv("LONGRUN_COGNITO_CLIENT_IDS", " a, b ,,")
	t.Setenv("LONGRUN_OPERATOR_PRINCIPALS", "arn:aws:iam::1:role/ops")
	c, err := FromEnv()
	if err != nil || len(c.CognitoClientIDs) != 2 || c.CognitoClientIDs[1] != "b" || len(c.OperatorPrincipals) != 1 {
		t.Fatalf("%+v %v", c, err)
	}
}

// Demo types are off unless LONGRUN_DEMO_TYPES says true; a typo fails at start.
func TestDemoTypesFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "t")
	for v, want := range map[string]bool{"": false, "false": false, "true": true, "1": true} {
		t.Setenv("LONGRUN_DEMO_TYPES", v)
		c, err := FromEnv()
		if err != nil || c.DemoTypes != want {
			t.Fatalf("LONGRUN_DEMO_TYPES=%q: %v %v, want %v", v, c.DemoTypes, err, want)
		}
		types, err := Types(c)
		if err != nil {
			t.Fatal(err)
		}
		_, demo := types.Lookup("demo.task")
		if _, orders := types.Lookup("export.orders"); demo != want || !orders {
			t.Fatalf("LONGRUN_DEMO_TYPES=%q: registry has demo.task %v, export.orders %v", v, demo, orders)
		}
	}
	t.Setenv("LONGRUN_DEMO_TYPES", "yes")
	if _, err := FromEnv(); err == nil {
		t.Fatal("LONGRUN_DEMO_TYPES=yes accepted")
	}
}

// Tracing is read with the rest (off by default), and a typo fails at start.
func TestTracingFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "t")
	t.Setenv("LONGRUN_TRACING", "")
	if c, err := FromEnv(); err != nil || c.Tracing.Mode != tracing.Off {
		t.Fatalf("default: %+v %v", c.Tracing, err)
	}
	t.Setenv("LONGRUN_TRACING", "file")
	t.Setenv("LONGRUN_TRACE_FILE", "/tmp/spans.jsonl")
	if c, err := FromEnv(); err != nil || c.Tracing != (tracing.Config{Mode: tracing.File, File: "/tmp/spans.jsonl"}) {
		t.Fatalf("file: %+v %v", c.Tracing, err)
	}
	t.Setenv("LONGRUN_TRACING", "on")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "LONGRUN_TRACING") {
		t.Fatalf("LONGRUN_TRACING=on: %v", err)
	}
}

// The functions answer JSON as it is: an & stays one byte, so a recorder's decision that
// fits Step Functions' 256 KiB limit as data still fits it on the wire.
func TestAnswersAreNotHTMLEscaped(t *testing.T) {
	h := handlerOf(func(context.Context, json.RawMessage) (map[string]string, error) {
		return map[string]string{"note": "<&>"}, nil
	})
	out, err := h.Invoke(context.Background(), []byte(`{}`))
	if err != nil || !strings.Contains(string(out), `"<&>"`) {
		t.Fatalf("%s %v; want the answer unescaped", out, err)
	}
}
