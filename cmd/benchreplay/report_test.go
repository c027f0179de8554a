package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/replay"
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

func TestTargets(t *testing.T) {
	bare := profile{name: "bare emulator"}
	slow := profile{name: "every call +10ms", delay: 10 * time.Millisecond}
	r := newResults()
	for key, rates := range map[string][2]float64{ // bare, slow
		"engine-1": {900, 200},
		"raw-1":    {1000, 230},
		"engine-w": {2000, 850},
		"raw-w":    {3000, 830},
		"naive":    {400, 24},
	} {
		r.add(bare.name, key, rates[0])
		r.add(slow.name, key, rates[1])
	}
	got := map[string][]string{}
	for _, tg := range targets(r, []profile{bare, slow}, 4) {
		for _, v := range tg.verdicts {
			got[tg.name] = append(got[tg.name], v.String())
		}
	}
	want := map[string][]string{
		"engine / raw batch loop, 1 worker ≥ 0.8×":              {"**0.90× pass**", "**0.87× pass**"},
		"engine / raw batch loop, 4 workers ≥ 0.8×":             {"0.67× FAIL", "**1.02× pass**"},
		"engine, 4 workers / naive mover ≥ 10× (with delay)":    {"5.00× (no target)", "**35.42× pass**"},
		"engine per route, 4 workers ≥ 800 msgs/s (with delay)": {"2,000 msgs/s (no target)", "**850 msgs/s pass**"},
	}
	for name, w := range want {
		if strings.Join(got[name], " | ") != strings.Join(w, " | ") {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("targets %v, want %d of them", got, len(want))
	}
}

// A ratio the engine's rate bound cannot reach says so.
func TestTargetsAboveMaxRate(t *testing.T) {
	bare := profile{name: "bare"}
	r := newResults()
	r.add(bare.name, "engine-w", replay.MaxRate)
	r.add(bare.name, "raw-w", 2*replay.MaxRate)
	v := targets(r, []profile{bare}, 4)[1].verdicts[0]
	if !strings.Contains(v.String(), "above replay.MaxRate") || v.pass {
		t.Errorf("engine at MaxRate against a raw loop at twice it: %q", v)
	}
}

func TestTargetsNotMeasured(t *testing.T) {
	slow := profile{name: "slow", delay: time.Millisecond}
	r := newResults()
	r.add(slow.name, "raw-w", 800)
	r.add(slow.name, "naive", 24)
	for _, tg := range targets(r, []profile{slow}, 4) {
		v := tg.verdicts[0]
		if v.measured || !strings.HasPrefix(v.String(), "n/a") {
			t.Errorf("%s: %q without the engine's rates, want n/a", tg.name, v)
		}
	}
}

func TestReportCountsFailures(t *testing.T) {
	bare := profile{name: "bare emulator", n: 100}
	r := newResults()
	for key, rate := range map[string]float64{"engine-1": 100, "raw-1": 1000, "engine-w": 100, "raw-w": 1000, "naive": 50} {
		r.add(bare.name, key, rate)
	}
	var out bytes.Buffer
	if err := report(&out, r, []profile{bare}, contenders(4, ""), options{n: 100, workers: 4, rounds: 1}); err != nil {
		t.Fatal(err)
	}
	// Bare: the two engine/raw ratios are checked and fail; the delayed
	// targets are not checked on the bare emulator.
	if !strings.Contains(out.String(), "2 target checks fail") {
		t.Errorf("report:\n%s\nwant 2 failing checks", out.String())
	}
	if !strings.Contains(out.String(), "| raw batch loop, 4 workers | 1,000 |") {
		t.Errorf("report:\n%s\nwant the raw loop's row", out.String())
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
	if err != nil || o.n != 1000 || o.nDelayed != 1000 || o.workers != 4 || o.rounds != 3 || o.delay != 10*time.Millisecond {
		t.Errorf("defaults %+v, %v", o, err)
	}
	_, err = parse([]string{"-workers", "17"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-workers 17") {
		t.Errorf("parse error %v, want one for more workers than the engine allows", err)
	}
	_, err = parse([]string{"-n", "5", "-workers", "1", "-rounds", "0", "-delay", "-1ms"}, &bytes.Buffer{})
	for _, want := range []string{"-n 5", "-workers 1", "-rounds 0", "-delay -1ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parse error %v, want it to name %s", err, want)
		}
	}
}
