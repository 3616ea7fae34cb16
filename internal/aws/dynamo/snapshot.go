package dynamo

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// The projection item carries a snapshot of the fold (attribute snap, a map), written by the
// same update as the rest of the item, so that Load reads one item, or two, however long the
// history: not every fact. The snapshot holds only what the item's other attributes do not
// hold exactly. The state and the version are attributes; the type, target, tenant and
// correlation id are attributes written at admission; cancelRequested and the progress are
// in the representation, and so are the result of a succeeded operation and the problem of
// a failed or unknown one (the fold holds neither in any other state: operation.Apply sets
// a result only with the terminal succeeded fact, and a problem only with failed and
// outcome_unknown, which only succeeded, clearing it, and failed, replacing it, follow).
// Times are kept to the nanosecond, not the representation's millisecond.
//
// The admission (and the creation time) is in the snapshot only when it fits: when the
// item with it takes no more write units than without it. An update is billed at the size of
// the whole item, on the table and again on the scope index (which projects every
// attribute), so bytes that cross a kilobyte would be paid on every append; then Load reads
// the admission from the accepted fact instead, which never changes.
//
// Nothing reads the snapshot but Load: the list, the attention list and the notifier read
// the representation and named attributes only, so the execution reference and the lease
// (internal, never public) never reach a response or an event.
const attrSnap = "snap"

// Snapshot members. Their names are short because every byte of the projection is paid
// again on every append.
const (
	snapVersion       = "v"  // N: the version the snapshot is of (stale when not the item's)
	snapUpdated       = "u"  // time: UpdatedAt
	snapObserved      = "o"  // time: ObservedAt, when set and not UpdatedAt
	snapObservedAtUpd = "ou" // BOOL: ObservedAt is UpdatedAt
	snapStarted       = "s"  // BOOL: Started
	snapLeased        = "ld" // BOOL: Leased
	snapExecution     = "x"  // S: Execution, when its name is not the operation's id or <id>-<k>
	snapExecutionOwn  = "xe" // S: Execution with the operation's id left out of its name (elide)
	snapLease         = "l"  // M: the lease (leaseRun, leaseUntil, leaseExecution)
	snapWaiting       = "w"  // time since ObservedAt: WaitingUntil, when set
	snapNoResult      = "r0" // BOOL: succeeded without a result (the representation shows {})
	snapNoProblem     = "p0" // BOOL: failed or outcome_unknown without a problem (the representation shows a generic one)
	snapAdmission     = "a"  // M: the admission and the creation time, when they fit

	leaseRun       = "r" // S
	leaseUntil     = "u" // time since ObservedAt (the fact that took it)
	leaseExecution = "x" // S, only when it is not the operation's latest execution's name
	leaseVersion   = "v" // N: the version of the fact whose lease has a callback (a parked Run's), kept there only

	admCreated        = "c"  // time: CreatedAt
	admPrincipal      = "p"  // S
	admTypeVersion    = "tv" // N
	admInput          = "in" // S: the input, JSON
	admQuota          = "qr" // BOOL
	admQuotaShard     = "qs" // N
	admPrincipalQuota = "pr" // BOOL
	admPrincipalShard = "ps" // N
	admQuotaWeight    = "qw" // N
	admDeadline       = "dl" // time since CreatedAt
	admTraceparent    = "tp" // S, when it is not of the correlation id's trace
	admSpan           = "ts" // S: the traceparent after "00-<correlation id>", when it is
)

