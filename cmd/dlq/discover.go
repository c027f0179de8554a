package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	tagtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/settings"
)

// resourceTagger is what discovery asks the Resource Groups Tagging API:
// the resources that carry a lane's tag, and which lanes are tagged.
type resourceTagger interface {
	GetResources(ctx context.Context, in *resourcegroupstaggingapi.GetResourcesInput, optFns ...func(*resourcegroupstaggingapi.Options)) (*resourcegroupstaggingapi.GetResourcesOutput, error)
	GetTagValues(ctx context.Context, in *resourcegroupstaggingapi.GetTagValuesInput, optFns ...func(*resourcegroupstaggingapi.Options)) (*resourcegroupstaggingapi.GetTagValuesOutput, error)
}

// queueURLGetter turns a queue's name (from its ARN) into its URL.
type queueURLGetter interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

// laneRole is what a resource tagged settings.TagRole=role is to dlq: the
// lane output key it stands for, and the service whose ARN it must have.
type laneRole struct {
	role, key, service string
}

// kind names the resource for people.
func (r laneRole) kind() string {
	switch r.service {
	case "sqs":
		return "SQS queue"
	case "dynamodb":
		return "DynamoDB table"
	case "s3":
		return "S3 bucket"
	}
	return "Lambda function"
}

// laneRoles are the roles dlq reads, in the order of the lane's resources.
var laneRoles = []laneRole{
	{settings.RoleDeadLetter, outDLQ, "sqs"},
	{settings.RoleSource, outSource, "sqs"},
	{settings.RoleParking, outParking, "sqs"},
	{settings.RoleInvalid, outInvalid, "sqs"},
	{settings.RoleLedger, outLedger, "dynamodb"},
	{settings.RoleIdempotency, outIdempotency, "dynamodb"},
	{settings.RoleReplay, outReplayFunction, "lambda"},
	{settings.RoleArchive, outArchive, "s3"},
}

// roleOfKey is the role of a lane output key; false for a key no tag
// stands for.
func roleOfKey(key string) (laneRole, bool) {
	i := slices.IndexFunc(laneRoles, func(r laneRole) bool { return r.key == key })
	if i < 0 {
		return laneRole{}, false
	}
	return laneRoles[i], true
}

// taggedTypes are the resource types discovery asks for. Queues are
// filtered by service only: an SQS ARN has no resource type ("sqs:queue"
// matches on AWS, not on every emulator).
var taggedTypes = []string{"sqs", "dynamodb:table", "lambda:function", "s3"}

// discoverLane finds a lane's resources by their tags (settings.TagLane =
// lane, settings.TagRole = one of laneRoles) and returns them by lane
// output key: queue URLs (sqs:GetQueueUrl of the name in the ARN), table
// and function names. A role on two resources is an error that names
// them; a role on none is left out (get names it and its flag).
func discoverLane(ctx context.Context, tags resourceTagger, queues queueURLGetter, lane string) (map[string]string, error) {
	in := &resourcegroupstaggingapi.GetResourcesInput{
		TagFilters:          []tagtypes.TagFilter{{Key: aws.String(settings.TagLane), Values: []string{lane}}},
		ResourceTypeFilters: taggedTypes,
	}
	found := map[string][]string{} // role -> ARNs
	total := 0
	for p := resourcegroupstaggingapi.NewGetResourcesPaginator(tags, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("find the resources tagged %s=%s (Resource Groups Tagging API, tag:GetResources): %w "+
				"(check --region and your credentials; or name the lane with --stack NAME or --outputs-file FILE)", settings.TagLane, lane, err)
		}
		for _, m := range page.ResourceTagMappingList {
			total++
			arn := aws.ToString(m.ResourceARN)
			i := slices.IndexFunc(m.Tags, func(t tagtypes.Tag) bool { return aws.ToString(t.Key) == settings.TagRole })
			if i < 0 {
				continue
			}
			role := aws.ToString(m.Tags[i].Value)
			if j := slices.IndexFunc(laneRoles, func(r laneRole) bool { return r.role == role }); j >= 0 && arnService(arn) == laneRoles[j].service {
				found[role] = append(found[role], arn)
			}
		}
	}
	if total == 0 {
		return nil, fmt.Errorf("no resources are tagged %s=%s here (Resource Groups Tagging API)%s — check --lane, --region and --profile, or name the lane with --stack NAME or --outputs-file FILE",
			settings.TagLane, lane, taggedLanes(ctx, tags))
	}
	values := map[string]string{}
	for _, r := range laneRoles {
		arns := found[r.role]
		switch len(arns) {
		case 0:
			continue
		case 1:
		default:
			slices.Sort(arns)
			return nil, fmt.Errorf("lane %s has %d resources tagged %s=%s: %s — name the one to use with its flag (e.g. --dlq-url), or fix the tags",
				lane, len(arns), settings.TagRole, r.role, strings.Join(arns, ", "))
		}
		v, err := resourceName(ctx, queues, arns[0])
		if err != nil {
			return nil, err
		}
		values[r.key] = v
	}
	return values, nil
}

// taggedLanes lists the lanes tagged in the region, for an error message:
// "; lanes tagged here: a, b", or "" when none or when the call fails.
func taggedLanes(ctx context.Context, tags resourceTagger) string {
	var lanes []string
	for p := resourcegroupstaggingapi.NewGetTagValuesPaginator(tags, &resourcegroupstaggingapi.GetTagValuesInput{Key: aws.String(settings.TagLane)}); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return ""
		}
		lanes = append(lanes, page.TagValues...)
	}
	if len(lanes) == 0 {
		return ""
	}
	slices.Sort(lanes)
	return "; lanes tagged here: " + strings.Join(slices.Compact(lanes), ", ")
}

// arnService is the service of an ARN ("arn:aws:sqs:eu-west-1:123:q" -> "sqs").
func arnService(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 {
		return ""
	}
	return parts[2]
}

// resourceName is what dlq needs of a tagged resource: a queue's URL, a
// table's or a function's name.
func resourceName(ctx context.Context, queues queueURLGetter, arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6) // arn:partition:service:region:account:resource
	resource := parts[5]
	switch parts[2] {
	case "sqs":
		out, err := queues.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(resource), QueueOwnerAWSAccountId: aws.String(parts[4])})
		if err != nil {
			return "", fmt.Errorf("the URL of queue %s (sqs:GetQueueUrl): %w", arn, err)
		}
		return aws.ToString(out.QueueUrl), nil
	case "dynamodb": // table/NAME
		return strings.TrimPrefix(resource, "table/"), nil
	case "s3": // arn:aws:s3:::NAME
		return resource, nil
	default: // lambda: function:NAME
		name := strings.TrimPrefix(resource, "function:")
		name, _, _ = strings.Cut(name, ":") // a qualifier, if any
		return name, nil
	}
}
