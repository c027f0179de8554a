package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/handler"
	"github.com/homingdlq/homing/internal/tools/drill"
	"github.com/homingdlq/homing/replay"
)

// errCrash is what the crashing queue answers in place of a delete.
var errCrash = errors.New("soak: crash injected between send and delete")

// crashingQueue is the SQS client with one crash: the first delete that
// follows a successful send fails and cancels the run, as if the process
// died after the batch's sends and ledger marks and before its delete.
type crashingQueue struct {
	replay.Queue
	cancel  context.CancelFunc
	sent    atomic.Bool
	crashed atomic.Bool
}

func (q *crashingQueue) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out, err := q.Queue.SendMessageBatch(ctx, in, optFns...)
	if err == nil && len(out.Successful) > 0 {
		q.sent.Store(true)
	}
	return out, err
}

func (q *crashingQueue) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if q.sent.Load() && q.crashed.CompareAndSwap(false, true) {
		q.cancel()
		return nil, errCrash
	}
	return q.Queue.DeleteMessageBatch(ctx, in, optFns...)
}

// crashes injects the crashes while the DLQ holds the outage's dead
// letters and the tax service answers again (flaky).
func (s *soak) crashes(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		crashed, err := s.crashAfterSend(ctx)
		if err != nil {
			return err
		}
		if crashed || attempt == 3 {
			break
		}
		time.Sleep(20 * time.Second) // the gates held it or nothing was due: try again
	}
	for k := range s.opts.kills {
		if err := s.killReplay(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// crashAfterSend runs the replay engine in this process, configured as the
// deployed replay function is (its environment, read from Lambda), on a
// queue that crashes after the first batch's sends. It reports whether
// the crash happened: the gates may hold the run, or nothing may be due.
func (s *soak) crashAfterSend(ctx context.Context) (bool, error) {
	fn, err := s.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(s.out[drill.ReplayFunctionName])})
	if err != nil {
		return false, fmt.Errorf("read the replay function's configuration: %w", err)
	}
	env := map[string]string{}
	if fn.Environment != nil {
		env = fn.Environment.Variables
	}
	cfg, err := handler.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		return false, err
	}
	opts := cfg.Options()
	if opts.Health, err = cfg.Health(nil); err != nil {
		return false, err
	}
	opts.Completions = dynamo.NewCompletions(s.db, cfg.IdempotencyTable, cfg.ConsumerName, nil)
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := &crashingQueue{Queue: s.sqs, cancel: cancel}
	sum, runErr := replay.New(q, dynamo.NewLedger(s.db, cfg.LedgerTable, nil), opts).Run(runCtx, replay.Request{Routes: cfg.Routes, Max: 100})
	what := fmt.Sprintf("in-process run %s: replayed %d, recovered %d, applied %d, deferred %d, errors %d, crashed %v (run error: %v)",
		sum.RunID, sum.Total.Replayed, sum.Total.Recovered, sum.Total.Applied, sum.Total.Deferred, sum.Total.Errors, q.crashed.Load(), runErr)
	fmt.Println("      " + what)
	s.injected = append(s.injected, what)
	return q.crashed.Load(), nil
}

// killReplay starts the operator's `dlq replay` and kills it (SIGKILL) after
// a random 0.3..2 s: at whatever point of a batch it has reached.
func (s *soak) killReplay(ctx context.Context, k int) error {
	args := []string{"--lane", drill.Lane, "replay", "--yes", "--max", "200"}
	if path := os.Getenv("HOMING_OUTPUTS"); path != "" {
		args = append(args, "--stack-outputs", path)
	}
	cmd := exec.CommandContext(ctx, s.opts.dlq, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.opts.dlq, err)
	}
	after := 300*time.Millisecond + time.Duration(s.rng.Int64N(int64(1700*time.Millisecond)))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var what string
	select {
	case err := <-done:
		what = fmt.Sprintf("dlq replay #%d ended by itself before its kill at %s (%v): %s", k+1, after.Round(time.Millisecond), err, bytes.TrimSpace(stderr.Bytes()))
	case <-time.After(after):
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill %s: %w", s.opts.dlq, err)
		}
		<-done
		what = fmt.Sprintf("dlq replay #%d killed after %s", k+1, after.Round(time.Millisecond))
	}
	fmt.Println("      " + what)
	s.injected = append(s.injected, what)
	return nil
}
