package main

import (
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/homingdlq/homing/internal/settings"
)

// results holds what the rounds measured.
type results struct {
	// rates in messages per second by profile name and contender key, one
	// per round
	rates map[string]map[string][]float64
	// API calls per 100 messages by profile name, contender key and
	// operation, of the contender's last round
	calls map[string]map[string]map[string]float64
}

func newResults() *results {
	return &results{rates: map[string]map[string][]float64{}, calls: map[string]map[string]map[string]float64{}}
}

func (r *results) add(profile, key string, rate float64) {
	if r.rates[profile] == nil {
		r.rates[profile] = map[string][]float64{}
	}
	r.rates[profile][key] = append(r.rates[profile][key], rate)
}

// addCalls records the API calls of a contender's round of n messages.
func (r *results) addCalls(profile, key string, counts map[string]int, n int) {
	if r.calls[profile] == nil {
		r.calls[profile] = map[string]map[string]float64{}
	}
	r.calls[profile][key] = perHundred(counts, n)
}

// median returns the median rate of profile and key, and false when none
// was measured.
func (r *results) median(profile, key string) (float64, bool) {
	rates := slices.Clone(r.rates[profile][key])
	if len(rates) == 0 {
		return 0, false
	}
	slices.Sort(rates)
	mid := len(rates) / 2
	if len(rates)%2 == 1 {
		return rates[mid], true
	}
	return (rates[mid-1] + rates[mid]) / 2, true
}

// totalCalls returns the API calls per 100 messages of profile and key,
// all operations, and false when none were recorded.
func (r *results) totalCalls(profile, key string) (float64, bool) {
	byOp, ok := r.calls[profile][key]
	var sum float64
	for _, v := range byOp {
		sum += v
	}
	return sum, ok
}

// kind says what a figure measures.
type kind int

const (
	// ceiling: a bare emulator's figure. Every call costs the CPU of the
	// emulator's one process, on the benchmark's own cores: the figure is
	// the most this machine serves the contender, not a round-trip figure.
	ceiling kind = iota
	// roundTrip: a delayed figure at most cpuBoundShare of the contender's
	// own ceiling: the delay, not the emulator's CPU, held it. Judged.
	roundTrip
	// cpuBound: a delayed figure above cpuBoundShare of the contender's own
	// ceiling: the contender used most of what the emulator serves it, so
	// its CPU, not the round trips, decided. Printed, marked, not judged.
	cpuBound
	// unclassified: a delayed figure without a ceiling to compare it
	// with. Not judged.
	unclassified
)

// cpuBoundShare is the share of a contender's bare ceiling above which its
// delayed figure is CPU-bound.
const cpuBoundShare = 0.5

// classify says what a contender's median rate on a profile measures:
// delayed says the profile is a delayed one, bare is the contender's
// median on the bare emulator (bareOK false when it was not measured).
func classify(delayed bool, rate, bare float64, bareOK bool) kind {
	switch {
	case !delayed:
		return ceiling
	case !bareOK || bare <= 0:
		return unclassified
	case rate > cpuBoundShare*bare:
		return cpuBound
	default:
		return roundTrip
	}
}

// figure is one contender's median rate on one profile and what it
// measures.
type figure struct {
	who      string  // the contender's name
	rate     float64 // median, messages per second
	lo, hi   float64 // lowest and highest of the rounds
	measured bool
	share    float64 // rate over the contender's bare ceiling; 0 on the bare emulator or without one
	kind     kind
}

// bareProfile is the profile without a delay: the ceilings.
func bareProfile(profiles []profile) (profile, bool) {
	i := slices.IndexFunc(profiles, func(p profile) bool { return p.delay == 0 })
	if i < 0 {
		return profile{}, false
	}
	return profiles[i], true
}

// figure returns contender c's figure on p, classified against its bare
// ceiling among profiles.
func (r *results) figure(profiles []profile, p profile, c contender) figure {
	f := figure{who: c.name}
	f.rate, f.measured = r.median(p.name, c.key)
	if rates := slices.Sorted(slices.Values(r.rates[p.name][c.key])); len(rates) > 0 {
		f.lo, f.hi = rates[0], rates[len(rates)-1]
	}
	bare, bareOK := 0.0, false
	if bp, ok := bareProfile(profiles); ok {
		bare, bareOK = r.median(bp.name, c.key)
	}
	f.kind = classify(p.delay > 0, f.rate, bare, bareOK)
	if p.delay > 0 && bareOK && bare > 0 {
		f.share = f.rate / bare
	}
	return f
}

