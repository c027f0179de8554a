package replay

// groupOrder is the FIFO rule within a batch: once a message of a group
// does not leave the DLQ (it stays, or its move failed), the later messages
// of its group that would move are blocked, left as they are. SQS carries
// the rule across batches, workers and runs: it hands out no message of a
// group while an earlier one is in flight. The plan, the claim and the send
// each apply it in receive order. On a standard route it does nothing.
type groupOrder struct {
	stopped map[string]bool // nil on a standard route
}

func newGroupOrder(rt Route) groupOrder {
	if !rt.FIFO() {
		return groupOrder{}
	}
	return groupOrder{stopped: map[string]bool{}}
}

// block blocks it when an earlier message of its group stopped the group.
func (g groupOrder) block(it *item) {
	if g.stopped != nil && g.stopped[it.msg.group] && it.outcome.moves() {
		it.to(OutcomeBlocked)
	}
}

// note stops its group when it does not leave the DLQ.
func (g groupOrder) note(it *item) {
	if g.stopped != nil && !it.outcome.leaves() {
		g.stopped[it.msg.group] = true
	}
}

// apply blocks, in order, the messages behind a stopped group.
func (g groupOrder) apply(items []*item) {
	for _, it := range items {
		g.block(it)
		g.note(it)
	}
}