// snapshotOf is op's snapshot, with the admission when admitted. op's input must be as it
// is stored (an input given with spaces is stored without), or a read would differ from a
// fold of the facts. ok is false when the snapshot and the item's other attributes could
// not give op back: then no snapshot is written.
func snapshotOf(op operation.Operation, admitted bool) (v types.AttributeValue, ok bool) {
	switch {
	case len(op.Result) > 0 && op.State != operation.Succeeded,
		op.Problem != nil && op.State != operation.Failed && op.State != operation.OutcomeUnknown:
		return nil, false // the representation does not show it in this state
	case len(op.Signals) > 0 || op.Awaiting != nil || op.Delivery != nil:
		// Signals and waits for them are folded from the facts: an operation that uses
		// them has a handful more, and their data is no cost to every append.
		return nil, false
	case op.Retryable != nil || op.Retried != nil:
		// So are retries, which only an unknown outcome brings: rare, and the state they
		// keep is the worker's.
		return nil, false
	}
	m := map[string]types.AttributeValue{snapVersion: num(int64(op.Version)), snapUpdated: timeValue(op.UpdatedAt)}
	switch {
	case op.ObservedAt.IsZero():
	case op.ObservedAt.Equal(op.UpdatedAt):
		m[snapObservedAtUpd] = yes()
	default:
		m[snapObserved] = timeValue(op.ObservedAt)
	}
	if op.Started {
		m[snapStarted] = yes()
	}
	if op.Leased {
		m[snapLeased] = yes()
	}
	if elided, own := elide(op.Execution, op.ID); own {
		m[snapExecutionOwn] = str(elided)
	} else if op.Execution != "" {
		m[snapExecution] = str(op.Execution)
	}
	if l := op.Lease; l != nil {
		lease := map[string]types.AttributeValue{leaseRun: str(l.Run), leaseUntil: sinceValue(l.Until, op.ObservedAt)}
		if l.Execution != op.ExecutionName() {
			lease[leaseExecution] = str(l.Execution)
		}
		if op.LeaseVersion > 0 {
			// The callback (a task token, up to 2 KB on AWS) stays in its fact: in the
			// snapshot it would be paid on every append, on the table and the scope index.
			lease[leaseVersion] = num(int64(op.LeaseVersion))
		}
		m[snapLease] = &types.AttributeValueMemberM{Value: lease}
	}
	if !op.WaitingUntil.IsZero() {
		m[snapWaiting] = sinceValue(op.WaitingUntil, op.ObservedAt)
	}
	switch {
	case op.State == operation.Succeeded && len(op.Result) == 0:
		m[snapNoResult] = yes()
	case (op.State == operation.Failed || op.State == operation.OutcomeUnknown) && op.Problem == nil:
		m[snapNoProblem] = yes()
	}
	if admitted {
		m[snapAdmission] = admissionValue(op)
	}
	return &types.AttributeValueMemberM{Value: m}, true
}

// admissionValue is the admission's part of the snapshot: what the attributes written at
// admission (type, target, tenant, correlation id) do not hold, and the creation time.
func admissionValue(op operation.Operation) types.AttributeValue {
	a := op.Admission
	m := map[string]types.AttributeValue{admCreated: timeValue(op.CreatedAt), admPrincipal: str(a.Principal)}
	if a.TypeVersion != 0 {
		m[admTypeVersion] = num(int64(a.TypeVersion))
	}
	if a.Input != nil {
		m[admInput] = str(string(a.Input))
	}
	if a.QuotaReserved {
		m[admQuota] = yes()
	}
	if a.QuotaShard != 0 {
		m[admQuotaShard] = num(int64(a.QuotaShard))
	}
	if a.PrincipalQuotaReserved {
		m[admPrincipalQuota] = yes()
	}
	if a.PrincipalQuotaShard != 0 {
		m[admPrincipalShard] = num(int64(a.PrincipalQuotaShard))
	}
	if a.QuotaWeight != 0 {
		m[admQuotaWeight] = num(int64(a.QuotaWeight))
	}
	if !a.Deadline.IsZero() {
		m[admDeadline] = sinceValue(a.Deadline, op.CreatedAt)
	}
	// The admission's span is in the trace the correlation id names, which the item holds.
	if span, ok := strings.CutPrefix(a.Traceparent, traceOf(a.CorrelationID)); ok && a.CorrelationID != "" {
		m[admSpan] = str(span)
	} else if a.Traceparent != "" {
		m[admTraceparent] = str(a.Traceparent)
	}
	return &types.AttributeValueMemberM{Value: m}
}

// withSnapshot adds op's snapshot to set, the attributes an append sets on the projection
// item; fixed are the attributes written only at admission. The admission goes in when the
// whole item takes no more write units with it than without it, with room left for the
// reconciler's count of attempts (Reschedule adds it to an overdue operation's item). It
// reports false when op has no snapshot (snapshotOf).
func withSnapshot(op operation.Operation, fixed, set map[string]types.AttributeValue) bool {
	lean, ok := snapshotOf(op, false)
	if !ok {
		return false
	}
	full, _ := snapshotOf(op, true)
	const attempts = len(attrAttempts) + 3 // a count below 10,000
	rest := itemSize(fixed) + itemSize(set) + len(attrSnap) + attempts
	if WriteUnits(rest+valueSize(full)) == WriteUnits(rest+valueSize(lean)) {
		set[attrSnap] = full
	} else {
		set[attrSnap] = lean
	}
	return true
}

