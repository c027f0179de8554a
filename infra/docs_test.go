package main

import (
	"os"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/internal/settings"
)

// TestOutputsDocumented pins what cannot share code with the stack: the
// README lists every output key, and the runbook tails the log groups by their
// outputs, never by /aws/lambda/<function>, which does not exist on AWS.
func TestOutputsDocumented(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{
		settings.OutputSourceQueueURL, settings.OutputSourceQueueARN, settings.OutputDeadLetterQueueURL,
		settings.OutputDeadLetterQueueARN, settings.OutputInvalidQueueURL, settings.OutputParkingQueueURL,
		settings.OutputIdempotencyTableName, settings.OutputLedgerTableName, settings.OutputConsumerFunctionName,
		settings.OutputReplayFunctionName, settings.OutputReplayScheduleName, settings.OutputAlarmTopicARN,
		settings.OutputDashboardName, settings.OutputConsumerLogGroupName, settings.OutputReplayLogGroupName,
		settings.OutputArchiveBucketName,
	}
	// Every output of a lane is one of its keys, and the README lists the
	// key.
	ids := map[string]bool{}
	for _, p := range []string{ProfileAWS, ProfileLocal} {
		for id := range *profile(t, p).template.FindOutputs(jsii.String("*"), nil) {
			ids[id] = true
		}
	}
	for id := range ids {
		if id == "PaymentsEntriesTableName" {
			continue // the example's own (payments.go)
		}
		key := ""
		for _, k := range keys {
			if strings.HasSuffix(id, k) && len(k) > len(key) {
				key = k
			}
		}
		if key == "" {
			t.Errorf("output %s is no lane's settings.Output* key", id)
			continue
		}
		if !strings.Contains(string(readme), "`"+key+"`") {
			t.Errorf("infra/README.md does not list the output key %s (of %s)", key, id)
		}
	}
	runbook, err := os.ReadFile("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(runbook)
	if strings.Contains(text, "logs tail /aws/lambda/") {
		t.Error("docs/OPERATIONS.md tails a log group /aws/lambda/...: the functions log to their own groups")
	}
	for _, key := range []string{settings.OutputConsumerLogGroupName, settings.OutputReplayLogGroupName} {
		id := settings.OutputID("orders", key)
		if !strings.Contains(text, `aws logs tail "$(jq -r .`+id+` $OUT)"`) {
			t.Errorf("docs/OPERATIONS.md does not tail the %s output", id)
		}
	}
}
