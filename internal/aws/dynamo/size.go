package dynamo

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// itemSize is an item's size as DynamoDB bills it ("DynamoDB item sizes and formats"): the
// UTF-8 length of each attribute's name plus the size of its value. The store uses it to
// decide what the projection can carry without costing a write unit more; a test holds it
// to internal/local/ddbmeter, the cost model's calculator of the same rules.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize is a value's size: a string its bytes; a number one byte per two significant
// digits plus one; a binary its bytes; a Boolean or null one byte; a list or map 3 bytes
// plus one per element plus the elements (and a map's names); a set its elements.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return NumberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += NumberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

// NumberSize is a number's size by the documented approximation: its significant digits
// (leading and trailing zeros trimmed, sign, point and exponent aside) halved and rounded
// up, plus one byte. Zero is one byte. The cost model's calculator (internal/local/ddbmeter)
// uses this one too.
func NumberSize(n string) int {
	mantissa, _, _ := strings.Cut(strings.ToLower(n), "e")
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, mantissa)
	digits = strings.Trim(digits, "0")
	return (len(digits)+1)/2 + 1
}

// WriteUnits is the write units of an item of size bytes: one per started kilobyte, at
// least one (an absent or empty item costs one).
func WriteUnits(size int) int { return max(1, (size+1023)/1024) }
