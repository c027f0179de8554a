package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/homingdlq/homing/internal/sample/taxstub"
)

// TaxAdmin drives the tax stand-in's admin API (internal/sample/taxstub).
type TaxAdmin struct {
	base   string
	client *http.Client
}

// NewTaxAdmin returns an admin client for the stand-in at base (the stack
// output TaxServiceAdminURL).
func NewTaxAdmin(base string) *TaxAdmin {
	return &TaxAdmin{base: strings.TrimRight(base, "/"), client: http.DefaultClient}
}

// SetMode switches the stand-in: up, down, or flaky with an error rate.
func (a *TaxAdmin) SetMode(ctx context.Context, m taxstub.Mode) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("tax stand-in mode: %w", err)
	}
	return a.call(ctx, http.MethodPost, "/admin/mode", b, nil)
}

// Invoices returns the invoices issued per orderId whose id contains part
// ("" for all).
func (a *TaxAdmin) Invoices(ctx context.Context, part string) (map[string]int, error) {
	return a.perOrder(ctx, "/admin/invoices", part)
}

// Calls returns the accepted invoice calls per orderId whose id contains
// part ("" for all).
func (a *TaxAdmin) Calls(ctx context.Context, part string) (map[string]int, error) {
	return a.perOrder(ctx, "/admin/calls", part)
}

func (a *TaxAdmin) perOrder(ctx context.Context, path, part string) (map[string]int, error) {
	all := map[string]int{}
	if err := a.call(ctx, http.MethodGet, path, nil, &all); err != nil {
		return nil, err
	}
	for id := range all {
		if !strings.Contains(id, part) {
			delete(all, id)
		}
	}
	return all, nil
}

func (a *TaxAdmin) call(ctx context.Context, method, path string, body []byte, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("tax stand-in %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("tax stand-in %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("tax stand-in %s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("tax stand-in %s %s: %s %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			return fmt.Errorf("tax stand-in %s %s: decode the answer: %w", method, path, err)
		}
	}
	return nil
}
