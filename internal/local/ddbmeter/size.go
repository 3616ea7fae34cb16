// Package ddbmeter prices DynamoDB calls in request units as DynamoDB on-demand bills them,
// from the real sizes of the items they touch: a calculator of DynamoDB's documented rules
// (item sizes, read and write units, transactions, failed conditions, global secondary
// indexes) and a Meter, an HTTP proxy in front of DynamoDB Local that reads each written
// item before and after the write and each read item in full, and adds up what every call
// would have cost. DynamoDB Local reports no faithful consumed capacity of its own.
//
// The rules and their sources are in docs/cost.md.
package ddbmeter

import (
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
)

// Value is one attribute value as DynamoDB's JSON protocol carries it: exactly one field is
// set. Binary values arrive in base64 and decode to their raw bytes, which is what DynamoDB
// counts.
type Value struct {
	S    *string          `json:"S,omitempty"`
	N    *string          `json:"N,omitempty"`
	B    []byte           `json:"B,omitempty"`
	BOOL *bool            `json:"BOOL,omitempty"`
	NULL *bool            `json:"NULL,omitempty"`
	L    []Value          `json:"L,omitempty"`
	M    map[string]Value `json:"M,omitempty"`
	SS   []string         `json:"SS,omitempty"`
	NS   []string         `json:"NS,omitempty"`
	BS   [][]byte         `json:"BS,omitempty"`
}

// Item is an item: attribute name → value.
type Item map[string]Value

// Size is an item's size as DynamoDB counts it for capacity: the sum over its attributes of
// the UTF-8 length of the name and the size of the value.
func Size(it Item) int {
	n := 0
	for name, v := range it {
		n += len(name) + ValueSize(v)
	}
	return n
}

// ValueSize is the size of one value ("DynamoDB item sizes and formats"): a string its UTF-8
// bytes; a number about one byte per two significant digits plus one; a binary its raw
// bytes; a Boolean or null one byte; a list or map 3 bytes plus its elements plus one byte
// per element (a map element's name counts too). Sets are not on that page: a set counts as
// the sum of its elements, without overhead.
func ValueSize(v Value) int {
	switch {
	case v.S != nil:
		return len(*v.S)
	case v.N != nil:
		return NumberSize(*v.N)
	case v.B != nil:
		return len(v.B)
	case v.BOOL != nil, v.NULL != nil:
		return 1
	case v.L != nil:
		n := 3
		for _, e := range v.L {
			n += 1 + ValueSize(e)
		}
		return n
	case v.M != nil:
		n := 3
		for k, e := range v.M {
			n += 1 + len(k) + ValueSize(e)
		}
		return n
	case v.SS != nil:
		n := 0
		for _, s := range v.SS {
			n += len(s)
		}
		return n
	case v.NS != nil:
		n := 0
		for _, s := range v.NS {
			n += NumberSize(s)
		}
		return n
	case v.BS != nil:
		n := 0
		for _, b := range v.BS {
			n += len(b)
		}
		return n
	}
	return 0
}

// NumberSize is a number's size by the documented approximation (dynamo.NumberSize: the
// store decides by the same rule what its projection can carry).
func NumberSize(n string) int { return dynamo.NumberSize(n) }

// WriteUnits is the write request units of writing an item of size bytes: one per started
// KB, at least one (an absent or empty item costs one).
func WriteUnits(size int) int { return dynamo.WriteUnits(size) }

// ReadUnits is the read request units of a strongly consistent read of size bytes: one per
// started 4 KB, at least one (reading nothing still costs one).
func ReadUnits(size int) int { return max(1, (size+4095)/4096) }
