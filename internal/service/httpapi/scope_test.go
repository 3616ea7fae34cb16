package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"path"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

// Every way API Gateway can tell who called: a Lambda authorizer's context, Cognito claims,
// or the IAM identity of a SigV4 request. Nothing else counts.
func TestScopeOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rc   events.APIGatewayProxyRequestContext
		want string // "tenant/principal", "" for 401
	}{
		{"lambda authorizer", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"tenant": "acme", "principal": "alice"}}, "acme/alice"},
		{"cognito id token of an accepted client", cognito(map[string]any{"token_use": "id", "aud": "client-1", "custom:tenant": "acme", "sub": "u-1"}), "acme/u-1"},
		// Forged or foreign Cognito tokens choose no tenant: API Gateway checked the
		// signature and the pool, not the client nor the kind of token.
		{"cognito token of another app client", cognito(map[string]any{"token_use": "id", "aud": "client-self-service", "custom:tenant": "acme", "sub": "u-1"}), ""},
		{"cognito access token", cognito(map[string]any{"token_use": "access", "client_id": "client-1", "custom:tenant": "acme", "sub": "u-1"}), ""},
		{"cognito token without token_use", cognito(map[string]any{"aud": "client-1", "custom:tenant": "acme", "sub": "u-1"}), ""},
		{"cognito token without aud", cognito(map[string]any{"token_use": "id", "custom:tenant": "acme", "sub": "u-1"}), ""},
		{"cognito token without tenant", cognito(map[string]any{"token_use": "id", "aud": "client-1", "sub": "u-1"}), ""},
		{"iam user arn", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{AccountID: "111122223333", UserArn: "arn:aws:iam::111122223333:user/ci"}}, "111122223333/arn:aws:iam::111122223333:user/ci"},
		{"iam caller", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{AccountID: "111122223333", Caller: "AIDAEXAMPLE"}}, "111122223333/AIDAEXAMPLE"},
		{"iam root", iam("arn:aws:iam::111122223333:root"), "111122223333/arn:aws:iam::111122223333:root"},
		{"iam user with a path", iam("arn:aws:iam::111122223333:user/division/ci"), "111122223333/arn:aws:iam::111122223333:user/division/ci"},
		// An assumed role is the role: its session (per instance, per run) is dropped.
		{"assumed role", iam("arn:aws:sts::111122223333:assumed-role/exporter/i-0abc123"), "111122223333/arn:aws:sts::111122223333:assumed-role/exporter"},
		{"assumed role, another session", iam("arn:aws:sts::111122223333:assumed-role/exporter/i-0def456"), "111122223333/arn:aws:sts::111122223333:assumed-role/exporter"},
		{"assumed role, session with @ and =", iam("arn:aws:sts::111122223333:assumed-role/Admin.Role_1/jane@example.com=x"), "111122223333/arn:aws:sts::111122223333:assumed-role/Admin.Role_1"},
		{"assumed role in aws-cn", iam("arn:aws-cn:sts::111122223333:assumed-role/exporter/s1"), "111122223333/arn:aws-cn:sts::111122223333:assumed-role/exporter"},
		{"assumed role in aws-us-gov", iam("arn:aws-us-gov:sts::111122223333:assumed-role/exporter/s1"), "111122223333/arn:aws-us-gov:sts::111122223333:assumed-role/exporter"},
		{"federated user", iam("arn:aws:sts::111122223333:federated-user/bob"), "111122223333/arn:aws:sts::111122223333:federated-user/bob"},
		{"assumed role without a session", iam("arn:aws:sts::111122223333:assumed-role/exporter"), "111122223333/arn:aws:sts::111122223333:assumed-role/exporter"},
		{"assumed role, empty session", iam("arn:aws:sts::111122223333:assumed-role/exporter/"), "111122223333/arn:aws:sts::111122223333:assumed-role/exporter/"},
		{"not sts", iam("arn:aws:iam::111122223333:assumed-role/exporter/s1"), "111122223333/arn:aws:iam::111122223333:assumed-role/exporter/s1"},
		{"tenant without principal", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"tenant": "acme"}}, ""},
		{"account without identity", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{AccountID: "111122223333"}}, ""},
		{"nothing", events.APIGatewayProxyRequestContext{}, ""},
	}
	callers := httpapi.Callers{CognitoClientIDs: []string{"client-1", "client-2"}}
	for _, tc := range tests {
		s, err := callers.Scope(tc.rc)
		got := ""
		if err == nil {
			got = s.Tenant + "/" + s.Principal
		}
		if got != tc.want {
			t.Errorf("%s: %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

func cognito(claims map[string]any) events.APIGatewayProxyRequestContext {
	return events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"claims": claims}}
}

// With no app client configured, no Cognito token is accepted at all.
func TestCognitoNeedsConfiguredClients(t *testing.T) {
	t.Parallel()
	rc := cognito(map[string]any{"token_use": "id", "aud": "client-1", "custom:tenant": "acme", "sub": "u-1"})
	if _, err := (httpapi.Callers{}).Scope(rc); err == nil {
		t.Fatal("a Cognito token was accepted with no app client configured")
	}
}

// Operators: the authorizer's role, the Cognito group in an accepted token only, and the IAM
// identities the deployment lists (a role ARN covers every session of the role).
func TestIsOperator(t *testing.T) {
	t.Parallel()
	callers := httpapi.Callers{CognitoClientIDs: []string{"client-1"},
		OperatorPrincipals: []string{"arn:aws:iam::111122223333:role/ops/oncall", "arn:aws:iam::111122223333:user/breakglass"}}
	group := map[string]any{"token_use": "id", "aud": "client-1", "custom:tenant": "acme", "sub": "u-1", "cognito:groups": "[longrun-operators]"}
	foreign := map[string]any{"token_use": "id", "aud": "client-x", "custom:tenant": "acme", "sub": "u-1", "cognito:groups": "[longrun-operators]"}
	tests := []struct {
		name string
		rc   events.APIGatewayProxyRequestContext
		want bool
	}{
		{"authorizer role", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"tenant": "t", "principal": "p", "role": "operator"}}, true},
		{"authorizer without role", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"tenant": "t", "principal": "p"}}, false},
		{"cognito group", cognito(group), true},
		{"cognito group in a foreign client's token", cognito(foreign), false},
		{"a session of the operator role", iam("arn:aws:sts::111122223333:assumed-role/oncall/jane"), true},
		{"another session of it", iam("arn:aws:sts::111122223333:assumed-role/oncall/i-0abc"), true},
		{"the same role name in another account", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{AccountID: "444455556666",
			UserArn: "arn:aws:sts::444455556666:assumed-role/oncall/jane"}}, false},
		{"another role", iam("arn:aws:sts::111122223333:assumed-role/exporter/jane"), false},
		{"a listed IAM user", iam("arn:aws:iam::111122223333:user/breakglass"), true},
		{"an IAM user not listed", iam("arn:aws:iam::111122223333:user/ci"), false},
		{"nobody", events.APIGatewayProxyRequestContext{}, false},
	}
	for _, tc := range tests {
		if got := callers.IsOperator(tc.rc); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if (httpapi.Callers{}).IsOperator(iam("arn:aws:sts::111122223333:assumed-role/oncall/jane")) {
		t.Error("with no operator principals configured, an IAM caller is an operator")
	}
}

