package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Stack output keys (infra/stack.go) the commands read.
const (
	outDLQ            = "DeadLetterQueueUrl"
	outSource         = "SourceQueueUrl"
	outParking        = "ParkingQueueUrl"
	outInvalid        = "InvalidQueueUrl"
	outLedger         = "LedgerTableName"
	outIdempotency    = "IdempotencyTableName"
	outReplayFunction = "ReplayFunctionName"
)

// defaultOutputsFile is where `make deploy-local` writes the outputs.
const defaultOutputsFile = ".local/outputs.json"

// resources are the lane's queues and tables: the stack outputs, with the
// explicit flags on top.
type resources struct {
	values map[string]string // output key -> value
	flags  map[string]string // output key -> the flag that sets it
	origin string            // where the outputs came from, for messages
	err    error             // why no outputs were read, if so
}

// get returns the resource of an output key, or an error naming the flag
// and the outputs that lack it.
func (r *resources) get(key string) (string, error) {
	if v := r.values[key]; v != "" {
		return v, nil
	}
	flag := r.flags[key]
	if r.err != nil {
		return "", fmt.Errorf("no %s: %w — run `make deploy-local`, or pass --stack NAME or --%s", key, r.err, flag)
	}
	return "", fmt.Errorf("no %s: %s has no output %s — pass --%s", key, r.origin, key, flag)
}

// optional returns the resource of an output key, or "" when unknown.
func (r *resources) optional(key string) string { return r.values[key] }

// loadResources reads the outputs (of --stack, or of --stack-outputs, or of
// the default file when it exists) and applies the explicit flags.
func (a *app) loadResources(ctx context.Context, b *backend) (*resources, error) {
	g := &a.flags
	r := &resources{values: map[string]string{}, flags: map[string]string{}}
	switch {
	case g.stack != "":
		r.origin = "stack " + g.stack
		out, err := b.stackOutputs(ctx, g.stack)
		if err != nil {
			return nil, fmt.Errorf("read the outputs of stack %s with CloudFormation DescribeStacks: %w (check the name, --region and your credentials)", g.stack, err)
		}
		r.values = out
	default:
		r.origin = g.outputsFile
		b, err := os.ReadFile(g.outputsFile)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !g.outputsFileSet:
			r.err = fmt.Errorf("read %s: no such file", g.outputsFile)
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("read %s: no such file — run `make deploy-local`, or pass --stack NAME or the resource flags (--dlq-url...)", g.outputsFile)
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", g.outputsFile, err)
		default:
			if err := json.Unmarshal(b, &r.values); err != nil {
				return nil, fmt.Errorf("read %s: not a flat JSON object of stack outputs: %w", g.outputsFile, err)
			}
		}
	}
	for _, f := range g.resourceFlags() {
		r.flags[f.key] = f.name
		if *f.value != "" {
			r.values[f.key] = *f.value
		}
	}
	return r, nil
}
