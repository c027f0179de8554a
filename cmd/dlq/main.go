// Command dlq is the operator's command line for a dead-letter lane:
// inspect the DLQ, peek at messages, replay on demand with the engine the
// scheduled replay function uses, audit a business key or the recent
// runs, and list and release the parked message groups of a FIFO lane
// (package fifo). What it knows of the lane's messages (their key, payload hash,
// whether the consumer writes completion records, the consumer's scope)
// it reads from the lane's replay function (REPLAY_ROUTES, CONSUMER_NAME).
//
//	dlq inspect                      depth, age of the oldest, expiry, counts by reason and replay count
//	dlq peek [-n 10] [--queue dlq]   messages with their metadata, released at once
//	dlq replay [--dry-run] ...       an on-demand replay run, with filters, a cap and a rate
//	dlq audit --key KEY | --runs N   a key's history and completion record; the last runs
//	dlq groups [release GROUP]       a FIFO lane's parked message groups; let one go on, in sequence
//
// Install it with `go install github.com/homingdlq/homing/cmd/dlq@latest`.
// It finds a lane in the stack outputs (--outputs-file FILE as `cdk deploy
// --outputs-file` writes it, or --stack NAME through CloudFormation; the
// lane's outputs are named settings.OutputID(lane, key)), by the lane's tags
// (--lane NAME alone), or in explicit flags; the AWS configuration
// (AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL) is the SDK's. `dlq --help`
// documents the flags, their environment variables and the exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], &app{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		isTerminal: isTerminal, connect: connectAWS,
	})
	stop()
	os.Exit(code)
}
