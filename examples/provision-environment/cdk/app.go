package main

import (
	"fmt"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/construct"
)

// AppProps are what the app needs besides the definitions file.
type AppProps struct {
	Stage string
	// TypesFile is longrun.types.yaml.
	TypesFile string
	// LongrunCode holds longrun's function zips: `go run github.com/longrun-dev/longrun/cmd/release -out DIR`.
	LongrunCode string
	// WorkerCode and SubscriberCode are folders holding each function's bootstrap, built for
	// linux/arm64 (`make -C cdk build` does both).
	WorkerCode, SubscriberCode string
	// ProvisionerURL is where the worker reaches the provisioning system.
	ProvisionerURL string

	// CatalogURL is where the registrar reaches the team's service catalog. With it the app
	// deploys the registrar, the TypeScript worker of register.environment, beside the Go
	// worker, and serves that type too; empty, neither.
	CatalogURL string
	// RegistrarTypesFile is registrar/registrar.types.yaml, register.environment's
	// definition.
	RegistrarTypesFile string
	// RegistrarCode is the registrar's Lambda asset, a folder holding worker.js, a
	// package.json saying it is an ES module, and @longrun/worker in its node_modules (`make
	// registrar` writes it).
	RegistrarCode string
}

// NewStack is the team's stack: longrun with provision.environment, the worker as a
// function of this app, and the subscriber on longrun's bus; with a CatalogURL, also
// register.environment and its TypeScript worker, the registrar.
func NewStack(scope constructs.Construct, id string, p AppProps) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)

	props := &construct.Props{
		Stage:      p.Stage,
		TypesFiles: []string{p.TypesFile},
		CodeDir:    p.LongrunCode,
	}
	if p.CatalogURL != "" {
		props.TypesFiles = append(props.TypesFiles, p.RegistrarTypesFile)
	}
	// Each worker may run as long as its type's stepTimeout (5 min, 30 s).
	timeouts, err := construct.WorkerTimeouts(props)
	if err != nil {
		panic(err)
	}
	worker := awslambda.NewFunction(stack, jsii.String("Provisioner"), &awslambda.FunctionProps{
		FunctionName:  jsii.String("provision-" + p.Stage + "-worker"),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(p.WorkerCode), nil),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(timeouts["provisioner"].Seconds())),
		MemorySize:    jsii.Number(256),
		LoggingFormat: awslambda.LoggingFormat_JSON,
		Environment:   &map[string]*string{"PROVISIONER_URL": jsii.String(p.ProvisionerURL)},
	})

	props.Workers = map[string]awslambda.IFunction{"provisioner": worker}
	if p.CatalogURL != "" {
		// The registrar is TypeScript on AWS's Node.js runtime. longrun invokes a worker with
		// a JSON step request and reads the JSON report it answers, so the construct takes it
		// as it takes the Go one: a function, of any runtime, with the timeout its type needs.
		props.Workers["registrar"] = awslambda.NewFunction(stack, jsii.String("Registrar"), &awslambda.FunctionProps{
			FunctionName:  jsii.String("provision-" + p.Stage + "-registrar"),
			Runtime:       awslambda.Runtime_NODEJS_22_X(),
			Architecture:  awslambda.Architecture_ARM_64(),
			Handler:       jsii.String("worker.handler"),
			Code:          awslambda.Code_FromAsset(jsii.String(p.RegistrarCode), nil),
			Timeout:       awscdk.Duration_Seconds(jsii.Number(timeouts["registrar"].Seconds())),
			MemorySize:    jsii.Number(256),
			LoggingFormat: awslambda.LoggingFormat_JSON,
			Environment:   &map[string]*string{"CATALOG_URL": jsii.String(p.CatalogURL)},
		})
	}
	lr := construct.New(stack, "Longrun", props)

	// The subscriber hears this type's state changes and nothing else.
	subscriber := awslambda.NewFunction(stack, jsii.String("Subscriber"), &awslambda.FunctionProps{
		FunctionName:  jsii.String("provision-" + p.Stage + "-subscriber"),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(p.SubscriberCode), nil),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(10)),
		MemorySize:    jsii.Number(128),
		LoggingFormat: awslambda.LoggingFormat_JSON,
	})
	awsevents.NewRule(stack, jsii.String("EnvironmentChanges"), &awsevents.RuleProps{
		EventBus: lr.Bus,
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("longrun"),
			DetailType: jsii.Strings("Operation State Changed"),
			Detail: &map[string]interface{}{
				"type":  []string{"provision.environment"},
				"state": []string{"succeeded", "failed", "outcome_unknown"},
			},
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(subscriber, nil)},
	})

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: lr.APIURL})
	awscdk.NewCfnOutput(stack, jsii.String("EventBusName"), &awscdk.CfnOutputProps{Value: lr.Bus.EventBusName()})
	return stack
}

// fromContext reads AppProps from the CDK context (cdk.json or -c key=value), with paths
// relative to the example's folder.
func fromContext(app awscdk.App, root string) AppProps {
	get := func(key, def string) string {
		if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
			return v
		}
		return def
	}
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	p := AppProps{
		Stage:          get("stage", "dev"),
		TypesFile:      rel(get("typesFile", "longrun.types.yaml")),
		LongrunCode:    rel(get("longrunCode", ".cache/longrun-dist")),
		WorkerCode:     rel(get("workerCode", ".cache/lambda/worker")),
		SubscriberCode: rel(get("subscriberCode", ".cache/lambda/subscriber")),
		ProvisionerURL: get("provisionerUrl", ""),
		// The registrar is optional: without a catalog, the app serves provision.environment alone.
		CatalogURL:         get("catalogUrl", ""),
		RegistrarTypesFile: rel(get("registrarTypesFile", "registrar/registrar.types.yaml")),
		RegistrarCode:      rel(get("registrarCode", ".cache/lambda/registrar")),
	}
	if p.ProvisionerURL == "" {
		panic(fmt.Errorf("context provisionerUrl: where the worker reaches the provisioning system"))
	}
	return p
}
