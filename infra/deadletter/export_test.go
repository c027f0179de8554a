package deadletter

// The names the external tests use of what the package keeps unexported.
const (
	DefaultDeadLetterRetentionDays = defaultDeadLetterRetentionDays
	DefaultGroupMaxReceiveCount    = defaultGroupMaxReceiveCount
	DefaultSourceRetentionDays     = defaultSourceRetentionDays
	MaxMessageBytes                = maxMessageBytes
	MetadataReserveBytes           = metadataReserveBytes
	ReplayPackage                  = replayPackage
	SourceAgeMarginSeconds         = sourceAgeMarginSeconds
)
