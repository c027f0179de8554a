// Package delayproxy is a TCP proxy on 127.0.0.1 that adds latency: every
// chunk a client writes reaches the upstream a fixed delay later, while the
// upstream's answers come back at once. Through it, a local emulator that
// answers in a millisecond behaves like a service a network round trip
// away (10 ms is about an in-region AWS call), so that a benchmark counts
// round trips as AWS would make it pay for them (`make bench-replay`).
package delayproxy
