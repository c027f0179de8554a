// Command taxstub serves the local stand-in for the tax and invoice service
// (internal/sample/taxstub) so the deployed consumer can run end to end on the
// emulator. `make emulator-up` starts it on 127.0.0.1:4580 beside the
// emulator; `make emulator-down` stops it.
//
//	taxstub [-addr 127.0.0.1:4580] [-dedupe]
//
// -dedupe starts it deduplicating by Idempotency-Key, as real invoice
// services do; by default it counts every call (see internal/sample/taxstub), and
// POST /admin/mode switches either way at run time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/homingdlq/homing/internal/sample/taxstub"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "taxstub:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("taxstub", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4580", "listen address (keep it on loopback)")
	dedupe := fs.Bool("dedupe", false, "answer a repeated Idempotency-Key with the invoice already issued")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stub := taxstub.New()
	if err := stub.SetMode(taxstub.Mode{Mode: "up", Dedupe: *dedupe}); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	srv := &http.Server{Addr: *addr, Handler: stub, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	logger.Info("tax stand-in listening", slog.String("addr", *addr), slog.Bool("dedupe", *dedupe))
	select {
	case err := <-errc:
		return fmt.Errorf("listen on %s: %w", *addr, err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}
