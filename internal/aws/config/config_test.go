package config

import (
	"testing"
	"time"
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
