package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueAPI is the part of the SQS client the checker reads with.
type QueueAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// TableAPI is the part of the DynamoDB client the checker uses.
type TableAPI interface {
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// MappingAPI is the part of the Lambda client the checker reads with.
type MappingAPI interface {
	GetEventSourceMapping(ctx context.Context, in *lambda.GetEventSourceMappingInput, optFns ...func(*lambda.Options)) (*lambda.GetEventSourceMappingOutput, error)
}

// Resource is one deployed resource of the stack.
type Resource struct {
	LogicalID  string
	Type       string
	PhysicalID string // queue URL, table name, mapping UUID...
}

// Finding is one difference between the template and what is deployed.
type Finding struct {
	LogicalID string
	Property  string
	Want      string
	Got       string
	// Fix, when set, applies the emulator-only repair of a known gap.
	Fix func(ctx context.Context) error `json:"-"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s: template says %s, deployed has %s", f.LogicalID, f.Property, f.Want, f.Got)
}

// Checker compares a template with the deployed resources. It is safe for
// concurrent use.
type Checker struct {
	// Pseudo holds the values of the pseudo parameters the template may
	// reference: AWS::Partition, AWS::Region, AWS::AccountId.
	Pseudo   map[string]string
	Queues   QueueAPI
	Tables   TableAPI
	Mappings MappingAPI
}

type template struct {
	Resources map[string]struct {
		Type       string                     `json:"Type"`
		Properties map[string]json.RawMessage `json:"Properties"`
	} `json:"Resources"`
}

// Check returns every difference between templateBody (JSON) and resources.
// An error means the check itself could not run.
func (c *Checker) Check(ctx context.Context, templateBody []byte, resources []Resource) ([]Finding, error) {
	var tpl template
	if err := json.Unmarshal(templateBody, &tpl); err != nil {
		return nil, fmt.Errorf("decode template: %w", err)
	}
	physical := map[string]Resource{}
	for _, r := range resources {
		physical[r.LogicalID] = r
	}
	queueAttrs := map[string]map[string]string{} // logical id -> attributes, read once
	attrs := func(logical string) (map[string]string, error) {
		if a, ok := queueAttrs[logical]; ok {
			return a, nil
		}
		r, ok := physical[logical]
		if !ok {
			return nil, fmt.Errorf("queue %s is in the template but not deployed", logical)
		}
		out, err := c.Queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(r.PhysicalID), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			return nil, fmt.Errorf("read queue %s (%s): %w", logical, r.PhysicalID, err)
		}
		queueAttrs[logical] = out.Attributes
		return out.Attributes, nil
	}
	// arnOf resolves a template value that names a queue ARN: a string,
	// {"Fn::GetAtt":[queue,"Arn"]}, {"Ref":pseudo parameter} or an
	// {"Fn::Join"} of those.
	var arnOf func(raw json.RawMessage) (string, error)
	arnOf = func(raw json.RawMessage) (string, error) {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, nil
		}
		var expr struct {
			GetAtt []string          `json:"Fn::GetAtt"`
			Ref    string            `json:"Ref"`
			Join   []json.RawMessage `json:"Fn::Join"`
		}
		if err := json.Unmarshal(raw, &expr); err != nil {
			return "", fmt.Errorf("unsupported queue reference %s", raw)
		}
		switch {
		case len(expr.GetAtt) == 2 && expr.GetAtt[1] == "Arn":
			a, err := attrs(expr.GetAtt[0])
			if err != nil {
				return "", err
			}
			return a["QueueArn"], nil
		case expr.Ref != "":
			v, ok := c.Pseudo[expr.Ref]
			if !ok {
				return "", fmt.Errorf("unsupported reference to %s", expr.Ref)
			}
			return v, nil
		case len(expr.Join) == 2:
			var sep string
			var parts []json.RawMessage
			if json.Unmarshal(expr.Join[0], &sep) != nil || json.Unmarshal(expr.Join[1], &parts) != nil {
				return "", fmt.Errorf("unsupported Fn::Join %s", raw)
			}
			out := make([]string, len(parts))
			for i, p := range parts {
				v, err := arnOf(p)
				if err != nil {
					return "", err
				}
				out[i] = v
			}
			return strings.Join(out, sep), nil
		}
		return "", fmt.Errorf("unsupported queue reference %s", raw)
	}

	var findings []Finding
	ids := make([]string, 0, len(tpl.Resources))
	for id := range tpl.Resources {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		res := tpl.Resources[id]
		var fs []Finding
		var err error
		switch res.Type {
		case "AWS::SQS::Queue":
			fs, err = c.checkQueue(id, res.Properties, attrs, arnOf)
		case "AWS::DynamoDB::Table":
			fs, err = c.checkTable(ctx, id, res.Properties, physical)
		case "AWS::Lambda::EventSourceMapping":
			fs, err = c.checkMapping(ctx, id, res.Properties, physical)
		}
		if err != nil {
			return nil, err
		}
		findings = append(findings, fs...)
	}
	return findings, nil
}

func (c *Checker) checkQueue(id string, props map[string]json.RawMessage, attrs func(string) (map[string]string, error), arnOf func(json.RawMessage) (string, error)) ([]Finding, error) {
	got, err := attrs(id)
	if err != nil {
		return nil, err
	}
	var fs []Finding
	differs := recorder(id, &fs)
	for _, p := range []struct{ prop, attr string }{
		{"MessageRetentionPeriod", "MessageRetentionPeriod"},
		{"VisibilityTimeout", "VisibilityTimeout"},
		{"FifoQueue", "FifoQueue"},
	} {
		if raw, ok := props[p.prop]; ok {
			differs(p.prop, scalar(raw), got[p.attr])
		}
	}
	if raw, ok := props["RedrivePolicy"]; ok {
		var want struct {
			Target          json.RawMessage `json:"deadLetterTargetArn"`
			MaxReceiveCount json.RawMessage `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			return nil, fmt.Errorf("%s RedrivePolicy: %w", id, err)
		}
		target, err := arnOf(want.Target)
		if err != nil {
			return nil, fmt.Errorf("%s RedrivePolicy: %w", id, err)
		}
		var have struct {
			Target          string          `json:"deadLetterTargetArn"`
			MaxReceiveCount json.RawMessage `json:"maxReceiveCount"`
		}
		if got["RedrivePolicy"] != "" {
			if err := json.Unmarshal([]byte(got["RedrivePolicy"]), &have); err != nil {
				return nil, fmt.Errorf("%s deployed RedrivePolicy %q: %w", id, got["RedrivePolicy"], err)
			}
		}
		differs("RedrivePolicy.deadLetterTargetArn", target, have.Target)
		differs("RedrivePolicy.maxReceiveCount", scalar(want.MaxReceiveCount), scalar(have.MaxReceiveCount))
	}
	if raw, ok := props["RedriveAllowPolicy"]; ok {
		var want struct {
			Permission string            `json:"redrivePermission"`
			Sources    []json.RawMessage `json:"sourceQueueArns"`
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			return nil, fmt.Errorf("%s RedriveAllowPolicy: %w", id, err)
		}
		var have struct {
			Permission string   `json:"redrivePermission"`
			Sources    []string `json:"sourceQueueArns"`
		}
		if got["RedriveAllowPolicy"] != "" {
			_ = json.Unmarshal([]byte(got["RedriveAllowPolicy"]), &have)
		}
		differs("RedriveAllowPolicy.redrivePermission", want.Permission, have.Permission)
		var sources []string
		for _, s := range want.Sources {
			arn, err := arnOf(s)
			if err != nil {
				return nil, fmt.Errorf("%s RedriveAllowPolicy: %w", id, err)
			}
			sources = append(sources, arn)
		}
		slices.Sort(sources)
		slices.Sort(have.Sources)
		differs("RedriveAllowPolicy.sourceQueueArns", fmt.Sprint(sources), fmt.Sprint(have.Sources))
	}
	return fs, nil
}

