package sim

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// DefaultSeeds is how many random seeds TestSim runs without flags.
const DefaultSeeds = 24

var (
	flagSeeds  = flag.Int("sim.seeds", envInt("SIM_SEEDS", DefaultSeeds), "random seeds TestSim runs (env SIM_SEEDS)")
	flagSeed   = flag.Int("sim.seed", envInt("SIM_SEED", -1), "run only this seed (env SIM_SEED)")
	flagOrders = flag.Int("sim.orders", envInt("SIM_ORDERS", ordersPerSeed), "publications per seed (env SIM_ORDERS)")
	flagTrace  = flag.Bool("sim.trace", os.Getenv("SIM_TRACE") != "", "print the whole trace of a failing seed (env SIM_TRACE)")
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// TestSim runs random seeds through the whole system and checks the
// invariants. A failing seed prints its violations, the trace of the
// messages involved, and the command that replays it.
func TestSim(t *testing.T) {
	seeds := make([]uint64, 0, *flagSeeds)
	if *flagSeed >= 0 {
		seeds = append(seeds, uint64(*flagSeed))
	} else {
		for i := range *flagSeeds {
			seeds = append(seeds, uint64(i+1))
		}
		for _, n := range namedSeeds() {
			if !slices.Contains(seeds, n) {
				seeds = append(seeds, n)
			}
		}
	}
	start := time.Now()
	if os.Getenv("SIM_SEEDS") != "" && *flagSeed < 0 && !testing.Short() {
		// make sim: the scenarios of thousands of dead letters too.
		runDeep(t)
	}
	ran := 0
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ran++ // before Parallel: t.Run waits for it
			t.Parallel()
			rep, err := Run(RandomConfig(seed, *flagOrders))
			if err != nil {
				t.Fatal(err)
			}
			check(t, rep, replayHint(seed))
		})
	}
	t.Cleanup(func() {
		t.Logf("%d seeds x %d orders in %s", ran, *flagOrders, time.Since(start).Round(time.Millisecond))
	})
}

// seedPattern finds the seeds a -run pattern names: seed=N, seed=(N|M).
var seedPattern = regexp.MustCompile(`seed=\(?([0-9|]+)`)

// namedSeeds returns the seeds the -run pattern names, so that
// -run 'TestSim/seed=N$' runs seed N whatever SIM_SEEDS says.
func namedSeeds() []uint64 {
	f := flag.Lookup("test.run")
	if f == nil {
		return nil
	}
	var out []uint64
	for _, m := range seedPattern.FindAllStringSubmatch(f.Value.String(), -1) {
		for n := range strings.SplitSeq(m[1], "|") {
			if v, err := strconv.ParseUint(n, 10, 64); err == nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// replayHint is the command that runs seed again as this test ran it: the
// same publications per seed and the same build (-race runs fewer).
func replayHint(seed uint64) string {
	env, race := "", ""
	if *flagOrders != ordersPerSeed {
		env = fmt.Sprintf("SIM_ORDERS=%d ", *flagOrders)
	}
	if raceBuild {
		race = " -race"
	}
	hint := fmt.Sprintf("%sgo test%s -count=1 -run '^TestSim$/^seed=%d$' ./internal/tools/sim", env, race, seed)
	if env == "" && !raceBuild {
		hint += fmt.Sprintf(" (or make sim SEED=%d)", seed)
	}
	if concurrentSeed(seed) {
		hint += "; a concurrent seed: its interleavings may differ"
	}
	return hint + "; SIM_TRACE=1 prints the whole trace"
}

// check fails t with a readable account of rep's violations.
func check(t *testing.T, rep *Report, replay string) {
	t.Helper()
	st := rep.Stats
	t.Logf("simulated %s: %d publications, %d valid orders (%d invoiced), %d invalid queued, parked %v (%d at the end), %d service calls, %d in-doubt doubles, %d takeovers, %d replays (%d duplicate), %d removed as applied, %d runs (%d crashed), %d invocations abandoned, %d archived (lane %+v)",
		st.Simulated.Round(time.Second), st.Publications, st.ValidOrders, st.Invoiced, st.InvalidQueued, st.Parked, st.ParkedAtEnd,
		st.ServiceCalls, st.InDoubtDoubles, st.Takeovers, st.Replays, st.DuplicateReplays, st.Applied, st.Runs, st.RunCrashes, st.Abandoned, st.Archived, rep.Config.Lane)
	if rep.Config.Lane.Groups != "" {
		g := st.Groups
		t.Logf("groups: %d parked (%d again), %d records to the parking queue, %d backoffs (%d refused), %d releases in %d steps (%d records moved, %d heads set aside), %d valid heads skipped, %d batches copied, %d at the backstop, %d faults, %d groups out of order",
			g.Parks, g.Reparks, g.ParkedRecords, g.Backoffs, g.Refused, g.Releases, g.Steps, g.Moved, g.SetAside, g.Skipped, g.Copies, g.Backstop, g.Faults, g.OutOfOrder)
	}
	if len(rep.Violations) == 0 {
		return
	}
	var b strings.Builder
	kinds := map[string]int{}
	for _, v := range rep.Violations {
		kinds[v.Kind]++
	}
	fmt.Fprintf(&b, "%d violations %v\n", len(rep.Violations), kinds)
	var subjects []string
	for i, v := range rep.Violations {
		if i < 10 {
			fmt.Fprintf(&b, "  %s\n", v)
		}
		if i < 3 {
			subjects = append(subjects, strings.Fields(v.Subject)...)
		}
	}
	limit := 80
	if *flagTrace {
		subjects = nil
		limit = 1 << 30
	}
	fmt.Fprintf(&b, "trace of the first violations' messages and orders:\n")
	rep.Trace.Write(&b, subjects, limit)
	fmt.Fprintf(&b, "replay: %s\n", replay)
	t.Error(b.String())
}
