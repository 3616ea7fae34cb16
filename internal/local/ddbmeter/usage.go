package ddbmeter

import "reflect"

// Usage is request units consumed, as on-demand bills them.
type Usage struct {
	WRU      float64 `json:"wru"`      // the table's write request units
	IndexWRU float64 `json:"indexWru"` // global secondary indexes' write request units
	RRU      float64 `json:"rru"`      // read request units
}

// Plus is u and o together.
func (u Usage) Plus(o Usage) Usage {
	return Usage{WRU: u.WRU + o.WRU, IndexWRU: u.IndexWRU + o.IndexWRU, RRU: u.RRU + o.RRU}
}

// Write is one item a write call touched.
type Write struct {
	Before, After Item // the item before and after the call; nil when absent
	// Transactional marks an item of a TransactWriteItems: DynamoDB writes it twice (prepare
	// and commit), two units per started KB.
	Transactional bool
	// Check marks a ConditionCheck of a TransactWriteItems: it writes nothing, yet it is
	// billed as a transactional write of the item it checks.
	Check bool
	// Failed marks a write whose condition failed, or an item of a cancelled transaction:
	// nothing is written, but the units of the existing item (one when there is none) are
	// consumed.
	Failed bool
}

// WriteUsage is what w consumes on t: the table's units for the larger of the item before
// and after, and, when it succeeded, the index writes it causes.
func (t *Table) WriteUsage(w Write) Usage {
	factor := 1.0
	if w.Transactional || w.Check {
		factor = 2
	}
	if w.Check || w.Failed {
		return Usage{WRU: factor * float64(WriteUnits(Size(w.Before)))}
	}
	u := Usage{WRU: factor * float64(WriteUnits(max(Size(w.Before), Size(w.After))))}
	for _, ix := range t.Indexes {
		u.IndexWRU += float64(indexWrites(ix, t.Entry(ix, w.Before), t.Entry(ix, w.After)))
	}
	return u
}

// indexWrites is the units an index spends when a write turns its entry before into after
// (nil: no entry). Index writes are never doubled: DynamoDB propagates a transaction's
// changes to its indexes after it commits, as it does a single write's.
func indexWrites(ix Index, before, after Item) int {
	switch {
	case before == nil && after == nil: // not in the index before or after: free
		return 0
	case before == nil: // the item enters the index: a put
		return WriteUnits(Size(after))
	case after == nil: // it leaves: a delete
		return WriteUnits(Size(before))
	case !sameKey(ix, before, after): // its index key changed: a delete and a put
		return WriteUnits(Size(before)) + WriteUnits(Size(after))
	case reflect.DeepEqual(before, after): // nothing the index holds changed: no index write
		return 0
	default: // projected attributes changed in place
		return WriteUnits(max(Size(before), Size(after)))
	}
}

func sameKey(ix Index, a, b Item) bool {
	for _, k := range ix.Keys {
		if !reflect.DeepEqual(a[k], b[k]) {
			return false
		}
	}
	return true
}

// Consistency is how a read reads.
type Consistency int

const (
	Eventual      Consistency = iota // half a unit per started 4 KB
	Strong                           // one unit per started 4 KB
	Transactional                    // two units per started 4 KB
)

func (c Consistency) factor() float64 {
	switch c {
	case Strong:
		return 1
	case Transactional:
		return 2
	}
	return 0.5
}

// Read is what one read call read.
type Read struct {
	// Sizes are the sizes of the items read, whole whatever the call projected (an index
	// entry's size for an index); 0 for a key that found nothing.
	Sizes       []int
	Consistency Consistency
	// Summed marks Query and Scan: the items' sizes are added up and the sum rounded up to
	// 4 KB, at least one unit even when nothing matched. GetItem, BatchGetItem and
	// TransactGetItems round each item on its own.
	Summed bool
}

// ReadUsage is what r consumes.
func ReadUsage(r Read) Usage {
	units := 0
	if r.Summed {
		total := 0
		for _, s := range r.Sizes {
			total += s
		}
		units = ReadUnits(total)
	} else {
		for _, s := range r.Sizes {
			units += ReadUnits(s)
		}
	}
	return Usage{RRU: r.Consistency.factor() * float64(units)}
}
