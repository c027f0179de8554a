package main

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	tagtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"

	"github.com/homingdlq/homing/internal/settings"
)

func TestDiscoverLane(t *testing.T) {
	f := newFixture(t)
	f.tagLane()
	got, err := discoverLane(t.Context(), f.tagging, fakeQueueURLs(f.urls), "orders")
	if err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(f.outputs) // the lane's resources, as its outputs name them
	if !maps.Equal(got, want) {
		t.Fatalf("discovered %v, want %v", got, want)
	}
	in := f.tagging.inputs[0]
	if len(in.TagFilters) != 1 || aws.ToString(in.TagFilters[0].Key) != settings.TagLane || !slices.Equal(in.TagFilters[0].Values, []string{"orders"}) ||
		!slices.Equal(in.ResourceTypeFilters, []string{"sqs", "dynamodb:table", "lambda:function", "s3"}) {
		t.Fatalf("GetResources input = %+v", in)
	}
	// 9 resources of the lane's types (the alarm topic is not one), two a
	// page: every page read.
	if f.tagging.calls != 5 {
		t.Fatalf("%d GetResources calls, want 5 pages", f.tagging.calls)
	}
}

func TestDiscoverLaneErrors(t *testing.T) {
	tagged := func(arn, lane, role string) tagtypes.ResourceTagMapping {
		return tagtypes.ResourceTagMapping{ResourceARN: aws.String(arn), Tags: []tagtypes.Tag{
			{Key: aws.String(settings.TagLane), Value: aws.String(lane)}, {Key: aws.String(settings.TagRole), Value: aws.String(role)},
		}}
	}
	tests := []struct {
		name  string
		lane  string
		add   []tagtypes.ResourceTagMapping
		err   error
		want  []string
		check func(t *testing.T, got map[string]string)
	}{
		{name: "no such lane", lane: "refunds", want: []string{
			"no resources are tagged homing:lane=refunds here (Resource Groups Tagging API); lanes tagged here: orders, payments — check --lane, --region and --profile, or name the lane with --stack NAME or --outputs-file FILE"}},
		{name: "the API fails", lane: "orders", err: errors.New("AccessDeniedException: not authorized to perform tag:GetResources"), want: []string{
			"find the resources tagged homing:lane=orders (Resource Groups Tagging API, tag:GetResources): AccessDeniedException", "check --region and your credentials"}},
		{name: "a role twice", lane: "orders", add: []tagtypes.ResourceTagMapping{tagged("arn:aws:sqs:us-east-1:000000000000:orders-dlq-old", "orders", settings.RoleDeadLetter)}, want: []string{
			"lane orders has 2 resources tagged homing:role=dead-letter: arn:aws:sqs:us-east-1:000000000000:orders-dlq, arn:aws:sqs:us-east-1:000000000000:orders-dlq-old — name the one to use with its flag (e.g. --dlq-url)"}},
		{name: "a queue that is gone", lane: "gone", add: []tagtypes.ResourceTagMapping{tagged("arn:aws:sqs:us-east-1:000000000000:gone-dlq", "gone", settings.RoleDeadLetter)}, want: []string{
			"the URL of queue arn:aws:sqs:us-east-1:000000000000:gone-dlq (sqs:GetQueueUrl): QueueDoesNotExist"}},
		{name: "a role on a resource of another kind is not the lane's", lane: "odd", add: []tagtypes.ResourceTagMapping{
			tagged("arn:aws:dynamodb:us-east-1:000000000000:table/odd", "odd", settings.RoleDeadLetter),
			tagged("arn:aws:lambda:us-east-1:000000000000:function:odd-replay:live", "odd", settings.RoleReplay),
			tagged("arn:aws:sqs:us-east-1:000000000000:odd-untagged", "odd", ""),
		}, check: func(t *testing.T, got map[string]string) {
			if !maps.Equal(got, map[string]string{outReplayFunction: "odd-replay"}) {
				t.Fatalf("discovered %v", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.tagLane()
			f.tagging.resources = append(f.tagging.resources, tt.add...)
			f.tagging.err = tt.err
			got, err := discoverLane(t.Context(), f.tagging, fakeQueueURLs(f.urls), tt.lane)
			if tt.check != nil {
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, got)
				return
			}
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v, want %q", err, w)
				}
			}
		})
	}
}

// --lane alone: the commands work on the resources found by tag, and a
// role nobody carries is named with its flag.
func TestCommandsOnATaggedLane(t *testing.T) {
	f := newFixture(t)
	f.tagLane()
	f.deadLetters()
	r := f.runRaw("-o", "json", "--lane", "orders", "inspect")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); rep.Queues[0].URL != f.dlq || rep.Sample.Size != 3 || len(rep.Queues) != 3 {
		t.Fatalf("report = %+v", rep)
	}
	f.vars = map[string]string{envLane: "orders"}
	f.runRaw("audit", "--runs", "1").want(t, exitOK)

	f.tagging.resources = slices.DeleteFunc(f.tagging.resources, func(m tagtypes.ResourceTagMapping) bool {
		return strings.HasSuffix(aws.ToString(m.ResourceARN), "table/ledger")
	})
	f.runRaw("audit", "--runs", "1").want(t, exitError,
		"no LedgerTableName: no DynamoDB table is tagged homing:lane=orders and homing:role=ledger — pass --ledger-table")
}
