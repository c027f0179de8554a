package tax_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/homingdlq/homing/internal/sample/tax"
)

func ExampleClient_IssueInvoice() {
	// A stand-in for the tax and invoice service.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"invoiceNumber":"INV-`+r.Header.Get("Idempotency-Key")+`"}`)
	}))
	defer srv.Close()

	c, err := tax.New(srv.URL, nil, tax.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	inv, err := c.IssueInvoice(context.Background(), tax.InvoiceRequest{
		OrderID:  "ORD-2026-000123",
		TaxID:    "123.456.789-09",
		Currency: "BRL",
		Total:    "99.80",
		Items:    []tax.Item{{SKU: "SKU-1", Quantity: 2, UnitPrice: "49.90"}},
	})
	var rejected *tax.RejectedError
	switch {
	case errors.As(err, &rejected):
		fmt.Println("invalid lane:", rejected.Detail) // publish to the invalid queue, then acknowledge
	case err != nil:
		fmt.Println("transient:", err) // report a batch item failure; SQS redelivers
	default:
		fmt.Println(inv.Number)
	}
	// Output: INV-ORD-2026-000123
}

func ExampleRejectedError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, `{"message":"tax id does not match the customer"}`)
	}))
	defer srv.Close()

	c, err := tax.New(srv.URL, nil, tax.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.IssueInvoice(context.Background(), tax.InvoiceRequest{
		OrderID: "ORD-2026-000124", TaxID: "123.456.789-09", Currency: "BRL", Total: "0.00",
	})
	var rejected *tax.RejectedError
	if errors.As(err, &rejected) {
		fmt.Println(rejected.Status, rejected.Detail)
		fmt.Println(err)
	}
	// Output:
	// 422 tax id does not match the customer
	// issue invoice for ORD-2026-000124: tax service rejected the order (HTTP 422): tax id does not match the customer
}
