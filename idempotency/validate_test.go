package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/homingdlq/homing/idempotency"
)

// countingStore counts the calls that reach its store.
type countingStore struct {
	*idempotency.MemoryStore
	calls atomic.Int32
}

func (s *countingStore) Claim(ctx context.Context, l idempotency.Lease) (idempotency.Record, bool, error) {
	s.calls.Add(1)
	return s.MemoryStore.Claim(ctx, l)
}

func TestReceiverValidate(t *testing.T) {
	store := idempotency.NewMemoryStore()
	tests := []struct {
		name  string
		r     idempotency.Receiver
		want  []error
		wantS string // the whole message: the rules are stable text
	}{
		{name: "valid", r: idempotency.Receiver{Store: store, Scope: "shipping"}},
		{name: "empty scope", r: idempotency.Receiver{Store: store}, want: []error{idempotency.ErrInvalidScope},
			wantS: `scope "": idempotency: the scope must be non-empty and must not contain '#', the key separator`},
		{name: "scope with the separator", r: idempotency.Receiver{Store: store, Scope: "a#b"}, want: []error{idempotency.ErrInvalidScope},
			wantS: `scope "a#b": idempotency: the scope must be non-empty and must not contain '#', the key separator`},
		{name: "no store", r: idempotency.Receiver{Scope: "shipping"}, want: []error{idempotency.ErrNoStore},
			wantS: "idempotency: the receiver has no Store"},
		{name: "every problem at once", r: idempotency.Receiver{Scope: "#"}, want: []error{idempotency.ErrNoStore, idempotency.ErrInvalidScope}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("Validate = %v, want it to match %v", err, w)
				}
			}
			if tt.wantS != "" && (err == nil || err.Error() != tt.wantS) {
				t.Errorf("Validate = %v, want %q", err, tt.wantS)
			}
		})
	}
}

// Do and DoResolving refuse an invalid receiver or an empty key before they
// claim anything or run the effect.
func TestReceiverRefusesBeforeTouchingTheStore(t *testing.T) {
	resolver := idempotency.ResolverFunc(func(context.Context, string) (string, bool, error) { return "", false, nil })
	tests := []struct {
		name  string
		scope string
		key   string
		store bool
		want  error
		wantS string
	}{
		{"empty scope", "", "S-1", true, idempotency.ErrInvalidScope, ""},
		{"scope with the separator", "a#b", "S-1", true, idempotency.ErrInvalidScope, ""},
		{"empty key", "shipping", "", true, idempotency.ErrEmptyKey, `receiver of scope "shipping": idempotency: the key must not be empty`},
		{"no store", "shipping", "S-1", false, idempotency.ErrNoStore, ""},
	}
	for _, tt := range tests {
		for _, withResolver := range []bool{false, true} {
			name := tt.name
			if withResolver {
				name += ", resolving"
			}
			t.Run(name, func(t *testing.T) {
				store := &countingStore{MemoryStore: idempotency.NewMemoryStore()}
				r := &idempotency.Receiver{Scope: tt.scope}
				if tt.store {
					r.Store = store
				}
				var effects atomic.Int32
				effect := issue(&effects, "R-1", nil)
				var err error
				if withResolver {
					_, err = r.DoResolving(context.Background(), tt.key, "h1", resolver, effect)
				} else {
					_, err = r.Do(context.Background(), tt.key, "h1", effect)
				}
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				if tt.wantS != "" && err.Error() != tt.wantS {
					t.Fatalf("err = %q, want %q", err, tt.wantS)
				}
				if n := store.calls.Load(); n != 0 {
					t.Errorf("%d claims reached the store", n)
				}
				if n := effects.Load(); n != 0 {
					t.Errorf("the effect ran %d times", n)
				}
			})
		}
	}
}
