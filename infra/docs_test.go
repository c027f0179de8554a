package main

import (
	"os"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// TestOutputsDocumented pins what cannot share code with the stack: the
// README lists every output, and the runbook tails the log groups by their
// outputs, never by /aws/lambda/<function>, which does not exist on AWS.
func TestOutputsDocumented(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for id := range *profile(t, ProfileAWS).template.FindOutputs(jsii.String("*"), nil) {
		if !strings.Contains(string(readme), "`"+id+"`") {
			t.Errorf("infra/README.md does not list the output %s", id)
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
	for _, id := range []string{OutputConsumerLogGroupName, OutputReplayLogGroupName} {
		if !strings.Contains(text, `aws logs tail "$(jq -r .`+id+` $OUT)"`) {
			t.Errorf("docs/OPERATIONS.md does not tail the %s output", id)
		}
	}
}
