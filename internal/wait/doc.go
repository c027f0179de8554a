// Package wait pauses a goroutine without outliving its context.
package wait
