package settings

// Message sizes of the lane's queues, in the bytes SQS counts for a message
// (its body plus its attributes' names, types and values).
const (
	// MaxMessageBytes is SQS's largest message, and the MaximumMessageSize
	// of a queue that sets none: the size of the DLQ, the invalid and the
	// parking queues.
	MaxMessageBytes = 1 << 20
	// MetadataReserveBytes is what the consumer and the replay function may
	// add to a message when they forward it with their metadata attribute
	// (internal/envelope.Pack stays within it; its tests prove the bound).
	MetadataReserveBytes = 64 << 10
	// MaxSourceMessageBytes is the source queue's MaximumMessageSize: any
	// message it accepts still fits the invalid and parking queues once
	// the lane's metadata is added.
	MaxSourceMessageBytes = MaxMessageBytes - MetadataReserveBytes
)