func (c *Checker) checkTable(ctx context.Context, id string, props map[string]json.RawMessage, physical map[string]Resource) ([]Finding, error) {
	raw, ok := props["TimeToLiveSpecification"]
	if !ok {
		return nil, nil
	}
	var want struct {
		AttributeName string `json:"AttributeName"`
		Enabled       bool   `json:"Enabled"`
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		return nil, fmt.Errorf("%s TimeToLiveSpecification: %w", id, err)
	}
	r, ok := physical[id]
	if !ok {
		return nil, fmt.Errorf("table %s is in the template but not deployed", id)
	}
	out, err := c.Tables.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(r.PhysicalID)})
	if err != nil {
		return nil, fmt.Errorf("read TTL of table %s (%s): %w", id, r.PhysicalID, err)
	}
	var status dbtypes.TimeToLiveStatus
	var name string
	if d := out.TimeToLiveDescription; d != nil {
		status, name = d.TimeToLiveStatus, aws.ToString(d.AttributeName)
	}
	enabled := status == dbtypes.TimeToLiveStatusEnabled || status == dbtypes.TimeToLiveStatusEnabling
	if enabled == want.Enabled && (!want.Enabled || name == want.AttributeName) {
		return nil, nil
	}
	return []Finding{{
		LogicalID: id,
		Property:  "TimeToLiveSpecification",
		Want:      fmt.Sprintf("enabled=%v on %q", want.Enabled, want.AttributeName),
		Got:       fmt.Sprintf("%s on %q", orNone(string(status)), name),
		Fix: func(ctx context.Context) error {
			_, err := c.Tables.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
				TableName:               aws.String(r.PhysicalID),
				TimeToLiveSpecification: &dbtypes.TimeToLiveSpecification{AttributeName: aws.String(want.AttributeName), Enabled: aws.Bool(want.Enabled)},
			})
			if err != nil {
				return fmt.Errorf("emulator-only fix: enable TTL on %s: %w", r.PhysicalID, err)
			}
			return nil
		},
	}}, nil
}

