package invalid

// The reasons a lane's consumer needs whatever its domain, as stable codes
// for [Metadata].Reason (and batch.Reject): dashboards, alarms and the
// people who fix messages at the source match them. Never rename one; a
// domain adds its own beside them.
const (
	// ReasonMalformedJSON: the body is not one JSON value (payload.ErrNotJSON).
	ReasonMalformedJSON = "malformed-json"
	// ReasonMissingKey: the body has no business key where the lane's key
	// expression looks (payload.Key.Of found none).
	ReasonMissingKey = "missing-key"
	// ReasonMissingHashedPart: the part of the body the payload hash covers
	// is absent (payload.ErrNoPart).
	ReasonMissingHashedPart = "missing-hashed-part"
	// ReasonPayloadTooLarge: the body is over the consumer's size limit.
	ReasonPayloadTooLarge = "payload-too-large"
	// ReasonConflictingDuplicate: the key was applied before with another
	// payload (idempotency.ErrConflict).
	ReasonConflictingDuplicate = "conflicting-duplicate"
)
