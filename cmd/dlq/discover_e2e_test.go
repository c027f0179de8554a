//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	tagtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

// withoutOrigin is the environment that says nothing of where a lane is:
// --lane alone then finds it by its tags.
var withoutOrigin = []string{envOutputs, envStack, envLane}

// laneTags are the tags the construct puts on a lane's resource.
func laneTags(lane, role string) map[string]string {
	return map[string]string{settings.TagLane: lane, settings.TagRole: role, "team": "e2e"}
}

// taggedLane asks the emulator's Resource Groups Tagging API for the
// resources of a lane; it skips the test, saying so, when the emulator
// does not implement the API.
func taggedLane(t *testing.T, tagging *resourcegroupstaggingapi.Client, lane string) []tagtypes.ResourceTagMapping {
	t.Helper()
	out, err := tagging.GetResources(context.Background(), &resourcegroupstaggingapi.GetResourcesInput{
		TagFilters: []tagtypes.TagFilter{{Key: aws.String(settings.TagLane), Values: []string{lane}}},
	})
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusNotFound || re.HTTPStatusCode() == http.StatusNotImplemented) {
		t.Skipf("the emulator does not implement the Resource Groups Tagging API (GetResources: %v): discovery by tag is covered by the unit tests only", err)
	}
	if err != nil {
		t.Fatalf("GetResources: %v", err)
	}
	return out.ResourceTagMappingList
}

// Tripwire: the emulator speaks the tagging API's AWS JSON 1.1 only; the
// SDK's default protocol since v1.42.0, Smithy RPC v2 CBOR, gets a 500
// (ministack 1.5.33 decodes every body as JSON). dlq's client speaks JSON
// 1.1 (taggingClient), which AWS serves as well. When this fails, the
// emulator learned CBOR: taggingClient may keep the SDK's default.
func TestE2ETaggingAPIProtocols(t *testing.T) {
	cfg := emulatortest.Config(t)
	in := &resourcegroupstaggingapi.GetResourcesInput{TagFilters: []tagtypes.TagFilter{{Key: aws.String(settings.TagLane), Values: []string{"none"}}}}
	if _, err := taggingClient(cfg).GetResources(context.Background(), in); err != nil {
		t.Fatalf("GetResources in AWS JSON 1.1: %v", err)
	}
	cbor := resourcegroupstaggingapi.NewFromConfig(cfg, func(o *resourcegroupstaggingapi.Options) { o.RetryMaxAttempts = 1 })
	_, err := cbor.GetResources(context.Background(), in)
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusInternalServerError {
		t.Fatalf("GetResources in the SDK's default protocol (RPC v2 CBOR): err = %v, want the emulator's 500 (gap closed? see taggingClient)", err)
	}
}

// A lane of the test's own queues and table, tagged as the construct tags
// a lane: the emulator's tagging API finds them, and `dlq --lane NAME`
// alone works on them (queue URLs from sqs:GetQueueUrl).
func TestE2EFindsALaneByTags(t *testing.T) {
	ctx := context.Background()
	cfg := emulatortest.Config(t)
	q := sqs.NewFromConfig(cfg)
	db := dynamodb.NewFromConfig(cfg)
	tagging := taggingClient(cfg)
	lane := fmt.Sprintf("e2e-%d", time.Now().UnixNano()%1e9)

	urls := map[string]string{}
	for _, role := range []string{settings.RoleDeadLetter, settings.RoleParking, settings.RoleInvalid, settings.RoleSource} {
		url, _ := emulatortest.Queue(t, q, emulatortest.Name(t, role))
		if _, err := q.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: laneTags(lane, role)}); err != nil {
			t.Fatalf("tag queue %s: %v", url, err)
		}
		urls[role] = url
	}
	table := emulatortest.IdempotencyTable(t, db)
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	var tags []dbtypes.Tag
	for k, v := range laneTags(lane, settings.RoleLedger) {
		tags = append(tags, dbtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	if _, err := db.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: desc.Table.TableArn, Tags: tags}); err != nil {
		t.Fatalf("tag table %s: %v", table, err)
	}

	if got := taggedLane(t, tagging, lane); len(got) != 5 {
		t.Fatalf("GetResources found %d of the lane's 5 tagged resources: %+v", len(got), got)
	}
	values, err := discoverLane(ctx, tagging, q, lane)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{outDLQ: urls[settings.RoleDeadLetter], outParking: urls[settings.RoleParking], outInvalid: urls[settings.RoleInvalid],
		outSource: urls[settings.RoleSource], outLedger: table}
	for k, v := range want {
		if values[k] != v {
			t.Errorf("discovered %s = %q, want %q", k, values[k], v)
		}
	}

	r := runDLQ(t, withoutOrigin, "--lane", lane, "-o", "json", "inspect")
	r.want(t, exitOK)
	rep := decode[inspectReport](t, r)
	roles := []string{}
	for _, q := range rep.Queues {
		roles = append(roles, q.Role)
	}
	if rep.Queues[0].URL != urls[settings.RoleDeadLetter] || !slices.Equal(roles, []string{"dlq", "parking", "invalid"}) {
		t.Fatalf("report = %+v", rep)
	}
	runDLQ(t, withoutOrigin, "--lane", "no-such-"+lane, "inspect").want(t, exitError,
		"no resources are tagged homing:lane=no-such-"+lane, "lanes tagged here: ", lane)
}

