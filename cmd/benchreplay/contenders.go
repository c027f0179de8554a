package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/handler"
	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/drill"
	"github.com/homingdlq/homing/internal/wait"
	"github.com/homingdlq/homing/replay"
)

// contender is one way of moving the DLQ's messages to the source queue.
type contender struct {
	key     string // engine-1, engine-w, cli-1, cli-w, naive, raw-1, raw-w
	name    string // the table's row
	workers int
	// tables: it runs the replay engine, needs the ledger and idempotency
	// tables, and its calls are held to the engine's target
	tables bool
	cli    bool // it starts bin/dlq: needs a replay function and an outputs file
	// move moves rt.n messages from rt.dlq to rt.source.
	move func(ctx context.Context, mv mover, rt route) error
}

// contenderKeys are the keys of every contender, in the tables' order.
func contenderKeys() []string {
	var keys []string
	for _, c := range contenders(2, "", "") {
		keys = append(keys, c.key)
	}
	return keys
}

// contenders returns the contenders whose key contains only ("" for all);
// dlq is the binary of the CLI's.
func contenders(w int, only, dlq string) []contender {
	all := []contender{
		{key: "engine-1", name: "engine, 1 worker", workers: 1, tables: true},
		{key: "engine-w", name: fmt.Sprintf("engine, %d workers", w), workers: w, tables: true},
		{key: "cli-1", name: "dlq replay, 1 worker", workers: 1, tables: true, cli: true},
		{key: "cli-w", name: fmt.Sprintf("dlq replay, %d workers", w), workers: w, tables: true, cli: true},
		{key: "naive", name: "naive mover (1 by 1)", workers: 1, move: naive},
		{key: "raw-1", name: "raw batch loop, 1 worker", workers: 1},
		{key: "raw-w", name: fmt.Sprintf("raw batch loop, %d workers", w), workers: w},
	}
	var out []contender
	for _, c := range all {
		if only != "" && !strings.Contains(c.key, only) {
			continue
		}
		switch {
		case c.cli:
			c.move = cliMover(dlq)
		case c.tables:
			c.move = engineMover
		case c.move == nil:
			c.move = rawMover(c.workers)
		}
		out = append(out, c)
	}
	return out
}

// laneName is the lane of the engine's route and of the CLI's outputs.
const laneName = "orders"

// replayEnv is the replay function's environment for rt: its one route,
// its tables, MAX_PER_RUN the round's messages, WORKERS the contender's,
// at the engine's highest rate. The policy replays at once (BACKOFF_BASE
// 1ms): the dead letters are due, as after an outage that outlasted the
// backoff. No HEALTH_URL: no health gate. The engine reads it as the
// function does (handler.LoadConfig); the CLI reads it from the replay
// function created with it (lambda:GetFunctionConfiguration), as it reads
// a deployed lane's.
func replayEnv(rt route) (map[string]string, error) {
	routes, err := json.Marshal([]replay.Route{{Name: laneName, DLQURL: rt.dlq, SourceURL: rt.source, ParkingURL: rt.parking,
		Key: invoicing.KeyExpr, PayloadHash: invoicing.HashPart, Records: true}})
	if err != nil {
		return nil, fmt.Errorf("encode route: %w", err)
	}
	return map[string]string{
		settings.ReplayRoutes.Env:     string(routes),
		settings.LedgerTable.Env:      rt.ledger,
		settings.IdempotencyTable.Env: rt.idempotency,
		settings.BackoffBase.Env:      "1ms",
		settings.Rate.Env:             settings.FormatFloat(settings.Rate.Max),
		settings.MaxPerRun.Env:        strconv.Itoa(rt.n),
		settings.Workers.Env:          strconv.Itoa(rt.workers),
	}, nil
}

// scheduledEvent is the payload of the replay function's EventBridge
// schedule.
const scheduledEvent = `{"version":"0","id":"bench","detail-type":"` + handler.ScheduledDetailType +
	`","source":"` + handler.ScheduledSource + `","account":"000000000000","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":[],"detail":{}}`

// engineMover runs the replay engine as the replay function wires it
// (functions/replay): configuration read by handler.LoadConfig, handler.New
// over the real SQS client, the dynamo ledger and completions, the sample's
// route (its key and payload hash, its consumer's records); one scheduled
// invocation.
func engineMover(ctx context.Context, mv mover, rt route) error {
	env, err := replayEnv(rt)
	if err != nil {
		return err
	}
	cfg, err := handler.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	health, err := cfg.Health(nil)
	if err != nil {
		return err
	}
	h := handler.New(cfg, handler.Deps{
		Queue:       mv.sqs,
		Ledger:      dynamo.NewLedger(mv.db, cfg.LedgerTable, nil),
		Completions: dynamo.NewCompletions(mv.db, cfg.IdempotencyTable, cfg.ConsumerName, nil),
		Health:      health,
		Logger:      mv.logger,
		Metrics:     io.Discard,
	})
	sum, err := h.Handle(ctx, []byte(scheduledEvent))
	if err != nil {
		return fmt.Errorf("engine run: %w (summary %+v)", err, sum.Total)
	}
	return nil
}

