package settings

import "time"

// The defaults and bounds of the settings that packages batch and replay
// take as the defaults of their options, as constants (the declarations
// in env.go use them).
const (
	DefaultConcurrency            = 10
	DefaultConsumerDeadlineMargin = 2 * time.Second
	DefaultRecordLifetime         = 30 * 24 * time.Hour
	DefaultMaxPayloadBytes        = 256 << 10
	// FIFO group order (package fifo's Keeper): SQS's default retention,
	// and the deliveries that park a head, below the redrive's backstop.
	DefaultSourceRetention = 4 * 24 * time.Hour
	DefaultMaxReceives     = 90
	DefaultGroupMinBackoff = 30 * time.Second // a failed head's first visibility
	MaxGroupBackoff        = 12 * time.Hour   // SQS's bound on a visibility timeout

	DefaultMaxReplays           = 3
	DefaultBackoffBase          = 5 * time.Minute
	DefaultBackoffMax           = 4 * time.Hour
	DefaultExpiryRescueWindow   = 24 * time.Hour
	DefaultRate                 = 250.0 // messages per second
	MinRate                     = 0.1
	MaxRate                     = 3000.0 // SQS FIFO batched throughput per action
	DefaultMaxPerRun            = 100000
	DefaultCanaryLimit          = 5
	DefaultRefillThreshold      = 100
	DefaultReplayDeadlineMargin = 5 * time.Second
	DefaultWorkers              = 4
	MaxWorkers                  = 16

	// The archive (package archive): how long before a parked or invalid
	// message's retention ends it is archived, and a run's time for it.
	DefaultArchiveMargin = 48 * time.Hour
	DefaultArchiveBudget = time.Minute
)