// cell is f as the rates table prints it.
func (f figure) cell() string {
	if !f.measured {
		return "not run"
	}
	s := number(f.rate)
	if f.lo != f.hi {
		s += fmt.Sprintf(" (%s–%s)", number(f.lo), number(f.hi))
	}
	switch f.kind {
	case roundTrip:
		s += fmt.Sprintf(", %.0f%% of bare", 100*f.share)
	case cpuBound:
		s += fmt.Sprintf(", %.0f%% of bare: **CPU-bound**", 100*f.share)
	case unclassified:
		s += ", no bare figure"
	}
	return s
}

// state is a verdict's outcome.
type state int

const (
	missing   state = iota // a side of it was not run
	notJudged              // not a round-trip figure
	pass
	fail
)

// verdict is one target checked on one profile.
type verdict struct {
	state state
	value float64
	unit  string // "×", " msgs/s" or " calls"
	// why: missing, what was not run; notJudged, why not; pass and fail,
	// the threshold when it varies by column; fail, also why it cannot
	// pass when it cannot
	why string
}

func (v verdict) String() string {
	if v.state == missing {
		return "n/a (" + v.why + " not run)"
	}
	s := number(v.value) + v.unit
	if v.unit == "×" {
		s = strconv.FormatFloat(v.value, 'f', 2, 64) + "×"
	}
	if v.unit == " calls" {
		s = strconv.FormatFloat(v.value, 'f', 1, 64) + v.unit
	}
	why := ""
	if v.why != "" {
		why = " (" + v.why + ")"
	}
	switch v.state {
	case notJudged:
		return s + " not judged" + why
	case pass:
		return "**" + s + " pass**" + why
	default:
		return s + " FAIL" + why
	}
}

// judgeable says why figure f is not judged on the profile ("" when it
// is judged): the bare emulator's figures are ceilings, CPU-bound ones
// measure the emulator.
func judgeable(f figure) string {
	switch f.kind {
	case ceiling:
		return "bare: the emulator's CPU"
	case cpuBound:
		return f.who + " CPU-bound"
	case unclassified:
		return f.who + " has no bare figure"
	}
	return ""
}

// judgeRatio judges num/den ≥ atLeast: only when both are round-trip
// figures.
func judgeRatio(num, den figure, atLeast float64) verdict {
	v := verdict{unit: "×"}
	switch {
	case !num.measured:
		return verdict{state: missing, why: num.who}
	case !den.measured:
		return verdict{state: missing, why: den.who}
	}
	v.value = num.rate / den.rate
	if why := cmpOr(judgeable(num), judgeable(den)); why != "" {
		v.state, v.why = notJudged, why
		return v
	}
	v.state = fail
	if v.value >= atLeast {
		v.state = pass
	}
	if v.state == fail && den.rate*atLeast > settings.MaxRate {
		v.why = fmt.Sprintf("%.1f× %s is %s msgs/s, above the replay's largest rate, %s", atLeast, den.who, number(den.rate*atLeast), number(settings.MaxRate))
	}
	return v
}

// judgeRate judges f ≥ perDelay messages per call delay (800 msgs/s at
// 10 ms is 8 messages per delay): only when f is a round-trip figure.
func judgeRate(f figure, delay time.Duration, perDelay float64) verdict {
	if !f.measured {
		return verdict{state: missing, why: f.who}
	}
	v := verdict{value: f.rate, unit: " msgs/s"}
	if why := judgeable(f); why != "" {
		v.state, v.why = notJudged, why
		return v
	}
	atLeast := perDelay / delay.Seconds()
	v.why = "≥ " + number(atLeast)
	v.state = fail
	if f.rate >= atLeast {
		v.state = pass
	}
	return v
}