// receiptHandleIsInvalid is the code of a delete whose message is gone.
// The emulator answers it when the SDK retries a delete whose first
// attempt was applied but whose answer was lost (see [bench.check]): the
// message is deleted, which is what the movers want. [bench.check]
// verifies that the DLQ ends empty.
const receiptHandleIsInvalid = "ReceiptHandleIsInvalid"

// naive is the mover of blog-post scripts: receive one message, send it,
// delete it, until the DLQ is empty.
func naive(ctx context.Context, mv mover, rt route) error {
	c := mv.clients
	for {
		out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(rt.dlq), MaxNumberOfMessages: 1, MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			return fmt.Errorf("receive: %w", err)
		}
		if len(out.Messages) == 0 {
			if done, err := drained(ctx, c.sqs, rt.dlq); done || err != nil {
				return err
			}
			continue
		}
		m := out.Messages[0]
		if _, err := c.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(rt.source), MessageBody: m.Body, MessageAttributes: m.MessageAttributes}); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		if _, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(rt.dlq), ReceiptHandle: m.ReceiptHandle}); err != nil && !errors.As(err, new(*types.ReceiptHandleIsInvalid)) {
			return fmt.Errorf("delete: %w", err)
		}
	}
}

// rawMover is the loop the SDK's batch calls allow with no bookkeeping:
// workers goroutines, each receiving 10 (no long poll), sending them with
// SendMessageBatch and deleting them with DeleteMessageBatch, until the
// DLQ is empty.
func rawMover(workers int) func(ctx context.Context, mv mover, rt route) error {
	return func(ctx context.Context, mv mover, rt route) error {
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { errs[w] = rawLoop(ctx, mv.sqs, rt) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

func rawLoop(ctx context.Context, q *sqs.Client, rt route) error {
	for {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(rt.dlq), MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			return fmt.Errorf("receive: %w", err)
		}
		if len(out.Messages) == 0 {
			if done, err := drained(ctx, q, rt.dlq); done || err != nil {
				return err
			}
			continue
		}
		sends := make([]types.SendMessageBatchRequestEntry, len(out.Messages))
		deletes := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			id := aws.String(strconv.Itoa(i))
			sends[i] = types.SendMessageBatchRequestEntry{Id: id, MessageBody: m.Body, MessageAttributes: m.MessageAttributes}
			deletes[i] = types.DeleteMessageBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle}
		}
		sent, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(rt.source), Entries: sends})
		if err != nil {
			return fmt.Errorf("send batch: %w", err)
		}
		if len(sent.Failed) > 0 {
			return fmt.Errorf("send batch: %d refused: %s", len(sent.Failed), aws.ToString(sent.Failed[0].Message))
		}
		deleted, err := q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(rt.dlq), Entries: deletes})
		if err != nil {
			return fmt.Errorf("delete batch: %w", err)
		}
		for _, f := range deleted.Failed {
			if aws.ToString(f.Code) != receiptHandleIsInvalid {
				return fmt.Errorf("delete batch: %d refused: %s", len(deleted.Failed), aws.ToString(f.Message))
			}
		}
	}
}

// drainedPoll is how long a mover whose receive came back empty waits
// before it receives again while the DLQ still holds messages.
const drainedPoll = 100 * time.Millisecond

// drained is what a mover does when a receive comes back empty: it reports
// true when the DLQ holds nothing, visible or not; otherwise it waits
// drainedPoll and reports false, to receive again. Messages still held
// are another worker's, or those of a receive whose answer was lost (see
// [bench.check]): the DLQ's short visibility timeout ([dlqVisibility])
// brings them back.
func drained(ctx context.Context, q *sqs.Client, dlq string) (bool, error) {
	d, err := drill.QueueDepth(ctx, q, dlq)
	if err != nil {
		return false, err
	}
	if d.Total() == 0 {
		return true, nil
	}
	if err := wait.Sleep(ctx, drainedPoll); err != nil {
		return false, fmt.Errorf("wait for the DLQ to drain: %w", err)
	}
	return false, nil
}
