package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLaneContracts: each lane of the stack tells the replay (its route in
// REPLAY_ROUTES) and its consumer (KEY_EXPRESSION, PAYLOAD_HASH_EXPRESSION)
// the key its consumer writes its records under, the part of the body its
// payload hash covers, and that it writes them: orders by orderId over the
// fields the sample validates (internal/sample/invoicing), payments by
// paymentId over the posting's fields (examples/payment). A route hashing
// the whole body while its consumer hashes a part would never find a dead
// letter already applied.
func TestLaneContracts(t *testing.T) {
	s := profile(t, ProfileLocal)
	for _, tc := range []struct {
		lane, consumer, replay, key, hash string
	}{
		{"orders", "OrdersConsumer", "OrdersReplay", OrdersKey, OrdersPayloadHash},
		{"payments", "PaymentsConsumer", "PaymentsReplay", PaymentsKey, PaymentsPayloadHash},
	} {
		t.Run(tc.lane, func(t *testing.T) {
			replay := s.find(t, "AWS::Lambda::Function", tc.replay)
			vars := s.resources[replay]["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
			var routes []struct {
				Name        string `json:"name"`
				Key         *string
				PayloadHash *string `json:"payloadHash"`
				Records     *bool
			}
			if err := json.Unmarshal([]byte(literal(vars["REPLAY_ROUTES"])), &routes); err != nil {
				t.Fatalf("REPLAY_ROUTES %s: %v", literal(vars["REPLAY_ROUTES"]), err)
			}
			if len(routes) != 1 || routes[0].Name != tc.lane || routes[0].Key == nil || *routes[0].Key != tc.key ||
				routes[0].PayloadHash == nil || *routes[0].PayloadHash != tc.hash || routes[0].Records == nil || !*routes[0].Records {
				t.Errorf("REPLAY_ROUTES %s, want one route %q with key %q, payloadHash %q, records true", literal(vars["REPLAY_ROUTES"]), tc.lane, tc.key, tc.hash)
			}
			consumer := s.find(t, "AWS::Lambda::Function", tc.consumer)
			cv := s.resources[consumer]["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
			if cv["KEY_EXPRESSION"] != tc.key {
				t.Errorf("%s's KEY_EXPRESSION is %v, want %q", tc.consumer, cv["KEY_EXPRESSION"], tc.key)
			}
			if cv["PAYLOAD_HASH_EXPRESSION"] != tc.hash {
				t.Errorf("%s's PAYLOAD_HASH_EXPRESSION is %v, want %q", tc.consumer, cv["PAYLOAD_HASH_EXPRESSION"], tc.hash)
			}
		})
	}
}

// literal is the text of an Fn::Join with an empty separator, each Ref
// part as Ref(<id>); a string is itself.
func literal(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	join, _ := v.(map[string]any)["Fn::Join"].([]any)
	if len(join) != 2 {
		return ""
	}
	var b strings.Builder
	for _, part := range join[1].([]any) {
		switch p := part.(type) {
		case string:
			b.WriteString(p)
		case map[string]any:
			b.WriteString("Ref(" + p["Ref"].(string) + ")")
		}
	}
	return b.String()
}
