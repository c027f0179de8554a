package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/replay"
)

// The queues of the lane an operator names with --queue or --from.
const (
	roleDLQ     = "dlq"
	roleParking = "parking"
	roleInvalid = "invalid"
)

var roleOutputs = map[string]string{roleDLQ: outDLQ, roleParking: outParking, roleInvalid: outInvalid}

// checkRole validates --queue/--from.
func checkRole(flag, role string) error {
	if _, ok := roleOutputs[role]; !ok {
		return usageError("--%s %q: want dlq, parking or invalid", flag, role)
	}
	return nil
}

// roleURL resolves --queue/--from to a queue URL.
func (s *session) roleURL(flag, role string) (string, error) {
	if err := checkRole(flag, role); err != nil {
		return "", err
	}
	return s.res.get(roleOutputs[role])
}

// browsableRole opens a session and checks that the queue --queue names
// may be browsed (see browsable); it returns the queue's URL and attributes.
func (a *app) browsableRole(ctx context.Context, role, verb string, force bool) (s *session, url string, attrs map[string]string, err error) {
	if s, err = a.open(ctx, needs(roleOutputs[role])); err != nil {
		return nil, "", nil, err
	}
	if url, err = s.roleURL("queue", role); err != nil {
		return nil, "", nil, err
	}
	attrs, err = browsable(ctx, s.queue, url, verb, force)
	return s, url, attrs, err
}

// An SQS queue URL is http(s)://HOST/ACCOUNT/NAME: a host name or an
// IP address with a port or without, the account's 12 digits, the queue's
// name up to 80 letters, digits, '-' and '_', a FIFO queue's ending in
// ".fifo" (counted in the 80).
var (
	hostPattern      = regexp.MustCompile(`^(?:[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$`)
	accountPattern   = regexp.MustCompile(`^[0-9]{12}$`)
	queueNamePattern = regexp.MustCompile(`^(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$`)
)

// checkQueueURL refuses a value of name (a flag, "--to", or an output)
// that is not an SQS queue URL: another scheme than https or http, a
// query, a fragment, an escape, or credentials (user:password@), which
// the error leaves out.
func checkQueueURL(name, v string) error {
	if strings.Contains(v, "@") {
		return fmt.Errorf("%s %s: not a queue URL: it has an '@' in it, as a URL with credentials (user:password@) has — dlq uses none, and shows none", name, shown(v))
	}
	u, err := url.Parse(v)
	ok := err == nil && len(v) <= 300 && !strings.ContainsAny(v, "?#%") &&
		(u.Scheme == "https" || u.Scheme == "http") && u.User == nil && hostPattern.MatchString(u.Host) && len(u.Host) <= 260
	if ok {
		account, name, found := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
		ok = found && accountPattern.MatchString(account) && queueNamePattern.MatchString(name)
	}
	if !ok {
		return fmt.Errorf("%s %s: not a queue URL (want https://sqs.REGION.amazonaws.com/ACCOUNT/NAME, or an emulator's http://HOST:PORT/ACCOUNT/NAME)", name, shown(v))
	}
	return nil
}

// tableNamePattern is a DynamoDB table name: 3..255 letters, digits, '_',
// '-' and '.'; tableARNPattern a table's ARN, with the name in it.
var (
	tableNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)
	tableARNPattern  = regexp.MustCompile(`^arn:aws[a-z-]*:dynamodb:[a-z]{2}(?:-[a-z]+)+-[0-9]+:[0-9]{12}:table/([A-Za-z0-9_.-]{3,255})$`)
)

// checkTableName refuses a value of name (a flag or an output) that is
// neither a DynamoDB table name nor a table's ARN.
func checkTableName(name, v string) error {
	if !tableNamePattern.MatchString(v) && !tableARNPattern.MatchString(v) {
		return fmt.Errorf("%s %s: not a DynamoDB table (want its name, 3..255 letters, digits, '_', '-' or '.', or its ARN)", name, shown(v))
	}
	return nil
}

// queueStats are a queue's approximate counts and retention.
type queueStats struct {
	Role             string `json:"role"` // dlq, parking, invalid
	URL              string `json:"url"`
	Visible          int    `json:"visible"`
	InFlight         int    `json:"inFlight"`
	Delayed          int    `json:"delayed"`
	RetentionSeconds int    `json:"retentionSeconds"`
}

// attributes reads every attribute of a queue.
func attributes(ctx context.Context, q replay.Queue, url string) (map[string]string, error) {
	out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return nil, fmt.Errorf("read the attributes of queue %s: %w (check the URL, the region and your credentials)", url, err)
	}
	return out.Attributes, nil
}

func statsOf(role, url string, attrs map[string]string) queueStats {
	n := func(k types.QueueAttributeName) int {
		v, _ := strconv.Atoi(attrs[string(k)])
		return v
	}
	return queueStats{
		Role: role, URL: url,
		Visible:          n(types.QueueAttributeNameApproximateNumberOfMessages),
		InFlight:         n(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:          n(types.QueueAttributeNameApproximateNumberOfMessagesDelayed),
		RetentionSeconds: n(types.QueueAttributeNameMessageRetentionPeriod),
	}
}

// browsable reads a queue's attributes and refuses a queue with a
// RedrivePolicy, a source queue, unless force: every receive from it
// counts as a delivery attempt toward its maxReceiveCount.
func browsable(ctx context.Context, q replay.Queue, url, verb string, force bool) (map[string]string, error) {
	attrs, err := attributes(ctx, q, url)
	if err != nil {
		return nil, err
	}
	policy := attrs[string(types.QueueAttributeNameRedrivePolicy)]
	if policy == "" || force {
		return attrs, nil
	}
	var rp struct {
		Target string `json:"deadLetterTargetArn"`
		Max    any    `json:"maxReceiveCount"`
	}
	_ = json.Unmarshal([]byte(policy), &rp) // the raw policy is named below either way
	target := rp.Target[strings.LastIndex(rp.Target, ":")+1:]
	return nil, refused("refusing to %s %s: it has a RedrivePolicy (maxReceiveCount %v, dead-letter queue %s), so it is a source queue, "+
		"and every receive from it counts as a delivery attempt that pushes its messages toward the DLQ. "+
		"Look at its DLQ instead (--queue dlq), or pass --force if you accept burning delivery attempts", verb, url, rp.Max, target)
}
