// Package drill drives the stack deployed on the local emulator from the
// outside, as a producer and an auditor would: it reads the stack's outputs,
// builds order messages (valid ones and one for each reason the consumer
// refuses before calling the tax service), publishes them, switches the tax
// stand-in's mode and reads its invoices, and counts or takes what reached a
// queue. cmd/demo and cmd/soak share it; no function imports it.
package drill
