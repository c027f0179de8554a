package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	r := newResults()
	for _, v := range []float64{30, 10, 20} {
		r.add("bare", "raw-1", v)
	}
	r.add("bare", "naive", 5)
	r.add("bare", "naive", 7)
	for _, tc := range []struct {
		key  string
		want float64
		ok   bool
	}{{"raw-1", 20, true}, {"naive", 6, true}, {"engine-1", 0, false}} {
		got, ok := r.median("bare", tc.key)
		if got != tc.want || ok != tc.ok {
			t.Errorf("median of %s = %g, %v; want %g, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
	if r.rates["bare"]["raw-1"][0] != 30 {
		t.Error("median sorted the rates in place")
	}
}

func TestNumber(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999.4: "999", 999.5: "1,000", 1234567: "1,234,567", 73: "73"} {
		if got := number(in); got != want {
			t.Errorf("number(%g) = %q, want %q", in, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name    string
		delayed bool
		rate    float64
		bare    float64
		bareOK  bool
		want    kind
	}{
		{"the bare emulator's figure is a ceiling", false, 1000, 1000, true, ceiling},
		{"far below its ceiling: round trips", true, 240, 2828, true, roundTrip},
		{"half its ceiling is still round trips", true, 500, 1000, true, roundTrip},
		{"above half its ceiling: CPU-bound", true, 501, 1000, true, cpuBound},
		// issue 21: the engine's 4 workers at +10 ms, 514 against 567 bare
		{"at 91% of its ceiling", true, 514, 567, true, cpuBound},
		{"above its ceiling (a noisy bare round) is CPU-bound", true, 600, 567, true, cpuBound},
		{"no bare figure", true, 100, 0, false, unclassified},
		{"a bare figure of 0", true, 100, 0, true, unclassified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.delayed, tc.rate, tc.bare, tc.bareOK); got != tc.want {
				t.Errorf("classify(%v, %g, %g, %v) = %d, want %d", tc.delayed, tc.rate, tc.bare, tc.bareOK, got, tc.want)
			}
		})
	}
}

func TestFigureCell(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    figure
		want string
	}{
		{"ceiling", figure{rate: 1115, lo: 981, hi: 1235, measured: true, kind: ceiling}, "1,115 (981–1,235)"},
		{"round trip", figure{rate: 269, lo: 265, hi: 277, measured: true, share: 0.24, kind: roundTrip}, "269 (265–277), 24% of bare"},
		{"CPU-bound is marked", figure{rate: 514, lo: 514, hi: 514, measured: true, share: 0.91, kind: cpuBound}, "514, 91% of bare: **CPU-bound**"},
		{"unclassified", figure{rate: 90, lo: 90, hi: 90, measured: true, kind: unclassified}, "90, no bare figure"},
		{"not run", figure{}, "not run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.cell(); got != tc.want {
				t.Errorf("cell = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestJudgeRatio(t *testing.T) {
	rt := func(who string, rate float64) figure {
		return figure{who: who, rate: rate, measured: true, kind: roundTrip}
	}
	cpu := func(who string, rate float64) figure {
		return figure{who: who, rate: rate, measured: true, kind: cpuBound}
	}
	bare := func(who string, rate float64) figure {
		return figure{who: who, rate: rate, measured: true, kind: ceiling}
	}
	for _, tc := range []struct {
		name     string
		num, den figure
		atLeast  float64
		want     string
		state    state
	}{
		{"round trips, above", rt("engine", 276), rt("raw", 240), 0.8, "**1.15× pass**", pass},
		{"round trips, at the threshold", rt("engine", 80), rt("raw", 100), 0.8, "**0.80× pass**", pass},
		{"round trips, below", rt("engine", 70), rt("raw", 100), 0.8, "0.70× FAIL", fail},
		// issue 21: 514 against 945 at +10 ms is the emulator's CPU
		{"the engine CPU-bound", cpu("engine", 514), rt("raw", 945), 0.8, "0.54× not judged (engine CPU-bound)", notJudged},
		{"the raw loop CPU-bound", rt("engine", 100), cpu("raw", 945), 0.8, "0.11× not judged (raw CPU-bound)", notJudged},
		{"the bare emulator", bare("engine", 567), bare("raw", 2828), 0.8, "0.20× not judged (bare: the emulator's CPU)", notJudged},
		{"not run", figure{who: "engine"}, rt("raw", 1), 0.8, "n/a (engine not run)", missing},
		{"the denominator not run", rt("engine", 1), figure{who: "raw"}, 0.8, "n/a (raw not run)", missing},
		{"out of reach under MaxRate", rt("engine", 2000), rt("raw", 4000), 0.8, "0.50× FAIL (0.8× raw is 3,200 msgs/s, above the replay's largest rate, 3,000)", fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeRatio(tc.num, tc.den, tc.atLeast)
			if v.String() != tc.want || v.state != tc.state {
				t.Errorf("judgeRatio = %q (state %d), want %q (state %d)", v, v.state, tc.want, tc.state)
			}
		})
	}
}

func TestJudgeRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     figure
		delay time.Duration
		want  string
	}{
		{"800 msgs/s at +10ms", figure{who: "e", rate: 850, measured: true, kind: roundTrip}, 10 * time.Millisecond, "**850 msgs/s pass** (≥ 800)"},
		{"below at +10ms", figure{who: "e", rate: 770, measured: true, kind: roundTrip}, 10 * time.Millisecond, "770 msgs/s FAIL (≥ 800)"},
		{"160 msgs/s at +50ms", figure{who: "e", rate: 276, measured: true, kind: roundTrip}, 50 * time.Millisecond, "**276 msgs/s pass** (≥ 160)"},
		{"CPU-bound", figure{who: "e", rate: 893, measured: true, kind: cpuBound}, 10 * time.Millisecond, "893 msgs/s not judged (e CPU-bound)"},
		{"bare", figure{who: "e", rate: 1115, measured: true, kind: ceiling}, 0, "1,115 msgs/s not judged (bare: the emulator's CPU)"},
		{"not run", figure{who: "e"}, time.Millisecond, "n/a (e not run)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeRate(tc.f, tc.delay, minPerDelay).String(); got != tc.want {
				t.Errorf("judgeRate = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestJudgeCalls(t *testing.T) {
	for _, tc := range []struct {
		name     string
		per100   float64
		measured bool
		want     string
	}{
		{"the engine's 50.5", 50.5, true, "**50.5 calls pass**"},
		{"at the bound", 55, true, "**55.0 calls pass**"},
		{"above", 55.1, true, "55.1 calls FAIL"},
		{"the engine before issue 9", 240, true, "240.0 calls FAIL"},
		{"not run", 0, false, "n/a (engine not run)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeCalls(tc.per100, tc.measured, "engine", maxCalls).String(); got != tc.want {
				t.Errorf("judgeCalls = %q, want %q", got, tc.want)
			}
		})
	}
}

// fixture is a run of every contender on three profiles: rates by key,
// bare / +10ms / +50ms, shaped as issue 21's quiet machine measured them.
func fixture(rates map[string][3]float64, calls map[string]float64) (*results, []profile) {
	profiles := []profile{
		{name: "bare emulator"},
		{name: "every call +10ms", delay: 10 * time.Millisecond},
		{name: "every call +50ms", delay: 50 * time.Millisecond},
	}
	r := newResults()
	for key, rs := range rates {
		for i, p := range profiles {
			r.add(p.name, key, rs[i])
			r.addCalls(p.name, key, map[string]int{"SQS ReceiveMessage": int(calls[key] * 10)}, 1000)
		}
	}
	return r, profiles
}

var issue21 = map[string][3]float64{
	"engine-1": {567, 280, 70},
	"engine-w": {567, 514, 276},
	"cli-1":    {540, 265, 69},
	"cli-w":    {540, 500, 250},
	"naive":    {594, 27, 6},
	"raw-1":    {2900, 269, 62},
	"raw-w":    {2828, 945, 240},
}

var issue21Calls = map[string]float64{"engine-1": 50.5, "engine-w": 50.8, "cli-1": 50.7, "cli-w": 56, "naive": 300, "raw-1": 30.2, "raw-w": 30.8}

func TestTargets(t *testing.T) {
	r, profiles := fixture(issue21, issue21Calls)
	got := map[string][]string{}
	for _, tg := range targets(r, profiles, contenders(4, "", ""), 4) {
		for _, v := range tg.verdicts {
			got[tg.name] = append(got[tg.name], v.String())
		}
	}
	bare := "not judged (bare: the emulator's CPU)"
	want := map[string][]string{
		// engine-1 at +10ms is 49% of its ceiling: a round-trip figure
		"engine, 1 worker / raw batch loop, 1 worker ≥ 0.8×": {"0.20× " + bare, "**1.04× pass**", "**1.13× pass**"},
		// engine-w at +10ms is 91% of its ceiling: not judged there
		"engine, 4 workers / raw batch loop, 4 workers ≥ 0.8×":                          {"0.20× " + bare, "0.54× not judged (engine, 4 workers CPU-bound)", "**1.15× pass**"},
		"dlq replay, 1 worker / raw batch loop, 1 worker ≥ 0.8×":                        {"0.19× " + bare, "**0.99× pass**", "**1.11× pass**"},
		"dlq replay, 4 workers / raw batch loop, 4 workers ≥ 0.8×":                      {"0.19× " + bare, "0.53× not judged (dlq replay, 4 workers CPU-bound)", "**1.04× pass**"},
		"engine, 4 workers / naive mover (1 by 1) ≥ 10×":                                {"0.95× " + bare, "19.04× not judged (engine, 4 workers CPU-bound)", "**46.00× pass**"},
		"engine, 4 workers per route ≥ 8 messages per call delay (800 msgs/s at +10ms)": {"567 msgs/s " + bare, "514 msgs/s not judged (engine, 4 workers CPU-bound)", "**276 msgs/s pass** (≥ 160)"},
		// calls are judged in every column
		"engine, 1 worker: API calls per 100 messages ≤ 55 (every column)":      {"**50.5 calls pass**", "**50.5 calls pass**", "**50.5 calls pass**"},
		"engine, 4 workers: API calls per 100 messages ≤ 55 (every column)":     {"**50.8 calls pass**", "**50.8 calls pass**", "**50.8 calls pass**"},
		"dlq replay, 1 worker: API calls per 100 messages ≤ 55 (every column)":  {"**50.7 calls pass**", "**50.7 calls pass**", "**50.7 calls pass**"},
		"dlq replay, 4 workers: API calls per 100 messages ≤ 55 (every column)": {"56.0 calls FAIL", "56.0 calls FAIL", "56.0 calls FAIL"},
	}
	for name, w := range want {
		if strings.Join(got[name], " | ") != strings.Join(w, " | ") {
			t.Errorf("%s:\n got %q\nwant %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("targets %v, want %d of them", got, len(want))
	}
}

func TestCount(t *testing.T) {
	v := func(s state) verdict { return verdict{state: s} }
	for _, tc := range []struct {
		name    string
		targets []target
		want    tally
	}{
		{"judged somewhere", []target{{name: "a", verdicts: []verdict{v(notJudged), v(notJudged), v(pass)}}},
			tally{passed: 1, notJudged: 2}},
		{"judged nowhere", []target{{name: "a", verdicts: []verdict{v(notJudged), v(notJudged)}}, {name: "b", verdicts: []verdict{v(fail)}}},
			tally{failed: 1, notJudged: 2, nowhere: []string{"a"}}},
		// a target not run is not said to be judged nowhere: -only left it out
		{"not run", []target{{name: "a", verdicts: []verdict{v(notJudged), v(missing)}}},
			tally{notJudged: 1, missing: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := count(tc.targets)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("count = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReport(t *testing.T) {
	r, profiles := fixture(issue21, issue21Calls)
	o := options{n: 1000, nDelayed: 1000, nNaive: 200, workers: 4, rounds: 1, delays: durations{10 * time.Millisecond, 50 * time.Millisecond}}
	var out bytes.Buffer
	if err := report(&out, r, profiles, contenders(4, "", ""), o, runInfo{elapsed: time.Minute, before: "0.10 0.20 0.30"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"`make bench-replay N=1000 N_DELAYED=1000 N_NAIVE=200 W=4 ROUNDS=1 DELAY=10ms,50ms`",
		"Load average (1, 5, 15 min) before the run 0.10 0.20 0.30, after it ?.",
		"| contender | bare emulator (ceiling) | every call +10ms | every call +50ms |",
		"| engine, 4 workers | 567 | 514, 91% of bare: **CPU-bound** | 276, 49% of bare |",
		"| dlq replay, 4 workers | 540 | 500, 93% of bare: **CPU-bound** | 250, 46% of bare |",
		"| raw batch loop, 4 workers | 2,828 | 945, 33% of bare | 240, 8% of bare |",
		// the rate targets: 6 pass at +50ms, 2 at +10ms, where 4 are
		// CPU-bound, and the bare column's 6 are not judged; the calls: 3
		// pass and 1 fails in each column
		"Target checks: 17 pass, 3 fail, 10 not judged (bare or CPU-bound), 0 not run.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report:\n%s\nwant\n%s", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "Judged in no column") {
		t.Errorf("report:\n%s\nsays a target was judged nowhere", out.String())
	}
}

// With the bare emulator alone nothing but the calls is judged, and the
// report says which targets no column judged.
func TestReportBareOnly(t *testing.T) {
	bare := profile{name: "bare emulator", n: 100}
	r := newResults()
	for key, rate := range map[string]float64{"engine-1": 100, "raw-1": 1000, "engine-w": 100, "raw-w": 1000, "naive": 50} {
		r.add(bare.name, key, rate)
	}
	var out bytes.Buffer
	if err := report(&out, r, []profile{bare}, contenders(4, "", ""), options{n: 100, workers: 4, rounds: 1}, runInfo{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| raw batch loop, 4 workers | 1,000 |",
		"Judged in no column (no round-trip figure): engine, 4 workers / raw batch loop, 4 workers ≥ 0.8×; a longer DELAY measures it.",
		"0.10× not judged (bare: the emulator's CPU)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report:\n%s\nwant\n%s", out.String(), want)
		}
	}
	if !strings.Contains(out.String(), "DELAY=0`") {
		t.Errorf("report:\n%s\nwant the command of a run without delays", out.String())
	}
	if strings.Contains(out.String(), "FAIL") {
		t.Errorf("report:\n%s\njudged a bare figure", out.String())
	}
}

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		url, want string
		ok        bool
	}{
		{"http://127.0.0.1:4566", "127.0.0.1:4566", true},
		{"http://localhost:4572", "localhost:4572", true},
		{"http://[::1]:4566", "[::1]:4566", true},
		{"https://sqs.us-east-1.amazonaws.com", "", false},
		{"http://10.0.0.1:4566", "", false},
		{"", "", false},
	} {
		got, err := loopback(func(string) string { return tc.url })
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("loopback(%q) = %q, %v; want %q, ok %v", tc.url, got, err, tc.want, tc.ok)
		}
	}
}

func TestParse(t *testing.T) {
	o, err := parse(nil, &bytes.Buffer{})
	if err != nil || o.n != 1000 || o.nDelayed != 1000 || o.nNaive != 200 || o.workers != 4 || o.rounds != 3 || o.dlq != "bin/dlq" ||
		o.delays.String() != "10ms,50ms" {
		t.Errorf("defaults %+v, %v", o, err)
	}
	for _, tc := range []struct {
		delay, want string
	}{{"10ms,50ms", "10ms,50ms"}, {"25ms", "25ms"}, {"", ""}, {"0", ""}, {" 5ms, 1s", "5ms,1s"}} {
		o, err := parse([]string{"-delay", tc.delay}, &bytes.Buffer{})
		if err != nil || o.delays.String() != tc.want {
			t.Errorf("-delay %q: %s, %v; want %s", tc.delay, &o.delays, err, tc.want)
		}
	}
	_, err = parse([]string{"-workers", "17"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-workers 17") {
		t.Errorf("parse error %v, want one for more workers than the engine allows", err)
	}
	_, err = parse([]string{"-n", "5", "-workers", "1", "-rounds", "0", "-delay", "10ms,-1ms"}, &bytes.Buffer{})
	for _, want := range []string{"-n 5", "-workers 1", "-rounds 0", "-delay 10ms,-1ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parse error %v, want it to name %s", err, want)
		}
	}
	for _, bad := range []string{"10ms,10ms", "fast"} {
		if _, err := parse([]string{"-delay", bad}, &bytes.Buffer{}); err == nil {
			t.Errorf("-delay %s: no error", bad)
		}
	}
}

// The naive mover moves at most naiveMax on a delayed profile; the others
// the profile's n.
func TestMessages(t *testing.T) {
	cs := contenders(4, "", "bin/dlq")
	p := profile{n: 1000, naiveMax: 200, delay: time.Millisecond}
	for _, c := range cs {
		want := 1000
		if c.key == "naive" {
			want = 200
		}
		if got := p.messages(c); got != want {
			t.Errorf("%s moves %d, want %d", c.key, got, want)
		}
	}
	if got := (profile{n: 100, naiveMax: 200}).messages(cs[4]); got != 100 {
		t.Errorf("naive moves %d of 100, want 100", got)
	}
}

func TestContenders(t *testing.T) {
	if got := strings.Join(contenderKeys(), ","); got != "engine-1,engine-w,cli-1,cli-w,naive,raw-1,raw-w" {
		t.Errorf("keys %s", got)
	}
	for only, want := range map[string]string{"engine": "engine-1,engine-w", "cli": "cli-1,cli-w", "-w": "engine-w,cli-w,raw-w", "x": ""} {
		var keys []string
		for _, c := range contenders(4, only, "bin/dlq") {
			keys = append(keys, c.key)
			if c.move == nil {
				t.Errorf("%s has no move", c.key)
			}
		}
		if got := strings.Join(keys, ","); got != want {
			t.Errorf("-only %s: %s, want %s", only, got, want)
		}
	}
}
