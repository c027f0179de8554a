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

	"github.com/homingdlq/homing/replay"
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

// verdict is one target checked on one profile.
type verdict struct {
	value     float64
	measured  bool // both sides of the ratio were measured
	checked   bool // the target applies to this profile
	pass      bool
	unit      string // "×" or " msgs/s"
	missingOf string // what was not measured, when !measured
	note      string // why the target cannot pass, when it cannot
}

// target is one of the engine's targets (issue 9).
type target struct {
	name     string
	verdicts []verdict // one per profile
}

// targets evaluates the targets on profiles (the bare one first, then the
// delayed one, whose targets are the +delay ones).
func targets(r *results, profiles []profile, w int) []target {
	ratio := func(p profile, num, den string, min float64, checked bool) verdict {
		a, okA := r.median(p.name, num)
		b, okB := r.median(p.name, den)
		v := verdict{unit: "×", checked: checked}
		switch {
		case !okA:
			v.missingOf = num
		case !okB:
			v.missingOf = den
		default:
			v.measured = true
			v.value = a / b
			v.pass = v.value >= min
			if strings.HasPrefix(num, "engine") && b*min > replay.MaxRate {
				v.note = fmt.Sprintf("%.1f× %s is %s msgs/s, above replay.MaxRate, %s", min, den, number(b*min), number(replay.MaxRate))
			}
		}
		return v
	}
	delayed := func(p profile) bool { return p.delay > 0 }
	var ts []target
	add := func(name string, f func(p profile) verdict) {
		t := target{name: name}
		for _, p := range profiles {
			t.verdicts = append(t.verdicts, f(p))
		}
		ts = append(ts, t)
	}
	add("engine / raw batch loop, 1 worker ≥ 0.8×", func(p profile) verdict { return ratio(p, "engine-1", "raw-1", 0.8, true) })
	add(fmt.Sprintf("engine / raw batch loop, %d workers ≥ 0.8×", w), func(p profile) verdict { return ratio(p, "engine-w", "raw-w", 0.8, true) })
	add(fmt.Sprintf("engine, %d workers / naive mover ≥ 10× (with delay)", w), func(p profile) verdict { return ratio(p, "engine-w", "naive", 10, delayed(p)) })
	add(fmt.Sprintf("engine per route, %d workers ≥ 800 msgs/s (with delay)", w), func(p profile) verdict {
		v := verdict{unit: " msgs/s", checked: delayed(p)}
		v.value, v.measured = r.median(p.name, "engine-w")
		if !v.measured {
			v.missingOf = "engine-w"
		}
		v.pass = v.value >= 800
		return v
	})
	return ts
}

func (v verdict) String() string {
	if !v.measured {
		return "n/a (" + v.missingOf + " not run)"
	}
	s := number(v.value) + v.unit
	if v.unit == "×" {
		s = strconv.FormatFloat(v.value, 'f', 2, 64) + "×"
	}
	switch {
	case !v.checked:
		return s + " (no target)"
	case v.pass:
		return "**" + s + " pass**"
	case v.note != "":
		return s + " FAIL (" + v.note + ")"
	default:
		return s + " FAIL"
	}
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

// report prints the rates and the targets as Markdown tables.
func report(w io.Writer, r *results, profiles []profile, cs []contender, o options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n`make bench-replay N=%d N_DELAYED=%d W=%d ROUNDS=%d DELAY=%s`: %s, %d CPUs, %s/%s, %s.\n",
		o.n, o.nDelayed, o.workers, o.rounds, o.delay, time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "msgs/s, median of %d rounds (lowest–highest); each contender moves its own fresh queues' dead letters:", o.rounds)
	for i, p := range profiles {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %d %s", p.n, where(p))
	}
	b.WriteString(".\n\n| contender |")
	for _, p := range profiles {
		fmt.Fprintf(&b, " %s |", p.name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(profiles)) + "\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s |", c.name)
		for _, p := range profiles {
			rates := slices.Sorted(slices.Values(r.rates[p.name][c.key]))
			m, _ := r.median(p.name, c.key)
			spread := ""
			if len(rates) > 1 {
				spread = fmt.Sprintf(" (%s–%s)", number(rates[0]), number(rates[len(rates)-1]))
			}
			fmt.Fprintf(&b, " %s%s |", number(m), spread)
		}
		b.WriteString("\n")
	}
	writeCalls(&b, r, profiles[len(profiles)-1], cs)
	b.WriteString("\n| target |")
	for _, p := range profiles {
		fmt.Fprintf(&b, " %s |", p.name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(profiles)) + "\n")
	failed := 0
	for _, t := range targets(r, profiles, o.workers) {
		fmt.Fprintf(&b, "| %s |", t.name)
		for _, v := range t.verdicts {
			fmt.Fprintf(&b, " %s |", v)
			if v.checked && (!v.measured || !v.pass) {
				failed++
			}
		}
		b.WriteString("\n")
	}
	if failed == 0 {
		b.WriteString("\nEvery target passes.\n")
	} else {
		fmt.Fprintf(&b, "\n%d target checks fail or were not run.\n", failed)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCalls writes the API calls per 100 messages of each contender's
// last round on profile p: each call is a round trip.
func writeCalls(b *strings.Builder, r *results, p profile, cs []contender) {
	fmt.Fprintf(b, "\nAPI calls per 100 messages in the last round %s; each call is a round trip:\n\n", where(p))
	b.WriteString("| contender | SQS | DynamoDB | by operation |\n|---|---|---|---|\n")
	for _, c := range cs {
		byOp := r.calls[p.name][c.key]
		byService := map[string]float64{}
		var ops []string
		for _, op := range slices.Sorted(maps.Keys(byOp)) {
			service, name, _ := strings.Cut(op, " ")
			byService[service] += byOp[op]
			ops = append(ops, fmt.Sprintf("%s %s", name, strconv.FormatFloat(byOp[op], 'f', 1, 64)))
		}
		fmt.Fprintf(b, "| %s | %.1f | %.1f | %s |\n", c.name, byService["SQS"], byService["DynamoDB"], strings.Join(ops, ", "))
	}
}

// where says where a profile ran: "on the bare emulator", "with every call +10ms".
func where(p profile) string {
	if p.delay > 0 {
		return "with " + p.name
	}
	return "on the " + p.name
}
