package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/homingdlq/homing/internal/settings"
)

// A lane's output keys (settings) the commands read, without the lane's
// prefix: a stack names them settings.OutputID(lane, key).
const (
	outDLQ            = settings.OutputDeadLetterQueueURL
	outSource         = settings.OutputSourceQueueURL
	outParking        = settings.OutputParkingQueueURL
	outInvalid        = settings.OutputInvalidQueueURL
	outLedger         = settings.OutputLedgerTableName
	outIdempotency    = settings.OutputIdempotencyTableName
	outReplayFunction = settings.OutputReplayFunctionName
	outArchive        = settings.OutputArchiveBucketName
)

// laneKeys are the output keys of every lane that dlq reads.
var laneKeys = []string{outDLQ, outSource, outParking, outInvalid, outLedger, outIdempotency, outReplayFunction, outArchive}

// Environment variables that stand in for the flags that say where the
// lane is, when the flags are not given.
const (
	envOutputs = "HOMING_OUTPUTS" // --outputs-file
	envStack   = "HOMING_STACK"   // --stack
	envLane    = "HOMING_LANE"    // --lane
)

// defaultOutputsFile is where `make deploy-local` writes the outputs of the
// local stack; dlq reads it when nothing else says where the lane is.
const defaultOutputsFile = ".local/outputs.json"

// resources are one lane's queues, tables and functions: its outputs (or
// the resources its tags name), with the explicit flags on top.
type resources struct {
	values map[string]string // lane output key (outDLQ...) -> value
	flags  map[string]string // lane output key -> the flag that sets it
	from   map[string]string // lane output key -> where its value was found, for messages
	lane   string            // the lane's name; "" when the outputs do not name it
	// absent says why a key has no value: the origin's own words.
	absent func(key string) string
	err    error // why no outputs were read at all, if so
	byTags bool  // the lane was found by its tags, without outputs
}

// get returns the resource of an output key, or an error that says where
// it was looked for and which flag gives it.
func (r *resources) get(key string) (string, error) {
	if v := r.values[key]; v != "" {
		return v, nil
	}
	flag := r.flags[key]
	if r.err != nil {
		return "", fmt.Errorf("no %s: %w; or pass --%s", key, r.err, flag)
	}
	return "", fmt.Errorf("no %s: %s — pass --%s", key, r.absent(key), flag)
}

// optional returns the resource of an output key, or "" when unknown.
func (r *resources) optional(key string) string { return r.values[key] }

// origin says where the value of an output key was found.
func (r *resources) origin(key string) string {
	if o := r.from[key]; o != "" {
		return o
	}
	return "the lane's " + key
}

// errNoOrigin is why there are no outputs when nothing says where the lane is.
var errNoOrigin = errors.New("nothing says where the lane is — pass --stack NAME (CloudFormation), " +
	"--outputs-file FILE (as `cdk deploy --outputs-file` writes it), or --lane NAME to find the lane by its tags")

// open finds the lane's resources and connects to AWS. need checks the
// resources the command cannot do without (nil: none). When the lane is
// in an outputs file, or nowhere and the resource flags name it, the
// resources are known before any AWS call: they are read (a missing or
// malformed file fails fast) and need checks them before dlq looks for a
// region or credentials. When the lane is a stack or its tags, dlq
// connects, reads them, then checks.
func (a *app) open(ctx context.Context, need func(*resources) error) (*session, error) {
	g := &a.flags
	var res *resources
	if g.outputsFile != "" || g.stack == "" && g.lane == "" {
		var err error
		if res, err = a.fileResources(); err != nil {
			return nil, err
		}
		if err := a.withFlags(res, need); err != nil {
			return nil, err
		}
	}
	b, err := a.connect(ctx, g, a.logger())
	if err != nil {
		return nil, err
	}
	switch {
	case res != nil:
		return &session{backend: b, res: res}, nil
	case g.stack != "":
		out, err := b.stackOutputs(ctx, g.stack)
		if err != nil {
			return nil, fmt.Errorf("read the outputs of stack %s with CloudFormation DescribeStacks: %w (check the name, --region and your credentials)", g.stack, err)
		}
		if res, err = a.pickLane(map[string]map[string]string{"": out}, "stack "+g.stack); err != nil {
			return nil, err
		}
	default:
		values, err := discoverLane(ctx, b.tagging, b.queueURLs, g.lane)
		if err != nil {
			return nil, err
		}
		from := map[string]string{}
		for k := range values {
			r, _ := roleOfKey(k)
			from[k] = fmt.Sprintf("the %s tagged %s=%s, %s=%s", r.kind(), settings.TagLane, g.lane, settings.TagRole, r.role)
		}
		if err := checkFound(values, from); err != nil {
			return nil, err
		}
		res = &resources{values: values, from: from, lane: g.lane, byTags: true, absent: func(key string) string {
			r, ok := roleOfKey(key)
			if !ok {
				return fmt.Sprintf("lane %s is found by its tags, and no tag names its %s: dlq finds it only among the lane's stack outputs (--stack, --outputs-file)", g.lane, key)
			}
			return fmt.Sprintf("no %s is tagged %s=%s and %s=%s", r.kind(), settings.TagLane, g.lane, settings.TagRole, r.role)
		}}
	}
	if err := a.withFlags(res, need); err != nil {
		return nil, err
	}
	return &session{backend: b, res: res}, nil
}

