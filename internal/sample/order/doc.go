// Package order defines the order.created event contract and validates it.
//
// Parse turns one message body into an Order or into an *InvalidError that
// carries a stable, machine-readable Reason (see Reasons for the catalogue).
// An *InvalidError means the message will never be valid: the consumer puts
// it on the invalid queue with its reason and acknowledges it, instead of
// letting it burn receives and land in the dead-letter queue.
//
// The contract, as checked by Parse, in this order (the first failure wins):
//
//  1. the body is at most maxBytes long (payload-too-large);
//  2. it is a JSON object (malformed-json);
//  3. every known field present has the right JSON type (invalid-field), and
//     createdAt, when present, is an RFC 3339 timestamp (invalid-field);
//  4. eventType is "order.created" (unknown-event-type);
//  5. version is 1 (unknown-version);
//  6. orderId is not blank (missing-order-id), and, without its surrounding
//     white space, is in the grammar of CheckOrderID: at most 128 bytes of
//     ASCII letters, digits and - _ . : / # (invalid-order-id); invalid UTF-8
//     and lone surrogate escapes are refused on the raw bytes, before JSON
//     decoding would turn them into U+FFFD;
//  7. customer.taxId is not blank (missing-tax-id) and is a CPF or a CNPJ
//     with valid check digits (invalid-tax-id);
//  8. items is not empty (no-items);
//  9. each items[i].quantity is a whole number >= 1 (invalid-quantity);
//  10. each items[i].unitPrice, then total, is a decimal string, not a JSON
//     number, with at most the currency's minor digits (invalid-money);
//  11. currency is one of the supported codes (unknown-currency);
//  12. total equals the sum of quantity × unitPrice (total-mismatch), where a
//     line or a sum too large for an int64 of minor units is invalid-money.
//
// Personal data (tax id, name, email) is never repeated in an error detail.
//
// Unknown fields are tolerated at every level. Field names are matched
// exactly (case-sensitive). A JSON null is treated as an absent field. When a
// key appears twice, the last value wins.
//
// Money is never a float: amounts are JSON strings such as "49.90", held as
// exact integers of minor units (see Money and CurrencyDigits).
//
// Everything in this package is safe for concurrent use; it has no state.
package order