// iam is the request context of a SigV4 request from arn, as API Gateway fills it.
func iam(arn string) events.APIGatewayProxyRequestContext {
	return events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{AccountID: "111122223333", UserArn: arn,
		Caller: "AROAEXAMPLEID:session", User: "AROAEXAMPLEID:session"}}
}

// One service retrying through another instance (another session of its role) is the same
// caller: its same-key request replays the first operation instead of creating a second,
// and it sees that operation. Another role is another caller.
func TestAssumedRoleSessionsShareAScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const (
		first  = "arn:aws:sts::123456789012:assumed-role/exporter/i-0abc123"
		second = "arn:aws:sts::123456789012:assumed-role/exporter/i-0def456"
		other  = "arn:aws:sts::123456789012:assumed-role/importer/i-0abc123"
		user   = "arn:aws:iam::123456789012:user/exporter"
	)
	a := e.do(req{userArn: first, keys: []string{"k-role"}, body: demo("role")})
	if a.status != http.StatusAccepted {
		t.Fatalf("first session: %d %s", a.status, a.body)
	}
	id := a.json["operationId"].(string)
	replay := e.do(req{userArn: second, keys: []string{"k-role"}, body: demo("role")})
	if replay.status != http.StatusAccepted || replay.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.body, a.body) {
		t.Fatalf("second session, same key: %d %s", replay.status, replay.body)
	}
	if g := e.do(req{method: http.MethodGet, path: "/v1/operations/" + id, userArn: second}); g.status != http.StatusOK {
		t.Fatalf("second session cannot see the role's operation: %d %s", g.status, g.body)
	}
	reused := e.do(req{userArn: second, keys: []string{"k-role"}, body: demo("role-changed")})
	wantProblem(t, reused, http.StatusConflict, "idempotency_key_reused")
	if reused.json["operationId"] != id {
		t.Fatalf("second session's 409: %s", reused.body)
	}
	if e.operations() != 1 {
		t.Fatalf("%d operations after two sessions of one role, want 1", e.operations())
	}

	for _, arn := range []string{other, user} {
		b := e.do(req{userArn: arn, keys: []string{"k-role"}, body: demo("role-" + path.Base(arn))})
		if b.status != http.StatusAccepted || b.header.Get("Idempotent-Replayed") != "" || b.json["operationId"] == id {
			t.Fatalf("%s with the role's key: %d %s", arn, b.status, b.body)
		}
		wantProblem(t, e.do(req{method: http.MethodGet, path: "/v1/operations/" + id, userArn: arn}), http.StatusNotFound, "not_found")
	}
	if e.operations() != 3 {
		t.Fatalf("%d operations, want 3", e.operations())
	}
	// The operation records the role as its principal, never a session.
	op, err := e.store.Load(context.Background(), id)
	if err != nil || op.Principal != "arn:aws:sts::123456789012:assumed-role/exporter" || op.Tenant != "123456789012" {
		t.Fatalf("stored scope %q/%q (%v)", op.Tenant, op.Principal, err)
	}
}