// withFlags puts the resource flags given on top of res, then checks res
// with need (nil: no check).
func (a *app) withFlags(res *resources, need func(*resources) error) error {
	res.flags = map[string]string{}
	if res.from == nil {
		res.from = map[string]string{}
	}
	for _, f := range a.flags.resourceFlags() {
		res.flags[f.key] = f.name
		if *f.value != "" {
			res.values[f.key] = *f.value
			res.from[f.key] = "--" + f.name
		}
	}
	if need == nil {
		return nil
	}
	return need(res)
}

// needs returns a need (see open) that gets each of keys.
func needs(keys ...string) func(*resources) error {
	return func(r *resources) error {
		for _, k := range keys {
			if _, err := r.get(k); err != nil {
				return err
			}
		}
		return nil
	}
}

// fileResources reads the lane from the outputs file: the one given, or
// the local stack's when it exists. Without either, the resources are
// empty and say so (the resource flags may still name everything). A
// file no flag names (the current directory's, or HOMING_OUTPUTS's) is
// announced on stderr, with its absolute path, before its values are used.
func (a *app) fileResources() (*resources, error) {
	g := &a.flags
	path, from := g.outputsFile, g.outputsFileFrom
	if path == "" {
		path = defaultOutputsFile
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && g.outputsFile == "":
		return &resources{values: map[string]string{}, err: errNoOrigin}, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read the outputs file %s (%s): no such file — pass the file that `cdk deploy --outputs-file` wrote, or --stack NAME to read the stack's outputs", path, from)
	case err != nil:
		return nil, fmt.Errorf("read the outputs file %s (%s): %w", path, from, err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	switch {
	case g.outputsFile == "":
		fmt.Fprintf(a.stderr, "dlq: using outputs file %s (found in the current directory; pass --outputs-file to name one)\n", path)
	case from == envOutputs:
		fmt.Fprintf(a.stderr, "dlq: using outputs file %s (from %s)\n", path, envOutputs)
	}
	stacks, flat, err := parseOutputs(b)
	if err != nil {
		return nil, fmt.Errorf("read the outputs file %s: %w", path, err)
	}
	where := "outputs file " + path
	switch {
	case g.stack != "" && flat:
		return nil, usageError("--stack %s with %s: it is a flat file of one stack's outputs, without stack names — drop --stack (or %s), or pass the file `cdk deploy --outputs-file` wrote", g.stack, where, envStack)
	case g.stack != "":
		out, ok := stacks[g.stack]
		if !ok {
			return nil, fmt.Errorf("%s has no stack %s; its stacks: %s", where, g.stack, strings.Join(slices.Sorted(maps.Keys(stacks)), ", "))
		}
		stacks = map[string]map[string]string{g.stack: out}
	}
	return a.pickLane(stacks, where)
}

// parseOutputs reads stack outputs in the format of `cdk deploy
// --outputs-file` ({"Stack":{"Key":"value"}}, one or more stacks) or flat
// ({"Key":"value"}, one stack, as `make deploy-local` writes it: flat is
// true and the stack's name is "").
func parseOutputs(b []byte) (stacks map[string]map[string]string, flat bool, err error) {
	const want = `want {"Stack":{"Key":"value"}} as ` + "`cdk deploy --outputs-file`" + ` writes it, or a flat {"Key":"value"}`
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		return nil, false, fmt.Errorf("not a JSON object of stack outputs (%s): %v", want, err)
	}
	flatOut := map[string]string{}
	stacks = map[string]map[string]string{}
	for k, v := range raw {
		switch v = bytes.TrimSpace(v); {
		case len(v) > 0 && v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, false, fmt.Errorf("output %s: %w", shown(k), err)
			}
			flatOut[k] = s
		case len(v) > 0 && v[0] == '{':
			var out map[string]string
			if err := json.Unmarshal(v, &out); err != nil {
				return nil, false, fmt.Errorf("stack %s: its outputs are not strings (%s): %w", shown(k), want, err)
			}
			stacks[k] = out
		default:
			return nil, false, fmt.Errorf("%s is neither an output nor a stack (%s)", shown(k), want)
		}
	}
	if len(stacks) > 0 && len(flatOut) > 0 {
		return nil, false, fmt.Errorf("stacks and outputs mixed at the top level (%s)", want)
	}
	if len(stacks) > 0 {
		return stacks, false, nil
	}
	return map[string]map[string]string{"": flatOut}, true, nil
}

