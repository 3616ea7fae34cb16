package config

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/sizing"
)

// Reconcile is how the reconciler paces a run (internal/service/reconcile; docs/capacity.md,
// "Draining a backlog").
type Reconcile struct {
	// DispatchRate is LONGRUN_DISPATCH_RATE: the StartExecution calls per second a run makes
	// at most (dispatches and the continuations it starts). Default: half the region's
	// StartExecution refill (StartExecutionRefill), since the bucket is the account's and the
	// dispatcher and the recorder's hand-backs start executions from it too.
	DispatchRate float64
	// DescribeRate is LONGRUN_DESCRIBE_RATE: the DescribeExecution calls per second a run
	// makes at most (its looks at executions). Default: half the region's refill
	// (DescribeExecutionRefill), the other half left to the recorder's checks.
	DescribeRate float64
	// Budget is LONGRUN_RECONCILE_BUDGET: how long a run reads page after page of due
	// operations; 0 reads one page. Default DefaultReconcileBudget. Less than the reconciler's
	// timeout (internal/aws/sizing), and less than the schedule's period (the construct
	// checks that one).
	Budget time.Duration
	// Concurrency is LONGRUN_RECONCILE_CONCURRENCY: the operations a run works on at once.
	// Default DefaultReconcileConcurrency.
	Concurrency int
}

const (
	// DefaultReconcileBudget is three quarters of the schedule's minute: the run ends, with
	// room for its last calls and the count of unknown outcomes, before the next is due.
	DefaultReconcileBudget = 45 * time.Second
	// DefaultReconcileConcurrency keeps enough dispatches in flight for the default rate:
	// a dispatch is a read, a StartExecution and an append, some 60 ms end to end, so 16 at
	// once could make ~260 a second, above the 150 of the largest regions.
	DefaultReconcileConcurrency = 16
)

// largeRegion reports whether Step Functions gives region its larger API buckets: us-east-1,
// us-west-2 and eu-west-1 (Step Functions quotas, "Quotas related to API action throttling").
func largeRegion(region string) bool {
	switch region {
	case "us-east-1", "us-west-2", "eu-west-1":
		return true
	}
	return false
}

// StartExecutionRefill is StartExecution's refill per second in region, for Standard
// workflows: 300 in the large regions (bucket 1,300), 150 elsewhere (bucket 800), and the
// smaller when the region is unknown.
func StartExecutionRefill(region string) float64 {
	if largeRegion(region) {
		return 300
	}
	return 150
}

// DescribeExecutionRefill is DescribeExecution's refill per second in region: 15 in the large
// regions (bucket 300), 10 elsewhere (bucket 250).
func DescribeExecutionRefill(region string) float64 {
	if largeRegion(region) {
		return 15
	}
	return 10
}

// DefaultReconcile is the pacing in region without settings.
func DefaultReconcile(region string) Reconcile {
	return Reconcile{DispatchRate: StartExecutionRefill(region) / 2, DescribeRate: DescribeExecutionRefill(region) / 2,
		Budget: DefaultReconcileBudget, Concurrency: DefaultReconcileConcurrency}
}

// reconcileFromEnv reads Reconcile, with the defaults of the region the function runs in
// (AWS_REGION, which Lambda sets, as the SDK reads it).
func reconcileFromEnv() (Reconcile, error) {
	c := DefaultReconcile(os.Getenv("AWS_REGION"))
	for name, rate := range map[string]*float64{"LONGRUN_DISPATCH_RATE": &c.DispatchRate, "LONGRUN_DESCRIBE_RATE": &c.DescribeRate} {
		if v := os.Getenv(name); v != "" {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || !(r > 0) || r > 1e6 {
				return c, fmt.Errorf("config: %s=%q is not a positive number of calls per second", name, v)
			}
			*rate = r
		}
	}
	if v := os.Getenv("LONGRUN_RECONCILE_BUDGET"); v != "" {
		timeout := sizing.Functions()[sizing.Reconciler].Timeout
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d >= timeout {
			return c, fmt.Errorf("config: LONGRUN_RECONCILE_BUDGET=%q is not a duration from 0 to less than the reconciler's timeout (%s)", v, timeout)
		}
		c.Budget = d
	}
	if v := os.Getenv("LONGRUN_RECONCILE_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("config: LONGRUN_RECONCILE_CONCURRENCY=%q is not a positive integer", v)
		}
		c.Concurrency = n
	}
	return c, nil
}
