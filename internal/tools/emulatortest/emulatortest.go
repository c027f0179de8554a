package emulatortest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/settings"
)

// Config loads the SDK configuration the way a Lambda function does. It
// fails the test when AWS_ENDPOINT_URL is unset, so that an e2e test never
// talks to a real account by accident.
func Config(t testing.TB) aws.Config {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("AWS_ENDPOINT_URL is not set: run e2e tests with `make e2e`")
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("load AWS config: %v", err)
	}
	return cfg
}

// Name returns a resource name unique to this test run: letters, digits
// and hyphens (every other character of the test's name becomes a hyphen),
// at most 70 bytes, so that a queue name with a suffix such as ".fifo"
// stays within SQS's 80.
func Name(t testing.TB, prefix string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, fmt.Sprintf("%s-%s-%d", prefix, t.Name(), time.Now().UnixNano()%1e9))
	if len(name) > 70 {
		name = name[len(name)-70:]
	}
	return strings.Trim(name, "-")
}

// createTable creates a table of a name no other test uses (see Name). A
// ResourceInUseException then means the table is ours: the SDK retried a
// CreateTable whose answer the emulator, on a loaded machine, lost after
// applying it (the same class as aws-sdk-go-v2#1825's retried sends).
func createTable(ctx context.Context, db *dynamodb.Client, in *dynamodb.CreateTableInput) error {
	_, err := db.CreateTable(ctx, in)
	var inUse *dbtypes.ResourceInUseException
	if errors.As(err, &inUse) {
		return nil
	}
	return err
}

// IdempotencyTable creates a table with the idempotency schema (partition key
// "pk", on-demand) and deletes it when the test ends.
func IdempotencyTable(t testing.TB, db *dynamodb.Client) string {
	t.Helper()
	ctx := context.Background()
	name := Name(t, "idem")
	err := createTable(ctx, db, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          dbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []dbtypes.AttributeDefinition{{AttributeName: aws.String(settings.PartitionKeyAttribute), AttributeType: dbtypes.ScalarAttributeTypeS}},
		KeySchema:            []dbtypes.KeySchemaElement{{AttributeName: aws.String(settings.PartitionKeyAttribute), KeyType: dbtypes.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(db)
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		t.Fatalf("wait for table %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// Queue creates a queue (a FIFO queue when name ends in ".fifo") and deletes
// it when the test ends. It returns the queue URL and ARN.
func Queue(t testing.TB, q *sqs.Client, name string) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	attrs := map[string]string{}
	if settings.IsFIFO(name) {
		attrs["FifoQueue"] = "true"
	}
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	url = aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = q.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	got, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("get ARN of %s: %v", name, err)
	}
	return url, got.Attributes["QueueArn"]
}

// Receive receives up to 10 messages from url with every attribute and
// converts them to the records an SQS event source mapping would deliver to
// Lambda from queue arn.
func Receive(t testing.TB, q *sqs.Client, url, arn string, wait int32) []events.SQSMessage {
	t.Helper()
	out, err := q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         10,
		WaitTimeSeconds:             wait,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("receive from %s: %v", url, err)
	}
	records := make([]events.SQSMessage, 0, len(out.Messages))
	for _, m := range out.Messages {
		r := events.SQSMessage{
			MessageId:      aws.ToString(m.MessageId),
			ReceiptHandle:  aws.ToString(m.ReceiptHandle),
			Body:           aws.ToString(m.Body),
			Md5OfBody:      aws.ToString(m.MD5OfBody),
			Attributes:     m.Attributes,
			EventSource:    "aws:sqs",
			EventSourceARN: arn,
			AWSRegion:      "us-east-1",
		}
		if len(m.MessageAttributes) > 0 {
			r.MessageAttributes = map[string]events.SQSMessageAttribute{}
			for name, a := range m.MessageAttributes {
				r.MessageAttributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
			}
		}
		records = append(records, r)
	}
	return records
}

// Outputs returns the outputs of the stack deployed by `make deploy-local`,
// read from the file named by HOMING_OUTPUTS (make e2e sets it). The test
// fails when the file is missing: the deployed-stack tests never skip.
func Outputs(t testing.TB) map[string]string {
	t.Helper()
	path := os.Getenv("HOMING_OUTPUTS")
	if path == "" {
		t.Fatal("HOMING_OUTPUTS is not set: run the e2e tests with `make e2e`, which deploys the stack first")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read stack outputs: %v (run `make deploy-local`)", err)
	}
	var out map[string]string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return out
}

// Output returns one stack output, failing the test when it is absent.
func Output(t testing.TB, outputs map[string]string, key string) string {
	t.Helper()
	v, ok := outputs[key]
	if !ok || v == "" {
		t.Fatalf("stack output %s is missing (have %v)", key, outputs)
	}
	return v
}

// SampleLane is the lane of the sample stack (infra/stack.go) that the
// deployed-stack tests drive.
const SampleLane = "orders"

// LaneOutput returns one output of a lane by its settings.Output* key (the
// output settings.OutputID(lane, key)), failing the test when it is absent.
func LaneOutput(t testing.TB, outputs map[string]string, lane, key string) string {
	t.Helper()
	return Output(t, outputs, settings.OutputID(lane, key))
}

// Eventually polls cond every 500 ms until it returns true or timeout
// passes; then it fails the test with cond's last description.
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still not true after %s: %s", timeout, state)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Depth returns the messages of a queue: visible, in flight and delayed.
func Depth(t testing.TB, q *sqs.Client, url string) (visible, inFlight, delayed int) {
	t.Helper()
	out, err := q.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	}})
	if err != nil {
		t.Fatalf("depth of %s: %v", url, err)
	}
	n := func(k sqstypes.QueueAttributeName) int {
		v, _ := strconv.Atoi(out.Attributes[string(k)])
		return v
	}
	return n(sqstypes.QueueAttributeNameApproximateNumberOfMessages), n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible), n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)
}