// judgeCalls judges calls per 100 messages ≤ atMost, in every column: a
// call is a round trip wherever the engine runs.
func judgeCalls(per100 float64, measured bool, who string, atMost float64) verdict {
	if !measured {
		return verdict{state: missing, why: who}
	}
	v := verdict{value: per100, unit: " calls", state: fail}
	if per100 <= atMost {
		v.state = pass
	}
	return v
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// The engine's targets (issues 9 and 21).
const (
	// minRatio: the engine (and dlq replay) at least this share of the
	// raw SDK batch loop with as many workers, on round-trip figures.
	minRatio = 0.8
	// minNaive: the engine with W workers at least this many times the
	// naive mover, on round-trip figures.
	minNaive = 10
	// minPerDelay: the engine with W workers moves at least this many
	// messages per call delay on a route (800 msgs/s at 10 ms a call).
	minPerDelay = 8
	// maxCalls: API calls per 100 messages of a run that runs the engine
	// on a standard route with completions (the raw loop: 30), judged in
	// every column.
	maxCalls = 55
)

// cpuHeavyCalls are the engine's calls that cost a CPU-bound emulator
// most: each carries 10 items (a conditional transaction of the batch's
// ledger records, a read of its orders' completions). In a region each is
// one round trip, as any call.
var cpuHeavyCalls = []string{"DynamoDB TransactWriteItems", "DynamoDB BatchGetItem"}

// target is one of the engine's targets, checked on every profile.
type target struct {
	name     string
	verdicts []verdict // one per profile
}

// targets evaluates the targets on profiles for the contenders cs.
func targets(r *results, profiles []profile, cs []contender, w int) []target {
	byKey := map[string]contender{}
	for _, c := range contenders(w, "", "") {
		byKey[c.key] = c
	}
	var ts []target
	add := func(name string, f func(p profile) verdict) {
		t := target{name: name}
		for _, p := range profiles {
			t.verdicts = append(t.verdicts, f(p))
		}
		ts = append(ts, t)
	}
	fig := func(p profile, key string) figure { return r.figure(profiles, p, byKey[key]) }
	ratio := func(num, den string, atLeast float64) {
		add(fmt.Sprintf("%s / %s ≥ %g×", byKey[num].name, byKey[den].name, atLeast), func(p profile) verdict {
			return judgeRatio(fig(p, num), fig(p, den), atLeast)
		})
	}
	ratio("engine-1", "raw-1", minRatio)
	ratio("engine-w", "raw-w", minRatio)
	ratio("cli-1", "raw-1", minRatio)
	ratio("cli-w", "raw-w", minRatio)
	ratio("engine-w", "naive", minNaive)
	add(fmt.Sprintf("%s per route ≥ %d messages per call delay (800 msgs/s at +10ms)", byKey["engine-w"].name, minPerDelay), func(p profile) verdict {
		return judgeRate(fig(p, "engine-w"), p.delay, minPerDelay)
	})
	for _, c := range cs {
		if !c.tables {
			continue
		}
		add(fmt.Sprintf("%s: API calls per 100 messages ≤ %d (every column)", c.name, maxCalls), func(p profile) verdict {
			per100, ok := r.totalCalls(p.name, c.key)
			return judgeCalls(per100, ok, c.name, maxCalls)
		})
	}
	return ts
}

// tally counts the verdicts of ts by state.
type tally struct {
	passed, failed, notJudged, missing int
	// nowhere are the targets judged in no column
	nowhere []string
}

func count(ts []target) tally {
	var t tally
	for _, tg := range ts {
		judged := false
		for _, v := range tg.verdicts {
			switch v.state {
			case pass:
				t.passed++
				judged = true
			case fail:
				t.failed++
				judged = true
			case notJudged:
				t.notJudged++
			case missing:
				t.missing++
			}
		}
		if !judged && !slices.ContainsFunc(tg.verdicts, func(v verdict) bool { return v.state == missing }) {
			t.nowhere = append(t.nowhere, tg.name)
		}
	}
	return t
}

// number formats a rate with thousands separators and no decimals.
func number(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// runInfo is what the report says of the run itself.
type runInfo struct {
	elapsed       time.Duration
	before, after string // the machine's load averages, "" when unknown
}

// command is the make command that runs o.
func command(o options) string {
	delay := cmpOr(o.delays.String(), "0") // DELAY= would run the default delays
	return fmt.Sprintf("make bench-replay N=%d N_DELAYED=%d N_NAIVE=%d W=%d ROUNDS=%d DELAY=%s", o.n, o.nDelayed, o.nNaive, o.workers, o.rounds, delay)
}

// report prints the rates, the calls and the targets as Markdown tables.
func report(w io.Writer, r *results, profiles []profile, cs []contender, o options, info runInfo) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n`%s`: %s, %d CPUs, %s/%s, %s; %s.\n", command(o),
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), info.elapsed.Round(time.Second))
	if info.before != "" || info.after != "" {
		fmt.Fprintf(&b, "Load average (1, 5, 15 min) before the run %s, after it %s.\n", cmpOr(info.before, "?"), cmpOr(info.after, "?"))
	}
	fmt.Fprintf(&b, "msgs/s, median of %d rounds (lowest–highest); each contender moves its own fresh queues' dead letters:", o.rounds)
	for i, p := range profiles {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %d %s", p.n, where(p))
		if p.naiveMax > 0 && p.naiveMax < p.n {
			fmt.Fprintf(&b, " (the naive mover %d)", p.naiveMax)
		}
	}
	b.WriteString(".\n\n| contender |")
	for _, p := range profiles {
		fmt.Fprintf(&b, " %s |", heading(p))
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(profiles)) + "\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s |", c.name)
		for _, p := range profiles {
			fmt.Fprintf(&b, " %s |", r.figure(profiles, p, c).cell())
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nThe bare column is each contender's ceiling on this machine: its calls cost the CPU of the emulator's one process, "+
		"on the benchmark's own cores, not round trips. A delayed figure above %.0f%% of its own ceiling is CPU-bound: the emulator's CPU, "+
		"not the delay, held it; it is printed, not judged. The rate targets are judged on the other delayed figures (round trips) only.\n", 100*cpuBoundShare)
	writeCalls(&b, r, profiles, cs)
	b.WriteString("\n| target |")
	for _, p := range profiles {
		fmt.Fprintf(&b, " %s |", p.name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(profiles)) + "\n")
	ts := targets(r, profiles, cs, o.workers)
	for _, t := range ts {
		fmt.Fprintf(&b, "| %s |", t.name)
		for _, v := range t.verdicts {
			fmt.Fprintf(&b, " %s |", v)
		}
		b.WriteString("\n")
	}
	t := count(ts)
	fmt.Fprintf(&b, "\nTarget checks: %d pass, %d fail, %d not judged (bare or CPU-bound), %d not run.\n", t.passed, t.failed, t.notJudged, t.missing)
	for _, name := range t.nowhere {
		fmt.Fprintf(&b, "Judged in no column (no round-trip figure): %s; a longer DELAY measures it.\n", name)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// heading is p's column heading in the rates table.
func heading(p profile) string {
	if p.delay == 0 {
		return p.name + " (ceiling)"
	}
	return p.name
}

// writeCalls writes the API calls per 100 messages of each contender's
// last round on every profile, and by operation on the last one.
func writeCalls(b *strings.Builder, r *results, profiles []profile, cs []contender) {
	last := profiles[len(profiles)-1]
	b.WriteString("\nAPI calls per 100 messages in each contender's last round (SQS + DynamoDB); each call is a round trip:\n\n| contender |")
	for _, p := range profiles {
		fmt.Fprintf(b, " %s |", p.name)
	}
	fmt.Fprintf(b, " by operation, %s |\n|---|%s---|\n", last.name, strings.Repeat("---|", len(profiles)))
	for _, c := range cs {
		fmt.Fprintf(b, "| %s |", c.name)
		for _, p := range profiles {
			byService := map[string]float64{}
			for op, v := range r.calls[p.name][c.key] {
				service, _, _ := strings.Cut(op, " ")
				byService[service] += v
			}
			total, _ := r.totalCalls(p.name, c.key)
			cell := fmt.Sprintf("%.1f (%.1f + %.1f", total, byService["SQS"], byService["DynamoDB"])
			if rest := total - byService["SQS"] - byService["DynamoDB"]; rest > 0.05 {
				cell += fmt.Sprintf(" + %.1f other", rest)
			}
			fmt.Fprintf(b, " %s) |", cell)
		}
		byOp := r.calls[last.name][c.key]
		var ops []string
		for _, op := range slices.Sorted(maps.Keys(byOp)) {
			_, name, _ := strings.Cut(op, " ")
			s := fmt.Sprintf("%s %s", name, strconv.FormatFloat(byOp[op], 'f', 1, 64))
			if slices.Contains(cpuHeavyCalls, op) {
				s = "**" + s + "**"
			}
			ops = append(ops, s)
		}
		fmt.Fprintf(b, " %s |\n", strings.Join(ops, ", "))
	}
	names := make([]string, len(cpuHeavyCalls))
	for i, op := range cpuHeavyCalls {
		_, names[i], _ = strings.Cut(op, " ")
	}
	fmt.Fprintf(b, "\nIn bold, the calls a CPU-bound emulator makes expensive: %s, 10 items each (the batch's conditional ledger "+
		"transaction, the read of its orders' completions). In a region each is one round trip, as any call.\n", strings.Join(names, " and "))
}

// where says where a profile ran: "on the bare emulator", "with every call +10ms".
func where(p profile) string {
	if p.delay > 0 {
		return "with " + p.name
	}
	return "on the " + p.name
}