func (c *Checker) checkMapping(ctx context.Context, id string, props map[string]json.RawMessage, physical map[string]Resource) ([]Finding, error) {
	r, ok := physical[id]
	if !ok {
		return nil, fmt.Errorf("event source mapping %s is in the template but not deployed", id)
	}
	out, err := c.Mappings.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(r.PhysicalID)})
	if err != nil {
		return nil, fmt.Errorf("read event source mapping %s (%s): %w", id, r.PhysicalID, err)
	}
	var fs []Finding
	differs := recorder(id, &fs)
	if raw, ok := props["FunctionResponseTypes"]; ok {
		var want []string
		_ = json.Unmarshal(raw, &want)
		var have []string
		for _, t := range out.FunctionResponseTypes {
			have = append(have, string(t))
		}
		differs("FunctionResponseTypes", fmt.Sprint(want), fmt.Sprint(have))
	}
	if raw, ok := props["BatchSize"]; ok {
		differs("BatchSize", scalar(raw), strconv.Itoa(int(aws.ToInt32(out.BatchSize))))
	}
	if raw, ok := props["ScalingConfig"]; ok {
		var want struct {
			MaximumConcurrency json.RawMessage `json:"MaximumConcurrency"`
		}
		_ = json.Unmarshal(raw, &want)
		have := ""
		if out.ScalingConfig != nil && out.ScalingConfig.MaximumConcurrency != nil {
			have = strconv.Itoa(int(*out.ScalingConfig.MaximumConcurrency))
		}
		differs("ScalingConfig.MaximumConcurrency", scalar(want.MaximumConcurrency), have)
	}
	return fs, nil
}

// recorder returns a func that adds a finding on resource id to fs when a
// property's deployed value differs from the template's.
func recorder(id string, fs *[]Finding) func(prop, want, have string) {
	return func(prop, want, have string) {
		if want != have {
			*fs = append(*fs, Finding{LogicalID: id, Property: prop, Want: want, Got: orNone(have)})
		}
	}
}

// scalar renders a JSON number, string or boolean the way SQS attributes
// render them: 3, "3" -> 3; true -> true.
func scalar(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(raw)
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
