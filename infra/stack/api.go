package stack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// newAPI is the REST API: every method authorized (IAM by default, a Cognito user pool when
// configured), proxied to the api function, which sees every path and method (its routing
// answers 404 and 405), with API Gateway's own errors rewritten as the contract's
// problem+json and the stage throttled.
func newAPI(stack awscdk.Stack, props *Props, fn awslambda.Function, name func(string) *string) awsapigateway.RestApi {
	rate, burst := props.ThrottleRate, props.ThrottleBurst
	if rate == 0 {
		rate, burst = 100, 200
	}
	api := awsapigateway.NewRestApi(stack, jsii.String("RestApi"), &awsapigateway.RestApiProps{
		RestApiName: name("api"),
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(props.Stage),
			ThrottlingRateLimit:  jsii.Number(rate),
			ThrottlingBurstLimit: jsii.Number(burst),
			MetricsEnabled:       jsii.Bool(true),
		},
		CloudWatchRole: jsii.Bool(false),
	})
	method := &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_IAM}
	if props.CognitoUserPoolArn != "" {
		pool := awscognito.UserPool_FromUserPoolArn(stack, jsii.String("UserPool"), jsii.String(props.CognitoUserPoolArn))
		auth := awsapigateway.NewCognitoUserPoolsAuthorizer(stack, jsii.String("Authorizer"), &awsapigateway.CognitoUserPoolsAuthorizerProps{
			CognitoUserPools: &[]awscognito.IUserPool{pool},
		})
		method = &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_COGNITO, Authorizer: auth}
	}
	integration := awsapigateway.NewLambdaIntegration(fn, &awsapigateway.LambdaIntegrationOptions{Proxy: jsii.Bool(true)})

	// The one request check API Gateway makes itself: an admission carries an
	// Idempotency-Key (everything else is the function's to judge, with the contract's codes).
	validator := api.AddRequestValidator(jsii.String("Headers"), &awsapigateway.RequestValidatorOptions{
		RequestValidatorName:      name("headers"),
		ValidateRequestParameters: jsii.Bool(true),
	})
	withKey := *method
	withKey.RequestValidator = validator
	withKey.RequestParameters = &map[string]*bool{"method.request.header.Idempotency-Key": jsii.Bool(true)}

	// The contract's methods.
	root := api.Root()
	v1 := root.AddResource(jsii.String("v1"), nil)
	ops := v1.AddResource(jsii.String("operations"), nil)
	ops.AddMethod(jsii.String("POST"), integration, &withKey)
	ops.AddMethod(jsii.String("GET"), integration, method)
	one := ops.AddResource(jsii.String("{operationId}"), nil)
	one.AddMethod(jsii.String("GET"), integration, method)
	cancel := one.AddResource(jsii.String("cancel"), nil)
	cancel.AddMethod(jsii.String("POST"), integration, method)
	resolve := one.AddResource(jsii.String("resolve"), nil)
	resolve.AddMethod(jsii.String("POST"), integration, method)

	// Everything else reaches the function too, so the answers are the contract's: 405 with
	// Allow for a method a path lacks, 404 for a path the API lacks (docs/idempotency.md).
	// Every resource has ANY, authorized like the methods beside it and without the
	// validator: an explicit method wins over ANY, so only POST /v1/operations needs the key
	// (a DELETE there is the function's 405, not a 400). Every resource without a
	// path-variable child gets a greedy {proxy+} child with ANY, so a path resolves to a
	// method segment by segment, whether or not API Gateway would fall back to a greedy
	// resource higher up (/v1/operations needs none: {operationId} takes any next segment,
	// and a resource has at most one variable child). Authorization comes before the
	// integration: an anonymous caller still gets API Gateway's 401, on any path.
	for _, r := range []awsapigateway.IResource{root, v1, ops, one, cancel, resolve} {
		r.AddMethod(jsii.String("ANY"), integration, method)
	}
	for _, r := range []awsapigateway.IResource{root, v1, one, cancel, resolve} {
		r.AddResource(jsii.String("{proxy+}"), nil).AddMethod(jsii.String("ANY"), integration, method)
	}

	for _, r := range []struct {
		typ          awsapigateway.ResponseType
		id           string
		status, code string
		title        string
		retryAfter   bool
	}{
		{awsapigateway.ResponseType_UNAUTHORIZED(), "Unauthorized", "401", "unauthenticated", "Unauthenticated", false},
		{awsapigateway.ResponseType_MISSING_AUTHENTICATION_TOKEN(), "MissingToken", "401", "unauthenticated", "Unauthenticated", false},
		{awsapigateway.ResponseType_EXPIRED_TOKEN(), "ExpiredToken", "401", "unauthenticated", "Unauthenticated", false},
		{awsapigateway.ResponseType_INVALID_SIGNATURE(), "InvalidSignature", "401", "unauthenticated", "Unauthenticated", false},
		{awsapigateway.ResponseType_ACCESS_DENIED(), "AccessDenied", "403", "forbidden", "Forbidden", false},
		{awsapigateway.ResponseType_BAD_REQUEST_PARAMETERS(), "MissingKey", "400", "invalid_idempotency_key", "Invalid Idempotency-Key", false},
		{awsapigateway.ResponseType_REQUEST_TOO_LARGE(), "TooLarge", "413", "payload_too_large", "Payload too large", false},
		{awsapigateway.ResponseType_THROTTLED(), "Throttled", "503", "unavailable", "Service unavailable", true},
		{awsapigateway.ResponseType_DEFAULT_5XX(), "Default5xx", "500", "internal", "Internal error", false},
	} {
		headers := map[string]*string{
			"Content-Type":  jsii.String("'application/problem+json'"),
			"Cache-Control": jsii.String("'no-store'"),
			"X-Request-Id":  jsii.String("'gateway'"),
		}
		if r.retryAfter {
			headers["Retry-After"] = jsii.String("'1'")
		}
		// requestId is "gateway": API Gateway's own request id is a provider identifier and
		// stays out of public bodies; the access log correlates.
		body := fmt.Sprintf(`{"type":"https://longrun.dev/problems/%s","title":%q,"status":%s,"code":%q,"detail":"$context.error.message","requestId":"gateway"}`,
			r.code, r.title, r.status, r.code)
		api.AddGatewayResponse(jsii.String(r.id), &awsapigateway.GatewayResponseOptions{
			Type:            r.typ,
			StatusCode:      jsii.String(r.status),
			ResponseHeaders: &headers,
			Templates:       &map[string]*string{"application/json": jsii.String(body)},
		})
	}
	return api
}
