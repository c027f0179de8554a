package settings

import (
	"strings"
	"unicode"
)

// Output keys: every lane the construct builds declares one stack output per
// key, named [OutputID](lane, key), so that one stack can hold several lanes
// and `dlq --lane NAME` (or the only lane) picks its own.
const (
	OutputSourceQueueURL       = "SourceQueueUrl"
	OutputSourceQueueARN       = "SourceQueueArn"
	OutputDeadLetterQueueURL   = "DeadLetterQueueUrl"
	OutputDeadLetterQueueARN   = "DeadLetterQueueArn"
	OutputInvalidQueueURL      = "InvalidQueueUrl"
	OutputParkingQueueURL      = "ParkingQueueUrl"
	OutputIdempotencyTableName = "IdempotencyTableName"
	OutputLedgerTableName      = "LedgerTableName"
	OutputConsumerFunctionName = "ConsumerFunctionName"
	OutputReplayFunctionName   = "ReplayFunctionName"
	OutputReplayScheduleName   = "ReplayScheduleName"
	OutputAlarmTopicARN        = "AlarmTopicArn"
	OutputDashboardName        = "DashboardName"
	OutputConsumerLogGroupName = "ConsumerLogGroupName"
	OutputReplayLogGroupName   = "ReplayLogGroupName"
	OutputArchiveBucketName    = "ArchiveBucketName"
)

// OutputID is the stack output id of a lane's key: the lane's name in
// PascalCase followed by the key ("orders", "DeadLetterQueueUrl" ->
// "OrdersDeadLetterQueueUrl"). CloudFormation output ids are alphanumeric:
// other characters of the name are dropped and start a new word.
func OutputID(lane, key string) string {
	var b strings.Builder
	upper := true
	for _, r := range lane {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if upper {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
			upper = false
		default:
			upper = true
		}
	}
	return b.String() + key
}

// Tags the construct puts on every resource of a lane, by which `dlq` finds
// a lane in an account without stack outputs: TagLane holds the lane's name,
// TagRole what the resource is to the lane (one of the Role constants).
const (
	TagLane = "homing:lane"
	TagRole = "homing:role"
)

// Roles of a lane's resources, the values of [TagRole].
const (
	RoleSource      = "source"
	RoleDeadLetter  = "dead-letter"
	RoleInvalid     = "invalid"
	RoleParking     = "parking"
	RoleIdempotency = "idempotency"
	RoleLedger      = "ledger"
	RoleConsumer    = "consumer"
	RoleReplay      = "replay"
	RoleArchive     = "archive"
)
