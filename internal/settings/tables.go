package settings

// The key schema of the lane's two DynamoDB tables, the idempotency table
// and the replay ledger: the construct creates the tables with it
// (infra/deadletter), the stores read and write it (package dynamo).
const (
	// PartitionKeyAttribute is the String partition key of both tables.
	PartitionKeyAttribute = "pk"
	// SortKeyAttribute is the String sort key of the replay ledger.
	SortKeyAttribute = "sk"
	// TTLAttribute holds a record's expiry in epoch seconds on both
	// tables. DynamoDB's TTL deletion is housekeeping only: readers check
	// the expiry themselves.
	TTLAttribute = "expiresAt"
)

// The ledger partitions of the replay seal (see docs/RELIABILITY.md): the
// replay function writes and reads both; the construct denies every item
// action on SealKeyPartition to the operator (Lane.GrantOperator), who may
// read SealPublicKeyPartition to verify, not write it.
const (
	// SealKeyPartition holds the seal key, the replay function's secret.
	SealKeyPartition = "homing#seal-key"
	// SealPublicKeyPartition holds the public key that verifies seals.
	SealPublicKeyPartition = "homing#seal-public"
)

// GroupsPartition is the ledger partition of a FIFO lane's parked message
// groups (package fifo), one item per group, its sort key the group id:
// the consumer writes it, the operator releases a group from it.
const GroupsPartition = "homing#groups"

// FailurePrefix starts the partition key of a consumer's failure records
// in the idempotency table: `#failure#<CONSUMER_NAME>#<message id>`. No
// idempotency key starts with "#" (a consumer name is not empty and has no
// "#"; a hashed key starts with "sha256~"), so the two never meet.
const FailurePrefix = "#failure#"

// MaxFailureClassBytes bounds a failure class; FailureClassUnknown is the
// class of a message without a failure record, reserved: no handler's.
const (
	MaxFailureClassBytes = 64
	FailureClassUnknown  = "unknown"
)

// ValidFailureClass reports whether c is a failure class: 1 to 64 bytes of
// a-z, 0-9 and "-".
func ValidFailureClass(c string) bool {
	if c == "" || len(c) > MaxFailureClassBytes {
		return false
	}
	for _, r := range c {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}
