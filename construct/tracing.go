package construct

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The AWS Distro for OpenTelemetry (ADOT) collector layers, published by AWS in account
// adotAccount of every commercial region
// (https://aws-otel.github.io/docs/getting-started/lambda/lambda-go/): the collector runs as
// a Lambda extension, receives OTLP on localhost:4317 (gRPC) and :4318 (HTTP) and exports
// to X-Ray by default.
const (
	adotAccount = "901920570463"
	// adotCollectorVersion is the layer name's version part and the layer version
	// (docs/deploy.md, "Tracing", names it).
	adotCollectorVersion = "ver-0-117-0:1"
)

// Tracing settings on longrun's functions (the env contract of internal/aws/config).
const (
	// otlpEndpoint is where the functions send their spans: the collector extension's
	// OTLP/HTTP receiver.
	otlpEndpoint = "http://localhost:4318"
	tracingOTLP  = "otlp"
	tracingOff   = "off"
)

// adotCollectorLayerArn is the ADOT collector layer for arch ("arm64" or "amd64", as the
// layers name them) in region, which may be a token (the stack's region).
func adotCollectorLayerArn(region, arch string) string {
	return "arn:aws:lambda:" + region + ":" + adotAccount + ":layer:aws-otel-collector-" + arch + "-" + adotCollectorVersion
}

// tracing is what the tracing options give longrun's functions and the other resources.
type tracing struct {
	active bool                    // Lambda active tracing, state machines, API stage
	layer  awslambda.ILayerVersion // the collector; nil: spans are not exported
	env    map[string]*string      // LONGRUN_TRACING, OTEL_EXPORTER_OTLP_ENDPOINT
	mode   awslambda.Tracing       // the functions' TracingConfig; nil when off
}

// newTracing resolves the options in scope: the layer the prop names, or ADOT's for the
// architecture in the stack's region, or none where ADOT publishes none (a known region of
// another partition than aws).
func newTracing(scope constructs.Construct, opts TracingOptions, arch awslambda.Architecture) tracing {
	if opts.Disabled {
		return tracing{env: map[string]*string{"LONGRUN_TRACING": jsii.String(tracingOff)}}
	}
	t := tracing{active: true, mode: awslambda.Tracing_ACTIVE}
	arn := opts.CollectorLayerArn
	if arn == "" {
		stack := awscdk.Stack_Of(scope)
		region := *stack.Region()
		known := !*awscdk.Token_IsUnresolved(stack.Region())
		if !known || !(strings.HasPrefix(region, "cn-") || strings.HasPrefix(region, "us-gov-") || strings.HasPrefix(region, "us-iso")) {
			name := "arm64"
			if arch != nil && *arch.Name() == *awslambda.Architecture_X86_64().Name() {
				name = "amd64"
			}
			arn = adotCollectorLayerArn(region, name)
		}
	}
	if arn == "" {
		t.env = map[string]*string{"LONGRUN_TRACING": jsii.String(tracingOff)}
		return t
	}
	t.layer = awslambda.LayerVersion_FromLayerVersionArn(scope, jsii.String("CollectorLayer"), jsii.String(arn))
	t.env = map[string]*string{
		"LONGRUN_TRACING":             jsii.String(tracingOTLP),
		"OTEL_EXPORTER_OTLP_ENDPOINT": jsii.String(otlpEndpoint),
	}
	return t
}
