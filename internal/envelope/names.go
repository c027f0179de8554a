package envelope

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The attribute names homing writes its metadata under. They are ours: a
// producer's attribute of one of these names is never decoded as our
// metadata (see [Neutral]), and Unpack refuses them in an overflow section.
// invalid and replay declare their AttributeName with
// these values.
const (
	InvalidAttributeName = "homing-invalid"
	ReplayAttributeName  = "homing-replay"
)

// maxNameBytes is SQS's limit on an attribute name.
const maxNameBytes = 256

// ValidName reports whether name is a message attribute name SQS accepts
// from a producer: 1..256 characters of letters, digits, '_', '-' and '.',
// not starting or ending with '.', without "..", and not starting with
// "AWS." or "Amazon." in any casing.
func ValidName(name string) bool {
	if name == "" || len(name) > maxNameBytes || name[0] == '.' || name[len(name)-1] == '.' ||
		strings.Contains(name, "..") || awsPrefixed(name) {
		return false
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

func awsPrefixed(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.")
}

// Reserved reports whether name is not the producer's to use: one of our
// metadata names, or an "AWS." or "Amazon." name (any casing).
func Reserved(name string) bool {
	return name == InvalidAttributeName || name == ReplayAttributeName || awsPrefixed(name)
}

// NeutralSuffix is appended to one of our names to keep a producer's
// attribute of that name as plain data: "homing-invalid" becomes
// "homing-invalid.prev" (then ".prev2", ".prev3"... when taken).
const NeutralSuffix = ".prev"

// Neutral returns the name under which a producer's attribute called name
// (one of ours) is kept as data: name+[NeutralSuffix], or with a number after
// it when attrs already has that name. The result is a valid SQS name, not
// reserved and not in attrs.
func Neutral(name string, attrs map[string]types.MessageAttributeValue) string {
	n := name + NeutralSuffix
	for i := 2; ; i++ {
		if _, taken := attrs[n]; !taken {
			return n
		}
		n = name + NeutralSuffix + strconv.Itoa(i)
	}
}
