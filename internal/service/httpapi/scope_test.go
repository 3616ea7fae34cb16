package httpapi_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

// Every way API Gateway can tell who called: a Lambda authorizer's context, Cognito claims,
// or the IAM identity of a SigV4 request. Nothing else counts.
func TestScopeOf(t *testing.T) {
	tests := []struct {
		name string
		rc   events.APIGatewayProxyRequestContext
		want string // "tenant/principal", "" for 401
	}{
		{"lambda authorizer", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"tenant": "acme", "principal": "alice"}}, "acme/alice"},
		{"cognito", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"claims": map[string]any{"custom:tenant": "acme", "sub": "u-1"}}}, "acme/u-1"},
		{"iam user arn", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{AccountID: "111122223333", UserArn: "arn:aws:iam::111122223333:user/ci"}}, "111122223333/arn:aws:iam::111122223333:user/ci"},
		{"iam caller", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{AccountID: "111122223333", Caller: "AIDAEXAMPLE"}}, "111122223333/AIDAEXAMPLE"},
		{"tenant without principal", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"tenant": "acme"}}, ""},
		{"account without identity", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{AccountID: "111122223333"}}, ""},
		{"nothing", events.APIGatewayProxyRequestContext{}, ""},
	}
	for _, tc := range tests {
		s, err := httpapi.ScopeOf(tc.rc)
		got := ""
		if err == nil {
			got = s.Tenant + "/" + s.Principal
		}
		if got != tc.want {
			t.Errorf("%s: %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}