// TaxAdmin drives the tax stand-in's admin API (internal/sample/taxstub).
type TaxAdmin struct {
	t    testing.TB
	base string
}

// NewTaxAdmin returns an admin client for the stand-in at base.
func NewTaxAdmin(t testing.TB, base string) *TaxAdmin {
	return &TaxAdmin{t: t, base: strings.TrimRight(base, "/")}
}

// SetMode posts {"mode":mode} (up, down or flaky).
func (a *TaxAdmin) SetMode(mode string) {
	a.t.Helper()
	a.call("POST", "/admin/mode", `{"mode":"`+mode+`"}`, nil)
}

// Invoices returns the invoices issued per orderId.
func (a *TaxAdmin) Invoices() map[string]int {
	a.t.Helper()
	out := map[string]int{}
	a.call("GET", "/admin/invoices", "", &out)
	return out
}

func (a *TaxAdmin) call(method, path, body string, into any) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("tax stand-in %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("tax stand-in %s %s: %s %s", method, path, resp.Status, b)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			a.t.Fatalf("tax stand-in %s %s: %v", method, path, err)
		}
	}
}

// LedgerTable creates a table with the replay ledger schema (partition key
// "pk", sort key "sk", both String, on-demand), named after the test with
// the characters DynamoDB refuses replaced, and deletes it when the test
// ends.
func LedgerTable(t testing.TB, db *dynamodb.Client) string {
	t.Helper()
	ctx := context.Background()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, Name(t, "ledger"))
	err := createTable(ctx, db, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: dbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []dbtypes.AttributeDefinition{
			{AttributeName: aws.String(settings.PartitionKeyAttribute), AttributeType: dbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(settings.SortKeyAttribute), AttributeType: dbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []dbtypes.KeySchemaElement{
			{AttributeName: aws.String(settings.PartitionKeyAttribute), KeyType: dbtypes.KeyTypeHash},
			{AttributeName: aws.String(settings.SortKeyAttribute), KeyType: dbtypes.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		t.Fatalf("wait for table %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}
