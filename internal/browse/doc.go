// Package browse looks through every visible message of a queue once,
// without losing any: each receive hides the messages it returns for a
// while, so the next receive returns others, and what the caller does not
// keep is made visible again at the end.
//
// Browsing receives messages, so on a queue with a redrive policy each look
// counts as a delivery attempt: browse DLQs, invalid and parking queues, not
// a source queue.
package browse
