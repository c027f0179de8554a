package replay

// SetAfterSend installs the crash hook: f is called after a batch's sends
// and ledger marks, before its deletes; an error stops the run there, as a
// crash between send and delete would.
func SetAfterSend(e *Engine, f func(route string, ids []string) error) { e.afterSend = f }
