//go:build race

package sim

// Under the race detector (make unit) the code runs several times slower:
// the random seeds run fewer orders each, so the package still fits the
// time bound. The seeds and everything else stay the same.
const ordersPerSeed = 60

// raceBuild reports whether the race detector is on (see replayHint).
const raceBuild = true