// laneOutputs is one lane of a stack's outputs.
type laneOutputs struct {
	stack  string            // the stack in an outputs file of several; "" in a flat file or DescribeStacks
	prefix string            // settings.OutputID(lane, ""); "" for the unprefixed keys of a stack older than per-lane outputs
	values map[string]string // lane output key -> value
}

// name is the lane's name as its prefix spells it ("PaymentsLedger" ->
// "payments-ledger"): OutputID of it is the prefix again, so --lane takes
// it. The outputs do not keep the name's own spelling.
func (l laneOutputs) name() string {
	if l.prefix == "" {
		return "(unnamed)"
	}
	var b strings.Builder
	for i, r := range l.prefix {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (l laneOutputs) String() string {
	if l.stack == "" {
		return l.name()
	}
	return l.name() + " (stack " + l.stack + ")"
}

// lanesOf finds the lanes of stacks' outputs: one per output named
// <prefix>DeadLetterQueueUrl whose prefix a lane's name spells
// (settings.OutputID; so that --lane takes the name the lane is shown by:
// "ordersDeadLetterQueueUrl" is no lane's). A stack older than per-lane
// outputs has the keys without a prefix: one lane without a name. A stack
// that declares both for one lane (the same DLQ) counts it once, by its
// name.
func lanesOf(stacks map[string]map[string]string) []laneOutputs {
	var lanes []laneOutputs
	for _, stack := range slices.Sorted(maps.Keys(stacks)) {
		out := stacks[stack]
		var mine []laneOutputs
		for _, k := range slices.Sorted(maps.Keys(out)) {
			prefix, ok := strings.CutSuffix(k, outDLQ)
			l := laneOutputs{stack: stack, prefix: prefix, values: map[string]string{}}
			if !ok || prefix != "" && settings.OutputID(l.name(), "") != prefix {
				continue
			}
			for _, key := range laneKeys {
				if v, ok := out[prefix+key]; ok {
					l.values[key] = v
				}
			}
			mine = append(mine, l)
		}
		mine = slices.DeleteFunc(mine, func(l laneOutputs) bool {
			return l.prefix == "" && slices.ContainsFunc(mine, func(o laneOutputs) bool { return o.prefix != "" && o.values[outDLQ] == l.values[outDLQ] })
		})
		lanes = append(lanes, mine...)
	}
	return lanes
}

// pickLane picks the lane of --lane among the lanes of stacks, or the only
// one without --lane; where names the origin in errors.
func (a *app) pickLane(stacks map[string]map[string]string, where string) (*resources, error) {
	lanes := lanesOf(stacks)
	g := &a.flags
	var picked []laneOutputs
	switch {
	case g.lane != "":
		picked = slices.DeleteFunc(slices.Clone(lanes), func(l laneOutputs) bool { return l.prefix != settings.OutputID(g.lane, "") })
		if len(picked) == 0 && len(lanes) == 1 && lanes[0].prefix == "" {
			picked = lanes // a stack older than per-lane outputs: its one lane has no name
		}
	default:
		picked = lanes
	}
	list := func(ls []laneOutputs) string {
		s := make([]string, len(ls))
		for i, l := range ls {
			s[i] = l.String()
		}
		return strings.Join(s, ", ")
	}
	switch {
	case len(lanes) == 0:
		return nil, fmt.Errorf("%s has no lane: no output named <Lane>%s (check that it is the stack of a dead-letter lane, and that its deploy finished)", where, outDLQ)
	case len(picked) == 0:
		return nil, fmt.Errorf("%s has no lane %s (%s: no output %s); its lanes are %s — pass one of them with --lane", where, g.lane, g.laneFrom, settings.OutputID(g.lane, outDLQ), list(lanes))
	case len(picked) > 1 && g.lane != "":
		return nil, usageError("%s has lane %s in several stacks: %s — pass --stack NAME too", where, g.lane, list(picked))
	case len(picked) > 1:
		return nil, usageError("%s has %d lanes: %s — pass one of them with --lane NAME (or %s)", where, len(picked), list(picked), envLane)
	}
	l := picked[0]
	if l.stack != "" {
		where = "stack " + l.stack + " in " + where
	}
	name := g.lane
	if l.prefix != "" && name == "" {
		name = l.name()
	}
	from := map[string]string{}
	for k := range l.values {
		from[k] = fmt.Sprintf("%s (output %s)", where, l.prefix+k)
	}
	if err := checkFound(l.values, from); err != nil {
		return nil, err
	}
	return &resources{values: l.values, from: from, lane: name, absent: func(key string) string {
		return fmt.Sprintf("%s has no output %s", where, l.prefix+key)
	}}, nil
}
