package handler_test

import (
	"fmt"

	"github.com/homingdlq/homing/internal/handler"
)

// The replay function's environment, read and validated at cold start; an
// operator's on-demand invocation turned into the request of a run.
func ExampleConfig_ParseInvocation() {
	env := map[string]string{
		"REPLAY_ROUTES":     `[{"name":"orders","dlqUrl":"https://sqs/orders-dlq","sourceUrl":"https://sqs/orders","parkingUrl":"https://sqs/orders-parking"}]`,
		"LEDGER_TABLE":      "ledger",
		"IDEMPOTENCY_TABLE": "idempotency",
		"MAX_PER_RUN":       "500",
	}
	cfg, err := handler.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		fmt.Println(err)
		return
	}
	req, err := cfg.ParseInvocation([]byte(`{"dryRun":true,"max":100,"routes":["orders"]}`))
	fmt.Println(req.DryRun, req.Max, req.Routes[0].Name, err)
	_, err = cfg.ParseInvocation([]byte(`{"max":1000}`))
	fmt.Println(err)
	// Output:
	// true 100 orders <nil>
	// on-demand request: max 1000: above the configured cap MAX_PER_RUN=500 (a larger run is an operator's dlq replay --max)
}