// fromProjection reads operation id from its projection item. ok is false when the item has
// no snapshot of its own version (written before snapshots, or since by a writer of that
// age, which updates the rest of the item but not the snapshot) or one that cannot be read:
// the caller folds the facts instead. admitted is false when the snapshot leaves the
// admission and the creation time to the accepted fact.
func fromProjection(id string, item map[string]types.AttributeValue) (op operation.Operation, admitted, ok bool) {
	snap, found := item[attrSnap].(*types.AttributeValueMemberM)
	if !found {
		return op, false, false
	}
	op, admitted, err := decodeSnapshot(id, item, snap.Value)
	return op, admitted, err == nil
}

func decodeSnapshot(id string, item, snap map[string]types.AttributeValue) (op operation.Operation, admitted bool, err error) {
	r := reader{}
	op.ID = id
	op.Version = r.int(item, attrVersion)
	if v := r.int(snap, snapVersion); r.err == nil && v != op.Version {
		return op, false, fmt.Errorf("snapshot of version %d in a projection of version %d", v, op.Version)
	}
	op.State = operation.State(r.str(item, attrState))
	op.Type, op.Target, op.Tenant = r.str(item, attrType), r.str(item, attrTarget), r.str(item, attrTenant)
	op.CorrelationID = r.optStr(item, attrCorrelation)
	op.UpdatedAt = r.time(snap, snapUpdated)
	switch {
	case r.flag(snap, snapObservedAtUpd):
		op.ObservedAt = op.UpdatedAt
	case snap[snapObserved] != nil:
		op.ObservedAt = r.time(snap, snapObserved)
	}
	op.Started, op.Leased = r.flag(snap, snapStarted), r.flag(snap, snapLeased)
	op.Execution = r.optStr(snap, snapExecution)
	if _, has := snap[snapExecutionOwn]; has {
		op.Execution = unelide(r.str(snap, snapExecutionOwn), id)
	}
	if lv, has := snap[snapLease]; has {
		l := r.mapOf(lv)
		op.Lease = &operation.Lease{Run: r.str(l, leaseRun), Until: r.since(l, leaseUntil, op.ObservedAt), Execution: op.ExecutionName()}
		if _, has := l[leaseExecution]; has {
			op.Lease.Execution = r.str(l, leaseExecution)
		}
		if _, has := l[leaseVersion]; has {
			op.LeaseVersion = r.int(l, leaseVersion)
		}
	}
	if _, has := snap[snapWaiting]; has {
		op.WaitingUntil = r.since(snap, snapWaiting, op.ObservedAt)
	}
	if r.err != nil {
		return op, false, r.err
	}
	rep, err := decodeRep(item)
	if err != nil {
		return op, false, err
	}
	op.CancelRequested, op.Progress = rep.CancelRequested, rep.Progress
	switch op.State {
	case operation.Succeeded:
		if !r.flag(snap, snapNoResult) {
			op.Result = rep.Result
		}
	case operation.Failed, operation.OutcomeUnknown:
		if !r.flag(snap, snapNoProblem) {
			op.Problem = rep.Problem
		}
	}
	av, admitted := snap[snapAdmission]
	if admitted {
		a := r.mapOf(av)
		op.CreatedAt = r.time(a, admCreated)
		op.Principal = r.str(a, admPrincipal)
		op.TypeVersion = r.optInt(a, admTypeVersion)
		if _, has := a[admInput]; has {
			op.Input = []byte(r.str(a, admInput))
		}
		op.QuotaReserved, op.PrincipalQuotaReserved = r.flag(a, admQuota), r.flag(a, admPrincipalQuota)
		op.QuotaShard, op.PrincipalQuotaShard = r.optInt(a, admQuotaShard), r.optInt(a, admPrincipalShard)
		op.QuotaWeight = r.optInt(a, admQuotaWeight)
		if _, has := a[admDeadline]; has {
			op.Deadline = r.since(a, admDeadline, op.CreatedAt)
		}
		op.Traceparent = r.optStr(a, admTraceparent)
		if _, has := a[admSpan]; has {
			op.Traceparent = traceOf(op.CorrelationID) + r.str(a, admSpan)
		}
	}
	return op, admitted, r.err
}

