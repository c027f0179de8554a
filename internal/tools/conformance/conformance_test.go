package conformance_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/tools/conformance"
)

const tpl = `{"Resources":{
 "Dlq":{"Type":"AWS::SQS::Queue","Properties":{"MessageRetentionPeriod":1209600,
   "RedriveAllowPolicy":{"redrivePermission":"byQueue","sourceQueueArns":[{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":sqs:src"]]}]}}},
 "Src":{"Type":"AWS::SQS::Queue","Properties":{"MessageRetentionPeriod":345600,"VisibilityTimeout":30,
   "RedrivePolicy":{"deadLetterTargetArn":{"Fn::GetAtt":["Dlq","Arn"]},"maxReceiveCount":3}}},
 "Idem":{"Type":"AWS::DynamoDB::Table","Properties":{"TimeToLiveSpecification":{"AttributeName":"expiresAt","Enabled":true}}},
 "Esm":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],"ScalingConfig":{"MaximumConcurrency":5}}},
 "Role":{"Type":"AWS::IAM::Role","Properties":{}}
}}`

var resources = []conformance.Resource{
	{LogicalID: "Dlq", Type: "AWS::SQS::Queue", PhysicalID: "http://q/dlq"},
	{LogicalID: "Src", Type: "AWS::SQS::Queue", PhysicalID: "http://q/src"},
	{LogicalID: "Idem", Type: "AWS::DynamoDB::Table", PhysicalID: "idem-table"},
	{LogicalID: "Esm", Type: "AWS::Lambda::EventSourceMapping", PhysicalID: "uuid-1"},
}

type fakes struct {
	queues   map[string]map[string]string
	ttl      *dbtypes.TimeToLiveDescription
	mapping  lambda.GetEventSourceMappingOutput
	ttlFixed *dynamodb.UpdateTimeToLiveInput
}

func (f *fakes) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: f.queues[aws.ToString(in.QueueUrl)]}, nil
}

func (f *fakes) DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: f.ttl}, nil
}

func (f *fakes) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	f.ttlFixed = in
	return &dynamodb.UpdateTimeToLiveOutput{}, nil
}

func (f *fakes) GetEventSourceMapping(context.Context, *lambda.GetEventSourceMappingInput, ...func(*lambda.Options)) (*lambda.GetEventSourceMappingOutput, error) {
	return &f.mapping, nil
}

func conforming() *fakes {
	return &fakes{
		queues: map[string]map[string]string{
			"http://q/dlq": {"QueueArn": "arn:dlq", "MessageRetentionPeriod": "1209600", "RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["arn:aws:sqs:src"]}`},
			"http://q/src": {"QueueArn": "arn:aws:sqs:src", "MessageRetentionPeriod": "345600", "VisibilityTimeout": "30", "RedrivePolicy": `{"deadLetterTargetArn":"arn:dlq","maxReceiveCount":3}`},
		},
		ttl: &dbtypes.TimeToLiveDescription{AttributeName: aws.String("expiresAt"), TimeToLiveStatus: dbtypes.TimeToLiveStatusEnabled},
		mapping: lambda.GetEventSourceMappingOutput{BatchSize: aws.Int32(10), FunctionResponseTypes: []lambdatypes.FunctionResponseType{"ReportBatchItemFailures"},
			ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(5)}},
	}
}

func check(t *testing.T, f *fakes) []conformance.Finding {
	t.Helper()
	c := &conformance.Checker{Pseudo: map[string]string{"AWS::Partition": "aws"}, Queues: f, Tables: f, Mappings: f}
	fs, err := c.Check(context.Background(), []byte(tpl), resources)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestConformingStack(t *testing.T) {
	if fs := check(t, conforming()); len(fs) != 0 {
		t.Fatalf("findings on a conforming stack: %v", fs)
	}
}

func TestDifferences(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(f *fakes)
		want   []string
	}{
		{"redrive dropped", func(f *fakes) { delete(f.queues["http://q/src"], "RedrivePolicy") },
			[]string{"Src RedrivePolicy.deadLetterTargetArn: template says arn:dlq, deployed has nothing", "Src RedrivePolicy.maxReceiveCount: template says 3, deployed has nothing"}},
		{"wrong receive count", func(f *fakes) {
			f.queues["http://q/src"]["RedrivePolicy"] = `{"deadLetterTargetArn":"arn:dlq","maxReceiveCount":10}`
		}, []string{"Src RedrivePolicy.maxReceiveCount: template says 3, deployed has 10"}},
		{"allow policy dropped", func(f *fakes) { delete(f.queues["http://q/dlq"], "RedriveAllowPolicy") },
			[]string{"Dlq RedriveAllowPolicy.redrivePermission: template says byQueue, deployed has nothing", "Dlq RedriveAllowPolicy.sourceQueueArns: template says [arn:aws:sqs:src], deployed has []"}},
		{"retention", func(f *fakes) { f.queues["http://q/dlq"]["MessageRetentionPeriod"] = "345600" },
			[]string{"Dlq MessageRetentionPeriod: template says 1209600, deployed has 345600"}},
		{"batch failures off", func(f *fakes) { f.mapping.FunctionResponseTypes = nil },
			[]string{"Esm FunctionResponseTypes: template says [ReportBatchItemFailures], deployed has []"}},
		{"concurrency", func(f *fakes) { f.mapping.ScalingConfig = nil },
			[]string{"Esm ScalingConfig.MaximumConcurrency: template says 5, deployed has nothing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := conforming()
			tt.mutate(f)
			var got []string
			for _, fd := range check(t, f) {
				got = append(got, fd.String())
				if fd.Fix != nil {
					t.Errorf("%s has an emulator fix; only known gaps may", fd)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestTTLGapHasAnEmulatorFix(t *testing.T) {
	f := conforming()
	f.ttl = &dbtypes.TimeToLiveDescription{TimeToLiveStatus: dbtypes.TimeToLiveStatusDisabled}
	fs := check(t, f)
	if len(fs) != 1 || fs[0].Fix == nil || fs[0].Property != "TimeToLiveSpecification" {
		t.Fatalf("findings = %v", fs)
	}
	if err := fs[0].Fix(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := f.ttlFixed
	if in == nil || aws.ToString(in.TableName) != "idem-table" || aws.ToString(in.TimeToLiveSpecification.AttributeName) != "expiresAt" || !aws.ToBool(in.TimeToLiveSpecification.Enabled) {
		t.Fatalf("fix sent %+v", in)
	}
}

func TestMissingResourceIsAnError(t *testing.T) {
	c := &conformance.Checker{Queues: conforming(), Tables: conforming(), Mappings: conforming()}
	if _, err := c.Check(context.Background(), []byte(tpl), resources[1:]); err == nil || !strings.Contains(err.Error(), "Dlq") {
		t.Fatalf("err = %v", err)
	}
}
