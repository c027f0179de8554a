//go:build !race

package sim

// ordersPerSeed is the number of publications per random seed in TestSim:
// with DefaultSeeds seeds, at least 10,000 orders per `go test ./...`.
const ordersPerSeed = 500

// raceBuild reports whether the race detector is on (see replayHint).
const raceBuild = false