// elide leaves the operation's id out of an execution reference whose name (after the last
// colon) begins with it, as the names of an operation's executions do (<id>, <id>-<k>): own
// is false for any other reference, which is kept whole.
func elide(ref, id string) (elided string, own bool) {
	i := strings.LastIndex(ref, ":")
	rest, own := strings.CutPrefix(ref[i+1:], id)
	if !own || id == "" {
		return "", false
	}
	return ref[:i+1] + rest, true
}

// unelide puts the id back after the last colon (the rest of a name has none).
func unelide(elided, id string) string {
	i := strings.LastIndex(elided, ":")
	return elided[:i+1] + id + elided[i+1:]
}

// traceOf is how a W3C traceparent of the trace id starts.
func traceOf(traceID string) string { return "00-" + traceID }

// yes is a true flag (a new value each time: attribute values are pointers).
func yes() types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: true} }

// timeValue keeps an instant to the nanosecond: a number of nanoseconds since 1970 where
// that fits in 64 bits (the years 1678 to 2261), its RFC 3339 text otherwise.
func timeValue(t time.Time) types.AttributeValue {
	if y := t.Year(); y > 1677 && y < 2262 {
		return num(t.UnixNano())
	}
	return str(t.UTC().Format(time.RFC3339Nano))
}

// sinceValue keeps t as the nanoseconds since base when that is exact (most are a round
// time after it: a deadline an hour after creation is 3600000000000, which DynamoDB counts
// as two bytes, trailing zeros being free), as its RFC 3339 text otherwise.
func sinceValue(t, base time.Time) types.AttributeValue {
	if d := t.Sub(base); base.Add(d).Equal(t) {
		return num(int64(d))
	}
	return str(t.UTC().Format(time.RFC3339Nano))
}

// reader reads snapshot members, keeping the first error: a snapshot that cannot be read is
// folded instead, whichever member failed.
type reader struct{ err error }

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) str(m map[string]types.AttributeValue, name string) string {
	v, ok := m[name].(*types.AttributeValueMemberS)
	if !ok {
		r.fail(fmt.Errorf("snapshot: %s is not a string", name))
		return ""
	}
	return v.Value
}

func (r *reader) optStr(m map[string]types.AttributeValue, name string) string {
	if _, has := m[name]; !has {
		return ""
	}
	return r.str(m, name)
}

func (r *reader) int(m map[string]types.AttributeValue, name string) int {
	v, ok := m[name].(*types.AttributeValueMemberN)
	if !ok {
		r.fail(fmt.Errorf("snapshot: %s is not a number", name))
		return 0
	}
	n, err := strconv.Atoi(v.Value)
	if err != nil {
		r.fail(fmt.Errorf("snapshot: %s: %w", name, err))
	}
	return n
}

func (r *reader) optInt(m map[string]types.AttributeValue, name string) int {
	if _, has := m[name]; !has {
		return 0
	}
	return r.int(m, name)
}

func (r *reader) flag(m map[string]types.AttributeValue, name string) bool {
	v, has := m[name]
	if !has {
		return false
	}
	b, ok := v.(*types.AttributeValueMemberBOOL)
	if !ok {
		r.fail(fmt.Errorf("snapshot: %s is not a Boolean", name))
		return false
	}
	return b.Value
}

func (r *reader) mapOf(v types.AttributeValue) map[string]types.AttributeValue {
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		r.fail(errors.New("snapshot: a member is not a map"))
		return nil
	}
	return m.Value
}

func (r *reader) time(m map[string]types.AttributeValue, name string) time.Time {
	return r.since(m, name, time.Unix(0, 0)) // nanoseconds since the epoch, or RFC 3339
}

// since reads a sinceValue.
func (r *reader) since(m map[string]types.AttributeValue, name string, base time.Time) time.Time {
	switch v := m[name].(type) {
	case *types.AttributeValueMemberN:
		d, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			r.fail(fmt.Errorf("snapshot: %s: %w", name, err))
		}
		return base.Add(time.Duration(d)).UTC()
	case *types.AttributeValueMemberS:
		t, err := time.Parse(time.RFC3339Nano, v.Value)
		if err != nil {
			r.fail(fmt.Errorf("snapshot: %s: %w", name, err))
		}
		return t.UTC()
	}
	r.fail(fmt.Errorf("snapshot: %s is not a time", name))
	return time.Time{}
}
