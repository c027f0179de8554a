package replay

import "context"

// sealGate reads the engine's seal keys for the run (key, once decided).
type sealGate struct {
	e   *Engine
	key sealer // the seal keys; zero when none could be read
}

func (*sealGate) name() string { return GateSeal }

// decide reads the seal keys into key; it closes when no key can be read
// (see [GateSeal]), and says what the run cannot do with the keys it has.
func (s *sealGate) decide(ctx context.Context, _ *pass) Gate {
	keys, err := s.e.sealKeys(ctx)
	if err != nil {
		return Gate{Name: GateSeal, Decision: GateClosed, Detail: err.Error()}
	}
	s.key = keys.sealer
	return Gate{Name: GateSeal, Decision: GateOpen, Detail: keys.note}
}