// What the emulator's CloudFormation does with a resource's Tags: the
// deployed construct's lanes can be found by tag only if they reach the
// tagging API. A stack of a tagged queue and a tagged table, both found.
func TestE2ECloudFormationTagsReachTheTaggingAPI(t *testing.T) {
	ctx := context.Background()
	cfg := emulatortest.Config(t)
	cf := cloudformation.NewFromConfig(cfg)
	tagging := taggingClient(cfg)
	lane := fmt.Sprintf("cfn-%d", time.Now().UnixNano()%1e9)
	cfnTags := func(role string) []map[string]string {
		var tags []map[string]string
		for k, v := range laneTags(lane, role) {
			tags = append(tags, map[string]string{"Key": k, "Value": v})
		}
		return tags
	}
	tpl, _ := json.Marshal(map[string]any{"Resources": map[string]any{
		"Dlq": map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{"Tags": cfnTags(settings.RoleDeadLetter)}},
		"Ledger": map[string]any{"Type": "AWS::DynamoDB::Table", "Properties": map[string]any{
			"BillingMode":          "PAY_PER_REQUEST",
			"AttributeDefinitions": []map[string]string{{"AttributeName": "pk", "AttributeType": "S"}},
			"KeySchema":            []map[string]string{{"AttributeName": "pk", "KeyType": "HASH"}},
			"Tags":                 cfnTags(settings.RoleLedger),
		}},
	}})
	stack := emulatortest.Name(t, "tags")
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(stack), TemplateBody: aws.String(string(tpl))}); err != nil {
		t.Fatalf("create stack %s: %v", stack, err)
	}
	t.Cleanup(func() {
		_, _ = cf.DeleteStack(context.Background(), &cloudformation.DeleteStackInput{StackName: aws.String(stack)})
	})
	w := cloudformation.NewStackCreateCompleteWaiter(cf, func(o *cloudformation.StackCreateCompleteWaiterOptions) { o.MinDelay = time.Second })
	if err := w.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)}, 2*time.Minute); err != nil {
		t.Fatalf("stack %s: %v", stack, err)
	}

	services := func() []string {
		var s []string
		for _, m := range taggedLane(t, tagging, lane) {
			s = append(s, arnService(aws.ToString(m.ResourceARN)))
		}
		slices.Sort(s)
		return s
	}
	if got := services(); !slices.Equal(got, []string{"dynamodb", "sqs"}) {
		t.Fatalf("the tagging API finds %v of the stack's tagged queue and table", got)
	}
	values, err := discoverLane(ctx, tagging, sqs.NewFromConfig(cfg), lane)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(values[outDLQ], "/") || values[outLedger] == "" {
		t.Fatalf("discovered %v", values)
	}

	// Tripwire: once the stack is deleted, the emulator's tagging API
	// still lists the deleted table (ministack 1.5.33 keeps a table's tags
	// after it is gone; AWS may list a deleted resource for a short while
	// too). A lane whose table was replaced then has two ledgers by tag,
	// and dlq asks for --ledger-table. When this fails, the gap closed.
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(stack)}); err != nil {
		t.Fatal(err)
	}
	d := cloudformation.NewStackDeleteCompleteWaiter(cf, func(o *cloudformation.StackDeleteCompleteWaiterOptions) { o.MinDelay = time.Second })
	if err := d.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)}, 2*time.Minute); err != nil {
		t.Fatalf("delete stack %s: %v", stack, err)
	}
	if got := services(); !slices.Equal(got, []string{"dynamodb"}) {
		t.Fatalf("after the stack's deletion, the tagging API lists %v, want the deleted table only (the emulator's known gap: closed?)", got)
	}
}

