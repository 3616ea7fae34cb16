package stack

import (
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"
)

// alarms watches what must never pile up: dead letters (a record no consumer could handle),
// function errors, failed workflows, and operations the reconciler had to repair (stuck
// work). Alarms carry no actions: each account routes them its own way.
func alarms(stack awscdk.Stack, props *Props, fns map[string]awslambda.Function, dlqs map[string]awssqs.Queue,
	machines map[string]awsstepfunctions.StateMachine, name func(string) *string) {
	alarm := func(id string, metric awscloudwatch.IMetric, desc string) {
		awscloudwatch.NewAlarm(stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmName:          name(id),
			AlarmDescription:   jsii.String(desc),
			Metric:             metric,
			Threshold:          jsii.Number(0),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
	}
	for _, q := range sorted(dlqs) {
		alarm(title(q)+"DeadLettersVisible", dlqs[q].MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum"),
		}), "Records the "+q+" could not process are waiting in its dead-letter queue.")
	}
	for _, f := range sorted(fns) {
		alarm(title(f)+"Errors", fns[f].MetricErrors(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
		}), "The "+f+" function failed invocations.")
	}
	for _, m := range sorted(machines) {
		alarm(title(m)+"ExecutionsFailed", machines[m].MetricFailed(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
		}), "Executions of the "+m+" workflow failed (the recorder could not record an outcome).")
	}
	// The reconciler logs one line per repaired operation; repairs mean work got stuck.
	filter := awslogs.NewMetricFilter(stack, jsii.String("StuckOperationsRepaired"), &awslogs.MetricFilterProps{
		LogGroup:        fns["reconciler"].LogGroup(),
		FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(`{ $.msg = "reconciled" && ($.action = "stopped" || $.action = "recorded" || $.action = "dispatched") }`)),
		MetricNamespace: jsii.String("longrun/" + props.Stage),
		MetricName:      jsii.String("StuckOperationsRepaired"),
		MetricValue:     jsii.String("1"),
	})
	alarm("StuckOperations", filter.Metric(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
	}), "The reconciler had to dispatch, stop or settle operations that were stuck.")
}

func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