// The deployed stack's lanes, by their tags (the construct tags them): the
// queues and tables their outputs name.
func TestE2EDeployedLaneByTags(t *testing.T) {
	l := deployedLane(t)
	cf := cloudformation.NewFromConfig(emulatortest.Config(t))
	out, err := cf.GetTemplate(context.Background(), &cloudformation.GetTemplateInput{StackName: aws.String("Homing"), TemplateStage: cftypes.TemplateStageOriginal})
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct{ Tags []struct{ Key, Value string } }
		}
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.TemplateBody)), &tpl); err != nil {
		t.Fatalf("the stack's template: %v", err)
	}
	tagged := false
	for _, r := range tpl.Resources {
		tagged = tagged || r.Type == "AWS::SQS::Queue" && slices.ContainsFunc(r.Properties.Tags, func(tag struct{ Key, Value string }) bool {
			return tag.Key == settings.TagLane && tag.Value == sampleLane
		})
	}
	if !tagged {
		t.Fatalf("the deployed stack's template tags no queue %s=%s: the construct tags every lane's resources", settings.TagLane, sampleLane)
	}
	r := runDLQ(t, withoutOrigin, "--lane", sampleLane, "-o", "json", "inspect")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); rep.Queues[0].URL != l.out[outDLQ] || len(rep.Queues) != 3 ||
		rep.Queues[1].URL != l.out[outParking] || rep.Queues[2].URL != l.out[outInvalid] {
		t.Fatalf("by tag: report = %+v, want the lane's queues %v", rep, l.out)
	}
	// The ledger table, by its tag: the last runs.
	runDLQ(t, withoutOrigin, "--lane", sampleLane, "-o", "json", "audit", "--runs", "1").want(t, exitOK)
	// Every role the construct tags is found, and is what the outputs name.
	values, err := discoverLane(context.Background(), taggingClient(emulatortest.Config(t)), l.sqs, sampleLane)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range laneKeys {
		if k == outArchive && bucketUntagged(t, l.out[k]) {
			// ministack 1.5.33's CloudFormation drops an S3 bucket's Tags:
			// the bucket is found by the outputs only. The tripwire fails
			// the day the emulator tags it.
			if values[k] != "" {
				t.Errorf("by tag, %s = %q from an untagged bucket", k, values[k])
			}
			continue
		}
		if values[k] != l.out[k] {
			t.Errorf("by tag, %s = %q; the outputs name %q", k, values[k], l.out[k])
		}
	}
	// The example's FIFO lane beside it: its parking queue, not its DLQ,
	// whose browse would hide dead letters from the replay runs of the
	// examples' tests, running meanwhile (make e2e).
	r = runDLQ(t, withoutOrigin, "--lane", "payments", "-o", "json", "inspect", "--queue", "parking")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); rep.Queues[0].URL != l.stack[settings.OutputID("payments", outParking)] {
		t.Fatalf("the payments lane by tag: report = %+v", rep)
	}
}

// bucketUntagged reports whether the deployed bucket has no tags, where the
// construct tags it (an emulator's gap); it fails the test on AWS, whose
// CloudFormation applies them, and when the emulator has started tagging.
func bucketUntagged(t *testing.T, bucket string) bool {
	t.Helper()
	_, err := s3.NewFromConfig(emulatortest.Config(t)).GetBucketTagging(context.Background(), &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	var api smithy.APIError
	untagged := errors.As(err, &api) && api.ErrorCode() == "NoSuchTagSet"
	if emulator := os.Getenv("HOMING_EMULATOR"); untagged != (emulator == "ministack") {
		t.Errorf("bucket %s untagged: %v (%v) on %q: the declared gap is ministack's alone", bucket, untagged, err, emulator)
	}
	return untagged
}
